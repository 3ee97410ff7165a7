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

from admin.filters import PAGE_SIZE, FilterError, MatchFilters, parse_cursor
from admin.human import score_lines
from admin.services.matches import STATUSES, BulkTooLarge
from admin.web import deps
from admin.web.highlight import excerpt, highlight
from admin.web.security import requires
from matcher.evidence.archive import ArchiveError
from matcher.matching.verify import DOCUMENT_MU, MICROBLOG_K

bp = Blueprint("matches", __name__, url_prefix="/matches")


def _filters() -> MatchFilters:
    try:
        return MatchFilters.parse(request.values)
    except FilterError as exc:
        abort(400, str(exc))


@bp.get("/")
def index() -> Any:
    filters = _filters()
    try:
        after = parse_cursor(request.args.get("after"))
    except FilterError as exc:
        abort(400, str(exc))
    page = deps.matches().page(filters, after=after, limit=PAGE_SIZE)
    next_args = {**filters.args(), "after": page.next} if page.next else None
    return render_template(
        "matches.html",
        rows=page.rows,
        filters=filters,
        statuses=STATUSES,
        sites=deps.sites().names(),
        next_args=next_args,
        first_page=not request.args.get("after"),
    )


@bp.get("/<match_id>")
def detail(match_id: str) -> Any:
    found = deps.matches().evidence(match_id)
    if found is None:
        abort(404, "no such match")
    match, page, work_text, page_text = found.match, found.page, found.work_text, found.page_text
    evidence = match.get("evidence", [])
    shift = work_text.offset
    work_spans = [
        (e["work_span"][0] - shift, e["work_span"][1] - shift, i) for i, e in enumerate(evidence, 1)
    ]
    page_spans = [(e["page_span"][0], e["page_span"][1], i) for i, e in enumerate(evidence, 1)]
    passages = [
        {
            "number": i,
            "chars": e.get("chars", 0),
            "work": excerpt(work_text.text, e["work_span"][0] - shift, e["work_span"][1] - shift),
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
        work=found.work,
        twins=found.twins,
        page=page,
        work_html=highlight(work_text.text, work_spans, "work"),
        page_html=highlight(page_text, page_spans, "page"),
        passages=passages,
        statuses=STATUSES,
        scores=score_lines(match.get("scores") or {}, k=MICROBLOG_K, mu=DOCUMENT_MU),
    )


@bp.get("/<match_id>/archive.warc.gz")
def archived(match_id: str) -> Any:
    """The HTTP exchange the match was first found in, as a gzipped WARC file."""
    match = deps.matches().get(match_id)
    if match is None:
        abort(404, "no such match")
    try:
        data = deps.matches().archived_exchange(match)
    except ArchiveError:
        abort(404, "the archived exchange is missing")
    if data is None:
        abort(404, "no archived exchange for this match")
    sha256 = match["archive"]["sha256"]
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
    if not deps.matches().review(match_id, status, note, g.user.username):
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
    try:
        filters = MatchFilters.parse(request.args)
    except FilterError as exc:
        abort(400, str(exc))
    matches, by = deps.matches(), g.user.username
    if request.form.get("scope") == "filtered":
        try:
            changed = matches.review_selected(filters, status, note, by)
        except BulkTooLarge as exc:
            abort(400, str(exc))
    else:
        changed = matches.review_ticked(request.form.getlist("ids"), status, note, by)
    flash(f"{changed} match(es) set to {status}")
    return redirect(url_for("matches.index", **filters.args()))
