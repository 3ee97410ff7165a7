"""``fptrack evidence``: trusted timestamps of the evidence archive (stamp, verify)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from admin.commands.common import actions, command
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context
    from admin.evidence_check import Checked

MATCH_ID = re.compile(r"[0-9a-f]{24}")
NO_TRUSTED_TIMESTAMP = 3
"""``fptrack evidence verify``'s exit status when every file is intact but one or more has
no trusted timestamp (0: every file intact and under one; 1: a file failed)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    evidence = actions(
        parser,
        "Trusted timestamps (RFC 3161) of the evidence archive: the archived WARC files are "
        "queued as they are stored and put under a Time-Stamp Authority's token in batches "
        "(FPTRACK_TSA_URL; beat does it every FPTRACK_TSA_EVERY seconds, default 600).",
    )
    command(
        evidence,
        "stamp",
        run_stamp,
        "stamp the queued archive files now",
        "Put every queued archive file under a token of the TSA of FPTRACK_TSA_URL, at most "
        "FPTRACK_TSA_BATCH (default 10,000) files a token. A TSA that fails leaves them "
        "queued (exit status 1, with the reason).",
    )
    p = command(
        evidence,
        "verify",
        run_verify,
        "check archived evidence and its timestamps, offline",
        "Check offline, without asking the TSA: each WARC file's SHA-256 and record "
        "digests; then its trusted timestamp: that a batch list names it and that the "
        "batch's token is signed by a TSA whose certificate chains to a CA certificate you "
        "trust (--ca, default FPTRACK_TSA_CA) and covers that list. TARGET is an evidence "
        "bundle (.zip, from the admin's reports: checked from what it holds), a WARC file "
        "(fptrack scan --warc's too; its timestamp looked up in the store only when a TSA "
        "is set up: FPTRACK_TSA_URL or FPTRACK_TSA_CA) or a match id (its archived "
        "exchange). One line per file: OK (intact, under a trusted timestamp), FAIL (with "
        "the reason) or INTACT (its digests check, but no trusted timestamp: none covers "
        "it, or no CA is trusted to check its token). A bundle's own copy of the CA "
        "(tsa-ca.pem) is trusted only with --trust-bundle-ca, and the output says so. Exit "
        "status: 0 every file OK; 1 a file failed; "
        f"{NO_TRUSTED_TIMESTAMP} every file intact but not every one under a trusted "
        'timestamp ("no trusted timestamp").',
    )
    p.add_argument("target", metavar="TARGET", help="a bundle .zip, a .warc.gz file or a match id")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--ca",
        metavar="PEM",
        help="the TSA's CA certificates to check tokens against (default: FPTRACK_TSA_CA)",
    )
    which.add_argument(
        "--trust-bundle-ca",
        action="store_true",
        help="check a bundle's tokens against the CA copy inside it (tsa-ca.pem), which its "
        "maker chose: says only that the tokens match it (default: not trusted, the tokens "
        "are checked against --ca or FPTRACK_TSA_CA only)",
    )


def run_stamp(args: argparse.Namespace, ctx: Context) -> int:
    from matcher.evidence.stamping import stamp_waiting

    settings = ctx.settings
    if not settings.tsa_url:
        raise CommandError("no Time-Stamp Authority: set FPTRACK_TSA_URL")
    done = stamp_waiting(ctx.engine.store, settings.tsa_url, settings.tsa_batch)
    print(f"{done.stamped} file(s) stamped in {done.batches} token(s), {done.waiting} waiting")
    if done.error:
        print(f"fptrack: {done.error} (the files stay queued)", file=sys.stderr)
        return 1
    return 0


def run_verify(args: argparse.Namespace, ctx: Context) -> int:
    from admin.evidence_check import BundleError, check_bundle, check_stored, check_unstamped
    from matcher.evidence import timestamps
    from matcher.evidence.archive import sha256_hex

    settings = ctx.settings
    ca = None if args.trust_bundle_ca else args.ca or settings.tsa_ca
    try:
        roots = timestamps.load_roots(ca) if ca else None
    except timestamps.NotCovered as exc:
        raise CommandError(str(exc)) from None
    path = Path(args.target)
    note = ""
    if path.is_file():
        data = _read(path)
        if data[:4] == b"PK\x03\x04":
            try:
                checked, note = check_bundle(data, roots, args.trust_bundle_ca)
            except BundleError as exc:
                raise CommandError(f"{path}: {exc}") from None
        else:
            _no_bundle(args)
            if settings.tsa_url or settings.tsa_ca:
                checked = [_stored(ctx, sha256_hex(data), roots, data)]
            else:
                why = "no Time-Stamp Authority is set up here (FPTRACK_TSA_URL), so none is kept"
                checked = [check_unstamped(str(path), data, why)]
            checked[0].name = str(path)
    elif MATCH_ID.fullmatch(args.target):
        _no_bundle(args)
        match = ctx.store.matches.match(match_id=args.target)
        if match is None:
            raise CommandError(f"no match {args.target}")
        ref = match.get("archive") or {}
        if not ref.get("sha256"):
            raise CommandError(f"match {args.target} has no archived exchange")
        if ctx.archive is None:
            raise CommandError("no evidence archive (FPTRACK_ARCHIVE=none)")
        checked = [check_stored(ctx.store.stamps, ctx.archive, ref["sha256"], roots)]
        if checked[0].untrusted and not settings.tsa_url:
            checked[0].untrusted += " (no Time-Stamp Authority is set up: FPTRACK_TSA_URL)"
    else:
        raise CommandError(f"{args.target}: neither a file nor a match id")
    if note:
        print(f"note: {note}")
    for one in checked:
        print(one.line())
    for line in summary(checked):
        print(line)
    return exit_status(checked)


def exit_status(checked: list[Checked]) -> int:
    """0 when every file is ``OK``, 1 when one failed, else :data:`NO_TRUSTED_TIMESTAMP`."""
    if any(not one.intact for one in checked):
        return 1
    return 0 if all(one.ok for one in checked) else NO_TRUSTED_TIMESTAMP


def summary(checked: list[Checked]) -> list[str]:
    """The last lines of a verification: how many files verified, failed, and are intact
    with no trusted timestamp (said plainly)."""
    good = sum(one.ok for one in checked)
    failed = sum(not one.intact for one in checked)
    intact = len(checked) - good - failed
    lines = [f"{good} of {len(checked)} file(s) verified"]
    if failed:
        lines.append(f"{failed} file(s) failed")
    if intact:
        lines.append(
            f"no trusted timestamp: {intact} file(s) intact (their digests check) but not"
            " shown to have existed at a time anyone but fptrack vouches for"
        )
    return lines


def _stored(ctx: Context, sha256: str, roots: list | None, data: bytes) -> Any:
    """:func:`admin.evidence_check.check_stored` of a file given by path; when the store
    cannot be reached, its offline checks still, the reason as why it has no timestamp."""
    from admin.evidence_check import check_stored, check_unstamped
    from matcher.errors import StoreUnavailable

    try:
        return check_stored(ctx.store.stamps, None, sha256, roots, data)
    except (CommandError, StoreUnavailable) as exc:  # MongoDB down: one line naming it
        return check_unstamped("", data, f"its timestamp cannot be looked up: {exc}")


def _no_bundle(args: argparse.Namespace) -> None:
    if args.trust_bundle_ca:
        raise CommandError("--trust-bundle-ca is for an evidence bundle (.zip) only", 2)


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            if os.fstat(f.fileno()).st_size > 1 << 30:
                raise CommandError(f"{path}: larger than 1 GiB")
            return f.read()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
