"""The API's works: list and search them, read one, register them, remove one."""

from __future__ import annotations

from typing import Any

from flask import Response, abort, jsonify, request

from admin.web import deps
from admin.web.api.blueprint import (
    AFTER,
    LIMIT,
    MAX_TEXT_CHARS,
    WORK_ID,
    json_object,
    limit_arg,
    ok,
    query_param,
    route,
    string_field,
    when,
)
from admin.web.api.spec import MAX_TITLE_CHARS


def work_json(doc: dict[str, Any]) -> dict[str, Any]:
    twin = doc.get("same_text_as")
    return {
        "id": str(doc["_id"]),
        "title": str(doc.get("title", "")),
        "author": str(doc.get("author") or ""),
        "source": str(doc.get("source") or ""),
        "registered_at": when(doc.get("registered_at")),
        "same_text_as": str(twin) if twin else None,
        "near_twin": bool(twin and doc.get("near_twin")),
    }


@route(
    "GET", "/works", "viewer", "List and search works (newest first)",
    params=(
        query_param("q", {"type": "string", "maxLength": 100}, "a literal part of title or source"),
        AFTER,
        LIMIT,
    ),
    responses=ok("WorkList"),
)  # fmt: skip
def list_works() -> Any:
    q = request.args.get("q", "").strip()
    if len(q) > 100:
        abort(400, "q is longer than 100 characters")
    after = request.args.get("after") or None
    page = deps.works().page(q, after=after, limit=limit_arg())
    return jsonify(works=[work_json(w) for w in page.rows], next=page.next)


@route("GET", "/works/{work_id}", "viewer", "One work", params=(WORK_ID,),
       responses=ok("Work"))  # fmt: skip
def get_work(work_id: str) -> Any:
    work = deps.works().get(work_id)
    if work is None:
        abort(404, "no such work")
    return jsonify(work_json(work))


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
        body = json_object()
        title = string_field(body, "title", MAX_TITLE_CHARS, required=True).strip()
        text = string_field(body, "text", MAX_TEXT_CHARS, required=True)
        author = string_field(body, "author", MAX_TITLE_CHARS)
        source = string_field(body, "source", MAX_TITLE_CHARS).strip() or title
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
