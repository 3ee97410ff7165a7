"""Takedowns followed to the end (:mod:`matcher.evidence.takedowns`): the figures per site and per
hosting provider, the URLs to escalate, and sending a notice.

Routes:

- ``GET /takedowns/``: per site and per provider, notices sent, URLs named and rechecked,
  removed, the removal rate and the median days to removal, URLs still up ``days`` after
  their notice (default ``FPTRACK_TAKEDOWN_ESCALATE_DAYS``, 7) and that list; each site's
  contact and provider, editable by admins;
- ``GET /takedowns/cases.csv``: every case (URL, site, provider, state, sent, removed,
  rechecks), for the reports;
- ``POST /takedowns/send/<site>`` (reviewers): send the notice of the report selection
  (by email to the site's contact when asked, else marked sent) and schedule its rechecks:
  matches a person confirmed, unreviewed ones too when ``unreviewed`` was chosen; refused,
  with the reason, while the notice still has placeholders;
- ``POST /takedowns/contact/<site>`` (admins): the site's contact address and provider.
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

bp = Blueprint("takedowns", __name__, url_prefix="/takedowns")
CASE_FIELDS = ("url", "site", "provider", "state", "first_sent_at", "removed_at", "rechecks")
FORM_ONLY = frozenset({"csrf_token", "email"})
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
    return render_template(
        "takedowns.html",
        found=found,
        days=days,
        contacts=contacts,
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
    try:
        selection = Selection.parse(request.form, site=site, notice=True)
        sent = deps.takedowns().send(
            selection, email=request.form.get("email") == "1", by=deps.current_user().username
        )
    except (FilterError, SendError, NoticeError) as exc:
        flash(f"Not sent: {exc}", "error")
        args = {k: v for k, v in request.form.to_dict().items() if k not in FORM_ONLY}
        return redirect(url_for("reports.takedown", site=site, **args))
    flash(f"Notice {sent.line()}; every URL is rechecked.", "ok")
    return redirect(url_for("takedowns.index"))


@bp.post("/contact/<site>")
@requires("admin")
def contact(site: str) -> Any:
    if deps.sites().get(site) is None:
        abort(404, f"no site {site}")
    email = request.form.get("contact", "").strip()[:200]
    provider = request.form.get("provider", "").strip()[:200]
    if email and "@" not in email:
        flash(f"Not an email address: {email}", "error")
        return redirect(url_for("takedowns.index"))
    fields = {"contact": email}
    if provider:
        fields.update(provider=provider, provider_from="edited")
    deps.takedowns().set_contact(site, **fields)
    flash(f"{site}: contact and provider saved.", "ok")
    return redirect(url_for("takedowns.index"))
