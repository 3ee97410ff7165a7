"""Reports: the matches of a period, site, work and status as a summary, CSV and XLSX
exports, a printable report, and takedown notices per site from an editable template.

A report's selection is the match list's filters (:class:`admin.web.filters.MatchFilters`:
``since``/``until`` dates, ``site``, ``work``, ``min_score``, ``status``; a bad value is a
400) with one addition: ``status`` may be empty, meaning the infringing statuses
:data:`INFRINGING_STATUSES` (``new``, ``confirmed``, ``takedown_sent``: every status but
``false_positive`` and ``authorised``, as the dashboard's tallies count them), or ``all``
(:data:`EVERY_STATUS`), meaning any status. Only active matches are reported.

Routes (every role may read and export; only admins edit the takedown template):

- ``GET /reports/``: the selection form (a list of the first :data:`MAX_WORK_CHOICES`
  (1,000) works, else a work id field), quick periods, links to the exports, the printable
  report and the takedown notices, and counts by site and by work of the newest
  :data:`MAX_SUMMARY_MATCHES` (100,000) selected matches;
- ``GET /reports/export.csv`` and ``GET /reports/export.xlsx``: one row per match, the
  columns of :data:`admin.report.CSV_FIELDS`, no cell a formula; the CSV is UTF-8 with a
  byte-order mark so spreadsheets read the Chinese right; more than :data:`MAX_EXPORT_ROWS`
  (100,000) selected matches is a 400 (narrow the selection);
- ``GET /reports/print``: a printable page of the newest :data:`MAX_PRINT_MATCHES` (500)
  matches, each with its first :data:`PRINT_PASSAGES` (3) evidence passages in context
  (the work's and the page's copy, the first :data:`PRINT_PASSAGE_CHARS` (300) characters
  of each);
- ``GET /reports/takedown/<site>`` and ``GET /reports/takedown/<site>/notice.txt``: the
  notice to one site listing its newest :data:`MAX_NOTICE_ITEMS` (1,000) selected matches
  by URL (URL, work, first :data:`EXCERPT_CHARS` (200) characters of the first evidence
  passage, first-seen date), as a printable page or a plain-text download; the path's site
  replaces any ``site`` argument;
- ``GET/POST /reports/takedown-template``: the notice's template (at most
  :data:`MAX_TEMPLATE_CHARS`, 20,000 characters), the rights holder and the contact (at most
  :data:`MAX_DETAIL_CHARS`, 500 characters each), kept in the ``state`` collection under
  :data:`TEMPLATE_STATE_KEY` and :data:`DETAILS_STATE_KEY`. Until an admin saves one, the
  notice uses :data:`DEFAULT_TAKEDOWN_TEMPLATE` (Chinese and English) and the placeholders
  :data:`PLACEHOLDERS` for an empty rights holder or contact.

The template is Jinja2 run in an immutable sandbox (no attribute starting with ``_``, no
changing the data, ranges of at most 100,000), with no loader (no ``include``/``import``),
strict about undefined names, and bounded: no ``*`` or ``**`` whose result would exceed
:data:`~admin.web.notice_sandbox.MAX_NOTICE_CHARS` (1,000,000) characters, no call with
an integer argument above it, output of at most that many characters, and a render of at
most :data:`RENDER_SECONDS` seconds and 1 GiB in a fresh process of its own
(:mod:`admin.web.notice_sandbox`, killed when over), so that a template cannot take the
server's memory or its time. The page variant autoescapes every value and the sandbox has
neither the ``safe`` filter nor the ``autoescape`` tag, so page text (URLs, excerpts) is
always escaped; the ``.txt`` variant is plain text. A template is tried on sample data
before it is saved: one that does not parse or render is refused (400) and the previous one
stays. A stored template that fails anyway (written to the store by other means) makes the
notice a 500 naming the error.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from flask import (
    Blueprint,
    Response,
    abort,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)
from markupsafe import Markup

from admin.report import XLSX_MIMETYPE, to_csv, to_xlsx
from admin.web.filters import FilterError, MatchFilters
from admin.web.highlight import excerpt
from admin.web.notice_sandbox import NoticeError
from admin.web.security import requires
from matcher.store import STATUSES
from matcher.tallies import NOT_INFRINGING

bp = Blueprint("reports", __name__, url_prefix="/reports")

INFRINGING_STATUSES = tuple(s for s in STATUSES if s not in NOT_INFRINGING)
"""The statuses a report selects by default: ``new``, ``confirmed``, ``takedown_sent``."""
EVERY_STATUS = "all"
MAX_SUMMARY_MATCHES = 100_000
MAX_EXPORT_ROWS = 100_000
MAX_PRINT_MATCHES = 500
PRINT_PASSAGES = 3
PRINT_PASSAGE_CHARS = 300
MAX_NOTICE_ITEMS = 1_000
EXCERPT_CHARS = 200
MAX_WORK_CHOICES = 1_000
MAX_TEMPLATE_CHARS = 20_000
RENDER_SECONDS = 5.0
MAX_DETAIL_CHARS = 500
MAX_EVIDENCE_FILES = 500
"""Archived exchanges bundled in one evidence zip at most (a larger selection is refused)."""
TEMPLATE_STATE_KEY = "takedown_template"
DETAILS_STATE_KEY = "takedown_details"
PLACEHOLDERS = {
    "rights_holder": "[权利人 / rights holder]",
    "contact": "[联系方式 / contact]",
}
LIST_FIELDS = {"evidence": 0, "scores": 0}

DEFAULT_TAKEDOWN_TEMPLATE = """\
侵权通知 / Notice of Copyright Infringement

日期 / Date: {{ date }}
致 / To: {{ site }} 网站负责人 / operator of {{ site }}

{{ rights_holder }} 是下列作品的著作权人或其授权代表。贵网站的下列网页未经许可复制、\
传播了这些作品。依据《中华人民共和国著作权法》和《信息网络传播权保护条例》第十四条，\
请在收到本通知后立即删除上述内容或断开链接。

{{ rights_holder }} owns, or is authorised to act for the owner of, the copyright in the \
works listed below. The following pages of your site reproduce and distribute these works \
without permission. Under the Copyright Law of the People's Republic of China and Article 14 \
of the Regulations on the Protection of the Right to Network Dissemination of Information, \
please remove them or disable access to them as soon as you receive this notice.

作品 / Works: {{ works | join("；") }}
侵权网址 / Infringing URLs: {{ count }}{{ " (" ~ period ~ ")" if period else "" }}

{% for item in items %}
{{ loop.index }}. {{ item.url }}
   作品 / Work: {{ item.work }}
   首次发现 / First seen: {{ item.first_seen }}
   证据摘录 / Evidence: {{ item.excerpt }}

{% endfor %}
本人保证本通知内容真实、准确。
I state that the information in this notice is accurate.

联系方式 / Contact: {{ contact }}
{{ rights_holder }}
{{ date }}
"""
"""The notice until an admin saves another; its variables are those of :func:`notice_context`."""


# selection -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """The matches a report covers: the match list's filters and the status choice."""

    filters: MatchFilters
    every_status: bool = False

    @classmethod
    def parse(cls, args: Any, site: str | None = None) -> Selection:
        """From request arguments; ``site`` (a path part) replaces the ``site`` argument."""
        values = {k: v for k, v in args.items() if k in MatchFilters.__dataclass_fields__}
        status = values.get("status", "")
        every = isinstance(status, str) and status.strip() == EVERY_STATUS
        if every:
            values.pop("status")
        try:
            filters = MatchFilters.parse(values)
            if site is not None:
                filters = MatchFilters.parse({**filters.args(), "site": site})
        except FilterError as exc:
            abort(400, str(exc))
        return cls(filters, every)

    @property
    def statuses(self) -> tuple[str, ...]:
        if self.filters.status is not None:
            return (self.filters.status,)
        return STATUSES if self.every_status else INFRINGING_STATUSES

    @property
    def status_arg(self) -> str:
        return self.filters.status or (EVERY_STATUS if self.every_status else "")

    def criteria(self) -> dict[str, Any]:
        """The selection as arguments of the store's match queries."""
        criteria = self.filters.criteria()
        if self.filters.status is None and not self.every_status:
            criteria["statuses"] = list(INFRINGING_STATUSES)
        return criteria

    def args(self, **changes: str | None) -> dict[str, str]:
        """The selection as request arguments, with ``changes`` (``None`` drops one)."""
        out = self.filters.args()
        if self.every_status:
            out["status"] = EVERY_STATUS
        out.update(changes)
        return {k: v for k, v in out.items() if v is not None}

    def period(self) -> str:
        since, until = self.filters.since, self.filters.until
        if since and until:
            return f"{since} – {until}"
        if since:
            return f"{since} –"
        return f"– {until}" if until else ""

    def label(self) -> str:
        """A file name part (ASCII: site names and dates are)."""
        parts = [self.filters.site, self.filters.since, self.filters.until]
        return "-".join(p for p in parts if p) or "all"


def _ops() -> Any:
    from admin.web.app import services

    return services().ctx.ops


def _find(ops: Any, selection: Selection, limit: int, fields: tuple[str, ...] = ()) -> Any:
    """The selected matches, newest first: ``fields`` only, else all but their scores."""
    without = () if fields else ("scores",)
    return ops.find_matches(limit=limit, fields=fields, without=without, **selection.criteria())


def _export_rows(ops: Any, selection: Selection) -> list[dict[str, Any]]:
    rows = list(_find(ops, selection, MAX_EXPORT_ROWS + 1))
    if len(rows) > MAX_EXPORT_ROWS:
        abort(400, f"more than {MAX_EXPORT_ROWS:,} matches: narrow the selection")
    return rows


@dataclass
class Summary:
    total: int
    capped: bool
    by_site: list[tuple[str, int]]
    by_work: list[tuple[str, str, int]]


def summarise(ops: Any, selection: Selection) -> Summary:
    """Counts by site and by work of the first :data:`MAX_SUMMARY_MATCHES` selected matches."""
    fields = ("site", "work_id", "work_title")
    sites: Counter[str] = Counter()
    works: Counter[str] = Counter()
    titles: dict[str, str] = {}
    total = 0
    for match in _find(ops, selection, MAX_SUMMARY_MATCHES + 1, fields):
        if total == MAX_SUMMARY_MATCHES:
            return _summary(total, True, sites, works, titles)
        total += 1
        sites[str(match.get("site", ""))] += 1
        work = str(match.get("work_id", ""))
        works[work] += 1
        titles.setdefault(work, str(match.get("work_title", "")))
    return _summary(total, False, sites, works, titles)


def _summary(
    total: int, capped: bool, sites: Counter[str], works: Counter[str], titles: dict[str, str]
) -> Summary:
    by_site = sorted(sites.items(), key=lambda kv: (-kv[1], kv[0]))
    by_work = [(w, titles[w], n) for w, n in sorted(works.items(), key=lambda kv: (-kv[1], kv[0]))]
    return Summary(total, capped, by_site, by_work)


def periods(today: date, selection: Selection) -> list[tuple[str, dict[str, str]]]:
    """Quick periods (label, request arguments) keeping the rest of the selection."""
    first = today.replace(day=1)
    last_month_end = first - timedelta(days=1)
    spans = [
        ("last 7 days", today - timedelta(days=6), today),
        ("last 30 days", today - timedelta(days=29), today),
        ("this month", first, today),
        ("last month", last_month_end.replace(day=1), last_month_end),
        ("this year", today.replace(month=1, day=1), today),
        ("all time", None, None),
    ]
    return [
        (
            name,
            selection.args(
                since=since.isoformat() if since else None,
                until=until.isoformat() if until else None,
            ),
        )
        for name, since, until in spans
    ]


def _today() -> date:
    return datetime.now(UTC).date()


def _attachment(body: bytes, mimetype: str, filename: str) -> Response:
    response = Response(body, content_type=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# views ---------------------------------------------------------------------------------


@bp.get("/")
def index() -> Any:
    ops = _ops()
    selection = Selection.parse(request.args)
    summary = summarise(ops, selection)
    sites = sorted({s.name for s in ops.list_sites()} | {s for s, _ in summary.by_site if s})
    works = ops.list_works(limit=MAX_WORK_CHOICES + 1)
    return render_template(
        "reports.html",
        selection=selection,
        filters=selection.filters,
        summary=summary,
        sites=sites,
        works=works if len(works) <= MAX_WORK_CHOICES else None,
        statuses=STATUSES,
        infringing=INFRINGING_STATUSES,
        every_status=EVERY_STATUS,
        periods=periods(_today(), selection),
        max_summary=MAX_SUMMARY_MATCHES,
        max_export=MAX_EXPORT_ROWS,
    )


@bp.get("/export.csv")
def export_csv() -> Response:
    selection = Selection.parse(request.args)
    body = to_csv(_export_rows(_ops(), selection)).encode("utf-8-sig")
    name = f"fptrack-report-{selection.label()}.csv"
    return _attachment(body, "text/csv; charset=utf-8", name)


@bp.get("/export.xlsx")
def export_xlsx() -> Response:
    selection = Selection.parse(request.args)
    body = to_xlsx(_export_rows(_ops(), selection))
    return _attachment(body, XLSX_MIMETYPE, f"fptrack-report-{selection.label()}.xlsx")


@bp.get("/print")
def printable() -> Any:
    ops = _ops()
    selection = Selection.parse(request.args)
    rows = list(_find(ops, selection, MAX_PRINT_MATCHES + 1))
    more = len(rows) > MAX_PRINT_MATCHES
    entries = []
    for match in rows[:MAX_PRINT_MATCHES]:
        evidence = match.get("evidence", [])
        spans = [e["work_span"] for e in evidence[:PRINT_PASSAGES]]
        work_text = ops.store.work_window(match["work_id"], spans)
        page = ops.store.get_page(str(match.get("page_id")), {"text": 1, "title": 1}) or {}
        page_text = page.get("text", "")
        entries.append(
            {
                "match": match,
                "page_title": page.get("title", ""),
                "passages": [
                    {
                        "chars": e.get("chars", 0),
                        "work": _passage(work_text, *e["work_span"]),
                        "page": _passage(page_text, *e["page_span"]),
                    }
                    for e in evidence[:PRINT_PASSAGES]
                ],
                "more_passages": max(0, len(evidence) - PRINT_PASSAGES),
            }
        )
    return render_template(
        "report_print.html",
        selection=selection,
        entries=entries,
        more=more,
        summary=summarise(ops, selection),
        max_print=MAX_PRINT_MATCHES,
        generated=datetime.now(UTC),
    )


def _passage(text: str, start: int, end: int) -> Markup:
    """A passage in context, its marked part cut to :data:`PRINT_PASSAGE_CHARS`."""
    if end - start <= PRINT_PASSAGE_CHARS:
        return excerpt(text, start, end)
    start = max(0, start)
    shown = excerpt(text[: start + PRINT_PASSAGE_CHARS], start, start + PRINT_PASSAGE_CHARS)
    return shown + f" … ({end - start - PRINT_PASSAGE_CHARS:,} more characters)"


# takedown notices ----------------------------------------------------------------------


def render_notice(source: str, context: dict[str, Any], *, html: bool) -> str:
    """``source`` rendered by :mod:`admin.web.notice_sandbox` in a process of its own, given
    :data:`RENDER_SECONDS`; any failure is a :class:`NoticeError`."""
    request = json.dumps({"source": source, "context": context, "html": html})
    try:
        done = subprocess.run(
            [sys.executable, "-m", "admin.web.notice_sandbox"],
            input=request.encode("utf-8"),
            capture_output=True,
            timeout=RENDER_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise NoticeError(f"the template took more than {RENDER_SECONDS:g} s to render") from None
    except OSError as exc:
        raise NoticeError(f"the template could not be rendered ({exc.strerror})") from None
    try:
        ok, value = json.loads(done.stdout)
    except ValueError:
        why = "out of memory" if b"MemoryError" in done.stderr else f"exit {done.returncode}"
        raise NoticeError(
            f"the template could not be rendered (its process ended: {why})"
        ) from None
    if not ok:
        raise NoticeError(value)
    return str(value)


def notice_template(ops: Any) -> str:
    return ops.get_state(TEMPLATE_STATE_KEY) or DEFAULT_TAKEDOWN_TEMPLATE


def notice_details(ops: Any) -> dict[str, str]:
    kept = ops.get_state(DETAILS_STATE_KEY) or {}
    return {k: str(kept.get(k, "")) if isinstance(kept, dict) else "" for k in PLACEHOLDERS}


def notice_items(ops: Any, selection: Selection) -> tuple[list[dict[str, str]], bool]:
    """The notice's lines (newest :data:`MAX_NOTICE_ITEMS`, by URL) and whether more exist."""
    fields = ("url", "work_title", "work_source", "first_seen", "evidence")
    rows = list(_find(ops, selection, MAX_NOTICE_ITEMS + 1, fields))
    items = []
    for match in rows[:MAX_NOTICE_ITEMS]:
        evidence = match.get("evidence") or [{}]
        text = str(evidence[0].get("text", ""))
        if len(text) > EXCERPT_CHARS:
            text = text[:EXCERPT_CHARS] + "…"
        seen = match.get("first_seen")
        items.append(
            {
                "url": str(match.get("url", "")),
                "work": str(match.get("work_title", "")),
                "work_source": str(match.get("work_source", "")),
                "excerpt": " ".join(text.split()),
                "first_seen": seen.strftime("%Y-%m-%d") if isinstance(seen, datetime) else "",
            }
        )
    items.sort(key=lambda i: (i["url"], i["work"]))
    return items, len(rows) > MAX_NOTICE_ITEMS


def notice_context(
    site: str,
    items: list[dict[str, str]],
    details: dict[str, str],
    period: str = "",
    today: date | None = None,
) -> dict[str, Any]:
    """The template's variables: ``site``, ``date``, ``rights_holder``, ``contact``,
    ``period``, ``count``, ``works`` (titles) and ``items`` (``url``, ``work``,
    ``work_source``, ``excerpt``, ``first_seen``)."""
    return {
        "site": site,
        "date": (today or _today()).isoformat(),
        "rights_holder": details.get("rights_holder") or PLACEHOLDERS["rights_holder"],
        "contact": details.get("contact") or PLACEHOLDERS["contact"],
        "period": period,
        "count": len(items),
        "works": sorted({i["work"] for i in items}),
        "items": items,
    }


SAMPLE_ITEMS = [
    {
        "url": "http://pirate.example/book/1.html",
        "work": "示例作品 / Sample work",
        "work_source": "sample.txt",
        "excerpt": "示例摘录 <sample excerpt>",
        "first_seen": "2024-01-31",
    },
    {
        "url": "http://pirate.example/book/2.html",
        "work": "示例作品 / Sample work",
        "work_source": "sample.txt",
        "excerpt": "另一段摘录 & more",
        "first_seen": "2024-02-01",
    },
]


def _notice(site: str, html: bool) -> tuple[str, Selection, bool, int]:
    ops = _ops()
    selection = Selection.parse(request.args, site=site)
    items, more = notice_items(ops, selection)
    context = notice_context(
        str(selection.filters.site), items, notice_details(ops), selection.period()
    )
    try:
        text = render_notice(notice_template(ops), context, html=html)
    except NoticeError as exc:
        abort(500, f"the takedown template cannot be used ({exc}); an admin can fix it")
    return text, selection, more, len(items)


def takedown_text_of(site: str) -> tuple[str, int, bool]:
    """The plain-text notice of the site's selected matches (request arguments), how many
    matches it lists, and whether more were left out."""
    text, _, more, count = _notice(site, html=False)
    return text, count, more


@bp.get("/takedown/<site>")
def takedown(site: str) -> Any:
    text, selection, more, count = _notice(site, html=True)
    return render_template(
        "takedown.html",
        site=selection.filters.site,
        notice=Markup(text),
        selection=selection,
        more=more,
        count=count,
        max_items=MAX_NOTICE_ITEMS,
    )


@bp.get("/takedown/<site>/notice.txt")
def takedown_text(site: str) -> Response:
    text, selection, _, _ = _notice(site, html=False)
    name = f"takedown-{selection.label()}.txt"
    return _attachment(text.encode("utf-8"), "text/plain; charset=utf-8", name)


def evidence_zip(ops: Any, archive: Any, selection: Selection, notice: str = "") -> bytes:
    """The selected matches' archived exchanges: one WARC file each (once per exchange),
    ``manifest.txt`` (``sha256sum -c`` checks the files against it), ``manifest.json`` (each
    file's page URL, works, fetch time and size) and, for a takedown, ``notice.txt``."""
    from matcher.archive import ArchiveError

    if archive is None:
        abort(404, "no evidence archive is configured")
    rows = _find(ops, selection, MAX_EXPORT_ROWS + 1, ("url", "site", "work_title", "archive"))
    files: dict[str, dict[str, Any]] = {}
    for row in rows:
        ref = row.get("archive")
        if not ref:
            continue
        entry = files.setdefault(
            ref["sha256"],
            {
                "file": f"{ref['sha256']}.warc.gz",
                "sha256": ref["sha256"],
                "url": row.get("url", ""),
                "site": row.get("site", ""),
                "fetched_at": ref.get("fetched_at"),
                "bytes": ref.get("bytes"),
                "works": [],
            },
        )
        entry["works"].append(row.get("work_title", ""))
        if len(files) > MAX_EVIDENCE_FILES:
            abort(400, f"more than {MAX_EVIDENCE_FILES} archived pages: narrow the selection")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as bundle:
        for entry in files.values():
            try:
                bundle.writestr(entry["file"], archive.get(entry["sha256"]))
            except ArchiveError:
                entry["missing"] = True
        listed = [e for e in files.values() if not e.get("missing")]
        bundle.writestr("manifest.txt", "".join(f"{e['sha256']}  {e['file']}\n" for e in listed))
        manifest = [
            {**e, "fetched_at": e["fetched_at"].isoformat() if e["fetched_at"] else None}
            for e in files.values()
        ]
        bundle.writestr("manifest.json", json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
        if notice:
            bundle.writestr("notice.txt", notice)
    return out.getvalue()


def _archive() -> Any:
    from admin.web.app import services

    return services().ctx.archive


@bp.get("/evidence.zip")
def evidence() -> Response:
    selection = Selection.parse(request.args)
    body = evidence_zip(_ops(), _archive(), selection)
    return _attachment(body, "application/zip", f"fptrack-evidence-{selection.label()}.zip")


@bp.get("/takedown/<site>/evidence.zip")
def takedown_evidence(site: str) -> Response:
    text, selection, _, _ = _notice(site, html=False)
    body = evidence_zip(_ops(), _archive(), selection, notice=text)
    return _attachment(body, "application/zip", f"takedown-evidence-{selection.label()}.zip")


@bp.route("/takedown-template", methods=["GET", "POST"])
@requires("admin")
def takedown_template() -> Any:
    ops = _ops()
    source, details = notice_template(ops), notice_details(ops)
    error = None
    if request.method == "POST":
        if request.form.get("reset"):
            ops.set_state(TEMPLATE_STATE_KEY, "")
            flash("takedown template reset to the default")
            return redirect(url_for("reports.takedown_template"))
        source = request.form.get("template", "").replace("\r\n", "\n")
        details = {
            k: " ".join(request.form.get(k, "").split())[:MAX_DETAIL_CHARS] for k in PLACEHOLDERS
        }
        error = _check_template(source, details)
        if error is None:
            ops.set_state(TEMPLATE_STATE_KEY, source)
            ops.set_state(DETAILS_STATE_KEY, details)
            flash("takedown template saved")
            return redirect(url_for("reports.takedown_template"))
    preview = None
    if error is None:
        context = notice_context("pirate.example", SAMPLE_ITEMS, details, "2024-01-01 – 2024-02-29")
        try:
            preview = Markup(render_notice(source, context, html=True))
        except NoticeError as exc:
            error = str(exc)
    page = render_template(
        "takedown_template.html",
        source=source,
        details=details,
        error=error,
        preview=preview,
        placeholders=PLACEHOLDERS,
        max_chars=MAX_TEMPLATE_CHARS,
        default=source == DEFAULT_TAKEDOWN_TEMPLATE,
    )
    return page, 400 if request.method == "POST" else 200


def _check_template(source: str, details: dict[str, str]) -> str | None:
    """Why ``source`` cannot be saved, else ``None``."""
    if not source.strip():
        return "the template is empty (use “reset” for the default)"
    if len(source) > MAX_TEMPLATE_CHARS:
        return f"the template has more than {MAX_TEMPLATE_CHARS:,} characters"
    context = notice_context("pirate.example", SAMPLE_ITEMS, details, "2024-01-01 – 2024-02-29")
    for html in (True, False):
        try:
            render_notice(source, context, html=html)
        except NoticeError as exc:
            return f"the template was not saved, the previous one is kept: {exc}"
    return None
