"""End-to-end fixtures: the real Redis broker (database 14, flushed) and an engine on
mongomock that the tasks of this process use."""

from __future__ import annotations

import os
from collections.abc import Iterator

import mongomock
import pytest
import redis

from matcher.celery_app import app, runtime
from matcher.engine import Engine
from matcher.settings import Settings

TEST_BROKER_URL = os.environ["FPTRACK_BROKER_URL"]  # set by tests/conftest.py


@pytest.fixture
def broker() -> Iterator[redis.Redis]:
    """The broker's Redis database, flushed before and after (no message leaks between tests)."""
    client = redis.Redis.from_url(TEST_BROKER_URL)
    client.flushdb()
    assert app.conf.broker_url == TEST_BROKER_URL
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def engine(redis_client: redis.Redis) -> Iterator[Engine]:
    """An engine on mongomock and the real Redis, used by this process's tasks."""
    engine = Engine.open(
        Settings(redis_prefix="fptrack-test"),
        mongo_client=mongomock.MongoClient(),
        redis_client=redis_client,
    )
    runtime.use(engine)
    yield engine
    runtime.use(None)
