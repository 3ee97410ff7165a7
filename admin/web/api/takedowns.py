"""The API's takedowns: the figures per site, per hosting provider and per recipient kind
with the URLs to escalate (and the next recipient to tell), sending a site's notice to its
operator, host or registrar, and the search engines' delisting export (CSV)."""

from __future__ import annotations

from typing import Any

from flask import Response, abort, g, jsonify, request

from admin.report.selection import Selection
from admin.report.takedown import NoticeError, unusable
from admin.report.takedown_send import SendError
from admin.web import deps
from admin.web.api.blueprint import json_object, ok, query_param, route, when
from admin.web.api.reports import NOTICE_FILTERS, REPORT_FILTERS
from admin.web.api.spec import CSV
from admin.web.takedowns import escalate_days
from matcher.evidence.recipients import EMAILED

DAYS = {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 3650}


@route("GET", "/takedowns", "viewer",
       "Takedowns per site, per hosting provider and per recipient (operator, host, "
       "registrar, search), and the URLs to escalate with the next recipient to tell",
       params=(query_param("days", DAYS, "still up this many days after the notice (default 7)"),),
       responses=ok("Takedowns"))  # fmt: skip
def takedown_figures() -> Any:
    days = escalate_days()
    found = deps.takedowns().figures(days)
    out = {scope: [f.as_dict() for f in rows] for scope, rows in found.items()}
    for rows in out.values():
        for row in rows:
            row["escalate"] = [{**e, "sent_at": when(e["sent_at"])} for e in row["escalate"]]
    return jsonify(days=days, **out)


@route("POST", "/takedowns/{name}", "reviewer",
       "Send a site's takedown notice to its recipient (operator: its contact, the default; "
       "host or registrar: their abuse address, one notice naming every site with that "
       "address) by email (email: true) or mark it sent, and recheck every URL it names; a "
       "409 with the reason when it cannot be (placeholders left, nothing to name, no "
       "address)", params=NOTICE_FILTERS,
       body={"application/json": "SendNotice"}, responses=ok("Sent", "201"))  # fmt: skip
def send_takedown(name: str) -> Any:
    body = json_object()
    email = body.get("email", False)
    if not isinstance(email, bool):
        abort(400, "email must be true or false")
    recipient = body.get("recipient", "operator")
    if recipient not in EMAILED:
        abort(400, f"recipient must be one of {', '.join(EMAILED)}")
    try:
        sent = deps.takedowns().send(
            Selection.parse(request.args, site=name, notice=True), email=email,
            by=g.user.username, recipient=recipient,
        )  # fmt: skip
    except SendError as exc:
        abort(409, str(exc))
    except NoticeError as exc:
        abort(500, unusable(exc))
    response = jsonify(
        notice_id=str(sent.notice_id), site=sent.site, urls=sent.urls, via=sent.via, to=sent.to,
        provider=sent.provider, unreviewed_named=sent.unreviewed, recipient=sent.recipient,
        sites=list(sent.sites),
    )  # fmt: skip
    response.status_code = 201
    return response


DELISTING_FILTERS = (
    *REPORT_FILTERS,
    *(p for p in NOTICE_FILTERS if p["name"] == "unreviewed"),
)


@route("POST", "/delisting", "reviewer",
       "The search engines' delisting export (CSV: url, site, work_title, rights_holder, "
       "work_reference, first_seen, match_id, evidence_link) of the confirmed matches of "
       "every site (or site), kept as a notice to the search engines whose URLs are "
       "rechecked; a 409 with the reason when it cannot be (nothing to name, the rights "
       "holder not set, over 1,000 matches)",
       params=DELISTING_FILTERS, responses=ok(CSV))  # fmt: skip
def delisting_export() -> Any:
    try:
        done = deps.takedowns().export_delisting(
            Selection.parse(request.args, notice=True), by=g.user.username
        )
    except SendError as exc:
        abort(409, str(exc))
    except NoticeError as exc:
        abort(500, unusable(exc))
    response = Response(done.csv, mimetype=CSV)
    response.headers["X-Fptrack-Notice"] = str(done.sent.notice_id)
    return response
