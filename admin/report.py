"""Match reports: flat rows for CSV, XLSX and JSON, and a self-contained HTML report.

The HTML report lists each match with its scores and its evidence side by side: the work's
passage and the page's copy, each with some context, the shared text highlighted. Page text
is hostile input: everything is escaped, and the document's Content-Security-Policy forbids
scripts, so even markup that slipped through could not run. For the same reason no cell of a
CSV or XLSX export can be a formula: CSV cells are prefixed (:func:`to_csv`), XLSX text cells
are stored as strings whatever they begin with (:func:`to_xlsx`).
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from matcher.store import Store

CONTEXT_CHARS = 40
MAX_PASSAGES_SHOWN = 10
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
    }


def to_csv(matches: Iterable[dict[str, Any]]) -> str:
    """CSV with a header line; cells that a spreadsheet would run as formulas are quoted."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for match in matches:
        writer.writerow({k: _inert(v) for k, v in row(match).items()})
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


_STYLE = """
body{font-family:sans-serif;margin:2em;color:#222}
table.m{border-collapse:collapse;margin:1em 0}
table.m td,table.m th{border:1px solid #ccc;padding:4px 8px;text-align:left}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em;margin:.5em 0 1em}
.pair div{background:#f7f7f7;padding:.5em;white-space:pre-wrap;word-break:break-all}
mark{background:#ffe066}
h2{border-top:2px solid #888;padding-top:.5em;font-size:1.1em;word-break:break-all}
"""


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


def match_texts(store: Store, match: dict[str, Any]) -> tuple[Any, str]:
    """The texts a match's evidence quotes: the work's segments holding its spans (a
    :class:`~matcher.store.TextWindow`), and the page's text."""
    spans = [e["work_span"] for e in match.get("evidence", [])[:MAX_PASSAGES_SHOWN]]
    work = store.work_window(match["work_id"], spans)
    page = store.get_page(str(match["page_id"]), {"text": 1}) or {}
    return work, page.get("text", "")


def to_html(
    matches: list[dict[str, Any]],
    texts: Callable[[dict[str, Any]], tuple[str, str]],
    title: str = "fptrack report",
    summary: dict[str, Any] | None = None,
) -> str:
    """A printable HTML report; ``texts(match)`` gives ``(work text, page text)``."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html><html lang='zh'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' "
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
    ]
    if summary:
        cells = "".join(
            f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td></tr>" for k, v in summary.items()
        )
        parts.append(f"<table class='m'>{cells}</table>")
    parts.append(f"<p>{len(matches)} match(es).</p>")
    for i, match in enumerate(matches, 1):
        r = row(match)
        parts.append(
            f"<h2>{i}. <a href='{esc(r['url'], quote=True)}' rel='noreferrer nofollow'>"
            f"{esc(r['url'])}</a></h2>"
        )
        parts.append(
            "<table class='m'>"
            f"<tr><th>work</th><td>{esc(r['work'])} ({esc(r['work_source'])})</td></tr>"
            f"<tr><th>score</th><td>{r['score']:.3f}</td></tr>"
            "<tr><th>containment of the work in the page</th>"
            f"<td>{r['containment_work']:.3f}</td></tr>"
            "<tr><th>containment of the page in the work</th>"
            f"<td>{r['containment_page']:.3f}</td></tr>"
            f"<tr><th>methods</th><td>{esc(r['methods'])}</td></tr>"
            f"<tr><th>status</th><td>{esc(str(r['status']))}</td></tr>"
            f"<tr><th>first seen</th><td>{esc(r['first_seen'])}</td></tr>"
            "</table>"
        )
        work_text, page_text = texts(match)
        evidence = match.get("evidence", [])
        for e in evidence[:MAX_PASSAGES_SHOWN]:
            parts.append(
                "<div class='pair'>"
                f"<div><b>work {esc(str(e['work_span']))}</b>\n"
                f"{excerpt(work_text, *e['work_span'])}</div>"
                f"<div><b>page {esc(str(e['page_span']))}</b>\n"
                f"{excerpt(page_text, *e['page_span'])}</div>"
                "</div>"
            )
        if len(evidence) > MAX_PASSAGES_SHOWN:
            parts.append(f"<p>… {len(evidence) - MAX_PASSAGES_SHOWN} more passage(s).</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
