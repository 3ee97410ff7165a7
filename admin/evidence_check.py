"""``fptrack evidence verify``: the checks of an archived WARC file and its trusted timestamp,
offline (nothing is asked of the TSA).

For each file: its SHA-256 and every record's digests (:func:`matcher.evidence.archive.verify`),
which need nothing but the file; then its trusted timestamp: that a batch list names it
(:func:`matcher.evidence.timestamps.list_digests`) and that the batch's token verifies over that
list
against CA certificates the verifier trusts: signature, chain, key usage
(:func:`matcher.evidence.timestamps.check`). The file, list and token come from an evidence bundle
(:func:`check_bundle`: everything inside the zip, the store not needed) or from the archive
and the store (:func:`check_stored`: a WARC file given by path, or a match's exchange).

Each file comes out one of three ways (:attr:`Checked.verdict`): ``OK`` (intact, under a
trusted timestamp), ``FAIL`` (damaged, or a token or list that does not verify) or
``INTACT`` (intact, but no trusted timestamp: none covers it, none is set up, or no CA is
trusted to check its token). A bundle's own copy of the TSA's CA (:data:`BUNDLE_CA`) is
trusted only when asked (``--trust-bundle-ca``): whoever made the bundle chose it, so on
its own it vouches for nothing.
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

from matcher.evidence import timestamps
from matcher.evidence.archive import ArchiveError, sha256_hex
from matcher.evidence.archive import verify as verify_warc

Roots = list[cryptography.x509.Certificate]
BUNDLE_CA = "tsa-ca.pem"
"""The TSA's CA certificates in an evidence bundle (a copy of ``FPTRACK_TSA_CA``)."""
MAX_BUNDLE_MEMBER = 64 << 20
"""The largest member of a bundle that is read (a WARC file, a list or a token)."""
NO_CA = (
    "its token is not checked: no CA certificate is trusted to check it against (give --ca,"
    " or set FPTRACK_TSA_CA)"
)
NO_CA_IN_BUNDLE = (
    "its token is not checked: no CA certificate is trusted to check it against (give --ca"
    " with the TSA's own, set FPTRACK_TSA_CA, or --trust-bundle-ca to trust the bundle's"
    f" {BUNDLE_CA})"
)
TRUSTING_BUNDLE_CA = (
    f"the tokens are checked against the CA certificate inside the bundle ({BUNDLE_CA}), as"
    " --trust-bundle-ca asked: whoever made the bundle chose it, so an OK says only that the"
    " tokens match it; compare it with the CA certificate the TSA publishes, or give that"
    " with --ca"
)


class BundleError(Exception):
    """A file is not an evidence bundle fptrack can read."""


@dataclass
class Checked:
    """One file's checks: its name, what failed, why it has no trusted timestamp ("" when
    it has one), and the token's time and TSA."""

    name: str
    problems: list[str] = field(default_factory=list)
    untrusted: str = ""
    time: datetime | None = None
    tsa: str = ""
    """Who signed its token: the signing certificate's subject (else the TSA's URL as the
    store or the bundle's manifest names it)."""
    sha256: str = ""
    records: int = 0

    @property
    def intact(self) -> bool:
        """Its SHA-256 and record digests check, and no token or list it has fails."""
        return not self.problems

    @property
    def ok(self) -> bool:
        """Intact and under a trusted timestamp."""
        return self.intact and not self.untrusted

    @property
    def verdict(self) -> str:
        """``OK``, ``FAIL`` or ``INTACT`` (see the module docstring)."""
        return "FAIL" if self.problems else "INTACT" if self.untrusted else "OK"

    def line(self) -> str:
        if self.problems:
            also = f"; no trusted timestamp: {self.untrusted}" if self.untrusted else ""
            return f"FAIL   {self.name}: {'; '.join(self.problems)}{also}"
        digests = f"{self.records} record(s)"
        if self.sha256 not in self.name:
            digests += f", SHA-256 {self.sha256}"
        if self.untrusted:
            return f"INTACT {self.name}: {digests}; no trusted timestamp: {self.untrusted}"
        when = self.time.isoformat() if self.time else "?"
        return f"OK     {self.name}: intact ({digests}), stamped {when} by {self.tsa or 'the TSA'}"


class Batches:
    """Each batch's list read and token checked once, however many files it covers (a
    bundle's files share a few tokens): ``(the digests listed, the token checked, why it
    failed)``. Without ``roots`` (no CA trusted) only the list is read; ``no_roots`` says
    why the token is not checked."""

    def __init__(self, roots: Roots | None, no_roots: str = NO_CA) -> None:
        self.roots = roots
        self.no_roots = no_roots
        self._done: dict[tuple[bytes, bytes], tuple[set[str], timestamps.Token | None, str]] = {}

    def of(self, listed: bytes, token: bytes) -> tuple[set[str], timestamps.Token | None, str]:
        key = (hashlib.sha256(listed).digest(), hashlib.sha256(token).digest())
        if key not in self._done:
            try:
                digests = timestamps.list_digests(listed)
                checked = None
                if self.roots is not None:
                    checked = timestamps.check(token, listed, self.roots)
                self._done[key] = (digests, checked, "")
            except (timestamps.NotCovered, ValueError) as exc:
                self._done[key] = (set(), None, str(exc))
        return self._done[key]


def check_file(
    name: str,
    data: bytes,
    sha256: str,
    stamp: tuple[bytes, bytes, str] | None,
    batches: Batches,
    unstamped: str = "no token covers it",
) -> Checked:
    """Check the WARC file ``data`` that should hash to ``sha256`` and its ``stamp``
    (``(batch list, token, TSA)``; None when it has none, ``unstamped`` saying why)."""
    out = Checked(name, sha256=sha256.lower())
    try:
        out.records = len(verify_warc(data, sha256))
    except ArchiveError as exc:
        out.problems.append(str(exc))
    if stamp is None:
        out.untrusted = unstamped
        return out
    listed, token, out.tsa = stamp
    digests, checked, failed = batches.of(listed, token)
    if checked is not None:
        out.time, out.tsa = checked.gen_time, checked.signer or out.tsa
    if failed:
        out.problems.append(failed)
    elif out.sha256 not in digests:
        out.problems.append("its batch list does not name it")
    elif batches.roots is None:
        out.untrusted = f"its batch list names it, but {batches.no_roots}"
    return out


def check_stored(
    stamps: Any, archive: Any, sha256: str, roots: Roots | None, data: bytes | None = None
) -> Checked:
    """Check a file of the archive (or ``data``, a copy of it read elsewhere) with the
    stamp the store keeps for it (``stamps``: :attr:`matcher.store.Store.stamps`)."""
    if data is None:
        try:
            data = archive.get(sha256)
        except ArchiveError as exc:
            return Checked(f"{sha256}.warc.gz", [str(exc)])
    batch = stamps.stamps_of([sha256]).get(sha256)
    stamp = None if batch is None else _stamp_of(batch)
    why = "no token covers it"
    if batch is None and stamps.is_queued(sha256):
        why = "no token covers it yet (queued for the next stamping run)"
    return check_file(f"{sha256}.warc.gz", data, sha256, stamp, Batches(roots), why)


def _stamp_of(batch: dict[str, Any]) -> tuple[bytes, bytes, str]:
    return batch["list"].encode("ascii"), bytes(batch["token"]), batch.get("tsa", "")


def check_unstamped(name: str, data: bytes, why: str) -> Checked:
    """Check a WARC file whose timestamp is not looked up (``why``): its digests only."""
    return check_file(name, data, sha256_hex(data), None, Batches(None), why)


def check_bundle(
    data: bytes, roots: Roots | None, trust_bundle_ca: bool = False
) -> tuple[list[Checked], str]:
    """Check every WARC file of an evidence bundle with the lists and tokens inside it:
    ``(the checks, a note)``. The tokens are checked against ``roots``, or with
    ``trust_bundle_ca`` against the bundle's own copy of the TSA's CA (:data:`BUNDLE_CA`),
    which the note then says; with neither, not at all (the files are ``INTACT`` at best)."""
    try:
        bundle = zipfile.ZipFile(io.BytesIO(data))
        manifest = json.loads(_member(bundle, "manifest.json"))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise BundleError(f"not an fptrack evidence bundle: {exc}") from None
    note = ""
    if trust_bundle_ca:
        try:
            roots = timestamps.load_roots_pem(_member(bundle, BUNDLE_CA))
        except KeyError:
            raise BundleError(f"the bundle holds no {BUNDLE_CA} to trust") from None
        except timestamps.NotCovered as exc:
            raise BundleError(f"{BUNDLE_CA} in the bundle: {exc}") from None
        note = TRUSTING_BUNDLE_CA
    out = []
    batches = Batches(roots, NO_CA_IN_BUNDLE)
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
