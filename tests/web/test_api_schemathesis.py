"""Schemathesis against the API's own OpenAPI document: for every operation, requests
generated from the document (valid and invalid ones) get no 500 and no response that breaks
the document (status, content type, body schema). The app runs on the test MongoDB and
Redis servers with the deployed dispatch (Celery messages to the test broker)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from pymongo.database import Database
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from admin.context import Context
from admin.services.accounts import Users
from admin.web.app import create_app
from matcher.matching.engine import Engine
from matcher.settings import Settings
from tests.servers import session
from tests.support.web import PASSWORDS, seed_match
from tests.web.test_api import make_token

EXAMPLES = 20
"""Generated requests per operation: 18 operations, 360 requests, valid and invalid ones in
every run (40 took twice the time, 11 s alone, for the same checks on each)."""
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
]


@pytest.fixture
def api_app(redis_client: Any, mongo_db: Database) -> Any:
    settings = Settings(
        redis_prefix="fptrack-test-api",
        mongo_db=mongo_db.name,
        redis_url=session.session().redis_url(0),
        broker_url=session.session().redis_url(1),
        api_rate_per_minute=1_000_000,
    )
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=redis_client)
    ctx = Context(settings=settings, engine=engine)
    for name, (role, password) in PASSWORDS.items():
        Users(engine.store).create(name, password, role)
    seed_match(ctx)
    return create_app(ctx, secret_key="schemathesis", schedules=False)


def test_the_api_keeps_its_document(api_app: Any) -> None:
    """Every operation, each with up to :data:`EXAMPLES` generated requests."""
    token = make_token(api_app, "alice")
    headers = {"Authorization": f"Bearer {token}"}
    api = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", api_app)
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) == 20  # every route but the document's own
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def conforms(case: Any) -> None:
            case.call_and_validate(headers=headers, checks=CHECKS)

        conforms()
