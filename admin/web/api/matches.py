"""The API's matches: list them with the admin's filters and keyset pages, read one with its
evidence spans, set one's review status."""

from __future__ import annotations

from typing import Any

from flask import abort, g, jsonify, request

from admin.filters import FilterError, MatchFilters, parse_cursor
from admin.services.matches import STATUSES
from admin.web import deps
from admin.web.api.blueprint import (
    AFTER,
    LIMIT,
    MATCH_FILTERS,
    MATCH_ID,
    json_object,
    limit_arg,
    ok,
    route,
    string_field,
    when,
)
from admin.web.api.spec import MAX_NOTE_CHARS


def match_json(doc: dict[str, Any], evidence: bool = False) -> dict[str, Any]:
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
        "first_seen": when(doc.get("first_seen")),
        "last_seen": when(doc.get("last_seen")),
        "archive": None
        if not archive
        else {
            "sha256": str(archive.get("sha256", "")),
            "fetched_at": when(archive.get("fetched_at")),
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


@route(
    "GET", "/matches", "viewer",
    "List matches, newest first, with the admin's filters and keyset pages",
    params=(*MATCH_FILTERS, AFTER, LIMIT),
    responses=ok("MatchList"),
)  # fmt: skip
def list_matches() -> Any:
    try:
        filters = MatchFilters.parse(request.args)
        after = parse_cursor(request.args.get("after"))
    except FilterError as exc:
        abort(400, str(exc))
    page = deps.matches().page(filters, after=after, limit=limit_arg())
    return jsonify(matches=[match_json(m) for m in page.rows], next=page.next)


@route("GET", "/matches/{match_id}", "viewer", "One match with its evidence spans",
       params=(MATCH_ID,), responses=ok("MatchDetail"))  # fmt: skip
def get_match(match_id: str) -> Any:
    match = deps.matches().get(match_id)
    if match is None:
        abort(404, "no such match")
    return jsonify(match_json(match, evidence=True))


@route("PUT", "/matches/{match_id}/status", "reviewer", "Set a match's review status",
       params=(MATCH_ID,), body={"application/json": "StatusChange"},
       responses=ok("Match"))  # fmt: skip
def set_status(match_id: str) -> Any:
    body = json_object()
    status = body.get("status")
    if status not in STATUSES:
        abort(400, f"status must be one of {', '.join(STATUSES)}")
    note = string_field(body, "note", MAX_NOTE_CHARS)
    matches = deps.matches()
    if not matches.review(match_id, status, note, g.user.username):
        abort(404, "no such match")
    return jsonify(match_json(matches.get(match_id)))
