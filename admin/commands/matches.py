"""``fptrack matches``: the recorded matches."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from admin.commands.common import (
    actions,
    command,
    dump_json,
    json_option,
    match_filter_options,
    match_filters,
    match_service,
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
        "List recorded matches, newest first, with their status, site, score, work and URL: "
        "the active ones (the copies found now), or with --archived the archived ones.",
    )
    match_filter_options(p)
    p.add_argument(
        "--archived",
        action="store_true",
        help="list the archived matches instead, with their review and why each was archived: "
        "those of removed works, and those whose page no longer matches the text of a work "
        "registered again (default: the active matches)",
    )
    p.add_argument("--limit", type=int, default=100, help="at most this many (default: 100)")
    json_option(p)


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    from admin.report import row
    from admin.report.html_report import when

    filters = match_filters(args, ctx)
    if args.archived:
        filters["archived"] = True
    matches = match_service(ctx).listed(args.limit, **filters)
    if args.json:
        dump_json([{**row(m), "id": str(m["_id"]), **_review(m)} for m in matches])
        return 0
    for m in matches:
        r = row(m)
        line = (
            f"{m['_id']}\t{when(m.get('first_seen'))}\t{r['status']}\t{r['site']}\t{r['score']:.3f}"
            f"\t{r['work']}\t{r['url']}"
        )
        if args.archived:
            line += f"\t{_review(m)['archived']}"
        print(line)
    print(f"{len(matches)} {'archived ' if args.archived else ''}match(es)", file=sys.stderr)
    return 0


def _review(match: dict[str, Any]) -> dict[str, str]:
    """A match's review (its note and reviewer), and why it was archived, if it was."""
    from admin.report.html_report import when

    review = {"note": str(match.get("note", "")), "reviewed_by": str(match.get("reviewed_by", ""))}
    archived = match.get("archived")
    if isinstance(archived, dict):
        review["archived"] = f"archived {when(archived.get('at'))}: {archived.get('reason', '')}"
    return review
