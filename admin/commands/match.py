"""``fptrack match``: which registered works one text file or URL copies (nothing stored)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

from admin.commands.common import dump_json, json_option, leaf, max_bytes_option
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "Match one text against the registered works and print the works it copies, with "
        "evidence passages. Nothing is stored.",
    )
    parser.add_argument(
        "target",
        help="a .txt, .md or .html file, or an http(s) URL (fetched within "
        "FPTRACK_QUERY_DEADLINE, default 20 s, at most FPTRACK_QUERY_MAX_BYTES, default 10 MiB)",
    )
    json_option(parser)
    parser.add_argument(
        "--passages", type=int, default=5, help="evidence passages shown per work (default: 5)"
    )
    max_bytes_option(parser, "refuse")


def run(args: argparse.Namespace, ctx: Context) -> int:
    from admin.reading import ReadError, read_text_file
    from matcher.errors import MatcherError

    target = args.target
    if re.match(r"^https?://", target):
        from admin.fetch import FetchError, fetch_url

        try:
            text = fetch_url(
                target, deadline=ctx.settings.query_deadline,
                max_bytes=ctx.settings.query_max_bytes,
            )  # fmt: skip
        except FetchError as exc:
            raise CommandError(exc.detail) from None
    else:
        try:
            text, _ = read_text_file(Path(target), args.max_bytes)
        except ReadError as exc:
            raise CommandError(str(exc), 2 if exc.missing else 1) from exc
    try:
        records = ctx.engine.match_text(text)
    except MatcherError as exc:
        raise CommandError(f"{target}: {exc}") from exc
    records.sort(key=lambda r: -r["score"])
    if args.json:
        dump_json(
            [
                {k: v for k, v in r.items() if k not in ("alignment",)}
                | {"work_id": str(r["work_id"])}
                for r in records
            ]
        )
        return 0
    if not records:
        print("no registered work is copied in this text")
    for r in records:
        print(
            f"{r['work_title']} ({r['work_source']}): score {r['score']:.3f}, work contained "
            f"{r['containment_work']:.3f}, text contained {r['containment_page']:.3f}, "
            f"methods {', '.join(r['methods'])}"
        )
        for e in r["evidence"][: args.passages]:
            print(f"  text {e['page_span']} = work {e['work_span']}: {e['text'][:80]}")
    return 0
