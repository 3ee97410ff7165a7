"""The match list (filters, pages, bulk review) and one match's evidence, side by side."""

from __future__ import annotations

from typing import Any

from flask import (
    Blueprint,
    Response,
    abort,
    flash,
    g,
    redirect,
    render_template,
    request,
    url_for,
)

from admin.filters import PAGE_SIZE, FilterError, MatchFilters, cursor_of, parse_cursor
from admin.human import score_lines
from admin.web import deps
from admin.web.highlight import excerpt, highlight
from admin.web.security import requires
from matcher.evidence.archive import ArchiveError
from matcher.matching.verify import DOCUMENT_MU, MICROBLOG_K
from matcher.store import STATUSES, object_id

bp = Blueprint("matches", __name__, url_prefix="/matches")
MAX_BULK = 10_000


def _filters() -> MatchFilters:
    try:
        return MatchFilters.parse(request.values)
    except FilterError as exc:
        abort(400, str(exc))


@bp.get("/")
def index() -> Any:
    filters = _filters()
    store = deps.store()
    try:
        after = parse_cursor(request.args.get("after"))
    except FilterError as exc:
        abort(400, str(exc))
    rows = list(
        store.matches.find_matches(
            limit=PAGE_SIZE + 1, without=("evidence", "scores"), after=after, **filters.criteria()
        )
    )
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    next_args = {**filters.args(), "after": cursor_of(rows[-1])} if more and rows else None
    return render_template(
        "matches.html",
        rows=rows,
        filters=filters,
        statuses=STATUSES,
        sites=[s.name for s in store.sites.list_sites()],
        next_args=next_args,
        first_page=not request.args.get("after"),
    )


@bp.get("/<match_id>")
def detail(match_id: str) -> Any:
    store = deps.store()
    match = store.matches.match(match_id=match_id)
    if match is None:
        abort(404, "no such match")
    work = store.works.get_work(str(match["work_id"]), {"title": 1, "source": 1})
    page = store.pages.get_page(
        str(match["page_id"]),
        {
            "text": 1, "url": 1, "fetched_at": 1, "title": 1, "considered": 1, "split": 1,
            "archive": 1, "gone": 1, "parts": 1,
        },
    )  # fmt: skip
    evidence = match.get("evidence", [])
    window = store.works.work_window(match["work_id"], [e["work_span"] for e in evidence])
    work_text, shift = window.text, window.offset
    page_text = store.pages.download_text(page) if page else ""
    work_spans = [
        (e["work_span"][0] - shift, e["work_span"][1] - shift, i) for i, e in enumerate(evidence, 1)
    ]
    page_spans = [(e["page_span"][0], e["page_span"][1], i) for i, e in enumerate(evidence, 1)]
    passages = [
        {
            "number": i,
            "chars": e.get("chars", 0),
            "work": excerpt(work_text, e["work_span"][0] - shift, e["work_span"][1] - shift),
            "segment": (e.get("segment") or {}).get("title", ""),
            "page": excerpt(page_text, *e["page_span"]),
        }
        for i, e in enumerate(evidence, 1)
    ]
    kept = match.get("archive") or {}
    latest = (page or {}).get("archive") or {}
    return render_template(
        "match.html",
        match=match,
        kept=kept,
        changed_since=bool(kept and latest and latest.get("sha256") != kept.get("sha256")),
        work=work,
        twins=[t for t in store.twins.twins(match["work_id"]) if not t.get("near_twin")],
        page=page,
        work_html=highlight(work_text, work_spans, "work"),
        page_html=highlight(page_text, page_spans, "page"),
        passages=passages,
        statuses=STATUSES,
        scores=score_lines(match.get("scores") or {}, k=MICROBLOG_K, mu=DOCUMENT_MU),
    )


@bp.get("/<match_id>/archive.warc.gz")
def archived(match_id: str) -> Any:
    """The HTTP exchange the match was first found in, as a gzipped WARC file."""
    match = deps.store().matches.match(match_id=match_id)
    if match is None:
        abort(404, "no such match")
    sha256 = (match.get("archive") or {}).get("sha256")
    archive = deps.services().ctx.archive
    if not sha256 or archive is None:
        abort(404, "no archived exchange for this match")
    try:
        data = archive.get(sha256)
    except ArchiveError:
        abort(404, "the archived exchange is missing")
    name = f"fptrack-match-{match['_id']}-{sha256[:12]}.warc.gz"
    return Response(
        data,
        mimetype="application/warc",
        headers={"Content-Disposition": f'attachment; filename="{name}"', "X-SHA-256": sha256},
    )


@bp.post("/<match_id>/status")
@requires("reviewer")
def set_status(match_id: str) -> Any:
    status = request.form.get("status", "")
    if status not in STATUSES:
        abort(400, f"status must be one of {', '.join(STATUSES)}")
    note = request.form.get("note", "")[:2000]
    if not deps.store().matches.set_status(match_id, status, note, g.user.username):
        abort(404, "no such match")
    flash(f"status set to {status}")
    return redirect(url_for("matches.detail", match_id=match_id))


@bp.post("/bulk")
@requires("reviewer")
def bulk() -> Any:
    """Set the status (``new_status``) of the ticked matches (``ids``), or with
    ``scope=filtered`` of every match the filters in the query string select."""
    status = request.form.get("new_status", "")
    if status not in STATUSES:
        abort(400, f"status must be one of {', '.join(STATUSES)}")
    note = request.form.get("note", "")[:2000]
    store = deps.store()
    try:
        filters = MatchFilters.parse(request.args)
    except FilterError as exc:
        abort(400, str(exc))
    if request.form.get("scope") == "filtered":
        ids = store.matches.match_ids(limit=MAX_BULK + 1, **filters.criteria())
        if len(ids) > MAX_BULK:
            abort(400, f"more than {MAX_BULK:,} matches: narrow the filters")
    else:
        ids = request.form.getlist("ids")
        for match_id in ids:
            object_id(match_id, "match id")
    changed = sum(store.matches.set_status(i, status, note, g.user.username) for i in ids)
    flash(f"{changed} match(es) set to {status}")
    return redirect(url_for("matches.index", **filters.args()))
