"""The Flask application of the admin platform (server-rendered Jinja2, no JS build step).

:func:`create_app` wires the views (one blueprint per area, :data:`BLUEPRINTS`) to the
admin's services (:mod:`admin.services`) over a :class:`admin.context.Context` (store,
engine, schedules) and a :class:`admin.services.dispatch.Dispatch`. The session secret comes
from the caller, else from ``FPTRACK_ADMIN_SECRET``, else one made at random on first start
and kept in the store's ``state`` collection (:func:`admin.services.startup.session_secret`),
so every gunicorn worker and restart shares it.

A request's body is bounded first of all (:func:`admin.web.security.check_body`). An error
that says MongoDB, Redis or the Celery broker does not answer (:func:`away`) is answered 503
with ``Retry-After`` (:data:`RETRY_AFTER_S`) and one line naming the server, never the
driver's text, which goes to the log; a page asked with GET reloads itself after that time
(``Refresh``), a form's answer asks to send it again.
"""

from __future__ import annotations

import importlib
import threading
from datetime import timedelta
from typing import Any

import pymongo.errors
import redis
from flask import Flask, Response, current_app, g, redirect, render_template, request, url_for
from kombu.exceptions import OperationalError
from werkzeug.exceptions import HTTPException

from admin import human, outage
from admin.context import Context
from admin.services.dispatch import CeleryDispatch, Dispatch
from admin.services.startup import ensure_store, session_secret
from admin.web import api, metrics, security
from admin.web.deps import EXTENSION, Services, services
from matcher.errors import IndexUnavailable, MatcherError, StoreUnavailable, transient

BLUEPRINTS = (
    "auth", "dashboard", "matches", "works", "sites", "query", "reports", "takedowns", "discovery",
    "alerts",
    "tokens", "api", "metrics",
)  # fmt: skip
"""Modules of :mod:`admin.web` each holding a ``bp`` blueprint."""
SESSION_HOURS = 8
RETRY_AFTER_S = 5
"""How long a 503 for a server that does not answer asks to wait (``Retry-After``)."""
SERVERS = {
    "MongoDB": "the store (MongoDB)",
    "Redis": "Redis",
    "the Celery broker": "the task queue (the Celery broker)",
}
"""How an answer names each server that may be away."""


def away(exc: BaseException) -> str | None:
    """The server (a key of :data:`SERVERS`) that ``exc``, or an error it was raised from,
    says does not answer; None when it is not an outage."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, StoreUnavailable):
            return "MongoDB"
        if isinstance(seen, IndexUnavailable):
            return "Redis"
        if isinstance(seen, pymongo.errors.PyMongoError) and transient(seen):
            return "MongoDB"
        if isinstance(seen, redis.RedisError) and transient(seen):
            return "Redis"
        if isinstance(seen, OperationalError):
            return "the Celery broker"
        seen = seen.__cause__
    return None


def unavailable(server: str, exc: BaseException) -> Any:
    """The 503 answer for ``server`` not answering (the driver's text only in the log)."""
    details = " ".join(str(exc).split())[:2000]
    current_app.logger.warning(
        "%s %s: answered 503, %s does not answer (%s): %s",
        request.method, request.path, server, outage.cause(exc), details,
    )  # fmt: skip
    name = SERVERS[server]
    headers = {"Retry-After": str(RETRY_AFTER_S)}
    if api.serves(request.path):
        response = api.error_response(503, f"{name} is not answering; retry in {RETRY_AFTER_S} s")
        response.headers.update(headers)
        return response
    if metrics.serves(request.path):
        text = f"{name} is not answering; retry in {RETRY_AFTER_S} s\n"
        return Response(text, status=503, mimetype="text/plain", headers=headers)
    if request.method in ("GET", "HEAD"):
        message = f"{name} is not answering; retrying in {RETRY_AFTER_S} s."
        headers["Refresh"] = str(RETRY_AFTER_S)
    else:
        message = f"{name} is not answering: send the form again in a moment."
    return render_template("error.html", code=503, message=message), 503, headers


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
    app.request_class = security.BoundedRequest
    ensure_store(ctx)
    app.config.update(
        SECRET_KEY=secret_key or session_secret(ctx),
        SESSION_COOKIE_NAME="fptrack_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=secure_cookies,
        PERMANENT_SESSION_LIFETIME=timedelta(hours=SESSION_HOURS),
        MAX_CONTENT_LENGTH=security.UPLOAD_BYTES,  # at most; each route's, security.body_limit
        MAX_FORM_MEMORY_SIZE=security.FORM_MEMORY_BYTES,
        MAX_FORM_PARTS=security.FORM_FIELDS,
    )
    app.extensions[EXTENSION] = Services(ctx, dispatch or CeleryDispatch(ctx), lock, schedules)
    for name in BLUEPRINTS:
        app.register_blueprint(importlib.import_module(f"admin.web.{name}").bp)

    @app.before_request
    def before() -> Any:
        security.check_body()
        s = services()
        if s.lock is not None:
            s.lock.acquire()
            g.locked = True
        if api.serves(request.path):
            return api.guard()
        if metrics.serves(request.path):
            return metrics.guard()
        # the user first: an anonymous request's form is never parsed (only the login's)
        refused = security.load_user(s.users)
        if refused is None:
            security.check_csrf()
        return refused

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
        server = away(exc)
        if server is not None:
            return unavailable(server, exc)
        if api.serves(request.path):
            return api.error_response(400, str(exc))
        return render_template("error.html", code=400, message=str(exc)), 400

    @app.errorhandler(Exception)
    def failed(exc: Exception) -> Any:
        server = away(exc)
        if server is None:
            raise exc  # Flask logs it and answers 500
        return unavailable(server, exc)

    return app
