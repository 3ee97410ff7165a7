"""The one spider of fptrack: crawls a watched site as its :class:`SiteConfig` says.

``SiteSpider`` (name ``site``) starts at the site's start URLs and follows links within
``allowed_domains`` (Scrapy's OffsiteMiddleware), matching ``include`` and not ``exclude``
(regular expressions searched in the absolute URL; file extensions Scrapy's link extractor
ignores, such as images and archives, are never requested), at most ``FPTRACK_MAX_DEPTH``
links away from a start URL (the site's ``max_depth``; 0 crawls only the start URLs).

Every HTML page is decoded (:mod:`crawler.encoding`) and its main text extracted
(:mod:`crawler.extract`). A page with at least ``FPTRACK_MIN_TEXT_CHARS`` (20) letters or
CJK characters outside links yields a :class:`PageItem`; a page that is a list of links
(a chapter index) yields nothing but its links are followed.

With ``join_next_pages``, a page with a "next page" link (下一页) starts a chain: the next
page is fetched as a continuation (``dont_filter``, the parts so far in ``cb_kwargs``, at
most ``FPTRACK_MAX_PARTS`` (50) parts, never a URL twice) and one item is yielded for the
whole chain, with the first part's URL, title and status and ``parts`` listing every part's
URL. A continuation that fails (HTTP error, timeout, not HTML) ends the chain: the parts
collected so far are yielded. Continuations are not items of their own: a page with a
"previous page" link reached through an ordinary link is left to the chain of its first
page (which its previous-page link leads to), and a page already fetched as a continuation
yields no item when an ordinary link reaches it again. Links found on continuations are
followed as if found on the first part. ``exclude`` applies to continuations, ``include``
does not (a chapter's second page rarely matches the chapter pattern). A chain still open
when the crawl closes early (``max_pages``, a timeout) is lost, and crawled again next run.

Stats (never fatal): ``fptrack/pages`` (items), ``fptrack/joined`` (items of several parts),
``fptrack/thin`` (HTML pages or chains with too little main text), ``fptrack/non_html``,
``fptrack/undecodable``, ``fptrack/too_large`` (cancelled above ``DOWNLOAD_MAXSIZE``),
``fptrack/ignored`` (requests a middleware dropped, such as those robots.txt forbids;
offsite links are Scrapy's ``offsite/filtered``),
``fptrack/errors/<ExceptionName>`` (timeouts, DNS, refused connections...),
``fptrack/http_status/<code>`` (every final status the spider sees, errors included) and
``fptrack/join_truncated`` (a chain cut at the parts limit or at a loop).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import scrapy
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest
from scrapy.http import Response
from scrapy.linkextractors import IGNORED_EXTENSIONS
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure
from w3lib.url import canonicalize_url

from crawler.encoding import UndecodableBody, decode_body
from crawler.extract import (
    PREV_PAGE_TEXTS,
    Extracted,
    check_selector,
    extract,
    find_page_link,
    page_links,
    parse_html,
)
from crawler.items import PageItem
from matcher.sites import SiteConfig, SiteConfigError

DEPTH = "fptrack_depth"
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
HTML_STARTS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<meta", b"<title", b"<!--")
_IGNORED_SUFFIX = re.compile(
    r"\.(?:" + "|".join(map(re.escape, IGNORED_EXTENSIONS)) + r")$", re.IGNORECASE
)


@dataclass(frozen=True)
class Part:
    """One fetched page of a (possibly split) chapter."""

    url: str
    status: int
    title: str
    text: str
    encoding: str
    own_chars: int
    fetched_at: datetime


@dataclass(frozen=True)
class Page:
    """A decoded HTML response: its parsed tree, main text and encoding."""

    url: str
    selector: Any
    extracted: Extracted
    encoding: str


def canonical(url: str) -> str:
    """The URL the store keys pages by: canonical, without fragment."""
    return canonicalize_url(url, keep_fragments=False)


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
        max_parts: int = 50,
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
        self.max_parts = max(1, max_parts)
        self._include = [re.compile(p) for p in config.include]
        self._exclude = [re.compile(p) for p in config.exclude]
        self._continuations: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SiteSpider:
        """The spider, with its limits read once from the crawler's settings."""
        settings = crawler.settings
        if settings.get("FPTRACK_MAX_DEPTH") is not None:
            kwargs.setdefault("max_depth", settings.getint("FPTRACK_MAX_DEPTH"))
        kwargs.setdefault("min_text_chars", settings.getint("FPTRACK_MIN_TEXT_CHARS", 20))
        kwargs.setdefault("max_parts", settings.getint("FPTRACK_MAX_PARTS", 50))
        return super().from_crawler(crawler, *args, **kwargs)

    # requests -------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """One request per start URL, at depth 0."""
        for url in self.start_urls:
            yield scrapy.Request(url, self.parse, errback=self.on_error, meta={DEPTH: 0})

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        """A page reached by a start URL or an ordinary link."""
        page = self._read(response)
        if page is None:
            return
        depth = response.meta.get(DEPTH, 0)
        url = canonical(response.url)
        join = self.site.join_next_pages
        next_url = self._next_page(page) if join else None
        yield from self._follow(page, depth, skip=next_url)
        if url in self._continuations:
            return
        if join and find_page_link(page.selector, page.url, PREV_PAGE_TEXTS, page.encoding):
            self._continuations.add(url)
            return
        parts = [self._part(response, page)]
        if next_url:
            yield self._continue(parts, next_url, depth)
            return
        yield from self._item(parts)

    def parse_continuation(
        self, response: Response, parts: list[Part], depth: int
    ) -> Iterator[Any]:
        """The next page of a chapter whose earlier ``parts`` are already fetched."""
        page = self._read(response)
        url = canonical(response.url)
        if page is None or url in {p.url for p in parts}:
            yield from self._item(parts)
            return
        next_url = self._next_page(page)
        yield from self._follow(page, depth, skip=next_url)
        parts = [*parts, self._part(response, page)]
        if next_url and canonical(next_url) not in {p.url for p in parts}:
            if len(parts) < self.max_parts:
                yield self._continue(parts, next_url, depth)
                return
            self._inc("fptrack/join_truncated")
        elif next_url:
            self._inc("fptrack/join_truncated")
        yield from self._item(parts)

    def on_error(self, failure: Failure) -> Iterator[Any]:
        """Count a failed request (never fatal)."""
        self._count_failure(failure)
        return iter(())

    def on_continuation_error(self, failure: Failure) -> Iterator[Any]:
        """Count a failed continuation and yield the parts collected before it."""
        self._count_failure(failure)
        request = getattr(failure, "request", None)
        parts = request.cb_kwargs.get("parts", []) if request is not None else []
        yield from self._item(parts)

    # helpers ----------------------------------------------------------------------------

    def _continue(self, parts: list[Part], next_url: str, depth: int) -> scrapy.Request:
        self._continuations.add(canonical(next_url))
        return scrapy.Request(
            next_url,
            self.parse_continuation,
            errback=self.on_continuation_error,
            cb_kwargs={"parts": parts, "depth": depth},
            meta={DEPTH: depth},
            dont_filter=True,
        )

    def _read(self, response: Response) -> Page | None:
        self._inc(f"fptrack/http_status/{response.status}")
        if not self._is_html(response):
            self._inc("fptrack/non_html")
            return None
        try:
            text, encoding = decode_body(response.body, response.headers.get("Content-Type"))
        except UndecodableBody as exc:
            self._inc("fptrack/undecodable")
            self.logger.info("undecodable page %s: %s", response.url, exc)
            return None
        selector = parse_html(text)
        extracted = extract(text, response.url, self.site.content_selector, page=selector)
        return Page(response.url, selector, extracted, encoding)

    @staticmethod
    def _is_html(response: Response) -> bool:
        content_type = response.headers.get("Content-Type", b"") or b""
        mime = content_type.decode("latin-1").split(";", 1)[0].strip().lower()
        if mime:
            return mime in HTML_TYPES
        return response.body[:1024].lstrip().lower().startswith(HTML_STARTS)

    def _next_page(self, page: Page) -> str | None:
        url = find_page_link(page.selector, page.url, self.site.next_page_texts, page.encoding)
        if url is None or any(p.search(url) for p in self._exclude):
            return None
        return url

    def _follow(self, page: Page, depth: int, skip: str | None) -> Iterator[scrapy.Request]:
        if depth >= self.max_depth:
            return
        skipped = canonical(skip) if skip else None
        for url in page_links(page.selector, page.url, page.encoding):
            key = canonical(url)
            if key == skipped or key in self._continuations or not self._wanted(url):
                continue
            yield scrapy.Request(url, self.parse, errback=self.on_error, meta={DEPTH: depth + 1})

    def _wanted(self, url: str) -> bool:
        path = url.split("?", 1)[0]
        if _IGNORED_SUFFIX.search(path):
            return False
        if self._include and not any(p.search(url) for p in self._include):
            return False
        return not any(p.search(url) for p in self._exclude)

    def _part(self, response: Response, page: Page) -> Part:
        return Part(
            url=canonical(response.url),
            status=response.status,
            title=page.extracted.title,
            text=page.extracted.text,
            encoding=page.encoding,
            own_chars=page.extracted.own_chars,
            fetched_at=datetime.now(UTC),
        )

    def _item(self, parts: list[Part]) -> Iterator[PageItem]:
        if not parts:
            return
        if sum(p.own_chars for p in parts) < self.min_text_chars:
            self._inc("fptrack/thin")
            return
        first = parts[0]
        self._inc("fptrack/pages")
        if len(parts) > 1:
            self._inc("fptrack/joined")
        yield PageItem(
            url=first.url,
            site=self.site.name,
            title=first.title,
            text="\n".join(p.text for p in parts if p.text),
            status=first.status,
            encoding=first.encoding,
            fetched_at=first.fetched_at,
            parts=[p.url for p in parts] if len(parts) > 1 else [],
        )

    def _count_failure(self, failure: Failure) -> None:
        if failure.check(HttpError):
            self._inc(f"fptrack/http_status/{failure.value.response.status}")
        elif failure.check(IgnoreRequest):
            self._inc("fptrack/ignored")
        elif failure.check(DownloadCancelledError):
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
