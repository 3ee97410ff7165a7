"""Watched sites: their configurations (saved with their schedules, removed), their crawls
(started, their runs outlined, a failed one acknowledged), the counts of their matches, and
the URL rules their crawls learnt (:mod:`crawler.dust`), edited by hand.

Used by the admin's site pages (:mod:`admin.web.sites`), its discovery and takedown pages,
the API's site routes (:mod:`admin.web.api.sites`), and ``fptrack sites``, ``fptrack
takedowns contact`` and ``fptrack check --ack`` (:mod:`admin.commands`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from admin.registration import remove_site, save_site
from matcher.errors import MatcherError
from matcher.sites import crawl_runs
from matcher.sites.site_config import SiteConfig
from matcher.store.common import StoreError, now

if TYPE_CHECKING:
    from admin.services.dispatch import Dispatch
    from matcher.store import Store
    from matcher.worker.schedules import Schedules

CRAWLS_SHOWN = 10
"""The newest crawl runs one site's page lists."""


class RuleRefused(MatcherError, ValueError):
    """A URL rule the store refuses (not a parameter rule)."""


@dataclass(frozen=True)
class SiteDetail:
    """One site's newest crawl runs, each with its outline; its learnt URL rules; its active
    matches (``all``, and ``new``: unreviewed); and the ids of its failed runs that
    ``fptrack check`` reports until someone acknowledges them."""

    crawls: list[tuple[dict[str, Any], Any]]
    rules: Any
    matches: dict[str, int]
    unseen: set[str]


class SiteService:
    """The sites of ``store``, their beat ``schedules`` (None: kept in the store only), and
    the ``dispatch`` that starts their crawls (None: none started from here, as in the
    command line's ``fptrack sites``)."""

    def __init__(
        self, store: Store, schedules: Schedules | None, dispatch: Dispatch | None = None
    ) -> None:
        self.store, self.schedules, self.dispatch = store, schedules, dispatch

    def all_sites(self) -> list[SiteConfig]:
        return self.store.sites.list_sites()

    def names(self) -> list[str]:
        return [s.name for s in self.all_sites()]

    def get(self, name: str) -> SiteConfig | None:
        """The stored site ``name``, None when there is none (a name that cannot be a site's
        is a :class:`~matcher.sites.site_config.SiteConfigError`)."""
        return self.store.sites.get_site(name)

    def overview(self) -> tuple[list[SiteConfig], dict[str, Any]]:
        """Every site, and the outline of each one's latest crawl run."""
        sites = self.all_sites()
        latest = self.store.crawls.latest_crawls()
        return sites, {s.name: crawl_runs.outline(latest.get(s.name)) for s in sites}

    def detail(self, site: SiteConfig) -> SiteDetail:
        crawls = self.store.crawls.last_crawls(site.name, CRAWLS_SHOWN)
        outlines = [crawl_runs.outline(c, self._found_during(c)) for c in crawls]
        rules = self.store.sites.site_rules(site.name)
        matches = {
            "all": self.store.matches.count(site=site.name, active_only=True),
            "new": self.store.matches.count(site=site.name, status="new", active_only=True),
        }
        saved = self.store.sites.creation_times().get(site.name)
        return SiteDetail(
            list(zip(crawls, outlines, strict=True)), rules, matches,
            _unseen_failures(site.name, crawls, saved),
        )  # fmt: skip

    def _found_during(self, run: dict[str, Any]) -> int | None:
        """The matches of a crawl run's site first found while it ran (None: no start time)."""
        started = run.get("started_at")
        if not isinstance(started, datetime):
            return None
        ended = run.get("finished_at")
        return self.store.matches.count(
            site=run["site"], since=started, until=ended if isinstance(ended, datetime) else None,
            active_only=True,
        )  # fmt: skip

    def acknowledge(self, site: SiteConfig, run_id: str, *, by: str) -> bool:
        """Acknowledge a failed crawl run of ``site`` in the name of ``by``, now: ``fptrack
        check`` no longer reports it; False: no unacknowledged failed run of that id."""
        return self.store.crawls.acknowledge_failures(site.name, by=by, at=now(), run_id=run_id)

    def add_rule(self, site: SiteConfig, pattern: str, param: str) -> bool:
        """Links on ``pattern`` lose the parameter ``param``; False: the rule exists."""
        with _refused():
            return self.store.sites.add_site_rule(site.name, pattern, param)

    def delete_rule(self, site: SiteConfig, pattern: str, param: str) -> bool:
        """Delete a parameter rule (never learnt again); False: no such rule."""
        with _refused():
            return self.store.sites.delete_site_rule(site.name, pattern, param)

    def forget_dead_pattern(self, site: SiteConfig, pattern: str) -> bool:
        """Ask for the links of a dead pattern again; False: no such pattern."""
        with _refused():
            return self.store.sites.delete_dead_pattern(site.name, pattern)

    def save(self, config: SiteConfig, *, by: str) -> str:
        """Save a site with its schedules (:func:`admin.registration.save_site`); what was
        done, in a line."""
        return save_site(self.store, self.schedules, config, by=by)

    def put(self, config: SiteConfig) -> tuple[bool, bool]:
        """Save a site's configuration and sync its schedules, as ``fptrack sites add``
        does (its unreviewed matches left as they are); whether it was new, and whether it
        is scheduled."""
        _, created = self.store.sites.save_site(config)
        scheduled = self.schedules.sync_site(config) if self.schedules is not None else False
        return created, scheduled

    def delete(self, name: str) -> bool:
        """Remove a site and its schedules (its pages and matches stay); False: no such
        site (its schedules then left as they are)."""
        if not self.store.sites.delete_site(name):
            return False
        if self.schedules is not None:
            self.schedules.remove_site(name)
        return True

    def listed(self) -> tuple[list[SiteConfig], dict[str, Any]]:
        """Every site, and the outline of each one's latest crawl run with the matches
        it found so far (``fptrack sites list``)."""
        sites = self.all_sites()
        latest = self.store.crawls.latest_crawls()
        last = {}
        for s in sites:
            run = latest.get(s.name)
            matched = self.store.crawls.crawl_progress(run)["matched"] if run else None
            last[s.name] = crawl_runs.outline(run, matched)
        return sites, last

    def acknowledge_all(self, name: str, *, by: str) -> int:
        """Acknowledge every failed crawl run of the site ``name`` not yet acknowledged, in
        the name of ``by``, now (``fptrack check --ack``); how many."""
        return self.store.crawls.acknowledge_failures(name, by=by, at=now())

    def remove(self, name: str) -> None:
        """Remove a site and its schedules (its pages and matches stay)."""
        remove_site(self.store, self.schedules, name)

    def crawl(self, site: SiteConfig) -> str:
        """Start a crawl of ``site`` now; a line for the operator."""
        if self.dispatch is None:
            raise TypeError("this site service starts no crawl (no dispatch)")
        return self.dispatch.crawl(site)


@contextmanager
def _refused() -> Iterator[None]:
    try:
        yield
    except StoreError as exc:
        raise RuleRefused(str(exc)) from exc


def _unseen_failures(site: str, crawls: list[dict], saved: Any) -> set[str]:
    """The ids of the failed runs among ``crawls`` (a site's newest) that ``fptrack check``
    reports until someone acknowledges them (:func:`matcher.sites.crawl_runs.open_failures`,
    whatever their age)."""
    ends = [
        c["finished_at"] for c in crawls if c.get("outcome") == "finished" and c.get("finished_at")
    ]
    failed = [c for c in crawls if c.get("outcome") == "failed"]
    finished = {site: max(ends)} if ends else {}
    return {run["run_id"] for run in crawl_runs.open_failures(failed, {site: saved}, finished)}
