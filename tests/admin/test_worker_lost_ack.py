"""A task message whose acknowledgement the broker's outage swallows: one warning line in the
worker's log, no traceback (kombu logs the connection error's whole traceback as CRITICAL),
and the message is delivered again once the broker is back."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from kombu import Connection

from admin.commands.worker import ACK_LOGGERS, LostAck, _one_line_lost_acks
from tests.servers.outage import own_redis, redis_url


def test_an_ack_lost_with_the_broker_is_one_line_and_the_message_comes_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = own_redis(tmp_path / "redis", keeps_data=True)
    server.start()
    try:
        with Connection(redis_url(server)) as conn:
            queue = conn.SimpleQueue("lost-ack")
            queue.put({"page": 1})
            message = queue.get(timeout=5)
            server.stop()
            _one_line_lost_acks()
            with caplog.at_level(logging.WARNING):
                message.ack_log_error(logging.getLogger(ACK_LOGGERS[0]), conn.connection_errors)
        (record,) = [r for r in caplog.records if r.name == ACK_LOGGERS[0]]
        assert record.levelname == "WARNING"
        assert record.exc_info is None and record.exc_text is None
        line = record.getMessage()
        assert "\n" not in line
        assert "could not acknowledge a task message" in line
        assert "ConnectionError" in line and "deliver it again" in line

        server.start()  # with its append-only file: the unacknowledged message is kept
        # What a worker's channel does on starting (unacknowledged messages older than the
        # visibility timeout back on their queue), with no timeout to wait out.
        with Connection(redis_url(server), transport_options={"visibility_timeout": 0}) as conn:
            queue = conn.SimpleQueue("lost-ack")
            conn.default_channel.qos.restore_visible()
            again = queue.get(timeout=5)
            assert again.payload == {"page": 1}
            again.ack()
    finally:
        server.stop()
        for name in ACK_LOGGERS:
            logger = logging.getLogger(name)
            for f in [f for f in logger.filters if isinstance(f, LostAck)]:
                logger.removeFilter(f)
