"""Pirate sites discovered (:mod:`matcher.sites.discovery`): the candidates ranked, and the two
decisions on one: watch it (it becomes a watched site) or dismiss it.

Used by the admin's discovery pages (:mod:`admin.web.discovery`), ``fptrack sites
discover`` (:mod:`admin.commands.sites`), which runs a discovery, and ``fptrack sites
search``, which runs one through a search engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from matcher.sites.discovery import Candidate, Crawler, run_discovery, site_name_for
from matcher.sites.search import SearchEngine, SearchRun, run_search
from matcher.sites.site_config import SiteConfig
from matcher.store.common import now

if TYPE_CHECKING:
    from admin.services.sites import SiteService
    from matcher.matching.engine import Engine
    from matcher.store import Store

STATE_ORDER = {"new": 0, "watched": 1, "dismissed": 2}
"""How the candidates are listed: new ones first, then by score."""


class DiscoveryService:
    """The candidates of ``store``; one watched becomes a site of ``sites``."""

    def __init__(self, store: Store, sites: SiteService) -> None:
        self.store, self.sites = store, sites

    def candidates(self) -> list[dict[str, Any]]:
        """Every candidate: new ones first, then watched, then dismissed; by score."""
        found = self.store.discovery.candidates()
        found.sort(
            key=lambda c: (STATE_ORDER.get(c.get("state", "new"), 3), -c.get("score", 0), c["_id"])
        )
        return found

    def discover(
        self, engine: Engine, crawl: Crawler, *, harvest: int, sample_pages: int
    ) -> list[Candidate]:
        """Discover pirate sites now from the watched sites' links, the pages ``crawl``
        samples matched by ``engine``; the candidates, kept but for those refused
        (:func:`matcher.sites.discovery.run_discovery`)."""
        return run_discovery(
            self.store, engine, crawl, harvest=harvest, sample_pages=sample_pages, at=now()
        )

    def search(
        self,
        engine: Engine,
        crawl: Crawler,
        search_engine: SearchEngine,
        *,
        budget: int,
        queries_per_chapter: int,
        sample_pages: int,
        works: int,
    ) -> SearchRun:
        """Search the web for the chapters of the works not searched for yet, the sentences
        chosen with ``engine``'s works' index, the hosts of the results sampled and ranked
        (:func:`matcher.sites.search.run_search`); what was done."""
        return run_search(
            self.store, engine.match_text, crawl, search_engine, budget=budget,
            queries_per_chapter=queries_per_chapter, sample_pages=sample_pages, at=now(),
            works=works, frequency=engine.work_frequency,
        )  # fmt: skip

    def candidate(self, host: str) -> dict[str, Any] | None:
        return self.store.discovery.candidate(host)

    def watch(self, host: str, home: str, *, by: str) -> tuple[SiteConfig, str]:
        """Watch the candidate ``host``: a site named after it, its ``home`` page the start
        URL, saved in the name of user ``by`` (an invalid one is a
        :class:`~matcher.sites.site_config.SiteConfigError`, nothing saved); the site, and
        what saving it did in a line."""
        config = SiteConfig.from_dict({"name": site_name_for(host), "start_urls": [home]})
        note = self.sites.save(config, by=by)
        self.store.discovery.set_candidate_state(host, "watched")
        return config, note

    def dismiss(self, host: str) -> None:
        """Not a pirate site: it is not sampled again."""
        self.store.discovery.set_candidate_state(host, "dismissed")
