"""Query: paste a text (or give a URL) and see at once which works it copies, with evidence."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, g, render_template, request

from admin.fetch import FetchError
from admin.services.query import fetchable
from admin.web import deps
from admin.web.highlight import excerpt
from matcher.errors import MatcherError, Retryable

bp = Blueprint("query", __name__, url_prefix="/query")
MAX_QUERY_CHARS = 2_000_000
PASSAGES_SHOWN = 10


def fetched(url: str) -> str:
    """The text at ``url`` for a query, by the page and the API alike: the reviewer role is
    needed (403), the URL must be http(s) (400), and the fetch runs outside the embedded
    admin's lock; :class:`~admin.fetch.FetchError` when it fails."""
    if not g.user.can("reviewer"):
        abort(403, "fetching a URL needs the reviewer role")
    if not fetchable(url):
        abort(400, "the URL must start with http:// or https://")
    with deps.outside_lock():  # no other request waits on this fetch
        return deps.query().fetch(url)


@bp.route("/", methods=["GET", "POST"])
def index() -> Any:
    """Anyone logged in may query a text; fetching a URL needs the reviewer role."""
    if request.method == "GET":
        return render_template("query.html", text="", url="", results=None, error="")
    text = request.form.get("text", "")
    url = request.form.get("url", "").strip()
    error = ""
    if url:
        try:
            text = fetched(url)
        except FetchError as exc:  # one message for every failure: no probing of the network
            return render_template("query.html", text="", url=url, results=None, error=exc.public)
    if not text.strip():
        abort(400, "paste a text or give a URL")
    if len(text) > MAX_QUERY_CHARS:
        abort(400, f"the text is longer than {MAX_QUERY_CHARS:,} characters")
    try:
        records = deps.query().match(text)
    except Retryable:
        raise  # a server does not answer: the application's 503 (admin.web.app.away)
    except MatcherError as exc:
        return render_template("query.html", text=text, url=url, results=None, error=str(exc))
    results = [
        {
            "work_id": str(r["work_id"]),
            "title": r.get("work_title", ""),
            "source": r.get("work_source", ""),
            "score": r["score"],
            "containment_work": r["containment_work"],
            "containment_page": r["containment_page"],
            "methods": r.get("methods", []),
            "passages": [
                excerpt(text, *e["page_span"]) for e in r.get("evidence", [])[:PASSAGES_SHOWN]
            ],
        }
        for r in records
    ]
    return render_template("query.html", text=text, url=url, results=results, error=error)
