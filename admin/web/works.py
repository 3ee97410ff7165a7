"""Works: upload (txt/md/html/zip, many at once), list with search, detail, removal."""

from __future__ import annotations

from typing import Any

from flask import (
    Blueprint,
    abort,
    flash,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)

from admin.registration import Registered, register_uploads
from admin.web import deps
from admin.web.security import requires
from matcher.store import object_id

bp = Blueprint("works", __name__, url_prefix="/works")
LIST_LIMIT = 200
MAX_SEARCH_CHARS = 100


def upload_works(files: list[Any]) -> Registered:
    """Register uploaded files (:func:`admin.registration.register_uploads`), each matched
    against the pages already crawled through the dispatch."""
    s = deps.services()
    return register_uploads(s.ctx.engine, s.ctx.store, files, added=s.dispatch.work_added)


@bp.get("/")
def index() -> Any:
    store = deps.store()
    q = request.args.get("q", "").strip()[:MAX_SEARCH_CHARS]
    works = store.works.search_works(text=q, limit=LIST_LIMIT)
    counts = store.dashboard.infringing_by_work(work_ids=[w["_id"] for w in works])
    return render_template("works.html", works=works, q=q, counts=counts, limit=LIST_LIMIT)


@bp.get("/<work_id>")
def detail(work_id: str) -> Any:
    store = deps.store()
    work = store.works.get_work(work_id, {"text": 0})
    if work is None:
        abort(404, "no such work")
    matches = store.matches.list_matches(limit=500, work_id=work_id)
    first = work.get("same_text_as")
    same_as = store.works.get_work(str(first), {"title": 1}) if first else None
    twins = store.twins.twins(work["_id"])
    return render_template("work.html", work=work, matches=matches, same_as=same_as, twins=twins)


@bp.post("/upload")
@requires("admin")
def upload() -> Any:
    """Register every uploaded file (zip archives unpacked); JSON for the progress script."""
    files = request.files.getlist("files")
    if not files:
        abort(400, "choose at least one file")
    added, problems = upload_works(files)
    message = f"{len(added)} work(s) registered" + (
        f"; {len(problems)} skipped: " + "; ".join(problems) if problems else ""
    )
    if request.accept_mimetypes.best == "application/json":
        return jsonify(
            message=message, added=[{"id": i, "title": t} for i, t in added], problems=problems
        ), (200 if added or not problems else 400)
    flash(message, "error" if problems else "info")
    return redirect(url_for("works.index"))


@bp.post("/<work_id>/remove")
@requires("admin")
def remove(work_id: str) -> Any:
    s = deps.services()
    object_id(work_id, "work id")
    if not s.ctx.engine.remove_work(work_id):
        abort(404, "no such work")
    flash("work removed, with its index entries; its matches are archived with their reviews")
    return redirect(url_for("works.index"))
