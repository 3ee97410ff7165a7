"""A worker's heartbeat on its unacknowledged messages, so the visibility timeout can be short.

With Redis as the broker, a message delivered to a worker waits in the broker's ``unacked``
hash, indexed by its delivery time in the ``unacked_index`` sorted set, until the worker
acknowledges it; any worker puts it back in its queue once that time is older than the
visibility timeout (kombu's ``restore_visible``). kombu has one timeout per connection and
counts it from the delivery, so a task that runs longer than it is delivered again while it
still runs, and the timeout had to exceed the longest task (it was two hours).

:class:`VisibilityHeartbeat`, a worker bootstep, moves the delivery time of every message
its worker holds (running, reserved, or waiting for a retry's countdown: Celery's
``worker.state.requests``) to now, every quarter of the timeout, in a thread of the
worker's main process. A message is therefore handed to another worker only once its own
worker has stopped beating for a whole timeout (killed, its machine lost, the broker
unreachable that long), whatever its task's duration: the timeout can be minutes
(``FPTRACK_VISIBILITY_TIMEOUT``, default 120 s). Messages already acknowledged (the crawls
acknowledge theirs at once) are left alone (``ZADD XX``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from celery import bootsteps
from celery.worker import state

log = logging.getLogger(__name__)

BEATS_PER_TIMEOUT = 4


def held_delivery_tags() -> list[str]:
    """The delivery tags of the messages this worker holds (Celery's ``state.requests``)."""
    for _ in range(3):  # the consumer thread may change the dict meanwhile
        try:
            requests = tuple(state.requests.values())
            break
        except RuntimeError:
            continue
    else:
        return []
    tags = []
    for request in requests:
        tag = getattr(getattr(request, "message", None), "delivery_tag", None)
        if tag:
            tags.append(str(tag))
    return tags


def refresh(channel: Any, tags: list[str], at: float) -> int:
    """Set the delivery time of the messages ``tags`` still unacknowledged to ``at``; how many."""
    if not tags:
        return 0
    with channel.conn_or_acquire() as client:
        changed = client.zadd(channel.unacked_index_key, dict.fromkeys(tags, at), xx=True, ch=True)
        return int(changed)


class VisibilityHeartbeat(bootsteps.StartStopStep):
    """The worker bootstep running the heartbeat thread (see the module docstring)."""

    label = "visibility heartbeat"

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, parent: Any) -> None:
        app = parent.app
        timeout = (app.conf.broker_transport_options or {}).get("visibility_timeout")
        if not timeout:
            return
        interval = max(0.5, float(timeout) / BEATS_PER_TIMEOUT)
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, args=(app, interval), name="fptrack-visibility", daemon=True
        )
        self._thread.start()

    def stop(self, parent: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _run(self, app: Any, interval: float) -> None:
        connection = None
        while not self._stop.wait(interval):
            try:
                if connection is None:
                    connection = app.connection_for_write()
                channel = connection.default_channel
                if not hasattr(channel, "unacked_index_key"):
                    break  # not a Redis transport: it has no visibility timeout
                refresh(channel, held_delivery_tags(), time.time())
            except Exception as exc:  # the broker's errors (kombu, redis) have no common base
                log.warning("could not renew the visibility of this worker's tasks: %s", exc)
                if connection is not None:
                    connection.release()
                connection = None
        if connection is not None:
            connection.release()
