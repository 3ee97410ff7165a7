"""The one spider of fptrack: crawls a watched site as its :class:`SiteConfig` says.

``SiteSpider`` (name ``site``) starts at the site's start URLs and follows links within
``allowed_domains`` (Scrapy's OffsiteMiddleware), matching ``include`` and not ``exclude``
(regular expressions searched in the absolute URL; file extensions Scrapy's link extractor
ignores, such as images and archives, are never requested), at most ``FPTRACK_MAX_DEPTH``
links away from a start URL (the site's ``max_depth``; 0 crawls only the start URLs).

Every HTML page is decoded (:mod:`crawler.encoding`) and its main text extracted
(:mod:`crawler.extract`) by a reader process (:mod:`crawler.reader_pool`,
``FPTRACK_EXTRACT_WORKERS`` of them, 2), off the thread that drives the downloads, within
``FPTRACK_EXTRACT_SECONDS`` (10 s) a page; a page that takes longer is read the quick way
(the densest block) and counted. A page with at least ``FPTRACK_MIN_TEXT_CHARS`` (20) letters or
CJK characters outside links yields a :class:`PageItem`; a page that is a list of links
(a chapter index) yields nothing but its links are followed.

Every HTML page with main text yields its own item under its own canonical URL, whatever
links it carries; nothing is held back or joined here. With ``join_next_pages`` the item
records the page's "next page" and "previous page" links (``next_page_texts`` such as 下一页,
and :data:`~crawler.extract.PREV_PAGE_TEXTS` such as 上一页), which the matcher uses to
match a chapter split over several pages as a whole as well (:mod:`matcher.split`). Those
two links are followed at the page's own depth and whatever ``include`` says (a chapter's
second page rarely matches the chapter pattern; ``exclude`` still applies), so the parts of
a chapter, and sections of a manual chained by 上一页/下一页, are reached however deep they
sit. Every other link, 下一章 (next chapter) included, is one level deeper.

Stats (never fatal; every fetched page that yields no item is counted under its reason):
``fptrack/pages`` (items), ``fptrack/paged`` (items with a next or previous page link),
``fptrack/thin`` (HTML pages with too little main text: link lists), ``fptrack/non_html``,
``fptrack/undecodable``, ``fptrack/too_large`` (cancelled above ``DOWNLOAD_MAXSIZE``, or
decompressed beyond it),
``fptrack/ignored`` (requests a middleware dropped, such as those robots.txt forbids;
offsite links are Scrapy's ``offsite/filtered``), ``fptrack/other_port`` (links to, or
redirects to, another port of a start URL's host: never followed),
``fptrack/errors/<ExceptionName>`` (timeouts, DNS, refused connections...),
``fptrack/extract_timeout`` and ``fptrack/extract_failed`` (pages read the quick way because
their reader overran its time or died; they still yield their item),
and ``fptrack/http_status/<code>`` (every final status the spider sees, errors included).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

import scrapy
import xxhash
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest
from scrapy.http import Response
from scrapy.linkextractors import IGNORED_EXTENSIONS
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.python.failure import Failure
from w3lib.url import canonicalize_url

from crawler.encoding import sniff_html
from crawler.extract import check_selector
from crawler.items import PageItem
from crawler.origin import Origins
from crawler.reactor import deferred_from_future
from crawler.reader_pool import ReaderPool, shared_pool
from crawler.reading import Reading, ReadJob
from crawler.render import UNAVAILABLE_SETTING, UNAVAILABLE_STAT
from matcher.archive import Exchange
from matcher.pages import GonePage
from matcher.sites import SiteConfig, SiteConfigError

DEPTH = "fptrack_depth"
GONE_STATUSES = frozenset({404, 410})
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_IGNORED_SUFFIX = re.compile(
    r"\.(?:" + "|".join(map(re.escape, IGNORED_EXTENSIONS)) + r")$", re.IGNORECASE
)


def canonical(url: str) -> str:
    """The URL the store keys pages by: canonical, without fragment."""
    return canonicalize_url(url, keep_fragments=False)


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


class SiteSpider(scrapy.Spider):
    """Crawls one watched site; parses and yields only (see the module docstring)."""

    name = "site"

    def __init__(
        self,
        site: SiteConfig | dict[str, Any] | str | None = None,
        max_depth: int | None = None,
        min_text_chars: int = 20,
        max_links: int = 5000,
        max_requests: int = 1_000_000,
        extract_workers: int = 2,
        extract_seconds: float = 10.0,
        render_unavailable: str = "",
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
        self.max_links = max_links
        self.max_requests = max_requests
        self.extract_seconds = extract_seconds
        self.render_unavailable = render_unavailable if config.render else ""
        self.readers: ReaderPool = shared_pool(extract_workers)
        self._requested: set[int] = set()
        self._include = [re.compile(p) for p in config.include]
        self._exclude = [re.compile(p) for p in config.exclude]
        self._origins = Origins(self.start_urls)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SiteSpider:
        """The spider, with its limits read once from the crawler's settings."""
        settings = crawler.settings
        if settings.get("FPTRACK_MAX_DEPTH") is not None:
            kwargs.setdefault("max_depth", settings.getint("FPTRACK_MAX_DEPTH"))
        kwargs.setdefault("min_text_chars", settings.getint("FPTRACK_MIN_TEXT_CHARS", 20))
        kwargs.setdefault("max_links", settings.getint("FPTRACK_MAX_LINKS_PER_PAGE", 5000))
        kwargs.setdefault("max_requests", settings.getint("FPTRACK_MAX_REQUESTS", 1_000_000))
        kwargs.setdefault("extract_workers", settings.getint("FPTRACK_EXTRACT_WORKERS", 2))
        kwargs.setdefault("extract_seconds", settings.getfloat("FPTRACK_EXTRACT_SECONDS", 10.0))
        kwargs.setdefault("render_unavailable", settings.get(UNAVAILABLE_SETTING) or "")
        return super().from_crawler(crawler, *args, **kwargs)

    # requests -------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """One request per start URL, at depth 0; none when the site's pages should be
        rendered and cannot be (the reason is recorded as ``fptrack/render_unavailable``)."""
        if self.render_unavailable:
            self.logger.error("pages cannot be rendered: %s", self.render_unavailable)
            crawler = getattr(self, "crawler", None)
            if crawler is not None:
                crawler.stats.set_value(UNAVAILABLE_STAT, self.render_unavailable)
            return
        for url in self.start_urls:
            request = self._request(url, 0)
            if request is not None:
                yield request

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        """A fetched page: its links to follow, then its item when it has main text."""
        depth = response.meta.get(DEPTH, 0)
        reading = await self._read(response, depth)
        if reading is None:
            return
        next_url = self._neighbour(reading.next_url)
        prev_url = self._neighbour(reading.prev_url)
        for request in self._follow(reading, depth, neighbours=(next_url, prev_url)):
            yield request
        for item in self._item(response, reading, next_url, prev_url):
            yield item

    def on_error(self, failure: Failure) -> Iterator[Any]:
        """Count a failed request (never fatal); a 404 or 410 yields a :class:`GonePage`, so
        that a page stored there before is known to be removed."""
        self._count_failure(failure)
        if failure.check(HttpError) and failure.value.response.status in GONE_STATUSES:
            response = failure.value.response
            return iter([GonePage(canonical(response.url), response.status)])
        return iter(())

    # helpers ----------------------------------------------------------------------------

    async def _read(self, response: Response, depth: int) -> Reading | None:
        """The page's reading, done by a reader process (:mod:`crawler.reader_pool`)."""
        self._inc(f"fptrack/http_status/{response.status}")
        if not self._is_html(response):
            self._inc("fptrack/non_html")
            return None
        content_type = response.headers.get("Content-Type") or b""
        job = ReadJob(
            body=response.body,
            content_type=content_type.decode("latin-1"),
            url=response.url,
            content_selector=self.site.content_selector,
            next_page_texts=self.site.next_page_texts if self.site.join_next_pages else (),
            max_links=self.max_links + 1 if depth < self.max_depth else 0,
        )
        future = self.readers.submit(job, self.extract_seconds)
        reading, problem = await maybe_deferred_to_future(deferred_from_future(future))
        if problem:
            self._inc(f"fptrack/extract_{problem}")
            self.logger.info("page %s read the quick way (%s)", response.url, problem)
        if reading.undecodable:
            self._inc("fptrack/undecodable")
            self.logger.info("undecodable page %s: %s", response.url, reading.undecodable)
            return None
        return reading

    @staticmethod
    def _is_html(response: Response) -> bool:
        content_type = response.headers.get("Content-Type", b"") or b""
        mime = content_type.decode("latin-1").split(";", 1)[0].strip().lower()
        if mime:
            return mime in HTML_TYPES
        return sniff_html(response.body)

    def _neighbour(self, url: str | None) -> str | None:
        """A next or previous page link, unless ``exclude`` rules it out."""
        if url is None or any(p.search(url) for p in self._exclude):
            return None
        return url

    def _follow(
        self, reading: Reading, depth: int, neighbours: tuple[str | None, str | None]
    ) -> Iterator[scrapy.Request]:
        """Requests for the page's links: its next and previous pages at its own depth."""
        same_level = {canonical(u) for u in neighbours if u}
        for url in neighbours:
            suffix_ok = url and not _IGNORED_SUFFIX.search(url.split("?", 1)[0])
            if suffix_ok and self._same_origin(url):
                request = self._request(url, depth)
                if request is not None:
                    yield request
        if depth >= self.max_depth:
            return
        links = reading.links
        if len(links) > self.max_links:
            self._inc("fptrack/links_capped")  # the page's links after the first max_links
            links = links[: self.max_links]
        for url in links:
            if canonical(url) not in same_level and self._wanted(url):
                request = self._request(url, depth + 1)
                if request is not None:
                    yield request

    def _request(self, url: str, depth: int) -> scrapy.Request | None:
        """A request, unless it is for a new URL and this process already asked for
        ``max_requests`` distinct ones (the frontier's bound: a site generating links without
        end cannot grow it, or this process's memory, without end)."""
        key = xxhash.xxh3_64_intdigest(canonical(url).encode("utf-8", "surrogatepass"))
        if key not in self._requested:
            if len(self._requested) >= self.max_requests:
                self._inc("fptrack/requests_capped")
                return None
            self._requested.add(key)
        return scrapy.Request(url, self.parse, errback=self.on_error, meta={DEPTH: depth})

    def _same_origin(self, url: str) -> bool:
        """Not another port of a start URL's host (:mod:`crawler.origin`)."""
        return self._origins.admits(url)

    def _wanted(self, url: str) -> bool:
        path = url.split("?", 1)[0]
        if _IGNORED_SUFFIX.search(path):
            return False
        if not self._same_origin(url):
            self._inc("fptrack/other_port")
            return False
        if self._include and not any(p.search(url) for p in self._include):
            return False
        return not any(p.search(url) for p in self._exclude)

    def _item(
        self, response: Response, page: Reading, next_url: str | None, prev_url: str | None
    ) -> Iterator[PageItem]:
        if page.own_chars < self.min_text_chars:
            self._inc("fptrack/thin")
            return
        self._inc("fptrack/pages")
        if next_url or prev_url:
            self._inc("fptrack/paged")
        fetched_at = datetime.now(UTC)
        yield PageItem(
            url=canonical(response.url),
            site=self.site.name,
            title=page.title,
            text=page.text,
            status=response.status,
            encoding=page.encoding,
            fetched_at=fetched_at,
            next_url=canonical(next_url) if next_url else "",
            prev_url=canonical(prev_url) if prev_url else "",
            exchange=exchange_of(response, fetched_at),
        )

    def _count_failure(self, failure: Failure) -> None:
        if failure.check(HttpError):
            self._inc(f"fptrack/http_status/{failure.value.response.status}")
        elif failure.check(IgnoreRequest) and "DOWNLOAD_MAXSIZE" not in str(failure.value):
            self._inc("fptrack/ignored")
        elif failure.check(DownloadCancelledError, IgnoreRequest):  # over DOWNLOAD_MAXSIZE
            self._inc("fptrack/too_large")
        else:
            self._inc(f"fptrack/errors/{type(failure.value).__name__}")
            request = getattr(failure, "request", None)
            self.logger.info(
                "request failed: %s: %s", getattr(request, "url", "?"), failure.getErrorMessage()
            )

    def _inc(self, key: str) -> None:
        crawler = getattr(self, "crawler", None)
        if crawler is not None:  # a spider made without a crawler counts nothing
            crawler.stats.inc_value(key)
