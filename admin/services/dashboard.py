"""The dashboard's figures: totals, trends, top sites and works, crawl health.

Everything comes from :mod:`matcher.store.tallies` (a few documents, read by index) and the
small ``sites``, ``crawls`` and ``failures`` collections, never from counting matches, so
the figures cost the same with ten thousand or a million matches (``bench/admin_bench.py``).
Used by the admin's dashboard (:mod:`admin.web.dashboard`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from matcher.store import now, tallies

if TYPE_CHECKING:
    from matcher.store import Store

TREND_DAYS = 30
TOP = 10
SITE_TRENDS = 4


class DashboardService:
    """The dashboard of ``store``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def summary(self) -> dict[str, Any]:
        """The dashboard's figures (also what the benchmark times)."""
        store = self.store
        total = store.dashboard.tally_total()
        today = now().date()
        days = [(today - timedelta(days=TREND_DAYS - 1 - i)).isoformat() for i in range(TREND_DAYS)]
        daily = store.dashboard.tally_days(first=days[0])
        matches_by_day = tallies.each(daily, "matches")
        pages_by_day = tallies.each(daily, "pages")
        top_sites = store.dashboard.tally_top(scope="site", limit=TOP)
        per_site = []
        for doc in top_sites[:SITE_TRENDS]:
            counts = doc.get("days", {})
            per_site.append((doc["key"], [(d, int(counts.get(d, 0))) for d in days]))
        health = []
        last = store.crawls.latest_crawls()
        for site in store.sites.list_sites():
            crawl = last.get(site.name)
            stats = (crawl or {}).get("stats") or {}
            errors = sum(v for k, v in stats.items() if k.startswith("fptrack/errors/"))
            health.append({"site": site.name, "crawl": crawl, "errors": errors})
        return {
            "works": int(total.get("works", 0)),
            "pages": int(total.get("pages", 0)),
            "by_status": tallies.counts(total),
            "infringing": int(total.get("infringing", 0)),
            "matches_by_day": [(d, matches_by_day.get(d, 0)) for d in days],
            "pages_by_day": [(d, pages_by_day.get(d, 0)) for d in days],
            "per_site": per_site,
            "top_sites": [(d["key"], int(d.get("infringing", 0))) for d in top_sites],
            "top_works": [
                (d.get("label") or d["key"], int(d.get("infringing", 0)), d["key"])
                for d in store.dashboard.tally_top(scope="work", limit=TOP)
            ],
            "health": health,
            "failures": store.failure_log.failure_count(),
        }
