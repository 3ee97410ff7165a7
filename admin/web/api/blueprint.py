"""The API's blueprint and what its routes share: :func:`route` (a view with its role and its
OpenAPI operation), the bearer-token guard and rate (:func:`guard`), JSON errors, the
parsing of request values, and the parameters several routes declare.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, abort, g, jsonify, request

from admin.services.accounts import User
from admin.services.matches import STATUSES
from admin.web import deps
from admin.web.api.spec import Operation
from admin.web.rate_limit import spend
from matcher.errors import redis_errors

bp = Blueprint("api", __name__, url_prefix="/api/v1")
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MAX_TEXT_CHARS = 2_000_000
PUBLIC = frozenset({"api.openapi"})


OPERATIONS: list[Operation] = []


def route(
    method: str,
    path: str,
    role: str | None,
    summary: str,
    *,
    params: tuple[dict[str, Any], ...] = (),
    body: dict[str, Any] | None = None,
    responses: dict[str, Any],
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a view under ``path`` (OpenAPI syntax, ``{name}``) for ``role`` and up."""

    def wrap(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def guarded(**kwargs: Any) -> Any:
            user: User | None = g.get("user")
            if role is not None and (user is None or not user.can(role)):
                abort(403, f"this needs the {role} role")
            return view(**kwargs)

        flask_path = path.replace("{", "<").replace("}", ">")
        bp.add_url_rule(flask_path, view.__name__, guarded, methods=[method])
        OPERATIONS.append(
            Operation(method, path, role, summary, params, body, responses, view.__name__)
        )
        return guarded

    return wrap


# authentication and limits ------------------------------------------------------------


def guard() -> Response | None:
    """Before every API request: the bearer token's user in ``g.user``, and its rate."""
    g.user = None
    if request.endpoint in PUBLIC:
        return None
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    user = deps.api_tokens().authenticate(secret.strip(), deps.users())
    if scheme.lower() != "bearer" or user is None:
        response = jsonify(error="a valid API token is needed: Authorization: Bearer <token>")
        response.status_code = 401
        response.headers["WWW-Authenticate"] = 'Bearer realm="fptrack"'
        return response
    g.user = user
    engine, settings = deps.ctx().engine, deps.settings()
    with redis_errors("counting API requests"):
        verdict = spend(engine.redis, engine.keys, user.username, settings.api_rate_per_minute)
    if not verdict.allowed:
        response = jsonify(error="too many requests: slow down")
        response.status_code = 429
        response.headers["Retry-After"] = str(verdict.retry_after)
        return response
    return None


def serves(path: str) -> bool:
    """Whether a request path is the API's (its errors are JSON, its users tokens)."""
    return path == "/api" or path.startswith("/api/")


def error_response(code: int, message: str, exc: Exception | None = None) -> Response:
    """``{"error": message}`` with status ``code`` (and the headers ``exc`` carries, such as
    a 405's ``Allow``)."""
    response = jsonify(error=message)
    response.status_code = code
    if exc is not None and hasattr(exc, "get_headers"):
        for name, value in exc.get_headers():
            if name.lower() != "content-type":
                response.headers[name] = value
    return response


# values ------------------------------------------------------------------------------


def limit_arg() -> int:
    """The request's ``limit`` (1 to :data:`MAX_LIMIT`, default :data:`DEFAULT_LIMIT`)."""
    raw = request.args.get("limit", "")
    if raw == "":
        return DEFAULT_LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        abort(400, f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return int(raw)


def json_object() -> dict[str, Any]:
    """The request's body, a JSON object of Unicode text."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        abort(400, "the body must be a JSON object")
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        abort(400, "the body holds text that is not Unicode (a lone surrogate)")
    return body


def string_field(body: dict[str, Any], name: str, limit: int, required: bool = False) -> str:
    """The string ``name`` of a JSON body, at most ``limit`` characters ("" when absent)."""
    value = body.get(name, "")
    if not isinstance(value, str):
        abort(400, f"{name} must be a string")
    if required and not value.strip():
        abort(400, f"{name} is required")
    if len(value) > limit:
        abort(400, f"{name} is longer than {limit:,} characters")
    return value


def when(value: Any) -> str | None:
    """A stored time in ISO 8601, None when there is none."""
    return value.isoformat() if isinstance(value, datetime) else None


# shared parameters and responses -----------------------------------------------------


def query_param(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema,
            "description": description}  # fmt: skip


def path_param(name: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema or {"type": "string"}}


def ok(schema: str, code: str = "200") -> dict[str, Any]:
    return {code: schema}


LIMIT = query_param(
    "limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
    f"items per page (default {DEFAULT_LIMIT})",
)  # fmt: skip
AFTER = query_param("after", {"type": "string"}, "the `next` of the previous page")
MATCH_FILTERS = (
    query_param("site", {"type": "string"}, "a site name"),
    query_param("work", {"type": "string"}, "a work id"),
    query_param("since", {"type": "string", "format": "date"}, "first seen on or after (UTC day)"),
    query_param("until", {"type": "string", "format": "date"}, "first seen on or before (UTC day)"),
    query_param("min_score", {"type": "number", "minimum": 0, "maximum": 1}, "lowest score"),
    query_param("status", {"type": "string", "enum": list(STATUSES)}, "review status"),
)
MATCH_ID = path_param("match_id")
SITE_NAME = path_param("name")
WORK_ID = path_param("work_id")
