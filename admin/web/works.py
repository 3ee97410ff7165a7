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

from admin.web import deps
from admin.web.security import requires

bp = Blueprint("works", __name__, url_prefix="/works")
LIST_LIMIT = 200
MAX_SEARCH_CHARS = 100


@bp.get("/")
def index() -> Any:
    q = request.args.get("q", "").strip()[:MAX_SEARCH_CHARS]
    works, counts = deps.works().search(q, LIST_LIMIT)
    return render_template("works.html", works=works, q=q, counts=counts, limit=LIST_LIMIT)


@bp.get("/<work_id>")
def detail(work_id: str) -> Any:
    found = deps.works().detail(work_id)
    if found is None:
        abort(404, "no such work")
    return render_template(
        "work.html", work=found.work, matches=found.matches, same_as=found.same_as,
        twins=found.twins,
    )  # fmt: skip


@bp.post("/upload")
@requires("admin")
def upload() -> Any:
    """Register every uploaded file (zip archives unpacked); JSON for the progress script."""
    files = request.files.getlist("files")
    if not files:
        abort(400, "choose at least one file")
    added, problems = deps.works().register_uploads(files)
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
    if not deps.works().remove(work_id):
        abort(404, "no such work")
    flash("work removed, with its index entries; its matches are archived with their reviews")
    return redirect(url_for("works.index"))
