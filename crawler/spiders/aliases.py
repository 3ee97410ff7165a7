"""The URLs of a site's pages: which are one page, which are worth requesting.

:class:`UrlAliases` keeps what the spider knows of the site's URLs: the pages requested (by
the key of their canonical URL once the site's learnt parameter rules dropped what they
drop, :class:`crawler.dust.DustRules`), the dead path patterns
(:class:`crawler.dust.DeadPatterns`), the other URLs each page was reached under (its
aliases, recorded with its item or after it as :class:`matcher.pages.PageAlias`), and the
rules and dead patterns the site's earlier crawls left (read when the crawl opens, saved when
it closes, never fatal). Its stats: ``fptrack/skipped/alias``,
``fptrack/skipped/dead_pattern``, ``fptrack/aliases/fetched``, ``fptrack/rules/learnt``.

The spider delegates to it rather than a middleware filtering its output: whether a link is
new decides, in the middle of :meth:`crawler.spiders.site.SiteSpider._request`, whether the
crawl's caps (:mod:`crawler.spiders.caps`) are asked, and a page's key names its item.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
import xxhash
from scrapy.crawler import Crawler
from w3lib.url import canonicalize_url

from crawler import dust
from crawler.reading import Reading
from crawler.spiders.counts import (
    ALIAS_MESSAGE,
    DEAD_MESSAGE,
    SKIPPED_ALIAS,
    SKIPPED_DEAD,
    CrawlCounts,
)
from matcher.pages import PageAlias

MAX_PROBED_PATTERNS = 10_000
"""Path patterns whose first queried links are asked for at once (:meth:`UrlAliases.probe`)."""
ALIAS_FETCHED = "fptrack/aliases/fetched"
"""Stat: responses that were an already fetched page under another query (same path, same
body digest): recorded as aliases, not pages."""
RULES_LEARNT = "fptrack/rules/learnt"
MAX_PENDING_ALIASES = 8


def canonical(url: str) -> str:
    """The URL the store keys pages by before a site's learnt rules
    (:func:`crawler.dust.normalise`: canonical, without fragment, tracking parameters or
    default document)."""
    return dust.normalise(url)


class UrlAliases:
    """A site's URLs as one crawl learns them (see the module docstring)."""

    def __init__(
        self,
        site: str,
        counts: CrawlCounts,
        logger: Any,
        max_requests: int = 1_000_000,
        dust_threshold: int = dust.DUST_THRESHOLD,
        dead_threshold: int = dust.DEAD_THRESHOLD,
        rules_store: Any = None,
    ) -> None:
        self.site = site
        self.counts = counts
        self.logger = logger
        self.max_requests = max_requests  # the bound of the sets below
        self.dust = dust.DustRules(threshold=dust_threshold)
        self.dead = dust.DeadPatterns(threshold=dead_threshold)
        self.rules_store = rules_store  # .site_rules / .save_crawl_rules (matcher.store.sites)
        self.requested: set[int] = set()
        self._linked: set[int] = set()  # links as written (before rules), once each
        self._yielded: dict[int, str] = {}  # page key -> the URL its item was stored under
        self._aliases: dict[int, list[str]] = {}  # page key -> aliases not yet recorded
        self._later: list[PageAlias] = []  # aliases a rule just learnt revealed
        self._revealed: set[int] = set()  # keys of pages fetched under a URL a rule then dropped
        self._dead_links: set[int] = set()  # links skipped for their dead pattern
        self._paths: set[int] = set()  # canonical paths (without query) requested
        self._probes: dict[str, int] = {}  # path pattern -> its queries asked for at once

    @classmethod
    def from_crawler(
        cls, crawler: Crawler, site: str, counts: CrawlCounts, logger: Any, rules_store: Any
    ) -> UrlAliases:
        settings = crawler.settings
        return cls(
            site,
            counts,
            logger,
            max_requests=settings.getint("FPTRACK_MAX_REQUESTS", 1_000_000),
            dust_threshold=settings.getint("FPTRACK_DUST_THRESHOLD", dust.DUST_THRESHOLD),
            dead_threshold=settings.getint("FPTRACK_DEAD_THRESHOLD", dust.DEAD_THRESHOLD),
            rules_store=rules_store,
        )

    def load_rules(self) -> None:
        """The site's rules and dead patterns as earlier crawls left them (never fatal)."""
        if self.rules_store is None:
            return
        try:
            known = self.rules_store.site_rules(self.site)
        except Exception as exc:  # the store's errors: the crawl goes on without them
            self.logger.warning("site rules not read: %s", exc)
            return
        self.dust = dust.DustRules.from_stored(
            known["params"], self.dust.threshold, known.get("rejected", [])
        )
        self.dead = dust.DeadPatterns.from_stored(known["dead"], self.dead.threshold)

    def save_rules(self) -> None:
        """Keep the rules this crawl learnt and its dead patterns with the site."""
        if self.rules_store is None:
            return
        try:
            self.rules_store.save_crawl_rules(
                self.site, [r.to_dict() for r in self.dust.learnt], self.dead.to_list()
            )
        except Exception as exc:  # the store's errors: logged, the crawl's pages are stored
            self.logger.warning("site rules not saved: %s", exc)

    def canon(self, url: str) -> str:
        """The URL a page at ``url`` is stored under: :func:`canonical` once the site's
        parameter rules dropped what they drop (:class:`crawler.dust.DustRules`)."""
        return canonical(self.dust.apply(url))

    def key(self, url: str) -> int:
        return xxhash.xxh3_64_intdigest(self.canon(url).encode("utf-8", "surrogatepass"))

    def page_url(self, reading: Reading, url: str, admits: Any) -> str:
        """The page's own ``<link rel="canonical">`` when ``admits`` it (on the site, same
        origin), else ``url``; marked as requested, so links to it are not asked for again."""
        declared = reading.canonical
        if declared and admits(declared):
            page_url = self.canon(declared)
            self.requested.add(self.key(page_url))
            return page_url
        return url

    # a link: new, or a page already requested --------------------------------------------

    def new_link(self, given: str) -> tuple[str, int] | None:
        """The URL (the learnt rules applied) and key of a link naming a page not requested
        yet; None for one already requested, under this URL or another (a new link naming
        a page requested under another URL counts ``fptrack/skipped/alias``), or on a path
        pattern found dead."""
        url = self.dust.apply(given)
        key = self.key(url)
        raw = xxhash.xxh3_64_intdigest(given.encode("utf-8", "surrogatepass"))
        new_link = raw not in self._linked
        if new_link and len(self._linked) < self.max_requests:
            self._linked.add(raw)
        if key in self._dead_links:
            return None
        if key in self.requested:
            alias = canonicalize_url(given)
            if alias != self.canon(url):  # another URL of a page already requested
                if new_link:
                    self.counts.inc(SKIPPED_ALIAS)
                    if url == given:  # an alias by normalisation, not by a learnt rule
                        self.alias(key, alias)
                return None
            if key in self._revealed and new_link:  # fetched under a URL a rule reduces
                self.counts.inc(SKIPPED_ALIAS)
            return None  # asked for already, under this URL or one the rules reduce to it
        return url, key

    def claim(self, url: str, key: int, depth: int) -> int | None:
        """The priority of a new link's request, now requested (a link on a pattern that
        answered 404/410 lately, or one with a query whose path was already requested but
        the first few of its pattern, :meth:`probe`, goes later); None when its path
        pattern is dead and it is not a start URL (``fptrack/skipped/dead_pattern``)."""
        skip, priority = self.dead.verdict(url)
        self.requested.add(key)
        if "?" in url:  # the path already asked for under another query: later
            path = xxhash.xxh3_64_intdigest(self.canon(url).split("?", 1)[0].encode())
            if path in self._paths and not self.probe(url):
                priority -= 1
            elif len(self._paths) < self.max_requests:
                self._paths.add(path)
        elif len(self._paths) < self.max_requests:
            self._paths.add(xxhash.xxh3_64_intdigest(self.canon(url).encode()))
        if skip and depth > 0:
            self.counts.inc(SKIPPED_DEAD)
            self._dead_links.add(key)
            return None
        return priority

    def probe(self, url: str) -> bool:
        """Whether a link with a query whose path was already requested is asked for at
        once rather than later: the first ``threshold`` of its path pattern are, so that the
        sightings a cache-buster rule needs (:class:`crawler.dust.DustRules`) come early
        and the pattern's later links lose the parameter before they are queued. Asked for
        later, they would all come at the end of the crawl, as many at once as it fetches
        in parallel, before the rule holds."""
        pattern = dust.pattern_of(url)
        probes = self._probes.get(pattern, 0)
        if probes >= self.dust.threshold or len(self._probes) >= MAX_PROBED_PATTERNS:
            return False
        self._probes[pattern] = probes + 1
        return True

    def skip_queued(self, request: scrapy.Request) -> str:
        """Why a queued page request is no longer worth making ("" when it is): see
        :meth:`crawler.spiders.site.SiteSpider.skip_queued`."""
        if self.dead.dead(request.url):
            return DEAD_MESSAGE
        bare = self.dust.apply(request.url)
        if bare != request.url:
            key = self.key(bare)
            if key in self.requested:
                return ALIAS_MESSAGE
            self.requested.add(key)
        elif self.key(bare) in self._revealed:
            return ALIAS_MESSAGE
        return ""

    # a page fetched: one seen already, or a rule learnt -----------------------------------

    def fetched(self, url: str, fetched_as: str, digest: int | None, page_url: str) -> bool:
        """Observe the page fetched as ``fetched_as`` (canonical ``url``, body ``digest``)
        for the site's rules; whether it is a page already fetched under another query
        (counted in ``fptrack/aliases/fetched``, recorded as its alias: not a page again)."""
        if digest is None:
            return False
        alias = self.dust.alias_of(url, digest)
        self.learn(url, digest, alias or page_url)
        if alias is None:
            return False
        self.counts.inc(ALIAS_FETCHED)
        self.alias(self.key(alias), canonicalize_url(fetched_as))
        return True

    def learn(self, url: str, digest: int, known_as: str) -> None:
        """Observe a fetch for the site's rules; a rule learnt makes the URLs its pattern's
        pages were fetched under, without its parameter, known: not requested again, and
        kept as those pages' aliases."""
        for rule in self.dust.observe(url, digest, known_as):
            self.counts.inc(RULES_LEARNT)
            self.logger.info(
                "site %s: parameter %r dropped from links on %s (seen %d times)",
                self.site,
                rule.param,
                rule.pattern,
                rule.support,
            )
            for stored in self.dust.fetched_on(rule.pattern):
                bare = self.canon(stored)
                key = self.key(bare)
                self.requested.add(key)
                if bare != stored:
                    self._later.append(PageAlias(stored, bare))
                    self._revealed.add(key)

    def alias(self, key: int, alias: str) -> None:
        """Another URL of the page of ``key``: recorded with its item, or after it."""
        pending = self._aliases.setdefault(key, [])
        if alias not in pending and len(pending) < MAX_PENDING_ALIASES:
            pending.append(alias)

    def reached_as(self, fetched_as: str, page_url: str) -> int:
        """The key of the page stored under ``page_url``, given the aliases found for the
        URL it was fetched as, and that URL itself when it is another."""
        key = self.key(page_url)
        fetched_key = self.key(fetched_as)
        if fetched_key != key and fetched_key in self._aliases:
            for alias in self._aliases.pop(fetched_key):
                self.alias(key, alias)
        if canonical(fetched_as) != page_url:
            self.alias(key, canonicalize_url(fetched_as))
        return key

    def yielded(self, key: int, page_url: str) -> tuple[str, ...]:
        """The aliases of the page of ``key``, its item now stored under ``page_url``."""
        aliases = tuple(a for a in self._aliases.pop(key, []) if a != page_url)
        self._yielded[key] = page_url
        return aliases

    def alias_items(self) -> Iterator[PageAlias]:
        """The aliases found for pages already yielded (one store write each)."""
        while self._later:
            yield self._later.pop()
        for key in [k for k in self._aliases if k in self._yielded]:
            for alias in self._aliases.pop(key):
                if alias != self._yielded[key]:
                    yield PageAlias(self._yielded[key], alias)


def digest(reading: Reading) -> int | None:
    """A digest of what makes the page itself: its title, main text and links (None when it
    has none of them: nothing to compare)."""
    if not (reading.text or reading.links):
        return None
    body = "\x00".join([reading.title, reading.text, *sorted(set(reading.links))])
    return xxhash.xxh3_64_intdigest(body.encode("utf-8", "surrogatepass"))


def rules_store(settings: Any, opened: Any) -> tuple[Any, Any]:
    """Where the site's rules are kept (:meth:`matcher.store.sites.Sites.site_rules`): the
    in-process ingest's store when it has one, else the store ``opened`` for the ledger,
    else a store on the deployment's settings (returned to be closed); None without any."""
    from crawler.settings import INGEST_SETTING, SETTINGS_SETTING, ByReference

    def value(name: str) -> Any:
        found = settings.get(name)
        return found.value if isinstance(found, ByReference) else found

    ingest = value(INGEST_SETTING)
    if ingest is not None:
        store = getattr(ingest, "store", None)
        return getattr(store, "sites", None), None
    if opened is not None:
        return opened.sites, None
    deployment = value(SETTINGS_SETTING)
    if deployment is None:
        return None, None
    from matcher.store import Store

    store = Store.connect(deployment.mongo_uri, deployment.mongo_db)
    return store.sites, store
