"""The evidence bundle of a selection: a zip of its matches' archived exchanges (WARC),
with manifests that let a recipient check them, and for a takedown the notice. Used by the
admin's reports pages."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from admin.report.selection import MAX_EXPORT_ROWS, Selection, SelectionTooLarge, find
from matcher.archive import Archive, ArchiveError
from matcher.store.operations import Operations

MAX_EVIDENCE_FILES = 500
"""Archived exchanges bundled in one evidence zip at most (a larger selection is refused)."""


def evidence_zip(
    ops: Operations, archive: Archive, selection: Selection, notice: str = ""
) -> bytes:
    """The selected matches' archived exchanges: one WARC file each (once per exchange),
    ``manifest.txt`` (``sha256sum -c`` checks the files against it), ``manifest.json`` (each
    file's page URL, works, fetch time and size) and, for a takedown, ``notice.txt``. More than
    :data:`MAX_EVIDENCE_FILES` archived exchanges is a :class:`SelectionTooLarge`."""
    rows = find(ops, selection, MAX_EXPORT_ROWS + 1, ("url", "site", "work_title", "archive"))
    files: dict[str, dict[str, Any]] = {}
    for row in rows:
        ref = row.get("archive")
        if not ref:
            continue
        entry = files.setdefault(
            ref["sha256"],
            {
                "file": f"{ref['sha256']}.warc.gz",
                "sha256": ref["sha256"],
                "url": row.get("url", ""),
                "site": row.get("site", ""),
                "fetched_at": ref.get("fetched_at"),
                "bytes": ref.get("bytes"),
                "works": [],
            },
        )
        entry["works"].append(row.get("work_title", ""))
        if len(files) > MAX_EVIDENCE_FILES:
            raise SelectionTooLarge(
                f"more than {MAX_EVIDENCE_FILES} archived pages: narrow the selection"
            )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as bundle:
        for entry in files.values():
            try:
                bundle.writestr(entry["file"], archive.get(entry["sha256"]))
            except ArchiveError:
                entry["missing"] = True
        listed = [e for e in files.values() if not e.get("missing")]
        bundle.writestr("manifest.txt", "".join(f"{e['sha256']}  {e['file']}\n" for e in listed))
        manifest = [
            {**e, "fetched_at": e["fetched_at"].isoformat() if e["fetched_at"] else None}
            for e in files.values()
        ]
        bundle.writestr("manifest.json", json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
        if notice:
            bundle.writestr("notice.txt", notice)
    return out.getvalue()
