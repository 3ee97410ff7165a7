"""The one spider of fptrack: crawls a watched site as its :class:`SiteConfig` says.

``SiteSpider`` (name ``site``) starts at the site's start URLs and follows links within
``allowed_domains`` (Scrapy's OffsiteMiddleware), matching ``include`` and not ``exclude``
(regular expressions searched in the absolute URL; file extensions Scrapy's link extractor
ignores, such as images and archives, are never requested), at most ``FPTRACK_MAX_DEPTH``
links away from a start URL (the site's ``max_depth``; 0 crawls only the start URLs).

Every response is read by the crawl's reading stage (:mod:`crawler.spiders.page_reader`:
decoded and its visible text extracted by a reader process, with the stylesheets, fonts and
images it needs). A page with at least ``FPTRACK_MIN_TEXT_CHARS`` (20) letters or CJK
characters outside links yields a :class:`PageItem`; a page that is a list of links (a
chapter index) yields nothing but its links are followed. A download or a plain text longer
than ``FPTRACK_DOWNLOAD_PART_CHARS`` is one page per part, the first under its URL, the next
under ``URL#part2`` ... (yielded first: the first part's page, which names how many there
are, comes last).

Every HTML page with main text yields its own item under its own canonical URL, whatever
links it carries; nothing is held back or joined here. With ``join_next_pages`` the item
records the page's "next page" and "previous page" links (``next_page_texts`` such as 下一页,
and :data:`~crawler.extract.PREV_PAGE_TEXTS` such as 上一页), which the matcher uses to
match a chapter split over several pages as a whole as well (:mod:`matcher.matching.split`). Those
two links are followed at the page's own depth and whatever ``include`` says (a chapter's
second page rarely matches the chapter pattern; ``exclude`` still applies), so the parts of
a chapter, and sections of a manual chained by 上一页/下一页, are reached however deep they
sit. A page's neighbours in a sequence of whole pages (上一章/下一章, 上一篇/下一篇: the
labels of :data:`~crawler.extract.SEQUENCE_TEXTS`) are its siblings: followed at its own
depth when ``include`` and ``exclude`` allow, so a novel whose chapters link only to each
other (mobile sites) is crawled to its last chapter. Every other link is one level deeper.

What the crawl counts (never fatal) and how a start URL that gives no page fails it:
:mod:`crawler.spiders.counts`; its caps (``max_depth``, links per page, requests, pending
requests): :mod:`crawler.spiders.caps`; the URLs that are one page and the parameter rules
it learns: :mod:`crawler.spiders.aliases`; an incremental crawl's sitemaps and feeds:
:mod:`crawler.spiders.listings`; robots.txt: :class:`crawler.robots.RobotsMiddleware`.
Each part reads its settings in its ``from_crawler``; the spider keeps requests and items.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from crawler import incremental as inc
from crawler.extract import check_selector
from crawler.items import Exchanges, PageItem, exchange_of, page_item
from crawler.meta import DEPTH, RENDER, START
from crawler.reading import Reading
from crawler.render import (
    AUTO_RENDER,
    AUTO_UNAVAILABLE_SETTING,
    UNAVAILABLE_SETTING,
    UNAVAILABLE_STAT,
)
from crawler.spiders.aliases import UrlAliases, canonical, digest, rules_store
from crawler.spiders.caps import CrawlCaps
from crawler.spiders.counts import ALIAS_MESSAGE, CrawlCounts
from crawler.spiders.links import SiteLinks
from crawler.spiders.listings import INC, SitemapsAndFeeds
from crawler.spiders.page_reader import PageReader, part_of
from crawler.spiders.rendering import RenderAgain
from matcher.pages import GonePage, UnchangedPage, part_url
from matcher.sites.site_config import SiteConfig, SiteConfigError

__all__ = ["ALIAS_MESSAGE", "DEPTH", "SiteSpider", "canonical", "exchange_of", "site_config"]

NOT_MODIFIED = 304
GONE_STATUSES = frozenset({404, 410})


def site_config(site: SiteConfig | dict[str, Any] | str) -> SiteConfig:
    """A :class:`SiteConfig` from itself, a dict, or JSON (``scrapy crawl site -a site=...``)."""
    if isinstance(site, SiteConfig):
        return site
    if isinstance(site, str):
        try:
            site = json.loads(site)
        except json.JSONDecodeError as exc:
            raise SiteConfigError(f"site is not valid JSON: {exc}") from exc
    if not isinstance(site, dict):
        raise SiteConfigError("site must be a SiteConfig, a mapping or a JSON object")
    return SiteConfig.from_dict(site)


class SiteSpider(SitemapsAndFeeds, RenderAgain, scrapy.Spider):
    """Crawls one watched site; parses and yields only (see the module docstring)."""

    name = "site"

    def __init__(
        self,
        site: SiteConfig | dict[str, Any] | str | None = None,
        max_depth: int | None = None,
        min_text_chars: int = 20,
        render_unavailable: str = "",
        auto_render: bool = AUTO_RENDER,
        browser_missing: str = "",
        incremental: bool = False,
        recrawl_depth: int = 2,
        ledger: inc.PageLedger | None = None,
        **kwargs: Any,
    ) -> None:
        if site is None:
            raise SiteConfigError("SiteSpider needs a site configuration (site=...)")
        config = site_config(site)
        super().__init__(name=self.name, **kwargs)
        check_selector(config.content_selector)
        self.site = config
        self.allowed_domains = list(config.allowed_domains)
        self.start_urls = list(config.start_urls)
        self.max_depth = config.max_depth if max_depth is None else max_depth
        self.min_text_chars = min_text_chars
        self.render_unavailable = render_unavailable if config.render else ""
        self.auto_render = auto_render
        self.browser_missing = browser_missing
        self.incremental = incremental
        if incremental:
            self.max_depth = min(self.max_depth, recrawl_depth)
        self.ledger = ledger
        self._owned_store: Any = None
        self._exchanges = Exchanges()  # a response's, for each of its pages
        # its parts, with their defaults until from_crawler reads the crawl's settings
        self.counts = CrawlCounts(logger=self.logger)
        self.links = SiteLinks(config, self.counts)
        self.caps = CrawlCaps(self.counts, self.max_depth)
        self.urls = UrlAliases(config.name, self.counts, self.logger)
        self.reader = PageReader(config, self.counts, self.logger)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SiteSpider:
        """The spider, its parts made of the crawler's settings, read once."""
        settings = crawler.settings
        if settings.get("FPTRACK_MAX_DEPTH") is not None:
            kwargs.setdefault("max_depth", settings.getint("FPTRACK_MAX_DEPTH"))
        kwargs.setdefault("min_text_chars", settings.getint("FPTRACK_MIN_TEXT_CHARS", 20))
        kwargs.setdefault("render_unavailable", settings.get(UNAVAILABLE_SETTING) or "")
        kwargs.setdefault("auto_render", settings.getbool("FPTRACK_AUTO_RENDER", AUTO_RENDER))
        kwargs.setdefault("browser_missing", settings.get(AUTO_UNAVAILABLE_SETTING) or "")
        kwargs.setdefault("recrawl_depth", settings.getint("FPTRACK_RECRAWL_DEPTH", 2))
        spider = super().from_crawler(crawler, *args, **kwargs)
        log = spider.logger
        spider.counts = counts = CrawlCounts.from_crawler(crawler, log)
        spider.links = links = SiteLinks(spider.site, counts)
        spider.caps = CrawlCaps.from_crawler(crawler, counts, spider.max_depth)
        spider.reader = PageReader.from_crawler(
            crawler, spider.site, counts, log, links.origins, links.on_site
        )
        spider._owned_store = spider.listings_from_crawler(crawler)
        store, owned = rules_store(settings, spider._owned_store)
        spider._owned_store = spider._owned_store or owned
        spider.urls = UrlAliases.from_crawler(crawler, spider.site.name, counts, log, store)
        crawler.signals.connect(spider.urls.load_rules, signal=scrapy.signals.spider_opened)
        crawler.signals.connect(counts.scheduled, signal=scrapy.signals.request_scheduled)
        return spider

    def closed(self, reason: str) -> None:
        """Record the start URLs that got no page, and the requests left unfetched (by why
        the crawl stopped); sum up an incremental crawl; save the site's rules; stop the
        OCR workers; close the store its ledger opened."""
        self.counts.closed(reason, self.links.on_site)
        self.sum_up()
        self.urls.save_rules()
        self.reader.close()
        if self._owned_store is not None:
            self._owned_store.close()
            self._owned_store = None

    # requests -------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """One request per start URL, at depth 0; an incremental crawl also asks each start
        URL's origin for its robots.txt (for its sitemaps). None when the site's pages should
        be rendered and cannot be (the reason is recorded as ``fptrack/render_unavailable``)."""
        if self.render_unavailable:
            self.logger.error("pages cannot be rendered: %s", self.render_unavailable)
            self.counts.set(UNAVAILABLE_STAT, self.render_unavailable)
            return
        for url in self.start_urls:
            request = self._request(url, 0)
            if request is not None:
                request.meta[START] = url
                yield request
        for request in self.robots_requests():
            yield request

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        """A fetched page: its links to follow, then its item when it has main text."""
        depth = response.meta.get(DEPTH, 0)
        self.counts.answered(response.meta.get(START))
        self.urls.dead.answered(response.url, response.status)
        if response.status == NOT_MODIFIED:  # a conditional request: the page is unchanged
            self.counts.inc(f"fptrack/http_status/{NOT_MODIFIED}")
            self.counts.inc(INC + "not_modified")
            yield UnchangedPage(self.urls.canon(response.url))
            return
        reading = await self.reader.read(response)
        if reading is None:
            return
        store, render = self._built_by_script(response, reading, depth)
        if render is not None:
            yield render
            return
        url = self.urls.canon(response.url)
        page_url = self.urls.page_url(reading, url, self.links.canonical_taken)
        if self.urls.fetched(url, response.url, digest(reading), page_url):
            for item in self.urls.alias_items():  # the same page under another query
                yield item
            return
        next_url = self.links.neighbour(reading.next_url)
        prev_url = self.links.neighbour(reading.prev_url)
        if self.incremental:
            if depth == 0:
                for request in self._feeds(response):
                    yield request
            follow = self._follow_new(reading, depth, (next_url, prev_url), page_url)
        else:
            follow = self._follow(reading, depth, (next_url, prev_url), page_url)
        for request in follow:
            yield request
        if not store:
            return
        # a download's next parts first: its first part, stored last, has them all to match
        for n in range(1, len(reading.parts)):
            part = part_of(reading, n)
            if part.own_chars >= self.min_text_chars:  # the download's first part has its URL
                self.counts.inc("fptrack/pages")
                self.counts.inc("fptrack/download_parts")
                yield self._page_item(response, part, part_url(page_url, n + 1))
        parts = len(reading.parts) if len(reading.parts) > 1 else 0
        first = part_of(reading, 0)
        for item in self._item(response, first, next_url, prev_url, page_url, parts):
            yield item
        for item in self.urls.alias_items():
            yield item

    def skip_queued(self, request: scrapy.Request) -> str:
        """Why a queued request is no longer worth making ("" when it is): its path pattern
        died since it was queued; or a rule learnt since drops one of its parameters and the
        page was already requested without it (the first such request still goes, and the
        page is then known as requested); or the page was fetched meanwhile under a URL
        the rule reduces to this one (``/1.html`` queued, ``/1.html?t=9`` fetched first)."""
        if request.callback != self.parse or request.meta.get(RENDER):
            return ""
        return self.urls.skip_queued(request)

    def on_error(self, failure: Failure) -> Iterator[Any]:
        """Count a failed request (never fatal to the crawl, but a start URL's failure fails
        it: :meth:`CrawlCounts.failed_start`); a 404 or 410 yields a :class:`GonePage`, so
        that a page stored there before is known to be removed."""
        self.counts.count_failure(failure)
        self.counts.failed_start(failure)
        if failure.check(HttpError):
            response = failure.value.response
            self.urls.dead.answered(response.url, response.status)
            if response.status in GONE_STATUSES:
                return iter([GonePage(self.urls.canon(response.url), response.status)])
        return iter(())

    # links ------------------------------------------------------------------------------

    def _follow(
        self,
        reading: Reading,
        depth: int,
        neighbours: tuple[str | None, str | None],
        page_url: str,
    ) -> Iterator[scrapy.Request]:
        """Requests for the page's links: its next and previous pages and its neighbouring
        chapters at its own depth, the others one level deeper."""
        canon = self.urls.canon
        same_level = {canon(u) for u in neighbours if u}
        for url in neighbours:
            if url and self.links.followed(url):
                request = self._request(url, depth)
                if request is not None:
                    yield request
        siblings = self._siblings(reading, same_level)
        same_level.update(canon(u) for u in siblings)
        for url in siblings:
            request = self._request(url, depth)
            if request is not None:
                yield request
        if depth >= self.max_depth:
            self.caps.count_beyond(
                reading.links[: self.caps.max_links], same_level, self.urls, self.links.beyond
            )
            return
        for url in self.caps.links(reading, page_url):
            if canon(url) not in same_level and self.links.wanted(url):
                request = self._request(url, depth + 1)
                if request is not None:
                    yield request

    def _siblings(self, reading: Reading, taken: set[str]) -> list[str]:
        """The page's neighbouring chapters (:attr:`Reading.sequence`) to follow at its own
        depth: those ``include`` and ``exclude`` allow, not among the canonical ``taken``."""
        return [
            u for u in reading.sequence if self.urls.canon(u) not in taken and self.links.wanted(u)
        ]

    def _request(
        self, url: str, depth: int, stored: inc.Stored | None = None
    ) -> scrapy.Request | None:
        """A request, unless the link names a page already requested, under this URL or
        another, or one on a dead path pattern (:class:`~crawler.spiders.aliases.UrlAliases`),
        or it is new and past the crawl's caps (:meth:`CrawlCaps.admits`: the frontier's
        bound, so that a site generating links without end cannot grow it, or this
        process's memory, without end). A ``stored`` page is asked for with its validators
        (``If-None-Match``, ``If-Modified-Since``): a 304 answer reaches :meth:`parse`."""
        new = self.urls.new_link(url)
        if new is None:
            return None
        url, key = new
        if not self.caps.admits(url, len(self.urls.requested)):
            return None
        priority = self.urls.claim(url, key, depth)
        if priority is None:
            return None
        meta: dict[str, Any] = {DEPTH: depth}
        headers = stored.headers() if stored is not None else {}
        if headers:
            meta["handle_httpstatus_list"] = [NOT_MODIFIED]
        request = scrapy.Request(
            url,
            self.parse,
            errback=self.on_error,
            meta=meta,
            headers=headers or None,
            priority=priority,
        )
        return self.caps.made(request)

    # items ------------------------------------------------------------------------------

    def _item(
        self,
        response: Response,
        page: Reading,
        next_url: str | None,
        prev_url: str | None,
        page_url: str,
        parts: int = 0,
    ) -> Iterator[PageItem]:
        """The page's item under ``page_url``, with the other URLs it was reached under
        (``parts``: the download's number of parts, on its first part's page)."""
        key = self.urls.reached_as(response.url, page_url)
        if page.own_chars < self.min_text_chars:
            self.counts.inc("fptrack/thin")
            return
        aliases = self.urls.yielded(key, page_url)
        self.counts.inc("fptrack/pages")
        if next_url or prev_url:
            self.counts.inc("fptrack/paged")
        yield self._page_item(
            response,
            page,
            page_url,
            next_url=self.urls.canon(next_url) if next_url else "",
            prev_url=self.urls.canon(prev_url) if prev_url else "",
            aliases=aliases,
            parts=parts,
        )

    def _page_item(self, response: Response, page: Reading, url: str, **links: Any) -> PageItem:
        """The item of ``page`` read from ``response``, stored under ``url`` (``links``:
        its ``next_url``, ``prev_url`` and ``aliases`` when it has them)."""
        exchange = self._exchanges.of(response)
        return page_item(response, page, url, self.site.name, exchange, **links)
