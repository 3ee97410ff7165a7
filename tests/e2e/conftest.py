"""End-to-end fixtures: the test Redis broker (flushed) and an engine on the test MongoDB
server that the tasks of this process use; worker processes reach the same database through
``FPTRACK_MONGO_URI`` and ``FPTRACK_MONGO_DB`` (set by ``mongo_db``)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis
from pymongo.database import Database

from matcher.engine import Engine
from matcher.settings import Settings
from tests.support.e2e import app

TEST_BROKER_URL = os.environ["FPTRACK_BROKER_URL"]  # set by tests/conftest.py


@pytest.fixture(autouse=True)
def e2e_app_current() -> None:
    """The shared tasks (``tasks.process_page.delay``) go through the end-to-end tests' app,
    whatever app another module made current."""
    app.set_current()


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
def engine(redis_client: redis.Redis, mongo_db: Database) -> Iterator[Engine]:
    """An engine on the test servers, used by this process's tasks."""
    engine = Engine.open(
        Settings(redis_prefix="fptrack-test", mongo_db=mongo_db.name),
        mongo_client=mongo_db.client,
        redis_client=redis_client,
    )
    app.fptrack.use(engine)
    yield engine
    app.fptrack.use(None)
