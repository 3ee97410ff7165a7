"""The API's takedowns: the figures per site and per hosting provider with the URLs to
escalate, and sending a site's notice."""

from __future__ import annotations

from typing import Any

from flask import abort, g, jsonify, request

from admin.report.selection import Selection
from admin.report.takedown import NoticeError, unusable
from admin.report.takedown_send import SendError
from admin.web import deps
from admin.web.api.blueprint import json_object, ok, query_param, route, when
from admin.web.api.reports import NOTICE_FILTERS
from admin.web.takedowns import escalate_days

DAYS = {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 3650}


@route("GET", "/takedowns", "viewer",
       "Takedowns per site and per hosting provider, and the URLs to escalate",
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
       "Send a site's takedown notice (email: true, to its contact) or mark it sent, and "
       "recheck every URL it names; a 409 with the reason when it cannot be (placeholders "
       "left, nothing to name)", params=NOTICE_FILTERS,
       body={"application/json": "SendNotice"}, responses=ok("Sent", "201"))  # fmt: skip
def send_takedown(name: str) -> Any:
    body = json_object()
    email = body.get("email", False)
    if not isinstance(email, bool):
        abort(400, "email must be true or false")
    try:
        sent = deps.takedowns().send(
            Selection.parse(request.args, site=name, notice=True), email=email, by=g.user.username
        )
    except SendError as exc:
        abort(409, str(exc))
    except NoticeError as exc:
        abort(500, unusable(exc))
    response = jsonify(
        notice_id=str(sent.notice_id), site=sent.site, urls=sent.urls, via=sent.via, to=sent.to,
        provider=sent.provider, unreviewed_named=sent.unreviewed,
    )  # fmt: skip
    response.status_code = 201
    return response
