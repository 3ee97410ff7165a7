"""Takedowns followed to the end (:mod:`matcher.evidence.takedowns`): the figures per site, per
hosting provider and per recipient, the URLs to escalate, sending a notice to its recipient
and the search engines' delisting export.

Routes:

- ``GET /takedowns/``: per site, per provider and per recipient kind (operator, host,
  registrar, search), notices sent, URLs named and rechecked, removed, the removal rate
  and the median days to removal, URLs still up ``days`` after their latest notice
  (default ``FPTRACK_TAKEDOWN_ESCALATE_DAYS``, 7) and that list with the next recipient
  to tell; each site's contact, provider and host's and registrar's abuse addresses (set by
  admins, else looked up);
- ``GET /takedowns/cases.csv``: every case (URL, site, provider, state, sent, removed,
  recipients told, rechecks), for the reports;
- ``POST /takedowns/send/<site>`` (reviewers): send the notice of the report selection to
  its ``recipient`` (``operator``, ``host`` or ``registrar``: by email to its address when
  asked, else marked sent) and schedule its rechecks: matches a person confirmed,
  unreviewed ones too when ``unreviewed`` was chosen; refused, with the reason, while the
  notice still has placeholders;
- ``POST /takedowns/delisting.csv`` (reviewers): the search engines' delisting export of
  the confirmed matches (of every site, or ``site``; ``since``, ``unreviewed``), kept as a
  notice to ``search`` whose URLs are rechecked (a POST: each export is a notice);
- ``POST /takedowns/contact/<site>`` (admins): the site's contact address, provider, and
  host's and registrar's abuse addresses (empty: the lookup's).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Blueprint, Response, abort, flash, redirect, render_template, request, url_for

from admin.filters import FilterError
from admin.report import to_csv_rows
from admin.report.selection import Selection
from admin.report.takedown_send import NoticeError, SendError
from admin.web import deps
from admin.web.security import requires
from matcher.evidence.recipients import EMAILED, RECIPIENTS, sent_to

bp = Blueprint("takedowns", __name__, url_prefix="/takedowns")
CASE_FIELDS = (
    "url", "site", "provider", "state", "first_sent_at", "removed_at", "recipients", "rechecks",
)  # fmt: skip
FORM_ONLY = frozenset({"csrf_token", "email", "recipient"})
"""Fields of the send form that are not the notice's selection."""


def escalate_days() -> float:
    """The request's ``days`` (over 0, at most 3650), else ``FPTRACK_TAKEDOWN_ESCALATE_DAYS``;
    a 400 when it is not such a number (the page and the API alike)."""
    raw = request.args.get("days", "")
    if not raw:
        return deps.settings().takedown_escalate_days
    try:
        days = float(raw)
    except ValueError:
        abort(400, "days must be a number")
    if not 0 < days <= 3650:
        abort(400, "days must be over 0 and at most 3650")
    return days


@bp.get("/")
def index() -> Any:
    days = escalate_days()
    takedowns = deps.takedowns()
    found = takedowns.figures(days)
    contacts = takedowns.contacts()
    names = sorted(set(deps.sites().names()) | {f.name for f in found["sites"]})
    recheck_days = ", ".join(f"{d:g}" for d in deps.settings().takedown_days)
    order = {kind: n for n, kind in enumerate(RECIPIENTS)}
    by_recipient = sorted(found["recipients"], key=lambda f: order.get(f.name, len(order)))
    return render_template(
        "takedowns.html",
        found=found,
        by_recipient=by_recipient,
        days=days,
        contacts=contacts,
        addresses=takedowns.addresses(),
        recheck_days=recheck_days,
        site_names=names,
    )


@bp.get("/cases.csv")
def cases_csv() -> Response:
    rows = [
        {
            "url": c["url"],
            "site": c["site"],
            "provider": c.get("provider", ""),
            "state": c.get("state", ""),
            "first_sent_at": _iso(c.get("first_sent_at")),
            "removed_at": _iso(c.get("removed_at")),
            "recipients": "; ".join(sorted(sent_to(c), key=RECIPIENTS.index)),
            "rechecks": "; ".join(
                f"{_iso(k.get('at'))} {k.get('kind')}" for k in c.get("checks", ())
            ),
        }
        for c in deps.takedowns().cases()
    ]
    body = to_csv_rows(rows, CASE_FIELDS)
    response = Response(body.encode("utf-8-sig"), mimetype="text/csv")
    response.headers["Content-Disposition"] = 'attachment; filename="fptrack-takedowns.csv"'
    return response


def _iso(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else ""


@bp.post("/send/<site>")
@requires("reviewer")
def send(site: str) -> Any:
    recipient = request.form.get("recipient", "") or "operator"
    try:
        selection = Selection.parse(request.form, site=site, notice=True)
        sent = deps.takedowns().send(
            selection, email=request.form.get("email") == "1", by=deps.current_user().username,
            recipient=recipient,
        )  # fmt: skip
    except (FilterError, SendError, NoticeError) as exc:
        flash(f"Not sent: {exc}", "error")
        args = {k: v for k, v in request.form.to_dict().items() if k not in FORM_ONLY}
        if recipient in EMAILED and recipient != "operator":
            args["recipient"] = recipient
        return redirect(url_for("reports.takedown", site=site, **args))
    flash(f"Notice {sent.line()}; every URL is rechecked.", "ok")
    return redirect(url_for("takedowns.index"))


@bp.post("/delisting.csv")
@requires("reviewer")
def delisting() -> Any:
    site = request.form.get("site", "").strip() or None
    try:
        selection = Selection.parse(request.form, site=site, notice=True)
        done = deps.takedowns().export_delisting(selection, by=deps.current_user().username)
    except (FilterError, SendError, NoticeError) as exc:
        flash(f"Not exported: {exc}", "error")
        return redirect(url_for("takedowns.index"))
    response = Response(done.csv.encode("utf-8-sig"), mimetype="text/csv")
    name = f"fptrack-delisting-{site or 'all'}-{done.sent.notice_id}.csv"
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@bp.post("/contact/<site>")
@requires("admin")
def contact(site: str) -> Any:
    if deps.sites().get(site) is None:
        abort(404, f"no site {site}")
    fields = {}
    for name in ("contact", "host_email", "registrar_email"):
        email = request.form.get(name, "").strip()[:200]
        if email and "@" not in email:
            flash(f"Not an email address: {email}", "error")
            return redirect(url_for("takedowns.index"))
        fields[name] = email
    provider = request.form.get("provider", "").strip()[:200]
    if provider:
        fields.update(provider=provider, provider_from="edited")
    deps.takedowns().set_contact(site, **fields)
    flash(f"{site}: addresses and provider saved.", "ok")
    return redirect(url_for("takedowns.index"))
