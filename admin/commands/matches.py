"""``fptrack matches``: the recorded matches."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from admin.commands.common import (
    actions,
    command,
    dump_json,
    json_option,
    match_filter_options,
    match_filters,
)

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    matches = actions(parser, "The recorded matches.")
    p = command(
        matches,
        "list",
        run_list,
        "list matches, newest first",
        "List recorded matches, newest first, with their status, site, score, work and URL.",
    )
    match_filter_options(p)
    p.add_argument("--limit", type=int, default=100, help="at most this many (default: 100)")
    json_option(p)


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    from admin.report import row
    from admin.report.html_report import when

    matches = ctx.ops.list_matches(limit=args.limit, **match_filters(args, ctx))
    if args.json:
        dump_json([{**row(m), "id": str(m["_id"])} for m in matches])
        return 0
    for m in matches:
        r = row(m)
        print(
            f"{m['_id']}\t{when(m.get('first_seen'))}\t{r['status']}\t{r['site']}\t{r['score']:.3f}"
            f"\t{r['work']}\t{r['url']}"
        )
    print(f"{len(matches)} match(es)", file=sys.stderr)
    return 0
