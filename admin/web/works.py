"""Works: upload (txt/md/html/zip, many at once), list with search, detail, removal."""

from __future__ import annotations

import tempfile
from pathlib import Path, PurePath
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

from admin.reading import DEFAULT_MAX_BYTES, iter_work_files
from admin.web.security import requires
from matcher.errors import MatcherError
from matcher.store import object_id

bp = Blueprint("works", __name__, url_prefix="/works")
LIST_LIMIT = 200
MAX_SEARCH_CHARS = 100


def _services() -> Any:
    from admin.web.app import services

    return services()


@bp.get("/")
def index() -> Any:
    ops = _services().ctx.ops
    q = request.args.get("q", "").strip()[:MAX_SEARCH_CHARS]
    works = ops.search_works(text=q, limit=LIST_LIMIT)
    counts = ops.infringing_by_work(work_ids=[w["_id"] for w in works])
    return render_template("works.html", works=works, q=q, counts=counts, limit=LIST_LIMIT)


@bp.get("/<work_id>")
def detail(work_id: str) -> Any:
    ops = _services().ctx.ops
    work = ops.store.get_work(work_id, {"text": 0})
    if work is None:
        abort(404, "no such work")
    matches = ops.list_matches(limit=500, work_id=work_id)
    first = work.get("same_text_as")
    same_as = ops.store.get_work(str(first), {"title": 1}) if first else None
    twins = ops.store.twins(work["_id"])
    return render_template("work.html", work=work, matches=matches, same_as=same_as, twins=twins)


@bp.post("/upload")
@requires("admin")
def upload() -> Any:
    """Register every uploaded file (zip archives unpacked); JSON for the progress script."""
    files = request.files.getlist("files")
    if not files:
        abort(400, "choose at least one file")
    added, problems = register_uploads(files)
    message = f"{len(added)} work(s) registered" + (
        f"; {len(problems)} skipped: " + "; ".join(problems) if problems else ""
    )
    if request.accept_mimetypes.best == "application/json":
        return jsonify(
            message=message, added=[{"id": i, "title": t} for i, t in added], problems=problems
        ), (200 if added or not problems else 400)
    flash(message, "error" if problems else "info")
    return redirect(url_for("works.index"))


def register_uploads(files: list[Any]) -> tuple[list[tuple[str, str]], list[str]]:
    """Register every uploaded file (zip archives unpacked), each matched against the pages
    already crawled; ``([(id, title)], [problem])``."""
    s = _services()
    added, problems = [], []
    with tempfile.TemporaryDirectory(prefix="fptrack-upload-") as tmp:
        paths = []
        for n, f in enumerate(files):
            name = PurePath((f.filename or f"upload-{n}").replace("\\", "/")).name or f"upload-{n}"
            folder = Path(tmp, str(n))
            folder.mkdir()
            path = folder / name
            f.save(path)
            paths.append(path)
        for work in iter_work_files(paths, DEFAULT_MAX_BYTES):
            if work.error:
                problems.append(work.error)
                continue
            title = PurePath(work.name).stem
            try:
                work_id = s.ctx.engine.add_work(work.text, title=title, source=work.name)
            except MatcherError as exc:
                problems.append(f"{work.name}: {exc}")
                continue
            added.append((work_id, title))
            note = s.ctx.ops.same_text_note(work_id)
            if note:
                problems.append(f"{work.name}: {note}")
            s.dispatch.work_added(work_id)
    return added, problems


@bp.post("/<work_id>/remove")
@requires("admin")
def remove(work_id: str) -> Any:
    s = _services()
    object_id(work_id, "work id")
    if not s.ctx.engine.remove_work(work_id):
        abort(404, "no such work")
    flash("work removed, with its index entries and unreviewed matches")
    return redirect(url_for("works.index"))
