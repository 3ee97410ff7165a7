"""``fptrack report``: the recorded matches as CSV, JSON or HTML."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from admin.commands.common import leaf, match_filter_options, match_filters

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "Export the recorded matches that the filters select. CSV cells are made inert for "
        "spreadsheets; the HTML report is escaped and runs no script from the data.",
    )
    match_filter_options(parser, until=True)
    parser.add_argument(
        "--format", choices=("csv", "json", "html"), default="csv", help="(default: csv)"
    )
    parser.add_argument("--out", help="write to this file (default: standard output)")


def run(args: argparse.Namespace, ctx: Context) -> int:
    from admin.report import html_report as report_html
    from admin.report import row, to_csv

    matches = list(ctx.ops.iter_matches(**match_filters(args, ctx)))
    if args.format == "csv":
        output = to_csv(matches)
    elif args.format == "json":
        output = json.dumps([row(m) for m in matches], ensure_ascii=False, indent=2) + "\n"
    else:
        store = ctx.engine.store
        output = report_html.render(
            matches, lambda m: report_html.match_texts(store, m), title="fptrack report"
        )
    if args.out:
        Path(args.out).write_text(output, encoding="utf-8")
        print(f"{len(matches)} match(es) written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(output)
    return 0
