"""The HTTP API, version 1: JSON under ``/api/v1``, described by its OpenAPI document.

Every route but ``/api/v1/openapi.json`` needs ``Authorization: Bearer <token>``, a token
made in the admin (:mod:`admin.services.api_tokens`); the session cookie is never read here, so
the API needs no CSRF token and a browser's ambient login cannot drive it. Each route
names the weakest role that may use it (``viewer`` reads, ``reviewer`` sets statuses,
queries URLs and starts crawls, ``admin`` registers works and edits sites), and each user's
tokens together are held to ``FPTRACK_API_RATE_PER_MINUTE`` requests a minute
(:mod:`admin.web.rate_limit`).
Errors are ``{"error": "<one line>"}`` with the HTTP status. Every value that reaches a
query is parsed first (ids as ObjectIds, filters by :class:`admin.filters.MatchFilters`),
so no request can carry a MongoDB operator. The routes and their OpenAPI operations are
declared together (:func:`route`) and the document is built from them
(:mod:`admin.web.api_spec`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, abort, g, jsonify, request

from admin.fetch import FetchError
from admin.filters import FilterError, MatchFilters, parse_cursor
from admin.report.selection import Selection
from admin.report.takedown import NoticeError, not_ready, unusable
from admin.report.takedown_send import SendError
from admin.services.accounts import User
from admin.services.matches import STATUSES
from admin.services.query import fetchable
from admin.web import deps
from admin.web.api_spec import MAX_NOTE_CHARS, MAX_TITLE_CHARS, Operation, document
from admin.web.rate_limit import spend
from admin.web.takedowns import escalate_days
from matcher.errors import redis_errors
from matcher.sites.site_config import SiteConfig, SiteConfigError

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


def _limit() -> int:
    raw = request.args.get("limit", "")
    if raw == "":
        return DEFAULT_LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        abort(400, f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return int(raw)


def _json_object() -> dict[str, Any]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        abort(400, "the body must be a JSON object")
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        abort(400, "the body holds text that is not Unicode (a lone surrogate)")
    return body


def _string(body: dict[str, Any], name: str, limit: int, required: bool = False) -> str:
    value = body.get(name, "")
    if not isinstance(value, str):
        abort(400, f"{name} must be a string")
    if required and not value.strip():
        abort(400, f"{name} is required")
    if len(value) > limit:
        abort(400, f"{name} is longer than {limit:,} characters")
    return value


def _when(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def _work(doc: dict[str, Any]) -> dict[str, Any]:
    twin = doc.get("same_text_as")
    return {
        "id": str(doc["_id"]),
        "title": str(doc.get("title", "")),
        "author": str(doc.get("author") or ""),
        "source": str(doc.get("source") or ""),
        "registered_at": _when(doc.get("registered_at")),
        "same_text_as": str(twin) if twin else None,
        "near_twin": bool(twin and doc.get("near_twin")),
    }


def _match(doc: dict[str, Any], evidence: bool = False) -> dict[str, Any]:
    archive = doc.get("archive") or None
    out = {
        "id": str(doc["_id"]),
        "work_id": str(doc.get("work_id", "")),
        "work_title": str(doc.get("work_title", "")),
        "page_id": str(doc.get("page_id", "")),
        "site": str(doc.get("site", "")),
        "url": str(doc.get("url", "")),
        "score": float(doc.get("score", 0.0)),
        "status": str(doc.get("status", "new")),
        "active": bool(doc.get("active", True)),
        "methods": [str(m) for m in doc.get("methods", [])],
        "parts": [int(n) for n in doc.get("parts") or []],
        "siblings": [
            {
                "work_id": str(e.get("work_id", "")),
                "work_title": str(e.get("work_title", "")),
                "tie": bool(e.get("tie")),
            }
            for e in doc.get("siblings") or []
        ],
        "first_seen": _when(doc.get("first_seen")),
        "last_seen": _when(doc.get("last_seen")),
        "archive": None
        if not archive
        else {
            "sha256": str(archive.get("sha256", "")),
            "fetched_at": _when(archive.get("fetched_at")),
            "bytes": int(archive.get("bytes", 0)),
        },
    }
    if evidence:
        out["evidence"] = [
            {
                "work_span": [int(x) for x in e["work_span"]],
                "page_span": [int(x) for x in e["page_span"]],
                "chars": int(e.get("chars", 0)),
                "part": int(e.get("part", 1)),
            }
            for e in doc.get("evidence", [])
        ]
    return out


# shared parameters and responses -----------------------------------------------------


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema,
            "description": description}  # fmt: skip


def _path(name: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema or {"type": "string"}}


def _ok(schema: str, code: str = "200") -> dict[str, Any]:
    return {code: schema}


LIMIT = _query(
    "limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
    f"items per page (default {DEFAULT_LIMIT})",
)  # fmt: skip
MATCH_FILTERS = (
    _query("site", {"type": "string"}, "a site name"),
    _query("work", {"type": "string"}, "a work id"),
    _query("since", {"type": "string", "format": "date"}, "first seen on or after (UTC day)"),
    _query("until", {"type": "string", "format": "date"}, "first seen on or before (UTC day)"),
    _query("min_score", {"type": "number", "minimum": 0, "maximum": 1}, "lowest score"),
    _query("status", {"type": "string", "enum": list(STATUSES)}, "review status"),
)
MATCH_ID = _path("match_id")
SITE_NAME = _path("name")
WORK_ID = _path("work_id")


# works -------------------------------------------------------------------------------


@route(
    "GET", "/works", "viewer", "List and search works (newest first)",
    params=(
        _query("q", {"type": "string", "maxLength": 100}, "a literal part of title or source"),
        _query("after", {"type": "string"}, "the `next` of the previous page"),
        LIMIT,
    ),
    responses=_ok("WorkList"),
)  # fmt: skip
def list_works() -> Any:
    q = request.args.get("q", "").strip()
    if len(q) > 100:
        abort(400, "q is longer than 100 characters")
    after = request.args.get("after") or None
    page = deps.works().page(q, after=after, limit=_limit())
    return jsonify(works=[_work(w) for w in page.rows], next=page.next)


@route("GET", "/works/{work_id}", "viewer", "One work", params=(WORK_ID,),
       responses=_ok("Work"))  # fmt: skip
def get_work(work_id: str) -> Any:
    work = deps.works().get(work_id)
    if work is None:
        abort(404, "no such work")
    return jsonify(_work(work))


@route(
    "POST", "/works", "admin",
    "Register works: files (txt, md, html, zip) as multipart `files`, or one text as JSON; "
    "each is matched against the pages already crawled",
    body={
        "multipart/form-data": "WorkFiles",
        "application/json": "WorkText",
    },
    responses={"201": "Registered", "422": "Registered"},
)  # fmt: skip
def register_works() -> Any:
    works = deps.works()
    if request.mimetype == "multipart/form-data":
        files = request.files.getlist("files")
        if not files:
            abort(400, "send at least one file as `files`")
        added, problems = works.register_uploads(files)
    else:
        body = _json_object()
        title = _string(body, "title", MAX_TITLE_CHARS, required=True).strip()
        text = _string(body, "text", MAX_TEXT_CHARS, required=True)
        author = _string(body, "author", MAX_TITLE_CHARS)
        source = _string(body, "source", MAX_TITLE_CHARS).strip() or title
        added, problems = works.register_text(text, title=title, source=source, author=author)
    response = jsonify(added=[{"id": i, "title": t} for i, t in added], problems=problems)
    response.status_code = 201 if added else 422
    return response


@route("DELETE", "/works/{work_id}", "admin",
       "Remove a work and its index entries; its matches are archived with their reviews",
       params=(WORK_ID,), responses={"204": None})  # fmt: skip
def remove_work(work_id: str) -> Any:
    if not deps.works().remove(work_id):
        abort(404, "no such work")
    return Response(status=204)


# sites -------------------------------------------------------------------------------


@route("GET", "/sites", "viewer", "List the watched sites", responses=_ok("SiteList"))
def list_sites() -> Any:
    return jsonify(sites=[s.to_dict() for s in deps.sites().all_sites()])


@route("GET", "/sites/{name}", "viewer", "One site", params=(SITE_NAME,), responses=_ok("Site"))
def get_site(name: str) -> Any:
    return jsonify(deps.site_or_404(name).to_dict())


def _save_site(config: SiteConfig) -> dict[str, Any]:
    # as the admin's form does: schedules, authorised matches
    deps.sites().save(config, by=deps.current_user().username)
    return config.to_dict()


def _config(body: dict[str, Any]) -> SiteConfig:
    if "extra" in body:
        abort(400, "extra cannot be set through the API")
    try:
        return SiteConfig.from_dict(body)
    except (SiteConfigError, TypeError, ValueError) as exc:
        abort(400, str(exc))


@route("POST", "/sites", "admin", "Add a site (its schedule is saved at once)",
       body={"application/json": "Site"}, responses={"201": "Site"})  # fmt: skip
def create_site() -> Any:
    config = _config(_json_object())
    if deps.sites().get(config.name) is not None:
        abort(409, f"a site named {config.name} exists")
    response = jsonify(_save_site(config))
    response.status_code = 201
    return response


@route("PUT", "/sites/{name}", "admin", "Replace a site's configuration",
       params=(SITE_NAME,), body={"application/json": "SiteUpdate"},
       responses=_ok("Site"))  # fmt: skip
def replace_site(name: str) -> Any:
    site = deps.site_or_404(name)
    body = _json_object()
    if body.get("name", site.name) != site.name:
        abort(400, "the name in the body differs from the site's")
    return jsonify(_save_site(_config({**body, "name": site.name})))


@route("DELETE", "/sites/{name}", "admin", "Remove a site (its pages and matches stay)",
       params=(SITE_NAME,), responses={"204": None})  # fmt: skip
def delete_site(name: str) -> Any:
    deps.sites().remove(deps.site_or_404(name).name)
    return Response(status=204)


@route("POST", "/sites/{name}/crawl", "reviewer", "Crawl the site now",
       params=(SITE_NAME,), responses={"202": "Message"})  # fmt: skip
def crawl_site(name: str) -> Any:
    message = deps.sites().crawl(deps.site_or_404(name))
    response = jsonify(message=message)
    response.status_code = 202
    return response


# matches -----------------------------------------------------------------------------


@route(
    "GET", "/matches", "viewer",
    "List matches, newest first, with the admin's filters and keyset pages",
    params=(*MATCH_FILTERS, _query("after", {"type": "string"}, "the `next` of the previous page"),
            LIMIT),
    responses=_ok("MatchList"),
)  # fmt: skip
def list_matches() -> Any:
    try:
        filters = MatchFilters.parse(request.args)
        after = parse_cursor(request.args.get("after"))
    except FilterError as exc:
        abort(400, str(exc))
    page = deps.matches().page(filters, after=after, limit=_limit())
    return jsonify(matches=[_match(m) for m in page.rows], next=page.next)


@route("GET", "/matches/{match_id}", "viewer", "One match with its evidence spans",
       params=(MATCH_ID,), responses=_ok("MatchDetail"))  # fmt: skip
def get_match(match_id: str) -> Any:
    match = deps.matches().get(match_id)
    if match is None:
        abort(404, "no such match")
    return jsonify(_match(match, evidence=True))


@route("PUT", "/matches/{match_id}/status", "reviewer", "Set a match's review status",
       params=(MATCH_ID,), body={"application/json": "StatusChange"},
       responses=_ok("Match"))  # fmt: skip
def set_status(match_id: str) -> Any:
    body = _json_object()
    status = body.get("status")
    if status not in STATUSES:
        abort(400, f"status must be one of {', '.join(STATUSES)}")
    note = _string(body, "note", MAX_NOTE_CHARS)
    matches = deps.matches()
    if not matches.review(match_id, status, note, g.user.username):
        abort(404, "no such match")
    return jsonify(_match(matches.get(match_id)))


# query and reports -------------------------------------------------------------------


@route(
    "POST", "/query", "viewer",
    "Which works a text copies (or the text of a URL, fetched: reviewer role)",
    body={"application/json": "QueryRequest"}, responses=_ok("QueryResult"),
)  # fmt: skip
def query() -> Any:
    body = _json_object()
    text = _string(body, "text", MAX_TEXT_CHARS)
    url = _string(body, "url", 2000).strip()
    if url:
        if not g.user.can("reviewer"):
            abort(403, "fetching a URL needs the reviewer role")
        if not fetchable(url):
            abort(400, "the URL must start with http:// or https://")
        try:
            with deps.outside_lock():  # no other request waits on this fetch
                text = deps.query().fetch(url)
        except FetchError as exc:
            abort(422, exc.public)
    if not text.strip():
        abort(400, "give a text or a URL")
    results = [
        {
            "work_id": str(r["work_id"]),
            "title": str(r.get("work_title", "")),
            "score": float(r["score"]),
            "containment_work": float(r["containment_work"]),
            "containment_page": float(r["containment_page"]),
            "methods": [str(m) for m in r.get("methods", [])],
            "passages": [
                {"page_span": [int(x) for x in e["page_span"]], "chars": int(e.get("chars", 0))}
                for e in r.get("evidence", [])
            ],
        }
        for r in deps.query().match(text)
    ]
    return jsonify(results=results)


REPORT_FILTERS = (
    *MATCH_FILTERS[:5],
    _query("status", {"type": "string", "enum": [*STATUSES, "all"]},
           "review status, or all (default: the infringing ones)"),
)  # fmt: skip


@route("GET", "/reports/summary", "viewer", "Counts of the selected matches by site and work",
       params=REPORT_FILTERS, responses=_ok("Summary"))  # fmt: skip
def report_summary() -> Any:
    summary = deps.reports().summary(Selection.parse(request.args))
    return jsonify(
        total=summary.total,
        capped=summary.capped,
        by_site=[{"site": site, "matches": n} for site, n in summary.by_site],
        by_work=[{"work_id": w, "title": t, "matches": n} for w, t, n in summary.by_work],
    )


NOTICE_FILTERS = (
    SITE_NAME,
    *REPORT_FILTERS[1:],
    _query("unreviewed", {"type": "boolean"},
           "name the unreviewed (new) matches too, without review: a choice the notice "
           "records (default: false, the matches a person confirmed only)"),
)  # fmt: skip


@route("GET", "/reports/takedown/{name}", "viewer",
       "The takedown notice of a site's selected matches, as text, and whether it may be "
       "sent (not while the template's placeholders remain)",
       params=NOTICE_FILTERS, responses=_ok("Notice"))  # fmt: skip
def takedown_notice(name: str) -> Any:
    reports = deps.reports()
    selection = Selection.parse(request.args, site=name, notice=True)
    try:
        done = reports.notice(selection, html=False)
    except NoticeError as exc:
        abort(500, unusable(exc))
    why = not_ready(done)
    return jsonify(
        site=name, notice=done.text, matches=done.count, more=done.more, ready=why is None,
        not_ready=why, placeholders=list(done.placeholders), unreviewed=selection.unreviewed,
        unreviewed_named=done.unreviewed, unreviewed_left_out=reports.left_out(selection),
    )  # fmt: skip


DAYS = {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 3650}


@route("GET", "/takedowns", "viewer",
       "Takedowns per site and per hosting provider, and the URLs to escalate",
       params=(_query("days", DAYS, "still up this many days after the notice (default 7)"),),
       responses=_ok("Takedowns"))  # fmt: skip
def takedown_figures() -> Any:
    days = escalate_days()
    found = deps.takedowns().figures(days)
    out = {scope: [f.as_dict() for f in rows] for scope, rows in found.items()}
    for rows in out.values():
        for row in rows:
            row["escalate"] = [{**e, "sent_at": _when(e["sent_at"])} for e in row["escalate"]]
    return jsonify(days=days, **out)


@route("POST", "/takedowns/{name}", "reviewer",
       "Send a site's takedown notice (email: true, to its contact) or mark it sent, and "
       "recheck every URL it names; a 409 with the reason when it cannot be (placeholders "
       "left, nothing to name)", params=NOTICE_FILTERS,
       body={"application/json": "SendNotice"}, responses=_ok("Sent", "201"))  # fmt: skip
def send_takedown(name: str) -> Any:
    body = _json_object()
    email = body.get("email", False)
    if not isinstance(email, bool):
        abort(400, "email must be true or false")
    try:
        sent = deps.takedowns().send(
            Selection.parse(request.args, site=name, notice=True), email=email, by=g.user.username
        )
    except SendError as exc:
        abort(409, str(exc))
    except NoticeError as exc:
        abort(500, unusable(exc))
    response = jsonify(
        notice_id=str(sent.notice_id), site=sent.site, urls=sent.urls, via=sent.via, to=sent.to,
        provider=sent.provider, unreviewed_named=sent.unreviewed,
    )  # fmt: skip
    response.status_code = 201
    return response


@route("GET", "/openapi.json", None, "This document (no token needed)", responses=_ok("Any"))
def openapi() -> Any:
    return jsonify(document(OPERATIONS, request.host_url.rstrip("/")))
