"""End-to-end fixtures: the test Redis broker (flushed) and an engine on the test MongoDB
server that the tasks of this process use; worker processes reach the same database through
``FPTRACK_MONGO_URI`` and ``FPTRACK_MONGO_DB`` (set by ``mongo_db``)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from matcher.matching.engine import Engine
from tests.support.e2e import app

TEST_BROKER_URL = os.environ["FPTRACK_BROKER_URL"]  # set by tests/conftest.py


@pytest.fixture(autouse=True)
def e2e_app_current() -> None:
    """The shared tasks (``tasks.process_page.delay``) go through the end-to-end tests' app,
    whatever app another module made current."""
    app.set_current()


@pytest.fixture
def broker(broker: redis.Redis) -> redis.Redis:
    """The shared ``broker`` (flushed before and after), which this process's app sends to."""
    assert app.conf.broker_url == TEST_BROKER_URL
    return broker


@pytest.fixture
def engine(engine: Engine) -> Iterator[Engine]:
    """The shared ``engine`` on the test servers, used by this process's tasks."""
    app.fptrack.use(engine)
    yield engine
    app.fptrack.use(None)
