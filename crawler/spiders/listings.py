"""An incremental crawl's sitemaps and feeds, as a part of the spider (Scrapy's
``SitemapSpider`` is a spider of its own; fptrack's one spider takes this mixin).

With ``incremental=True`` (``python -m crawler.run --incremental``) the spider runs the
site's incremental crawl (:mod:`crawler.incremental`): start pages, robots.txt's sitemaps or
``/sitemap.xml``, the feeds the start pages announce, then only new pages, pages a sitemap or
feed dates after their stored fetch, and the next / previous pages of what it fetches, at
most ``FPTRACK_RECRAWL_DEPTH`` (2) links from a start page (and never beyond
``max_depth``); stored pages are requested with conditional headers. It knows what is stored
through its ledger: ``FPTRACK_INGEST``'s ``known_pages`` in process, else a store opened on
``FPTRACK_SETTINGS`` (closed with the spider); without either every page counts as new.
Its own stats: ``fptrack/incremental/not_modified`` (304 answers), ``.../skipped`` (stored
pages not requested), ``.../sitemaps``, ``.../feeds``, ``.../listed`` (sitemap and feed
entries), ``.../feed_problems`` (sitemaps and feeds not fetched or not readable, and a
robots.txt not fetched, whose sitemaps are then unknown), and at the end ``.../new``,
``.../changed`` and ``.../unchanged`` (304 answers plus pages fetched again with the same
text).

The callbacks are the spider's own methods, so that their requests can wait in a shared
frontier (a request names its callback by the spider's method).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.python.failure import Failure

from crawler import incremental as inc

INC = "fptrack/incremental/"


class SitemapsAndFeeds:
    """The spider's incremental crawl: sitemaps, feeds, and the pages they date (see the
    module docstring). It needs the spider's ``counts``, ``urls``, ``caps``, ``links``,
    ``max_depth``, ``_request``, ``_siblings`` and ``logger``."""

    incremental = False
    ledger: inc.PageLedger | None = None
    feed_max_bytes = 5 * 1024 * 1024
    feed_max_entries = 50_000

    def listings_from_crawler(self, crawler: Crawler) -> Any:
        """Read the feeds' bounds; an incremental crawl's ledger when it has none (returns
        the store it opened for it, to be closed with the crawl, or None)."""
        settings = crawler.settings
        self.feed_max_bytes = settings.getint("FPTRACK_FEED_MAX_BYTES", 5 << 20)
        self.feed_max_entries = settings.getint("FPTRACK_FEED_MAX_ENTRIES", 50_000)
        if self.incremental and self.ledger is None:
            self.ledger, opened = _ledger(settings)
            return opened
        return None

    def robots_requests(self) -> Iterator[scrapy.Request]:
        """An incremental crawl asks each start URL's origin for its robots.txt (for its
        sitemaps)."""
        if not self.incremental:
            return
        for origin in dict.fromkeys(_origin(url) for url in self.start_urls):
            yield scrapy.Request(
                origin + "/robots.txt",
                self.parse_robots,
                errback=self.on_robots_error,
                meta={"handle_httpstatus_all": True, "dont_obey_robotstxt": True},
            )

    def parse_robots(self, response: Response) -> Iterator[scrapy.Request]:
        """The sitemaps robots.txt names (those of a start URL's origin), else /sitemap.xml."""
        from scrapy.utils.sitemap import sitemap_urls_from_robots

        urls: list[str] = []
        if response.status == 200:
            found = sitemap_urls_from_robots(
                response.body[: self.feed_max_bytes], base_url=response.url
            )
            urls = [u for u in found if self.links.same_origin(u)][:50]
        if not urls:
            urls = [_origin(response.url) + "/sitemap.xml"]
        for url in urls:
            yield self._listing(url, self.parse_sitemap, depth=0)

    def on_robots_error(self, failure: Failure) -> Iterator[scrapy.Request]:
        """A robots.txt not fetched (no answer, or not within ``DOWNLOAD_TIMEOUT``): one line,
        counted as a feed problem, and /sitemap.xml tried instead."""
        request = getattr(failure, "request", None)
        if request is not None:
            self.counts.count_failure(failure)
            self._feed_problem(
                f"{request.url}: not fetched ({type(failure.value).__name__}),"
                " so its sitemaps are unknown: /sitemap.xml tried"
            )
            yield self._listing(_origin(request.url) + "/sitemap.xml", self.parse_sitemap, 0)

    def parse_sitemap(self, response: Response) -> Iterator[scrapy.Request]:
        """A sitemap's pages (see :meth:`_listed`), or a sitemap index's sitemaps."""
        if response.status != 200:
            return
        try:
            kind, entries = inc.parse_sitemap(
                response.body, response.url, self.feed_max_bytes, self.feed_max_entries
            )
        except inc.FeedProblem as exc:
            self._feed_problem(str(exc))
            return
        self.counts.inc(INC + "sitemaps")
        if kind == "sitemapindex":
            nested = response.meta.get("fptrack_sitemap_depth", 0)
            if nested >= 2:  # an index of indexes of indexes: not followed
                return
            for entry in entries[:50]:
                if self.links.same_origin(entry.url):
                    yield self._listing(entry.url, self.parse_sitemap, nested + 1)
            return
        yield from self._listed(entries)

    def parse_feed(self, response: Response) -> Iterator[scrapy.Request]:
        """An RSS or Atom feed's pages (see :meth:`_listed`)."""
        if response.status != 200:
            return
        try:
            entries = inc.parse_feed(
                response.body, response.url, self.feed_max_bytes, self.feed_max_entries
            )
        except inc.FeedProblem as exc:
            self._feed_problem(str(exc))
            return
        self.counts.inc(INC + "feeds")
        yield from self._listed(entries)

    def _listing(self, url: str, callback: Any, depth: int) -> scrapy.Request:
        return scrapy.Request(
            url,
            callback,
            errback=self.on_listing_error,
            meta={"handle_httpstatus_list": [404, 410], "fptrack_sitemap_depth": depth},
        )

    def on_listing_error(self, failure: Failure) -> Iterator[Any]:
        """A sitemap or feed that could not be fetched: one line, never fatal."""
        request = getattr(failure, "request", None)
        url = getattr(request, "url", "?")
        self.counts.count_failure(failure)
        self._feed_problem(f"{url}: not fetched ({type(failure.value).__name__})")
        return iter(())

    def _feed_problem(self, line: str) -> None:
        self.counts.inc(INC + "feed_problems")
        self.crawler.stats.set_value(INC + "feed_problem", line)
        self.logger.warning("sitemap or feed skipped: %s", line)

    def _listed(self, entries: list[inc.Entry]) -> Iterator[scrapy.Request]:
        """Requests for a sitemap's or feed's pages, one link from the start pages: those not
        stored, and stored ones dated after their fetch (conditional)."""
        if self.max_depth < 1:
            return
        self.counts.inc(INC + "listed", len(entries))
        wanted = {}
        for entry in entries:
            if self.links.wanted(entry.url):
                wanted.setdefault(self.urls.canon(entry.url), entry)
        known = self._known(wanted)
        for key, entry in wanted.items():
            page = known.get(key)
            if page is not None and not page.older_than(entry.lastmod):
                self.counts.inc(INC + "skipped")
                continue
            request = self._request(entry.url, 1, page)
            if request is not None:
                yield request

    def _known(self, urls: Any) -> dict[str, inc.Stored]:
        """The stored pages among canonical ``urls``."""
        if self.ledger is None or not urls:
            return {}
        return {url: inc.stored(f) for url, f in self.ledger.known_pages(list(urls)).items()}

    def _feeds(self, response: Response) -> Iterator[scrapy.Request]:
        """Requests for the RSS/Atom feeds a start page announces (same origin only)."""
        try:
            links = [
                (el.attrib.get("rel", ""), el.attrib.get("type", ""), el.attrib.get("href", ""))
                for el in response.xpath("//link[@href][@rel]")[:100]
            ]
        except (ValueError, AttributeError):  # not parseable as HTML
            return
        for href in inc.feed_links(links):
            url = response.urljoin(href)
            if self.links.same_origin(url):
                yield self._listing(url, self.parse_feed, 0)

    def _follow_new(
        self,
        reading: Any,
        depth: int,
        neighbours: tuple[str | None, str | None],
        page_url: str,
    ) -> Iterator[scrapy.Request]:
        """An incremental crawl's requests for a page's links: its next and previous pages at
        its own depth (conditional when stored), its neighbouring chapters at its own depth
        and its other links one level deeper, both when not stored."""
        canon = self.urls.canon
        same_level = [u for u in neighbours if u and self.links.followed(u)]
        skip = {canon(u) for u in same_level}
        sequence = self._siblings(reading, skip)
        skip.update(canon(u) for u in sequence)
        links: list[str] = []
        if depth < self.max_depth:
            capped = self.caps.links(reading, page_url)
            links = [u for u in capped if canon(u) not in skip and self.links.wanted(u)]
        known = self._known({canon(u) for u in [*same_level, *sequence, *links]})
        for url in same_level:
            request = self._request(url, depth, known.get(canon(url)))
            if request is not None:
                yield request
        for url, at in [*((u, depth) for u in sequence), *((u, depth + 1) for u in links)]:
            if canon(url) in known:
                self.counts.inc(INC + "skipped")
                continue
            request = self._request(url, at)
            if request is not None:
                yield request

    def sum_up(self) -> None:
        """An incremental crawl's ``new``, ``changed`` and ``unchanged`` pages, at its end."""
        if not self.incremental:
            return
        stats = self.crawler.stats
        ingested = "fptrack/ingested/"
        not_modified = stats.get_value(INC + "not_modified", 0)
        stats.set_value(INC + "new", stats.get_value(ingested + "new", 0))
        stats.set_value(INC + "changed", stats.get_value(ingested + "changed", 0))
        same = stats.get_value(ingested + "unchanged", 0)
        stats.set_value(INC + "unchanged", same + not_modified)


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _ledger(settings: Any) -> tuple[inc.PageLedger | None, Any]:
    """An incremental crawl's ledger from its settings: the in-process ingest when it has
    ``known_pages``, else a store on the deployment's settings (returned to be closed)."""
    from crawler.settings import INGEST_SETTING, SETTINGS_SETTING, ByReference

    def value(name: str) -> Any:
        found = settings.get(name)
        return found.value if isinstance(found, ByReference) else found

    ingest = value(INGEST_SETTING)
    if ingest is not None:
        return (ingest if callable(getattr(ingest, "known_pages", None)) else None), None
    deployment = value(SETTINGS_SETTING)
    if deployment is None:
        return None, None
    from matcher.store import Store

    store = Store.connect(deployment.mongo_uri, deployment.mongo_db)
    return _StoreLedger(store), store


class _StoreLedger:
    """A store as an incremental crawl's ledger."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def known_pages(self, urls: Any) -> dict[str, dict[str, Any]]:
        return self.store.pages.page_validators(urls)
