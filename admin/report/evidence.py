"""The evidence bundle of a selection: a zip of its matches' archived exchanges (WARC),
with manifests that let a recipient check them, the trusted timestamps that cover them
(:mod:`matcher.evidence.timestamps`: each batch list and token once, the TSA's CA certificates, and
``VERIFY.txt``, how to check it all with ``sha256sum`` and ``openssl ts -verify``, without
fptrack), and for a takedown the notice. Used by the admin's reports pages."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from admin.evidence_check import BUNDLE_CA
from admin.report.selection import MAX_EXPORT_ROWS, Selection, SelectionTooLarge, find
from matcher.evidence.archive import Archive, ArchiveError
from matcher.store import Store

MAX_EVIDENCE_FILES = 500
"""Archived exchanges bundled in one evidence zip at most (a larger selection is refused)."""


def evidence_zip(
    store: Store,
    archive: Archive,
    selection: Selection,
    notice: str = "",
    ca_pem: bytes | None = None,
) -> bytes:
    """The selected matches' archived exchanges: one WARC file each (once per exchange),
    ``manifest.txt`` (``sha256sum -c`` checks the files against it), ``manifest.json`` (each
    file's page URL, works, fetch time, size and timestamp), the timestamps' lists and tokens
    under ``timestamps/``, ``ca_pem`` (the TSA's CA certificates) as ``tsa-ca.pem``,
    ``VERIFY.txt`` and, for a takedown, ``notice.txt``. More than
    :data:`MAX_EVIDENCE_FILES` archived exchanges is a :class:`SelectionTooLarge`."""
    rows = find(store, selection, MAX_EXPORT_ROWS + 1, ("url", "site", "work_title", "archive"))
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
    stamps = store.stamps.stamps_of(files)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as bundle:
        for entry in files.values():
            try:
                bundle.writestr(entry["file"], archive.get(entry["sha256"]))
            except ArchiveError:
                entry["missing"] = True
        batches: dict[str, dict[str, Any]] = {}
        for entry in files.values():
            batch = stamps.get(entry["sha256"])
            entry["timestamp"] = None if batch is None else _stamp_entry(batch)
            if batch is not None and batch["_id"] not in batches:
                batches[batch["_id"]] = entry["timestamp"]
                bundle.writestr(entry["timestamp"]["list"], batch["list"])
                bundle.writestr(entry["timestamp"]["token"], bytes(batch["token"]))
        if ca_pem:
            bundle.writestr(BUNDLE_CA, ca_pem)
        bundle.writestr("VERIFY.txt", verify_page(list(batches.values()), bool(ca_pem)))
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


def _stamp_entry(batch: dict[str, Any]) -> dict[str, Any]:
    """A file's ``timestamp`` in ``manifest.json``: its batch, the token's time and TSA, and
    where the bundle holds the list and the token."""
    name = batch["_id"]
    return {
        "batch": name,
        "time": batch["gen_time"].isoformat() if batch.get("gen_time") else None,
        "tsa": batch.get("tsa", ""),
        "list": f"timestamps/{name}.txt",
        "token": f"timestamps/{name}.tsr",
    }


def verify_page(batches: list[dict[str, Any]], with_ca: bool) -> str:
    """``VERIFY.txt``: how a recipient checks the bundle with common tools."""
    lines = [
        "How to check this evidence (no fptrack needed)",
        "",
        "Each .warc.gz file is a web page exactly as it was fetched: the request and the",
        "response, in the web archive format (WARC, ISO 28500). Its name is its SHA-256.",
        "",
        "1. The files are intact:",
        "",
        "       sha256sum -c manifest.txt",
        "",
    ]
    if not batches:
        lines += [
            "2. No trusted timestamp covers these files (no Time-Stamp Authority was set, or",
            "   the files were not stamped yet): the files prove what was fetched, and the",
            "   fetch times in manifest.json are fptrack's own clock.",
        ]
        return "\n".join(lines) + "\n"
    ca = BUNDLE_CA if with_ca else "THE-TSA-CA.pem"
    lines += [
        "2. When they existed. A Time-Stamp Authority (TSA, RFC 3161) signed, at the time",
        "   its token gives, the SHA-256 of a list: timestamps/NAME.txt names one file per",
        "   line by its SHA-256, and timestamps/NAME.tsr is the TSA's signed token over",
        "   that list. manifest.json gives each file's list and token. For each file F:",
        "",
        '       grep -x "$(sha256sum F | cut -c1-64)" timestamps/NAME.txt',
        "",
        "   prints the file's digest when the list names it. Then check the token:",
        "",
    ]
    for batch in batches:
        lines += [
            f"       openssl ts -verify -data {batch['list']} -in {batch['token']} -CAfile {ca}",
            f"       openssl ts -reply -in {batch['token']} -text      (stamped {batch['time']})",
            "",
        ]
    lines += [
        '   "Verification: OK" means the TSA signed exactly that list, so every file it names',
        "   existed by the token's time. "
        + (
            f"{BUNDLE_CA} is a copy of the TSA's CA certificate: compare it with the one the"
            " TSA publishes, or give your own copy to -CAfile."
            if with_ca
            else "Give -CAfile the CA certificate the TSA publishes."
        ),
        "",
        "3. With fptrack: fptrack evidence verify THIS-BUNDLE.zip --ca THE-TSA-CA.pem",
        "   (the CA certificate the TSA publishes). Without one the tokens are not",
        '   checked: it says "no trusted timestamp", exit status 3.',
    ]
    if with_ca:
        lines += [
            f"   --trust-bundle-ca checks them against {BUNDLE_CA} instead, which shows only",
            "   that they match that copy.",
        ]
    return "\n".join(lines) + "\n"
