"""The Flask application of the admin platform (server-rendered Jinja2, no JS build step).

:func:`create_app` wires the views (one blueprint per area, :data:`BLUEPRINTS`) to a
:class:`admin.context.Context` (store, engine, schedules) and a
:class:`admin.web.dispatch.Dispatch`. The session secret comes from the caller, else from
``FPTRACK_ADMIN_SECRET``, else one made at random on first start and kept in the store's
``state`` collection, so every gunicorn worker and restart shares it.
"""

from __future__ import annotations

import importlib
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from flask import Flask, Response, g, render_template, request
from werkzeug.exceptions import HTTPException

from admin.context import Context
from admin.metrics import StoreMetrics
from admin.web import api, metrics, security
from admin.web.dispatch import CeleryDispatch, Dispatch
from admin.web.users import Users
from matcher.errors import MatcherError, Retryable

BLUEPRINTS = (
    "auth", "dashboard", "matches", "works", "sites", "query", "reports", "alerts", "tokens",
    "api", "metrics",
)  # fmt: skip
"""Modules of :mod:`admin.web` each holding a ``bp`` blueprint."""
SESSION_HOURS = 8
MAX_UPLOAD_BYTES = 200 * 1024 * 1024
SECRET_STATE_KEY = "admin_session_secret"


class Services:
    """What the views use: the context, the dispatch, the accounts, an optional lock.

    Every part of the context a request uses is built here, before the first request:
    the context builds its clients and archive on first use (``functools.cached_property``,
    with no lock from Python 3.12), which two threads of a gthread worker could otherwise
    both do at once."""

    def __init__(
        self, ctx: Context, dispatch: Dispatch, lock: threading.RLock | None, schedules: bool
    ) -> None:
        self.ctx, self.dispatch, self.lock = ctx, dispatch, lock
        _ = ctx.settings, ctx.engine, ctx.ops, ctx.archive
        self.users = Users(ctx.engine.store)
        self.schedules = ctx.schedules if schedules else None
        self.metrics = StoreMetrics(ctx)
        self.metrics_registry = self.metrics.registry()


def services() -> Services:
    from flask import current_app

    return current_app.extensions["fptrack"]


@contextmanager
def outside_lock() -> Iterator[None]:
    """Run a request's outbound IO (:mod:`matcher.outbound`: a query by URL's fetch, a test
    alert) without the embedded admin's lock, so no other request waits on a slow server;
    the lock is held again after it. The block must not touch the store. Without a lock
    (``fptrack admin serve``) it does nothing."""
    s = services()
    if s.lock is None or not g.get("locked"):
        yield
        return
    s.lock.release()
    try:
        yield
    finally:
        s.lock.acquire()


def session_secret(ctx: Context) -> str:
    """``FPTRACK_ADMIN_SECRET`` (``Settings.admin_secret``), else the random one kept in the
    store."""
    if ctx.settings.admin_secret:
        return ctx.settings.admin_secret
    kept = ctx.ops.get_state(SECRET_STATE_KEY)
    if not kept:
        kept = ctx.ops.state_once(key=SECRET_STATE_KEY, value=secrets.token_hex(32))
    return kept


def create_app(
    ctx: Context,
    *,
    dispatch: Dispatch | None = None,
    secret_key: str | None = None,
    lock: threading.RLock | None = None,
    secure_cookies: bool = False,
    schedules: bool = True,
) -> Flask:
    """The admin application.

    ``lock`` (the embedded scan) serialises requests with the inline dispatch's threads,
    except for their outbound IO (:func:`outside_lock`);
    ``schedules=False`` (no beat, as in the embedded scan) keeps site schedules in the store
    only.
    """
    app = Flask(__name__)
    ctx.engine.store.ensure_indexes()
    app.config.update(
        SECRET_KEY=secret_key or session_secret(ctx),
        SESSION_COOKIE_NAME="fptrack_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=secure_cookies,
        PERMANENT_SESSION_LIFETIME=timedelta(hours=SESSION_HOURS),
        MAX_CONTENT_LENGTH=MAX_UPLOAD_BYTES,
    )
    app.extensions["fptrack"] = Services(ctx, dispatch or CeleryDispatch(ctx), lock, schedules)
    for name in BLUEPRINTS:
        app.register_blueprint(importlib.import_module(f"admin.web.{name}").bp)

    @app.before_request
    def before() -> Any:
        s = services()
        if s.lock is not None:
            s.lock.acquire()
            g.locked = True
        if api.serves(request.path):
            return api.guard()
        if metrics.serves(request.path):
            return metrics.guard()
        security.check_csrf()
        return security.load_user(s.users)

    @app.teardown_request
    def release(_: BaseException | None) -> None:
        if g.pop("locked", False):
            services().lock.release()

    app.after_request(security.add_headers)
    app.jinja_env.filters["http_url"] = security.http_url

    @app.context_processor
    def globals_() -> dict[str, Any]:
        return {"csrf_token": security.csrf_token, "user": g.get("user")}

    @app.get("/favicon.ico")
    def favicon() -> Any:
        from flask import redirect, url_for

        return redirect(url_for("static", filename="favicon.svg"), 301)

    @app.get("/healthz")
    def health() -> Response:
        return Response("ok\n", mimetype="text/plain")

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Any:
        if api.serves(request.path):
            return api.error_response(exc.code or 500, str(exc.description), exc)
        return render_template("error.html", code=exc.code, message=exc.description), exc.code

    @app.errorhandler(MatcherError)
    def bad_input(exc: MatcherError) -> Any:
        if api.serves(request.path):
            return api.error_response(503 if isinstance(exc, Retryable) else 400, str(exc))
        return render_template("error.html", code=400, message=str(exc)), 400

    return app
