"""Fixtures of the admin web tests: an engine on the test MongoDB and Redis servers, the app."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import redis
from argon2 import PasswordHasher, profiles
from flask import Flask
from flask.testing import FlaskClient
from pymongo.database import Database

from admin.context import Context
from admin.services import accounts as accounts_module
from admin.services.accounts import Users
from admin.services.dispatch import InlineDispatch
from admin.web.app import create_app
from matcher.matching.engine import Engine
from matcher.settings import Settings
from tests.support.web import PASSWORDS, login

CRAWL_OVERRIDES = {"AUTOTHROTTLE_ENABLED": False, "LOG_LEVEL": "WARNING"}


@pytest.fixture(scope="session", autouse=True)
def product_hasher() -> Iterator[PasswordHasher]:
    """The product's password hasher, yielded; meanwhile the accounts of the web tests (each
    test makes three and logs in) are hashed with argon2id's cheapest parameters, as a
    test settings' hasher would: verifying reads the parameters from the hash itself."""
    product = accounts_module._hasher
    accounts_module._hasher = PasswordHasher.from_parameters(profiles.CHEAPEST)
    try:
        yield product
    finally:
        accounts_module._hasher = product


@pytest.fixture
def web_ctx(redis_client: redis.Redis, mongo_db: Database) -> Context:
    """A context over a fresh database of the test MongoDB server and the test Redis database."""
    settings = Settings.from_env(redis_prefix="fptrack-test-web", mongo_db=mongo_db.name)
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=redis_client)
    return Context(settings=settings, engine=engine)


@pytest.fixture
def dispatch(web_ctx: Context) -> Iterator[InlineDispatch]:
    inline = InlineDispatch(web_ctx, threading.RLock(), CRAWL_OVERRIDES)
    yield inline
    inline.wait()


@pytest.fixture
def app(web_ctx: Context, dispatch: InlineDispatch) -> Flask:
    """The admin app with the three accounts of :data:`PASSWORDS` and no beat schedules."""
    users = Users(web_ctx.engine.store)
    for name, (role, password) in PASSWORDS.items():
        users.create(name, password, role)
    return create_app(
        web_ctx, dispatch=dispatch, secret_key="test-secret", lock=dispatch.lock, schedules=False
    )


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def as_admin(app: Flask) -> FlaskClient:
    c = app.test_client()
    assert login(c, "alice").status_code == 302
    return c


@pytest.fixture
def as_reviewer(app: Flask) -> FlaskClient:
    c = app.test_client()
    assert login(c, "rita").status_code == 302
    return c


@pytest.fixture
def as_viewer(app: Flask) -> FlaskClient:
    c = app.test_client()
    assert login(c, "victor").status_code == 302
    return c
