"""The HTML report of matches (``fptrack scan --html``, ``fptrack report --format html``).

One self-contained file. It opens with a summary: the counts, the matches grouped by site and
by work, and a table of every match (site, page, work, score, containment) that sorts by any
column (a match's number opens it below). A site is named by the URL it was crawled from
when the report is given it (``fptrack scan``: the ``--site`` URL, or the ``--site-dir``
folder), else by its name. Each match follows, collapsible, with its facts
and its passages side by side: the work's passage and the page's copy on one row, both laid
out the same way (one paragraph per line of text, blank lines and indentation dropped), with
some context around.

What is marked as copied: within a passage, a line is marked only when it shares text with
the other side's passage (an 8-character run, after normalisation; a shorter line must
appear whole). Ad and site-chrome lines that a pirate page carries inside a copied passage
share nothing with the work, so they stay unmarked.

Page text is hostile: everything is escaped, page URLs become links only when they are
http(s) and still reachable in principle (a folder the scan served on 127.0.0.1 is gone once
the scan ends, so its pages are shown as file paths, as text), and the Content-Security-Policy
allows no script but the report's own (sorting, opening a match; allowed by its hash) and no
request at all.
Times are written in UTC, with the zone.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fingerprint.normalize import normalize
from matcher.store import Store

CONTEXT_CHARS = 40
MAX_PASSAGES_SHOWN = 10
OPEN_UP_TO = 10
"""Reports of at most this many matches show every match opened; longer ones closed."""
GRAM = 8
SPACE = re.compile(r"\s+")

PageLabel = Callable[[str], tuple[str, str | None]]
"""A page URL -> (text shown, link or ``None``)."""
SiteCell = Callable[[str], str]
"""A site's name -> its cell's HTML."""

SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th[data-type]").forEach(function (th) {
    th.tabIndex = 0;
    function sort() {
      var column = th.cellIndex, number = th.dataset.type === "number";
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var cell = row.cells[column], value = cell.getAttribute("data-value");
        if (value === null) { value = cell.textContent; }
        return number ? parseFloat(value) : value;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), order = x < y ? -1 : x > y ? 1 : 0;
        return ascending ? order : -order;
      });
      table.querySelectorAll("th[data-type]").forEach(function (other) {
        other.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      rows.forEach(function (row) { body.appendChild(row); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
    });
  });
});
function openTarget() {
  var target = document.getElementById(location.hash.slice(1));
  if (target && target.tagName === "DETAILS") { target.open = true; }
}
window.addEventListener("hashchange", openTarget);
openTarget();
"""
SCRIPT_HASH = base64.b64encode(hashlib.sha256(SORT_SCRIPT.encode()).digest()).decode()
CSP = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{SCRIPT_HASH}'"

STYLE = """
body{font-family:sans-serif;margin:2em;color:#222;max-width:90em}
h1{margin-bottom:.2em} .meta{color:#555;margin-top:0}
table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
td.n,th.n{text-align:right} .url{word-break:break-all}
.groups{display:flex;gap:2em;flex-wrap:wrap;align-items:flex-start}
caption{text-align:left;font-weight:bold;padding:.3em 0}
th[data-type]{cursor:pointer;user-select:none;background:#f0f0f0}
th[data-type]::after{content:" \\2195";color:#999}
th[aria-sort=ascending]::after{content:" \\25B2";color:#222}
th[aria-sort=descending]::after{content:" \\25BC";color:#222}
details{border-top:2px solid #888;padding:.5em 0}
summary{cursor:pointer;font-weight:bold;font-size:1.05em;word-break:break-all}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em;margin:.5em 0 1em}
.side{background:#f7f7f7;padding:.3em .8em;word-break:break-all;line-height:1.6}
.side h4{margin:.3em 0;font-size:.9em;color:#555}
.side p{margin:.3em 0}
mark{background:#ffe066}
.more{color:#555}
"""


@dataclass(frozen=True)
class Counts:
    """The totals a report opens with."""

    works: int | None = None
    pages: int | None = None


def when(value: Any) -> str:
    """A stored time in UTC with its zone (a naive time is UTC, as MongoDB keeps it)."""
    if not isinstance(value, datetime):
        return str(value or "")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def link_label(url: str) -> tuple[str, str | None]:
    """The default page label: the URL, linked when it is http(s)."""
    return url, url if url.startswith(("http://", "https://")) else None


def served_folders(folders: Mapping[str, str]) -> PageLabel:
    """Page labels for folders served during a scan (``{base URL: folder}``): such a page is
    shown as its file path, not linked (the server is gone); any other page as
    :func:`link_label`."""

    def label(url: str) -> tuple[str, str | None]:
        for base, folder in folders.items():
            if url.startswith(base):
                return f"{folder.rstrip('/')}/{url[len(base) :]}", None
        return link_label(url)

    return label


def _content(text: str) -> str:
    return SPACE.sub("", normalize(text).text)


def _grams(content: str) -> set[str]:
    return {content[i : i + GRAM] for i in range(max(1, len(content) - GRAM + 1))}


def _copied(line: str, other: str, other_grams: set[str]) -> bool:
    """Whether a line shares text with the other side's passage (module docstring)."""
    content = _content(line)
    if not content:
        return False
    if len(content) < GRAM:
        return content in other
    return any(content[i : i + GRAM] in other_grams for i in range(len(content) - GRAM + 1))


def passage(text: str, start: int, end: int, other: str) -> str:
    """``text[start:end]`` with context, one ``<p>`` per non-blank line, copied lines marked.

    ``other`` is the other side's passage (original text).
    """
    start, end = max(0, int(start)), min(len(text), int(end))
    lo, hi = max(0, start - CONTEXT_CHARS), min(len(text), end + CONTEXT_CHARS)
    other_content = _content(other)
    other_grams = _grams(other_content)
    paragraphs = []
    pos = lo
    for line in text[lo:hi].split("\n"):
        a, b = pos, pos + len(line)
        pos = b + 1
        if not line.strip():
            continue
        a, b = a + len(line) - len(line.lstrip()), b - len(line) + len(line.rstrip())
        inside = text[max(a, start) : min(b, end)]
        copied = bool(inside.strip()) and _copied(inside, other_content, other_grams)
        parts = [
            html.escape(text[a : max(a, min(b, start))]),
            (f"<mark>{html.escape(inside)}</mark>" if copied else html.escape(inside)),
            html.escape(text[min(b, max(a, end)) : b]),
        ]
        paragraphs.append(f"<p>{''.join(parts)}</p>")
    ellipsis_before = "<p class='more'>…</p>" if lo > 0 else ""
    ellipsis_after = "<p class='more'>…</p>" if hi < len(text) else ""
    return ellipsis_before + "".join(paragraphs) + ellipsis_after


def _score(match: Mapping[str, Any], name: str) -> float:
    return round(float(match.get(name, 0.0) or 0.0), 3)


def _page_cell(url: str, label: PageLabel) -> str:
    text, href = label(url)
    if href is None:
        return f"<span class='url'>{html.escape(text)}</span>"
    return (
        f"<a class='url' href='{html.escape(href, quote=True)}' rel='noreferrer nofollow'>"
        f"{html.escape(text)}</a>"
    )


def _groups(matches: list[Mapping[str, Any]], site_cell: SiteCell) -> str:
    sites: dict[str, dict[str, set[str] | int]] = {}
    works: dict[str, dict[str, Any]] = {}
    for m in matches:
        site = sites.setdefault(m.get("site", ""), {"matches": 0, "pages": set(), "works": set()})
        site["matches"] += 1
        site["pages"].add(m.get("url", ""))
        site["works"].add(m.get("work_title", ""))
        work = works.setdefault(
            m.get("work_title", ""), {"matches": 0, "sites": set(), "best": 0.0}
        )
        work["matches"] += 1
        work["sites"].add(m.get("site", ""))
        work["best"] = max(work["best"], _score(m, "score"))
    esc = html.escape
    by_site = "".join(
        f"<tr><td>{site_cell(name) if name else '-'}</td><td class='n'>{g['matches']}</td>"
        f"<td class='n'>{len(g['pages'])}</td><td class='n'>{len(g['works'])}</td></tr>"
        for name, g in sorted(sites.items(), key=lambda kv: (-kv[1]["matches"], kv[0]))
    )
    by_work = "".join(
        f"<tr><td>{esc(name)}</td><td class='n'>{g['matches']}</td>"
        f"<td class='n'>{len(g['sites'])}</td><td class='n'>{g['best']:.3f}</td></tr>"
        for name, g in sorted(works.items(), key=lambda kv: (-kv[1]["matches"], kv[0]))
    )
    return (
        "<div class='groups'>"
        "<table id='by-site'><caption>By site</caption><thead><tr><th>site</th>"
        "<th class='n'>matches</th><th class='n'>pages</th><th class='n'>works</th></tr>"
        f"</thead><tbody>{by_site}</tbody></table>"
        "<table id='by-work'><caption>By work</caption><thead><tr><th>work</th>"
        "<th class='n'>matches</th><th class='n'>sites</th><th class='n'>best score</th>"
        f"</tr></thead><tbody>{by_work}</tbody></table></div>"
    )


def _match_table(matches: list[Mapping[str, Any]], label: PageLabel, site_cell: SiteCell) -> str:
    esc = html.escape
    rows = []
    for i, m in enumerate(matches, 1):
        score, contained = _score(m, "score"), _score(m, "containment_work")
        rows.append(
            f"<tr><td class='n' data-value='{i}'><a href='#m{i}'>{i}</a></td>"
            f"<td>{site_cell(m.get('site', ''))}</td><td>{_page_cell(m.get('url', ''), label)}</td>"
            f"<td>{esc(m.get('work_title', ''))}</td>"
            f"<td class='n' data-value='{score}'>{score:.3f}</td>"
            f"<td class='n' data-value='{contained}'>{contained:.3f}</td></tr>"
        )
    head = "".join(
        f"<th data-type='{kind}'{' class=n' if kind == 'number' else ''}>{name}</th>"
        for name, kind in (
            ("#", "number"),
            ("site", "text"),
            ("page", "text"),
            ("work", "text"),
            ("score", "number"),
            ("containment", "number"),
        )
    )
    return (
        "<table id='match-table' class='sortable'><caption>Every match (click a column to "
        f"sort)</caption><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _siblings(m: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The match's fact naming the other editions of its work that explain the page too
    (:mod:`matcher.matching.editions`), those that explain it as well marked as a tie; none
    without."""
    siblings = m.get("siblings") or []
    if not siblings:
        return ()
    names = ", ".join(
        f"{html.escape(s.get('work_title', ''))} ({html.escape(s.get('work_source', ''))})"
        + (" <b>tie</b>" if s.get("tie") else "")
        for s in siblings
    )
    return (("other editions that explain the page", names),)


def _match(
    i: int,
    m: Mapping[str, Any],
    texts: Callable[[Mapping[str, Any]], tuple[str, str]],
    label: PageLabel,
    opened: bool,
    site_cell: SiteCell,
) -> str:
    esc = html.escape
    facts = (
        ("site", site_cell(m.get("site", ""))),
        ("page", _page_cell(m.get("url", ""), label)),
        ("work", f"{esc(m.get('work_title', ''))} ({esc(m.get('work_source', ''))})"),
        ("score", f"{_score(m, 'score'):.3f}"),
        ("containment of the work in the page", f"{_score(m, 'containment_work'):.3f}"),
        ("containment of the page in the work", f"{_score(m, 'containment_page'):.3f}"),
        ("methods", esc(" ".join(m.get("methods", [])))),
        *_siblings(m),
        ("status", esc(str(m.get("status", "")))),
        ("first seen", esc(when(m.get("first_seen")))),
        ("last seen", esc(when(m.get("last_seen")))),
    )
    table = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
    work_text, page_text = texts(m)
    evidence = list(m.get("evidence", []))
    pairs = []
    for e in evidence[:MAX_PASSAGES_SHOWN]:
        (a, b), (c, d) = e["work_span"], e["page_span"]
        pairs.append(
            "<div class='pair'>"
            f"<div class='side work'><h4>work, characters {a}–{b}</h4>"
            f"{passage(work_text, a, b, page_text[c:d])}</div>"
            f"<div class='side page'><h4>page, characters {c}–{d}</h4>"
            f"{passage(page_text, c, d, work_text[a:b])}</div></div>"
        )
    if len(evidence) > MAX_PASSAGES_SHOWN:
        pairs.append(f"<p class='more'>… {len(evidence) - MAX_PASSAGES_SHOWN} more passage(s)</p>")
    page_text_label, _ = label(m.get("url", ""))
    summary = (
        f"{i}. {esc(page_text_label)} — {esc(m.get('work_title', ''))} ({_score(m, 'score'):.3f})"
    )
    return (
        f"<details id='m{i}'{' open' if opened else ''}><summary>{summary}</summary>"
        f"<table class='facts'>{table}</table>{''.join(pairs)}</details>"
    )


def match_texts(store: Store, match: dict[str, Any]) -> tuple[Any, str]:
    """The texts a match's passages quote: the work's segments holding its spans (a
    :class:`~matcher.store.TextWindow`, sliced with offsets into the whole work), and the
    page's text."""
    spans = [e["work_span"] for e in match.get("evidence", [])[:MAX_PASSAGES_SHOWN]]
    work = store.works.work_window(match["work_id"], spans)
    page = store.pages.get_page(str(match["page_id"]), {"text": 1, "url": 1, "parts": 1})
    return work, store.pages.download_text(page) if page else ""


def render(
    matches: Iterable[Mapping[str, Any]],
    texts: Callable[[Mapping[str, Any]], tuple[str, str]],
    *,
    title: str = "fptrack report",
    counts: Counts = Counts(),
    page_label: PageLabel = link_label,
    made_at: datetime | None = None,
    site_urls: Mapping[str, str] | None = None,
) -> str:
    """The report; ``texts(match)`` gives ``(work text, page text)``. Matches are shown by
    site, then page, then work. ``site_urls`` (site name -> the URL it was crawled from)
    names each such site by its URL, shown as ``page_label`` shows a page."""
    urls = dict(site_urls or {})

    def site_cell(name: str) -> str:
        url = urls.get(name)
        return _page_cell(url, page_label) if url else html.escape(name)

    found = sorted(
        matches, key=lambda m: (m.get("site", ""), m.get("url", ""), m.get("work_title", ""))
    )
    esc = html.escape
    sites = len({m.get("site", "") for m in found})
    works_copied = len({m.get("work_title", "") for m in found})
    totals = [
        ("works", counts.works),
        ("pages", counts.pages),
        ("matches", len(found)),
        ("sites with matches", sites),
        ("works copied", works_copied),
    ]
    totals_rows = "".join(
        f"<tr><th>{name}</th><td class='n'>{value}</td></tr>"
        for name, value in totals
        if value is not None
    )
    opened = len(found) <= OPEN_UP_TO
    parts = [
        "<!DOCTYPE html><html lang='zh'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<p class='meta'>Made {esc(when(made_at or datetime.now(UTC)))}. "
        f"{len(found)} match(es).</p>",
        "<section id='summary'><h2>Summary</h2>",
        f"<table id='counts'>{totals_rows}</table>",
        _groups(found, site_cell),
        _match_table(found, page_label, site_cell),
        "</section><section id='matches'><h2>Matches</h2>",
        *(_match(i, m, texts, page_label, opened, site_cell) for i, m in enumerate(found, 1)),
        f"</section><script>{SORT_SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts)
