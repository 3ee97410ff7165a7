"""Fixtures of the command-line tests: a :class:`Context` on the test servers (the in-process
commands get it instead of reading ``FPTRACK_*``)."""

from __future__ import annotations

import pytest
import redis
from pymongo.database import Database

from admin.context import Context
from matcher.matching.engine import Engine
from matcher.settings import Settings
from tests.servers import session


@pytest.fixture
def ctx(redis_client: redis.Redis, mongo_db: Database) -> Context:
    """A context whose engine uses the test Redis and a fresh test MongoDB database, with
    the broker on another database of the test Redis."""
    settings = Settings(
        redis_prefix="fptrack-test",
        mongo_db=mongo_db.name,
        redis_url=session.session().redis_url(0),
        broker_url=session.session().redis_url(1),
    )
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=redis_client)
    return Context(engine=engine)
