"""``fptrack evidence``: trusted timestamps of the evidence archive (stamp, verify)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from admin.commands.common import actions, command
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context

MATCH_ID = re.compile(r"[0-9a-f]{24}")


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
        "Check, without asking the TSA: each WARC file's SHA-256 and record digests, that a "
        "batch list names it, and that the batch's token is signed by a TSA whose certificate "
        "chains to the CA certificates given (--ca, default FPTRACK_TSA_CA) and covers that "
        "list. TARGET is an evidence bundle (.zip, from the admin's reports: checked from "
        "what it holds, its own copy of the CA trusted when no CA is given), a WARC file (its "
        "timestamp read from the store) or a match id (its archived exchange). Exit status 0 "
        "when every file verifies, 1 otherwise.",
    )
    p.add_argument("target", metavar="TARGET", help="a bundle .zip, a .warc.gz file or a match id")
    p.add_argument(
        "--ca",
        metavar="PEM",
        help="the TSA's CA certificates (default: FPTRACK_TSA_CA; a bundle's own copy if unset)",
    )


def run_stamp(args: argparse.Namespace, ctx: Context) -> int:
    from matcher.stamping import stamp_waiting

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
    from admin.evidence_check import BundleError, check_bundle, check_stored
    from matcher import timestamps
    from matcher.archive import sha256_hex

    ca = args.ca or ctx.settings.tsa_ca
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
                checked, note = check_bundle(data, roots)
            except BundleError as exc:
                raise CommandError(f"{path}: {exc}") from None
        else:
            checked = [check_stored(ctx.engine.store, None, sha256_hex(data), _need(roots), data)]
            checked[0].name = str(path)
    elif MATCH_ID.fullmatch(args.target):
        match = ctx.ops.store.matches.match(match_id=args.target)
        if match is None:
            raise CommandError(f"no match {args.target}")
        ref = match.get("archive") or {}
        if not ref.get("sha256"):
            raise CommandError(f"match {args.target} has no archived exchange")
        if ctx.archive is None:
            raise CommandError("no evidence archive (FPTRACK_ARCHIVE=none)")
        checked = [check_stored(ctx.engine.store, ctx.archive, ref["sha256"], _need(roots))]
    else:
        raise CommandError(f"{args.target}: neither a file nor a match id")
    if note:
        print(f"note: {note}")
    for one in checked:
        print(one.line())
    good = sum(one.ok for one in checked)
    print(f"{good} of {len(checked)} file(s) verified")
    return 0 if good == len(checked) else 1


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            if os.fstat(f.fileno()).st_size > 1 << 30:
                raise CommandError(f"{path}: larger than 1 GiB")
            return f.read()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None


def _need(roots: list | None) -> list:
    if not roots:
        raise CommandError(
            "no CA certificate to check the token against: give --ca or set FPTRACK_TSA_CA"
        )
    return roots
