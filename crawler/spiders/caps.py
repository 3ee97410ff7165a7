"""The bounds of one crawl and what they leave out, counted.

:class:`CrawlCaps` holds the spider's limits, read once from the crawl's settings:

- ``max_depth`` (``FPTRACK_MAX_DEPTH``, the site's ``max_depth``): the wanted links of a page
  at that depth are not requested; each is counted once in ``fptrack/not_crawled/depth``
  (at most ``max_requests`` remembered) and the first named;
- ``FPTRACK_MAX_LINKS_PER_PAGE`` (5,000): links taken from one page, the others counted in
  ``fptrack/links_capped``;
- ``FPTRACK_MAX_REQUESTS`` (1,000,000): distinct URLs one process requests (new links beyond
  it count ``fptrack/requests_capped``, named as ``budget``);
- ``FPTRACK_MAX_PENDING`` (100,000): requests made and not yet fetched (new links beyond it
  count ``fptrack/pending_capped``), as the scheduler's queue and the
  ``request_scheduled`` / ``request_dropped`` signals tell;
- ``URLLENGTH_LIMIT``: a longer request is dropped unseen by Scrapy's
  ``UrlLengthMiddleware``, so it is not counted as pending.

The spider asks it about each new link (:meth:`CrawlCaps.admits`) after its URL aliases
(:mod:`crawler.spiders.aliases`) found the link new, as Scrapy's ``DepthMiddleware`` would
after the spider, but before the link is marked as requested: a capped link is not taken
for a page asked for.
"""

from __future__ import annotations

from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler

from crawler.meta import NEW
from crawler.reading import Reading
from crawler.spiders.counts import CrawlCounts
from matcher.sites.crawl_runs import NOT_CRAWLED

PENDING_CAPPED = "fptrack/pending_capped"
"""Stat: new links not requested because ``max_pending`` requests were already queued."""


class CrawlCaps:
    """A crawl's limits and the counts of what they leave out (see the module docstring)."""

    def __init__(
        self,
        counts: CrawlCounts,
        max_depth: int = 0,
        max_links: int = 5000,
        max_requests: int = 1_000_000,
        max_pending: int = 100_000,
        url_limit: int = 2083,
    ) -> None:
        self.counts = counts
        self.max_depth = max_depth
        self.max_links = max_links
        self.max_requests = max_requests
        self.max_pending = max_pending
        self.url_limit = url_limit  # Scrapy's URLLENGTH_LIMIT
        self._made = 0  # new requests made ...
        self._arrived = 0  # ... and of them, those the scheduler took or dropped
        self._beyond_depth: set[int] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler, counts: CrawlCounts, max_depth: int) -> CrawlCaps:
        """The caps of the crawl's settings, told by its signals what reached the scheduler."""
        settings = crawler.settings
        caps = cls(
            counts,
            max_depth=max_depth,
            max_links=settings.getint("FPTRACK_MAX_LINKS_PER_PAGE", 5000),
            max_requests=settings.getint("FPTRACK_MAX_REQUESTS", 1_000_000),
            max_pending=settings.getint("FPTRACK_MAX_PENDING", 100_000),
            url_limit=settings.getint("URLLENGTH_LIMIT", 2083) or 1 << 62,
        )
        crawler.signals.connect(caps.arrived, signal=signals.request_scheduled)
        crawler.signals.connect(caps.arrived, signal=signals.request_dropped)
        return caps

    def links(self, reading: Reading, page_url: str) -> tuple[str, ...]:
        """The page's first ``max_links`` links; the links after them are counted in
        ``fptrack/links_capped`` (each link attribute, as the page has it), the first of
        them named."""
        links = reading.links
        if len(links) > self.max_links:
            dropped = len(links) - self.max_links + reading.links_beyond
            self.counts.inc("fptrack/links_capped", dropped)
            why = (
                f"one of {dropped:,} links of {page_url} after its first {self.max_links:,}"
                " (FPTRACK_MAX_LINKS_PER_PAGE)"
            )
            self.counts.name("links_capped", links[self.max_links], why)
            links = links[: self.max_links]
        return links

    def count_beyond(self, links: list[str], taken: set[str], urls: Any, admits: Any) -> None:
        """Count, once each, the links not requested because they lie beyond ``max_depth``
        (``fptrack/not_crawled/depth``; at most ``max_requests`` remembered): those not
        among the canonical ``taken`` nor requested (``urls``, the crawl's
        :class:`~crawler.spiders.aliases.UrlAliases`) that ``admits`` (wanted, on the site)."""
        for url in links:
            if urls.canon(url) in taken:
                continue
            key = urls.key(url)
            if key in urls.requested or key in self._beyond_depth:
                continue
            if len(self._beyond_depth) >= self.max_requests or not admits(url):
                continue
            self._beyond_depth.add(key)
            self.counts.inc(NOT_CRAWLED + "depth")
            self.counts.name("depth", url, f"beyond max_depth {self.max_depth}")

    def admits(self, url: str, requested: int) -> bool:
        """Whether a new link is requested, ``requested`` pages asked for already: not past
        ``max_requests`` (``fptrack/requests_capped``) nor ``max_pending``
        (``fptrack/pending_capped``), each named."""
        if requested >= self.max_requests:
            self.counts.inc("fptrack/requests_capped")
            self.counts.name(
                "budget",
                url,
                f"{self.max_requests:,} URLs already requested (FPTRACK_MAX_REQUESTS)",
            )
            return False
        if self.pending() >= self.max_pending:
            self.counts.inc(PENDING_CAPPED)
            self.counts.name(
                "pending_capped",
                url,
                f"{self.max_pending:,} requests already pending (FPTRACK_MAX_PENDING)",
            )
            return False
        return True

    def made(self, request: scrapy.Request) -> scrapy.Request:
        """A new request, on its way to the scheduler (:meth:`pending`) unless its URL is
        longer than ``URLLENGTH_LIMIT`` (dropped unseen by ``UrlLengthMiddleware``)."""
        if len(request.url) <= self.url_limit:
            self._made += 1
            request.meta[NEW] = True
        return request

    def arrived(self, request: scrapy.Request, spider: Any = None) -> None:
        """A request that reached the scheduler, or that it refused (a duplicate): no longer
        on its way."""
        if request.meta.pop(NEW, False):
            self._arrived += 1

    def pending(self) -> int:
        """Requests this process made and has not yet fetched: those in its scheduler's
        queue, and those on their way to it (Scrapy schedules a callback's requests while
        it goes on iterating them)."""
        stats = self.counts.stats
        if stats is None:
            return 0
        return (self._made - self._arrived) + sum(
            stats.get_value(f"scheduler/enqueued/{where}", 0)
            - stats.get_value(f"scheduler/dequeued/{where}", 0)
            for where in ("memory", "disk", "redis")
        )
