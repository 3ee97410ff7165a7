"""``fptrack report``: the recorded matches as CSV, XLSX, JSON or HTML (the CSV and XLSX of
the admin's exports: :func:`admin.report.to_csv`, :func:`admin.report.to_xlsx`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from admin.commands.common import leaf, match_filter_options, match_filters
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "Export the recorded matches that the filters select, with the columns of the "
        "admin's exports. CSV cells are made inert for spreadsheets and XLSX text cells are "
        "never formulas; the HTML report is escaped and runs no script from the data.",
    )
    match_filter_options(parser, until=True)
    parser.add_argument(
        "--format",
        choices=("csv", "xlsx", "json", "html"),
        default="csv",
        help="(default: csv; xlsx is binary: give --out, or redirect standard output)",
    )
    parser.add_argument("--out", help="write to this file (default: standard output)")


def run(args: argparse.Namespace, ctx: Context) -> int:
    from admin.report import html_report as report_html
    from admin.report import row, to_csv, to_xlsx
    from admin.services.reports import ReportService

    if args.format == "xlsx" and not args.out and sys.stdout.isatty():
        raise CommandError("an XLSX workbook is binary: give --out FILE.xlsx", 2)
    reports = ReportService(ctx)
    matches = list(reports.matches(**match_filters(args, ctx)))
    if args.format == "xlsx":
        workbook = to_xlsx(matches)
        if args.out:
            Path(args.out).write_bytes(workbook)
            print(f"{len(matches)} match(es) written to {args.out}", file=sys.stderr)
        else:
            sys.stdout.buffer.write(workbook)
            sys.stdout.flush()
        return 0
    if args.format == "csv":
        output = to_csv(matches)
    elif args.format == "json":
        output = json.dumps([row(m) for m in matches], ensure_ascii=False, indent=2) + "\n"
    else:
        output = report_html.render(matches, reports.match_texts, title="fptrack report")
    if args.out:
        Path(args.out).write_text(output, encoding="utf-8")
        print(f"{len(matches)} match(es) written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(output)
    return 0
