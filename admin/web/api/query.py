"""The API's query: which works a text copies, or the text of a URL, fetched (the reviewer
role; :meth:`admin.services.query.QueryService.fetch`, as the admin's query page does)."""

from __future__ import annotations

from typing import Any

from flask import abort, jsonify

from admin.fetch import FetchError
from admin.web import deps
from admin.web.api.blueprint import MAX_TEXT_CHARS, json_object, ok, route, string_field
from admin.web.query import fetched


@route(
    "POST", "/query", "viewer",
    "Which works a text copies (or the text of a URL, fetched: reviewer role)",
    body={"application/json": "QueryRequest"}, responses=ok("QueryResult"),
)  # fmt: skip
def query() -> Any:
    body = json_object()
    text = string_field(body, "text", MAX_TEXT_CHARS)
    url = string_field(body, "url", 2000).strip()
    if url:
        try:
            text = fetched(url)
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
