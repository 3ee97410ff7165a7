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
match a chapter split over several pages as a whole as well (:mod:`matcher.split`). Those
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
import re
import weakref
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.linkextractors import IGNORED_EXTENSIONS
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from crawler import incremental as inc
from crawler.deadline import past_deadline
from crawler.downloads import DOWNLOAD_SUFFIXES
from crawler.extract import check_selector
from crawler.items import PageItem
from crawler.meta import DEPTH, RENDER, START
from crawler.origin import Origins
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
from crawler.spiders.listings import INC, SitemapsAndFeeds
from crawler.spiders.page_reader import PageReader, part_of
from matcher.archive import Exchange
from matcher.crawl_runs import NOT_CRAWLED
from matcher.pages import GonePage, UnchangedPage, part_url
from matcher.sites import SiteConfig, SiteConfigError

__all__ = ["ALIAS_MESSAGE", "DEPTH", "SiteSpider", "canonical", "exchange_of", "site_config"]

NEEDS_BROWSER = "needs_browser"
"""Reason (``fptrack/not_crawled/needs_browser``): a page built by script, no browser to
render it (:mod:`crawler.render`)."""
RENDER_FAILED = "render_failed"
"""Reason (``fptrack/not_crawled/render_failed``): a page built by script that the browser
did not render in its time, or at all."""
RENDER_FLAGGED = "fptrack/render/flagged"
"""Stat: pages read as served whose text looks built by script
(:func:`crawler.scripted.needs_browser`)."""
RENDER_REQUESTED = "fptrack/render/requested"
"""Stat: of them, pages requested again to be rendered (automatic render)."""
RENDERED = "fptrack/render/rendered"
"""Stat: pages requested again that the browser rendered."""
RENDER_STILL_THIN = "fptrack/render/still_flagged"
"""Stat: rendered pages that still look built by script: stored as read, not requested again."""
NOT_MODIFIED = 304
GONE_STATUSES = frozenset({404, 410})
_SKIPPED_EXTENSIONS = [e for e in IGNORED_EXTENSIONS if e not in DOWNLOAD_SUFFIXES]
_IGNORED_SUFFIX = re.compile(
    r"\.(?:" + "|".join(map(re.escape, _SKIPPED_EXTENSIONS)) + r")$", re.IGNORECASE
)


def exchange_of(response: Response, fetched_at: datetime) -> Exchange:
    """The response and its request as fetched, for the evidence archive. A page rendered
    in Chromium (:mod:`crawler.render`) keeps its document's status and headers as fetched,
    with the rendered DOM as its body, and is marked ``rendered``."""
    request = response.request

    def pairs(headers: Any) -> list[tuple[str, str]]:
        return [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, values in headers.items()
            for value in values
        ]

    try:
        reason = HTTPStatus(response.status).phrase
    except ValueError:
        reason = ""
    return Exchange(
        url=response.url,
        status=response.status,
        reason=reason,
        response_headers=pairs(response.headers),
        body=response.body,
        fetched_at=fetched_at,
        method=request.method if request is not None else "GET",
        request_headers=pairs(request.headers) if request is not None else [],
        rendered="playwright" in response.flags,
    )


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


class SiteSpider(SitemapsAndFeeds, scrapy.Spider):
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
        self._domains = [d.lower().lstrip(".") for d in self.allowed_domains]
        self.start_urls = list(config.start_urls)
        self.max_depth = config.max_depth if max_depth is None else max_depth
        self.min_text_chars = min_text_chars
        self.render_unavailable = render_unavailable if config.render else ""
        self.auto_render = auto_render
        self.browser_missing = browser_missing
        self._include = [re.compile(p) for p in config.include]
        self._exclude = [re.compile(p) for p in config.exclude]
        self._origins = Origins(self.start_urls)
        self.incremental = incremental
        if incremental:
            self.max_depth = min(self.max_depth, recrawl_depth)
        self.ledger = ledger
        self._owned_store: Any = None
        self._last_exchange: tuple[weakref.ref[Response], Exchange] | None = None
        # its parts, with their defaults until from_crawler reads the crawl's settings
        self.counts = CrawlCounts(logger=self.logger)
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
        spider.caps = CrawlCaps.from_crawler(crawler, counts, spider.max_depth)
        spider.reader = PageReader.from_crawler(
            crawler, spider.site, counts, log, spider._origins, spider._on_site
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
        self.counts.closed(reason, self._on_site)
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
        store = True
        if reading.needs_browser and _rendered(response):
            self.counts.inc(RENDER_STILL_THIN)  # it still shows little text: stored as read
        elif reading.needs_browser:
            self.counts.inc(RENDER_FLAGGED)
            if self.auto_render and not self.browser_missing:
                self.counts.inc(RENDER_REQUESTED)
                yield self._render_request(response, depth)
                return
            if self.auto_render:  # its links are followed, its shell is not stored
                store = False
                self.counts.inc(NOT_CRAWLED + NEEDS_BROWSER)
                why = f"built by script, no browser to render it: {self.browser_missing}"
                self.counts.name(NEEDS_BROWSER, response.url, why)
        if response.meta.get(RENDER):
            self.counts.inc(RENDERED)
        url = self.urls.canon(response.url)
        page_url = self.urls.page_url(reading, url, self._admits_canonical)
        if self.urls.fetched(url, response.url, digest(reading), page_url):
            for item in self.urls.alias_items():  # the same page under another query
                yield item
            return
        next_url = self._neighbour(reading.next_url)
        prev_url = self._neighbour(reading.prev_url)
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

    # pages built by script --------------------------------------------------------------

    def _render_request(self, response: Response, depth: int) -> scrapy.Request:
        """The page of ``response``, built by script, requested again to be rendered
        (:data:`crawler.meta.RENDER`; :mod:`crawler.render`): once, at its own depth; its
        slow render leaves the site's download delay alone."""
        meta = {DEPTH: depth, RENDER: True, "autothrottle_dont_adjust_delay": True}
        if response.meta.get(START):
            meta[START] = response.meta[START]
        return scrapy.Request(
            response.url,
            self.parse,
            errback=self.on_render_error,
            meta=meta,
            dont_filter=True,
            priority=1,
        )

    def on_render_error(self, failure: Failure) -> Iterator[Any]:
        """A page built by script that the browser did not render (in time: a script that
        never ends; or the browser failed): counted as ``not_crawled/render_failed`` and
        named; an HTTP error, a dropped request or the deadline as any page's."""
        if failure.check(HttpError, IgnoreRequest) or past_deadline(failure.request, failure):
            return self.on_error(failure)
        request = getattr(failure, "request", None)
        url = getattr(request, "url", "")
        value = failure.value
        message = " ".join(str(value).split("\n", 1)[0].split())[:200]
        self.counts.inc(NOT_CRAWLED + RENDER_FAILED)
        self.counts.name(RENDER_FAILED, url, f"not rendered ({type(value).__name__}: {message})")
        self.logger.info("page %s not rendered: %s", url or "?", message)
        return iter(())

    # links ------------------------------------------------------------------------------

    def _neighbour(self, url: str | None) -> str | None:
        """A next or previous page link, unless ``exclude`` rules it out."""
        if url is None or any(p.search(url) for p in self._exclude):
            return None
        return url

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
            if url and self._followed(url):
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
                reading.links[: self.caps.max_links], same_level, self.urls, self._beyond
            )
            return
        for url in self.caps.links(reading, page_url):
            if canon(url) not in same_level and self._wanted(url):
                request = self._request(url, depth + 1)
                if request is not None:
                    yield request

    def _siblings(self, reading: Reading, taken: set[str]) -> list[str]:
        """The page's neighbouring chapters (:attr:`Reading.sequence`) to follow at its own
        depth: those ``include`` and ``exclude`` allow, not among the canonical ``taken``."""
        return [u for u in reading.sequence if self.urls.canon(u) not in taken and self._wanted(u)]

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

    def _on_site(self, url: str) -> bool:
        """Within ``allowed_domains`` (what Scrapy's offsite filter lets through: the host,
        any port)."""
        host = (urlsplit(url).hostname or "").lower()
        return any(host == d or host.endswith("." + d) for d in self._domains)

    def _same_origin(self, url: str) -> bool:
        """Not another port of a start URL's host (:mod:`crawler.origin`)."""
        return self._origins.admits(url)

    def _admits_canonical(self, url: str) -> bool:
        """A page's declared canonical URL is taken when on the site, of the same origin."""
        return self._on_site(url) and self._same_origin(url)

    def _followed(self, url: str) -> bool:
        """A next or previous page link is followed: not a skipped file, same origin."""
        return not _IGNORED_SUFFIX.search(url.split("?", 1)[0]) and self._same_origin(url)

    def _beyond(self, url: str) -> bool:
        """A link beyond ``max_depth`` is counted when wanted and on the site."""
        return self._wanted(url, count=False) and self._on_site(url)

    def _wanted(self, url: str, count: bool = True) -> bool:
        path = url.split("?", 1)[0]
        if _IGNORED_SUFFIX.search(path):
            return False
        if not self._same_origin(url):
            if count:
                self.counts.inc("fptrack/other_port")
                self.counts.name("other_port", url, "on another port of the site's host")
            return False
        if self._include and not any(p.search(url) for p in self._include):
            return False
        return not any(p.search(url) for p in self._exclude)

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
        its ``next_url``, ``prev_url`` and ``aliases`` when it has them). The response's
        exchange is made once however many pages it gives (a download in parts): every
        part refers to the same archived exchange."""
        last = self._last_exchange
        if last is None or last[0]() is not response:  # not the response itself: its bytes go
            exchange = exchange_of(response, datetime.now(UTC))
            self._last_exchange = last = (weakref.ref(response), exchange)
        exchange = last[1]
        return PageItem(
            url=url,
            site=self.site.name,
            title=page.title,
            text=page.text,
            status=response.status,
            encoding=page.encoding,
            fetched_at=exchange.fetched_at,
            exchange=exchange,
            etag=_header(response, b"ETag"),
            last_modified=_header(response, b"Last-Modified"),
            **links,
        )


def _rendered(response: Response) -> bool:
    """Whether ``response`` is a page the browser rendered (:mod:`crawler.render`)."""
    return bool(response.meta.get(RENDER)) or "playwright" in response.flags


def _header(response: Response, name: bytes) -> str:
    """A response header as text ("" if absent), at most 200 characters."""
    value = response.headers.get(name) or b""
    return value.decode("latin-1").strip()[:200]
