"""``fptrack evidence verify``: the checks of an archived WARC file and its trusted timestamp,
offline (nothing is asked of the TSA).

For each file: its SHA-256 and every record's digests (:func:`matcher.archive.verify`); that
a batch list names it (:func:`matcher.timestamps.list_digests`); that the batch's token verifies
over that list against the TSA's CA certificates: signature, chain, key usage
(:func:`matcher.timestamps.check`). The file, list and token come from an evidence bundle
(:func:`check_bundle`: everything inside the zip, the store not needed) or from the archive
and the store (:func:`check_stored`: a WARC file given by path, or a match's exchange).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import cryptography.x509

from matcher import timestamps
from matcher.archive import ArchiveError, sha256_hex
from matcher.archive import verify as verify_warc

Roots = list[cryptography.x509.Certificate]
BUNDLE_CA = "tsa-ca.pem"
"""The TSA's CA certificates in an evidence bundle (a copy of ``FPTRACK_TSA_CA``)."""
MAX_BUNDLE_MEMBER = 64 << 20
"""The largest member of a bundle that is read (a WARC file, a list or a token)."""


class BundleError(Exception):
    """A file is not an evidence bundle fptrack can read."""


@dataclass
class Checked:
    """One file's checks: its name, what failed ("" none), and the token's time and TSA."""

    name: str
    problems: list[str] = field(default_factory=list)
    time: datetime | None = None
    tsa: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        if self.ok:
            when = self.time.isoformat() if self.time else "?"
            return f"OK    {self.name}: intact, stamped {when} by {self.tsa or 'the TSA'}"
        return f"FAIL  {self.name}: {'; '.join(self.problems)}"


class Batches:
    """Each batch's list read and token checked once, however many files it covers (a
    bundle's files share a few tokens): ``(the digests listed, the token's time)``, or the
    reason it failed."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self._done: dict[tuple[bytes, bytes], tuple[set[str], datetime | None, str]] = {}

    def of(self, listed: bytes, token: bytes) -> tuple[set[str], datetime | None, str]:
        key = (hashlib.sha256(listed).digest(), hashlib.sha256(token).digest())
        if key not in self._done:
            try:
                digests = timestamps.list_digests(listed)
                when = timestamps.check(token, listed, self.roots).gen_time
                self._done[key] = (digests, when, "")
            except (timestamps.NotCovered, ValueError) as exc:
                self._done[key] = (set(), None, str(exc))
        return self._done[key]


def check_file(
    name: str,
    data: bytes,
    sha256: str,
    stamp: tuple[bytes, bytes, str] | None,
    batches: Batches,
) -> Checked:
    """Check the WARC file ``data`` that should hash to ``sha256`` and its ``stamp``
    (``(batch list, token, TSA)``, None when it has none)."""
    out = Checked(name)
    try:
        verify_warc(data, sha256)
    except ArchiveError as exc:
        out.problems.append(str(exc))
    if stamp is None:
        out.problems.append("no trusted timestamp covers it")
        return out
    listed, token, out.tsa = stamp
    digests, out.time, failed = batches.of(listed, token)
    if failed:
        out.problems.append(failed)
    elif sha256.lower() not in digests:
        out.problems.append("its batch list does not name it")
    return out


def check_stored(
    store: Any, archive: Any, sha256: str, roots: Roots, data: bytes | None = None
) -> Checked:
    """Check a file of the archive (or ``data``, a copy of it read elsewhere) with the
    stamp the store keeps for it."""
    if data is None:
        try:
            data = archive.get(sha256)
        except ArchiveError as exc:
            return Checked(f"{sha256}.warc.gz", [str(exc)])
    batch = store.stamps.stamps_of([sha256]).get(sha256)
    stamp = None if batch is None else _stamp_of(batch)
    checked = check_file(f"{sha256}.warc.gz", data, sha256, stamp, Batches(roots))
    if batch is None and store.stamps.is_queued(sha256):
        checked.problems[-1] = "no trusted timestamp covers it yet (queued for the next run)"
    return checked


def _stamp_of(batch: dict[str, Any]) -> tuple[bytes, bytes, str]:
    return batch["list"].encode("ascii"), bytes(batch["token"]), batch.get("tsa", "")


def check_bundle(data: bytes, roots: Roots | None) -> tuple[list[Checked], str]:
    """Check every WARC file of an evidence bundle with the lists and tokens inside it:
    ``(the checks, a note)``. Without ``roots``, the bundle's own copy of the TSA's CA
    (:data:`BUNDLE_CA`) is trusted, and the note says so."""
    try:
        bundle = zipfile.ZipFile(io.BytesIO(data))
        manifest = json.loads(_member(bundle, "manifest.json"))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise BundleError(f"not an fptrack evidence bundle: {exc}") from None
    note = ""
    if roots is None:
        try:
            roots = timestamps.load_roots_pem(_member(bundle, BUNDLE_CA))
        except KeyError:
            roots = []
        except timestamps.NotCovered as exc:
            raise BundleError(f"{BUNDLE_CA} in the bundle: {exc}") from None
        note = (
            f"trusting the CA certificate inside the bundle ({BUNDLE_CA}); give --ca with your"
            " own copy of the TSA's CA certificate to check it against that"
        )
    out = []
    batches = Batches(roots)
    for entry in manifest if isinstance(manifest, list) else []:
        if not isinstance(entry, dict):
            continue
        name, sha256 = str(entry.get("file", "")), str(entry.get("sha256", ""))
        if entry.get("missing"):
            continue
        try:
            body = _member(bundle, name)
        except KeyError:
            out.append(Checked(name, ["listed in manifest.json but not in the bundle"]))
            continue
        stamp = None
        mark = entry.get("timestamp") or {}
        if mark:
            try:
                listed, token = _member(bundle, mark["list"]), _member(bundle, mark["token"])
                stamp = (listed, token, str(mark.get("tsa", "")))
            except (KeyError, TypeError):
                out.append(Checked(name, ["its batch list or token is not in the bundle"]))
                continue
        out.append(check_file(name, body, sha256 or sha256_hex(body), stamp, batches))
    if not out:
        raise BundleError("the bundle holds no WARC file")
    return out, note


def _member(bundle: zipfile.ZipFile, name: str) -> bytes:
    info = bundle.getinfo(name)
    if info.file_size > MAX_BUNDLE_MEMBER:
        raise KeyError(f"{name} is larger than {MAX_BUNDLE_MEMBER >> 20} MiB")
    return bundle.read(info)
