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
from datetime import timedelta
from typing import Any

from flask import Flask, Response, g, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException

from admin import human
from admin.context import Context
from admin.web import api, metrics, security
from admin.web.deps import EXTENSION, Services, services
from admin.web.dispatch import CeleryDispatch, Dispatch
from matcher.errors import MatcherError, Retryable

BLUEPRINTS = (
    "auth", "dashboard", "matches", "works", "sites", "query", "reports", "takedowns", "discovery",
    "alerts",
    "tokens", "api", "metrics",
)  # fmt: skip
"""Modules of :mod:`admin.web` each holding a ``bp`` blueprint."""
SESSION_HOURS = 8
MAX_UPLOAD_BYTES = 200 * 1024 * 1024
SECRET_STATE_KEY = "admin_session_secret"


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
    except for their outbound IO (:func:`admin.web.deps.outside_lock`);
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
    app.extensions[EXTENSION] = Services(ctx, dispatch or CeleryDispatch(ctx), lock, schedules)
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
    app.jinja_env.filters.update(human.FILTERS)

    @app.context_processor
    def globals_() -> dict[str, Any]:
        return {"csrf_token": security.csrf_token, "user": g.get("user")}

    @app.get("/favicon.ico")
    def favicon() -> Any:
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
