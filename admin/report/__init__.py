"""Reports of matches, in one home: this module's flat rows for CSV, XLSX and JSON and a
passage in context, and beside it

- :mod:`admin.report.selection`: the matches a report covers and their counts by site and
  work (the admin's reports page, the API's summary);
- :mod:`admin.report.takedown`: takedown notices per site from an editable template,
  rendered in :mod:`admin.report.notice_sandbox`;
- :mod:`admin.report.evidence`: the evidence bundle (archived exchanges and manifests);
- :mod:`admin.report.html_report`: the self-contained HTML report (``fptrack scan --html``,
  ``fptrack report --format html``).

The day's totals (:func:`matcher.worker.jobs.daily_report`) are counted by the worker's daily job
and stored in ``reports``; they stay in :mod:`matcher`, which never imports :mod:`admin`.

Page text is hostile input: no cell of a CSV or XLSX export can be a formula (CSV cells are
prefixed, :func:`to_csv`; XLSX text cells are stored as strings whatever they begin with,
:func:`to_xlsx`), and :func:`excerpt` escapes everything.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

CONTEXT_CHARS = 40
CSV_FIELDS = (
    "first_seen",
    "last_seen",
    "status",
    "site",
    "url",
    "work",
    "work_source",
    "score",
    "containment_work",
    "containment_page",
    "methods",
    "passages",
    "siblings",
    "tied",
)


def row(match: dict[str, Any]) -> dict[str, Any]:
    """One match as a flat row of plain values (CSV_FIELDS)."""

    def when(value: Any) -> str:
        return value.isoformat() if isinstance(value, datetime) else str(value or "")

    return {
        "first_seen": when(match.get("first_seen")),
        "last_seen": when(match.get("last_seen")),
        "status": match.get("status", ""),
        "site": match.get("site", ""),
        "url": match.get("url", ""),
        "work": match.get("work_title", ""),
        "work_source": match.get("work_source", ""),
        "score": round(float(match.get("score", 0.0)), 4),
        "containment_work": round(float(match.get("containment_work", 0.0)), 4),
        "containment_page": round(float(match.get("containment_page", 0.0)), 4),
        "methods": " ".join(match.get("methods", [])),
        "passages": len(match.get("evidence", [])),
        "siblings": "; ".join(_edition(s) for s in match.get("siblings") or []),
        "tied": "; ".join(_edition(s) for s in match.get("siblings") or [] if s.get("tie")),
    }


def _edition(sibling: dict[str, Any]) -> str:
    """A sibling edition of a match's work (:mod:`matcher.matching.editions`): its title, or its
    source when it has none."""
    return str(sibling.get("work_title") or sibling.get("work_source") or "")


def to_csv(matches: Iterable[dict[str, Any]]) -> str:
    """CSV with a header line; cells that a spreadsheet would run as formulas are quoted."""
    return to_csv_rows((row(m) for m in matches), CSV_FIELDS)


def to_csv_rows(rows: Iterable[dict[str, Any]], fields: Sequence[str]) -> str:
    """:func:`to_csv` of flat rows with the columns ``fields``."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    for values in rows:
        writer.writerow({k: _inert(v) for k, v in values.items()})
    return out.getvalue()


XLSX_MIMETYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def to_xlsx(matches: Iterable[dict[str, Any]], sheet: str = "matches") -> bytes:
    """An XLSX workbook of one sheet: a header line then one row per match (CSV_FIELDS).

    Text cells are typed as strings, so one beginning with ``=`` stays text and is never
    a formula; characters XML cannot hold (controls) are dropped.
    """
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
    from openpyxl.styles import Font

    book = Workbook(write_only=True)
    ws = book.create_sheet(sheet[:31])
    ws.freeze_panes = "A2"

    def cell(value: Any, bold: bool = False) -> WriteOnlyCell:
        if isinstance(value, str):
            value = ILLEGAL_CHARACTERS_RE.sub("", value)
        out = WriteOnlyCell(ws, value=value)
        if isinstance(value, str):
            out.data_type = "s"
        if bold:
            out.font = Font(bold=True)
        return out

    ws.append([cell(name, bold=True) for name in CSV_FIELDS])
    for match in matches:
        values = row(match)
        ws.append([cell(values[name]) for name in CSV_FIELDS])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _inert(value: Any) -> Any:
    """Prefix text starting with = + - @ so spreadsheets show it instead of evaluating it."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def excerpt(text: str, start: int, end: int, context: int = CONTEXT_CHARS) -> str:
    """``text[start:end]`` escaped in a ``<mark>``, with ``context`` escaped characters
    either side."""
    start, end = max(0, int(start)), min(len(text), int(end))
    return (
        html.escape(text[max(0, start - context) : start])
        + "<mark>"
        + html.escape(text[start:end])
        + "</mark>"
        + html.escape(text[end : end + context])
    )
