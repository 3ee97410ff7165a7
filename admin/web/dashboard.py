"""The dashboard: totals, trends, top sites and works, crawl health, drawn as charts.

The figures are :meth:`admin.services.dashboard.DashboardService.summary`'s (from counters,
never from counting matches); this module is their page.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, render_template

from admin.services.dashboard import TREND_DAYS
from admin.web import deps
from admin.web.charts import bar_chart, hbar_chart

bp = Blueprint("dashboard", __name__)


@bp.get("/")
def index() -> Any:
    s = deps.dashboard().summary()
    charts = {
        "matches": bar_chart(
            s["matches_by_day"], f"Matches first seen per day, last {TREND_DAYS} days"
        ),
        "pages": bar_chart(s["pages_by_day"], f"Pages crawled per day, last {TREND_DAYS} days"),
        "sites": hbar_chart(s["top_sites"], "Top sites by matches not cleared"),
        "works": hbar_chart([(t, n) for t, n, _ in s["top_works"]], "Most-copied works"),
        "per_site": [
            (name, bar_chart(points, f"Matches per day: {name}")) for name, points in s["per_site"]
        ],
    }
    return render_template("dashboard.html", s=s, charts=charts, days=TREND_DAYS)
