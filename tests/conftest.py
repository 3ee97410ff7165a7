"""Fixtures shared by every suite: the real Redis server, one flushed database per test.

``FPTRACK_TEST_REDIS_URL`` picks the database (default ``redis://127.0.0.1:6379/15``); it is
flushed before and after each test that asks for it, so never point it at data you keep.
The Celery broker of the tests is database 14 of the same server
(``FPTRACK_TEST_BROKER_URL``), set before :mod:`matcher.celery_app` is first imported.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

TEST_REDIS_URL = os.environ.get("FPTRACK_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
TEST_BROKER_URL = os.environ.get("FPTRACK_TEST_BROKER_URL", "redis://127.0.0.1:6379/14")
os.environ["FPTRACK_BROKER_URL"] = TEST_BROKER_URL
os.environ["FPTRACK_REDIS_URL"] = TEST_REDIS_URL
os.environ["FPTRACK_REDIS_PREFIX"] = "fptrack-test"
os.environ.pop("FPTRACK_MONGO_URI", None)


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    """A client of the real Redis server on a database flushed before and after the test."""
    client = redis.Redis.from_url(TEST_REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError as exc:  # pragma: no cover - CI always starts one
        pytest.fail(f"the tests need a Redis server at {TEST_REDIS_URL}: {exc}")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def dead_redis() -> redis.Redis:
    """A client of a port where nothing listens: every command fails to connect."""
    return redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
