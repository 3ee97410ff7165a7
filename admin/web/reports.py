"""Reports: the matches of a period, site, work and status as a summary, CSV and XLSX
exports, a printable report, and takedown notices per site from an editable template.

The selection and counts are :mod:`admin.report.selection`, the notices
:mod:`admin.report.takedown`, the evidence bundle :mod:`admin.report.evidence`; this module
is their pages.

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
  a person confirmed (``unreviewed=1``: the unreviewed ones too, by choice) by URL (URL,
  work, first :data:`EXCERPT_CHARS` (200) characters of the first evidence passage,
  first-seen date), as a printable page (which says how many unreviewed matches it leaves
  out, and why it cannot be sent yet) or a plain-text download; the path's site replaces
  any ``site`` argument; ``recipient=host`` or ``registrar``: the notice to that abuse desk
  instead (:mod:`admin.report.abuse_notice`, every site with the same abuse address, a
  section each; its evidence bundle is each site's, from its operator notice). The
  download, and the notice's evidence bundle, are a 409 with the reason while the notice
  is not ready (placeholders left, no match to name);
- ``GET/POST /reports/takedown-template``: the notice's template (at most
  :data:`MAX_TEMPLATE_CHARS`, 20,000 characters), the rights holder and the contact (at most
  :data:`MAX_DETAIL_CHARS`, 500 characters each), kept in the ``state`` collection under
  :data:`TEMPLATE_STATE_KEY` and :data:`DETAILS_STATE_KEY`. Until an admin saves one, the
  notice uses :data:`DEFAULT_TAKEDOWN_TEMPLATE` (Chinese and English) and the placeholders
  :data:`PLACEHOLDERS` for an empty rights holder or contact.

"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, Response, abort, flash, redirect, render_template, request, url_for
from markupsafe import Markup

from admin.report import XLSX_MIMETYPE, to_csv, to_xlsx
from admin.report.selection import (
    EVERY_STATUS,
    INFRINGING_STATUSES,
    MAX_EXPORT_ROWS,
    MAX_SUMMARY_MATCHES,
    Selection,
    periods,
)
from admin.report.takedown import (
    DEFAULT_TAKEDOWN_TEMPLATE,
    MAX_DETAIL_CHARS,
    MAX_NOTICE_ITEMS,
    MAX_TEMPLATE_CHARS,
    PLACEHOLDERS,
    Notice,
    NoticeError,
    check_template,
    not_ready,
    render_notice,
    sample_context,
    unusable,
)
from admin.report.takedown_send import Planned
from admin.services.matches import STATUSES
from admin.services.reports import NoArchive
from admin.web import deps
from admin.web.highlight import excerpt
from admin.web.security import requires
from matcher.evidence.recipients import EMAILED

bp = Blueprint("reports", __name__, url_prefix="/reports")

MAX_PRINT_MATCHES = 500
PRINT_PASSAGES = 3
PRINT_PASSAGE_CHARS = 300
MAX_WORK_CHOICES = 1_000


def _today() -> Any:
    return datetime.now(UTC).date()


def _attachment(body: bytes, mimetype: str, filename: str) -> Response:
    response = Response(body, content_type=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# views ---------------------------------------------------------------------------------


@bp.get("/")
def index() -> Any:
    reports = deps.reports()
    selection = Selection.parse(request.args)
    summary = reports.summary(selection)
    sites = reports.site_choices(summary)
    works = reports.work_choices(MAX_WORK_CHOICES + 1)
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
    body = to_csv(deps.reports().export_rows(selection)).encode("utf-8-sig")
    name = f"fptrack-report-{selection.label()}.csv"
    return _attachment(body, "text/csv; charset=utf-8", name)


@bp.get("/export.xlsx")
def export_xlsx() -> Response:
    selection = Selection.parse(request.args)
    body = to_xlsx(deps.reports().export_rows(selection))
    return _attachment(body, XLSX_MIMETYPE, f"fptrack-report-{selection.label()}.xlsx")


@bp.get("/print")
def printable() -> Any:
    reports = deps.reports()
    selection = Selection.parse(request.args)
    printed, more = reports.printed(selection, MAX_PRINT_MATCHES, PRINT_PASSAGES)
    entries = []
    for one in printed:
        evidence = one.match.get("evidence", [])
        entries.append(
            {
                "match": one.match,
                "page_title": one.page_title,
                "passages": [
                    {
                        "chars": e.get("chars", 0),
                        "work": _passage(one.work_text, *e["work_span"]),
                        "page": _passage(one.page_text, *e["page_span"]),
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
        summary=reports.summary(selection),
        hosting=deps.takedowns().hosting(site) if (site := selection.filters.site) else None,
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


def _recipient() -> str:
    """The request's ``recipient`` (default ``operator``); a 400 when it is not one a
    notice is emailed to."""
    kind = request.args.get("recipient", "") or "operator"
    if kind not in EMAILED:
        abort(400, f"recipient must be one of {', '.join(EMAILED)}")
    return kind


def _notice(site: str, html: bool) -> tuple[Notice, Selection, Planned | None]:
    """The notice of the request's selection to its ``recipient``: the operator's from the
    template, else a host's or registrar's (with the sites and address it names)."""
    selection = Selection.parse(request.args, site=site, notice=True)
    kind = _recipient()
    try:
        if kind == "operator":
            return deps.reports().notice(selection, html=html), selection, None
        planned = deps.takedowns().preview(selection, kind, html=html)
    except NoticeError as exc:
        abort(500, unusable(exc))
    return planned.notice, selection, planned


def _ready_notice(site: str) -> tuple[Notice, Selection]:
    """The text notice for an export; a 409 with the reason when it is not ready
    (:func:`admin.report.takedown.not_ready`)."""
    done, selection, _ = _notice(site, html=False)
    why = not_ready(done)
    if why:
        abort(409, f"not exported: {why}")
    return done, selection


def _evidence_zip(selection: Selection, notice: str = "") -> bytes:
    """The selection's evidence bundle; a 404 when there is no evidence archive."""
    try:
        return deps.reports().evidence_zip(selection, notice)
    except NoArchive as exc:
        abort(404, str(exc))


@bp.get("/takedown/<site>")
def takedown(site: str) -> Any:
    done, selection, planned = _notice(site, html=True)
    recipient = planned.recipient if planned else "operator"
    to = planned.to if planned else deps.takedowns().addresses().get(site, {}).get("operator")
    return render_template(
        "takedown.html",
        site=selection.filters.site,
        recipient=recipient,
        recipients=EMAILED,
        to=to,
        named_sites=planned.sites if planned else (site,),
        notice=Markup(done.text),
        selection=selection,
        more=done.more,
        count=done.count,
        max_items=MAX_NOTICE_ITEMS,
        not_ready=not_ready(done),
        placeholders=done.placeholders,
        unreviewed=done.unreviewed,
        left_out=deps.reports().left_out(selection),
        hosting=deps.takedowns().hosting(selection.filters.site),
    )


@bp.get("/takedown/<site>/notice.txt")
def takedown_text(site: str) -> Response:
    done, selection = _ready_notice(site)
    name = f"takedown-{_recipient()}-{selection.label()}.txt"
    return _attachment(done.text.encode("utf-8"), "text/plain; charset=utf-8", name)


@bp.get("/evidence.zip")
def evidence() -> Response:
    selection = Selection.parse(request.args)
    body = _evidence_zip(selection)
    return _attachment(body, "application/zip", f"fptrack-evidence-{selection.label()}.zip")


@bp.get("/takedown/<site>/evidence.zip")
def takedown_evidence(site: str) -> Response:
    if _recipient() != "operator":
        abort(400, "the evidence bundle is a site's: take it from each site's operator notice")
    done, selection = _ready_notice(site)
    body = _evidence_zip(selection, done.text)
    return _attachment(body, "application/zip", f"takedown-evidence-{selection.label()}.zip")


@bp.route("/takedown-template", methods=["GET", "POST"])
@requires("admin")
def takedown_template() -> Any:
    reports = deps.reports()
    source, details = reports.template()
    error = None
    if request.method == "POST":
        if request.form.get("reset"):
            reports.reset_template()
            flash("takedown template reset to the default")
            return redirect(url_for("reports.takedown_template"))
        source = request.form.get("template", "").replace("\r\n", "\n")
        details = {
            k: " ".join(request.form.get(k, "").split())[:MAX_DETAIL_CHARS] for k in PLACEHOLDERS
        }
        error = check_template(source, details)
        if error is None:
            reports.save_template(source, details)
            flash("takedown template saved")
            return redirect(url_for("reports.takedown_template"))
    preview = None
    if error is None:
        context = sample_context(details)
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
