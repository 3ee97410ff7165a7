"""The API's reports: the counts of the selected matches by site and work, and a site's
takedown notice as text."""

from __future__ import annotations

from typing import Any

from flask import abort, jsonify, request

from admin.report.selection import Selection
from admin.report.takedown import NoticeError, not_ready, unusable
from admin.services.matches import STATUSES
from admin.web import deps
from admin.web.api.blueprint import MATCH_FILTERS, SITE_NAME, ok, query_param, route

REPORT_FILTERS = (
    *MATCH_FILTERS[:5],
    query_param("status", {"type": "string", "enum": [*STATUSES, "all"]},
                "review status, or all (default: the infringing ones)"),
)  # fmt: skip
NOTICE_FILTERS = (
    SITE_NAME,
    *REPORT_FILTERS[1:],
    query_param("unreviewed", {"type": "boolean"},
                "name the unreviewed (new) matches too, without review: a choice the notice "
                "records (default: false, the matches a person confirmed only)"),
)  # fmt: skip


@route("GET", "/reports/summary", "viewer", "Counts of the selected matches by site and work",
       params=REPORT_FILTERS, responses=ok("Summary"))  # fmt: skip
def report_summary() -> Any:
    summary = deps.reports().summary(Selection.parse(request.args))
    return jsonify(
        total=summary.total,
        capped=summary.capped,
        by_site=[{"site": site, "matches": n} for site, n in summary.by_site],
        by_work=[{"work_id": w, "title": t, "matches": n} for w, t, n in summary.by_work],
    )


@route("GET", "/reports/takedown/{name}", "viewer",
       "The takedown notice of a site's selected matches, as text, and whether it may be "
       "sent (not while the template's placeholders remain)",
       params=NOTICE_FILTERS, responses=ok("Notice"))  # fmt: skip
def takedown_notice(name: str) -> Any:
    reports = deps.reports()
    selection = Selection.parse(request.args, site=name, notice=True)
    try:
        done = reports.notice(selection, html=False)
    except NoticeError as exc:
        abort(500, unusable(exc))
    why = not_ready(done)
    return jsonify(
        site=name, notice=done.text, matches=done.count, more=done.more, ready=why is None,
        not_ready=why, placeholders=list(done.placeholders), unreviewed=selection.unreviewed,
        unreviewed_named=done.unreviewed, unreviewed_left_out=reports.left_out(selection),
    )  # fmt: skip
