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
(a chapter index) yields nothing but its links are followed. A ``text/plain`` body that is
not markup (a novel's "TXT下载") is a page too: all of it is the text, its first line the
title; it has no links. A body that is a ZIP, EPUB or 7z archive by its first bytes (a
novel's "全本下载", whatever its name says) is read as a book (:mod:`crawler.downloads`); a
book, or a plain text, longer than ``FPTRACK_DOWNLOAD_PART_CHARS`` (200,000 characters) is
one page per part, the first under its URL, the next under ``URL#part2`` ... (yielded
first: the first part's page, which names how many there are, comes last).

Before it is read, an HTML page's stylesheets, ``@font-face`` fonts and content images are
fetched with it through the crawl's downloader, within bounds (``FPTRACK_ASSET_*``,
``FPTRACK_OCR_*``), stylesheets and fonts once per crawl, and its images read by OCR: the
reader gets them as the :class:`~crawler.reading.PageAssets` of its job, to read the page as
a browser shows it (:mod:`crawler.asset_fetch`, counted in ``fptrack/assets/...``; a page
that names none costs one search of its bytes; a failing asset never loses its page).

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

Stats (never fatal; every fetched page that yields no item is counted under its reason):
``fptrack/pages`` (items), ``fptrack/paged`` (items with a next or previous page link),
``fptrack/thin`` (HTML pages with too little main text: link lists), ``fptrack/non_html``,
``fptrack/undecodable``, ``fptrack/download_refused`` (an archive past a bound of
:mod:`crawler.downloads`, the reason logged), ``fptrack/download_parts`` (pages of a
download's parts after its first), ``fptrack/too_large`` (cancelled above ``DOWNLOAD_MAXSIZE``, or
decompressed beyond it),
``fptrack/ignored`` (requests a middleware dropped, such as those robots.txt forbids;
offsite links are Scrapy's ``offsite/filtered``), ``fptrack/other_port`` (links to, or
redirects to, another port of a start URL's host: never followed),
``fptrack/errors/<ExceptionName>`` (timeouts, DNS, refused connections...),
``fptrack/extract_timeout`` and ``fptrack/extract_failed`` (pages read the quick way because
their reader overran its time or died; they still yield their item),
``fptrack/http_status/<code>`` (every final status the spider sees, errors included),
``fptrack/not_crawled/depth`` (links not followed because they lie beyond ``max_depth``,
each counted once) and ``fptrack/not_crawled/<deadline|budget|stopped>`` (requests still
queued when the crawl closed, by why it closed; :func:`matcher.crawl_runs.not_crawled` sums
every reason). The first ``FPTRACK_NAMED_PER_REASON`` (20) pages of each of those reasons are
named, with their URL and why, in ``fptrack/not_crawled_urls`` (:meth:`SiteSpider._name`;
the requests still queued at the close are counted only).

A start URL that gives no page fails the crawl (the one exception to "never fatal"): an HTTP
error, robots.txt forbidding it, a redirect off ``allowed_domains`` (which Scrapy drops
without a word: seen on ``request_scheduled``) or to another port, no answer, a body that is
neither HTML nor plain text. Each counts in ``fptrack/start_failed`` and, for the first
:data:`MAX_START_ERRORS`, in the one line ``fptrack/start_error``
(``start URL http://host/nosuch/: answered 404 Not Found``), which
:func:`crawler.run.crawl_problem` makes the crawl's error.

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
"""

from __future__ import annotations

import json
import re
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import scrapy
import xxhash
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest
from scrapy.http import Response
from scrapy.linkextractors import IGNORED_EXTENSIONS
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import CancelledError
from twisted.internet.defer import TimeoutError as TwistedTimeout
from twisted.python.failure import Failure
from w3lib.url import canonicalize_url

from crawler import defaults, dust
from crawler import incremental as inc
from crawler.asset_fetch import AssetBounds, AssetFetcher
from crawler.deadline import deadline_of, past_deadline
from crawler.downloads import DOWNLOAD_SUFFIXES
from crawler.extract import check_selector, content_chars
from crawler.items import PageItem
from crawler.meta import DEPTH, NEW, RENDER, START
from crawler.origin import Origins
from crawler.reactor import deferred_from_future
from crawler.reader_pool import DEADLINE, ReaderPool, shared_pool
from crawler.reading import DEFAULT_REFERENCE, PageAssets, Reading, ReadJob, body_kind
from crawler.render import (
    AUTO_RENDER,
    AUTO_UNAVAILABLE_SETTING,
    UNAVAILABLE_SETTING,
    UNAVAILABLE_STAT,
)
from matcher.archive import Exchange
from matcher.crawl_runs import (
    NAMED_PER_REASON,
    NOT_CRAWLED,
    NOT_CRAWLED_URLS,
    START_ERROR,
    START_FAILED,
    NamedPages,
    stop_reason,
)
from matcher.pages import GonePage, PageAlias, UnchangedPage, part_url
from matcher.sites import SiteConfig, SiteConfigError

MAX_PROBED_PATTERNS = 10_000
"""Path patterns whose first queried links are asked for at once (:meth:`SiteSpider._probe`)."""
SKIPPED_ALIAS = "fptrack/skipped/alias"
"""Stat: links not requested because they name a page already requested under another URL
(a default document, a parameter a learnt rule drops, a ``rel=canonical``)."""
SKIPPED_DEAD = "fptrack/skipped/dead_pattern"
"""Stat: requests not made because their path pattern is dead
(:class:`crawler.dust.DeadPatterns`)."""
ALIAS_FETCHED = "fptrack/aliases/fetched"
"""Stat: responses that were an already fetched page under another query (same path, same
body digest): recorded as aliases, not pages."""
RULES_LEARNT = "fptrack/rules/learnt"
DEAD_MESSAGE = "dead link pattern"
ALIAS_MESSAGE = "alias of a page already requested"
MAX_PENDING_ALIASES = 8
PENDING_CAPPED = "fptrack/pending_capped"
"""Stat: new links not requested because ``max_pending`` requests were already queued."""
MAX_START_ERRORS = 3
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
INC = "fptrack/incremental/"
NOT_MODIFIED = 304
GONE_STATUSES = frozenset({404, 410})
DOWNLOAD_PART_CHARS = 200_000
"""A download, or a plain-text body, longer than this is stored as several pages of at most
this many characters each (``FPTRACK_DOWNLOAD_PART_CHARS``; :mod:`crawler.downloads`)."""
_SKIPPED_EXTENSIONS = [e for e in IGNORED_EXTENSIONS if e not in DOWNLOAD_SUFFIXES]
_IGNORED_SUFFIX = re.compile(
    r"\.(?:" + "|".join(map(re.escape, _SKIPPED_EXTENSIONS)) + r")$", re.IGNORECASE
)


def canonical(url: str) -> str:
    """The URL the store keys pages by before a site's learnt rules
    (:func:`crawler.dust.normalise`: canonical, without fragment, tracking parameters or
    default document)."""
    return dust.normalise(url)


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
        max_pending: int = 100_000,
        deadline: float = 0.0,
        extract_workers: int = 2,
        extract_seconds: float = 10.0,
        render_unavailable: str = "",
        auto_render: bool = AUTO_RENDER,
        browser_missing: str = "",
        incremental: bool = False,
        recrawl_depth: int = 2,
        feed_max_bytes: int = 5 * 1024 * 1024,
        feed_max_entries: int = 50_000,
        ledger: inc.PageLedger | None = None,
        dust_threshold: int = dust.DUST_THRESHOLD,
        dead_threshold: int = dust.DEAD_THRESHOLD,
        rules_store: Any = None,
        download_part_chars: int = DOWNLOAD_PART_CHARS,
        named_per_reason: int = NAMED_PER_REASON,
        page_assets: bool = True,
        asset_bounds: AssetBounds | None = None,
        ocr_options: dict[str, Any] | None = None,
        webfont_reference: str = DEFAULT_REFERENCE,
        webfont_cache: str = "",
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
        self.download_part_chars = download_part_chars
        self.max_links = max_links
        self.max_requests = max_requests
        self.max_pending = max_pending
        self.deadline = deadline
        self._deadline_at: float | None = None
        self._url_limit = 2083  # Scrapy's URLLENGTH_LIMIT, set from the crawler's settings
        self._max_size = 0  # Scrapy's DOWNLOAD_MAXSIZE, likewise
        self._made = 0  # new requests made ...
        self._arrived = 0  # ... and of them, those the scheduler took or dropped
        self.extract_seconds = extract_seconds
        self.render_unavailable = render_unavailable if config.render else ""
        self.auto_render = auto_render
        self.browser_missing = browser_missing
        self.readers: ReaderPool = shared_pool(extract_workers)
        self._requested: set[int] = set()
        self._include = [re.compile(p) for p in config.include]
        self._exclude = [re.compile(p) for p in config.exclude]
        self._origins = Origins(self.start_urls)
        self.incremental = incremental
        if incremental:
            self.max_depth = min(self.max_depth, recrawl_depth)
        self.feed_max_bytes = feed_max_bytes
        self.feed_max_entries = feed_max_entries
        self.ledger = ledger
        self._owned_store: Any = None
        self._start_answered: set[str] = set()
        self._start_redirects: dict[str, str] = {}
        self._start_errors: list[str] = []
        self._beyond_depth: set[int] = set()
        self.dust = dust.DustRules(threshold=dust_threshold)
        self.dead = dust.DeadPatterns(threshold=dead_threshold)
        self.rules_store = rules_store  # .site_rules / .save_crawl_rules (matcher.store.sites)
        self._linked: set[int] = set()  # links as written (before rules), once each
        self._yielded: dict[int, str] = {}  # page key -> the URL its item was stored under
        self._last_exchange: tuple[weakref.ref[Response], Exchange] | None = None
        self._aliases: dict[int, list[str]] = {}  # page key -> aliases not yet recorded
        self._later: list[PageAlias] = []  # aliases a rule just learnt revealed
        self._revealed: set[int] = set()  # keys of pages fetched under a URL a rule then dropped
        self._dead_links: set[int] = set()  # links skipped for their dead pattern
        self._paths: set[int] = set()  # canonical paths (without query) requested
        self._probes: dict[str, int] = {}  # path pattern -> its queries asked for at once
        self._named = NamedPages(named_per_reason)  # the first pages not crawled, named
        self.page_assets = page_assets
        self.asset_bounds = asset_bounds or AssetBounds()
        self.ocr_options = dict(ocr_options or {})  # ImageReader's arguments
        self.webfont_reference = webfont_reference
        self.webfont_cache = webfont_cache
        self.assets: AssetFetcher | None = None  # made with the crawler (from_crawler)
        self.assets_seen: list[tuple[str, PageAssets]] | None = None  # a test hook

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SiteSpider:
        """The spider, with its limits read once from the crawler's settings."""
        settings = crawler.settings
        if settings.get("FPTRACK_MAX_DEPTH") is not None:
            kwargs.setdefault("max_depth", settings.getint("FPTRACK_MAX_DEPTH"))
        kwargs.setdefault("min_text_chars", settings.getint("FPTRACK_MIN_TEXT_CHARS", 20))
        kwargs.setdefault(
            "download_part_chars",
            settings.getint("FPTRACK_DOWNLOAD_PART_CHARS", DOWNLOAD_PART_CHARS),
        )
        kwargs.setdefault("max_links", settings.getint("FPTRACK_MAX_LINKS_PER_PAGE", 5000))
        kwargs.setdefault("max_requests", settings.getint("FPTRACK_MAX_REQUESTS", 1_000_000))
        kwargs.setdefault("max_pending", settings.getint("FPTRACK_MAX_PENDING", 100_000))
        kwargs.setdefault(
            "named_per_reason", settings.getint("FPTRACK_NAMED_PER_REASON", NAMED_PER_REASON)
        )
        kwargs.setdefault("deadline", deadline_of(crawler))
        kwargs.setdefault("extract_workers", settings.getint("FPTRACK_EXTRACT_WORKERS", 2))
        kwargs.setdefault("extract_seconds", settings.getfloat("FPTRACK_EXTRACT_SECONDS", 10.0))
        kwargs.setdefault("render_unavailable", settings.get(UNAVAILABLE_SETTING) or "")
        kwargs.setdefault("auto_render", settings.getbool("FPTRACK_AUTO_RENDER", AUTO_RENDER))
        kwargs.setdefault("browser_missing", settings.get(AUTO_UNAVAILABLE_SETTING) or "")
        kwargs.setdefault("recrawl_depth", settings.getint("FPTRACK_RECRAWL_DEPTH", 2))
        kwargs.setdefault("feed_max_bytes", settings.getint("FPTRACK_FEED_MAX_BYTES", 5 << 20))
        kwargs.setdefault("feed_max_entries", settings.getint("FPTRACK_FEED_MAX_ENTRIES", 50_000))
        kwargs.setdefault(
            "dust_threshold", settings.getint("FPTRACK_DUST_THRESHOLD", dust.DUST_THRESHOLD)
        )
        kwargs.setdefault(
            "dead_threshold", settings.getint("FPTRACK_DEAD_THRESHOLD", dust.DEAD_THRESHOLD)
        )
        kwargs.setdefault("page_assets", settings.getbool("FPTRACK_PAGE_ASSETS", True))
        kwargs.setdefault("asset_bounds", asset_bounds(settings))
        kwargs.setdefault("ocr_options", ocr_options(settings))
        kwargs.setdefault(
            "webfont_reference", settings.get("FPTRACK_WEBFONT_REFERENCE") or DEFAULT_REFERENCE
        )
        kwargs.setdefault("webfont_cache", settings.get("FPTRACK_WEBFONT_CACHE") or "")
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.page_assets:
            spider.assets = AssetFetcher(
                crawler, spider._origins, spider._on_site, spider.asset_bounds, spider._ocr
            )
        from crawler.settings import ASSETS_SEEN_SETTING, ByReference

        seen = settings.get(ASSETS_SEEN_SETTING)
        spider.assets_seen = seen.value if isinstance(seen, ByReference) else None
        spider._url_limit = settings.getint("URLLENGTH_LIMIT", 2083) or 1 << 62
        spider._max_size = settings.getint("DOWNLOAD_MAXSIZE", 0)
        crawler.signals.connect(spider._scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(spider._opened, signal=signals.spider_opened)
        crawler.signals.connect(spider._dropped, signal=signals.request_dropped)
        if spider.incremental and spider.ledger is None:
            spider.ledger, spider._owned_store = _ledger(crawler.settings)
        if spider.rules_store is None:
            spider.rules_store, owned = _rules_store(crawler.settings, spider._owned_store)
            spider._owned_store = spider._owned_store or owned
        return spider

    def closed(self, reason: str) -> None:
        """Record the start URLs that got no page, and the requests left unfetched (by why
        the crawl stopped); sum up an incremental crawl; stop the OCR workers; close the
        store its ledger opened."""
        for url, target in self._start_redirects.items():
            if url not in self._start_answered and not self._on_site(target):
                self._start_failed(url, f"redirected off the site, to {target}")
        crawler = getattr(self, "crawler", None)
        if crawler is not None:
            stats = crawler.stats
            left = stats.get_value("scheduler/enqueued/memory", 0) - stats.get_value(
                "scheduler/dequeued/memory", 0
            )
            why = stop_reason(reason)
            if left > 0 and why:
                self._inc(NOT_CRAWLED + why, left)
        if self.incremental:
            stats = self.crawler.stats
            ingested = "fptrack/ingested/"
            not_modified = stats.get_value(INC + "not_modified", 0)
            stats.set_value(INC + "new", stats.get_value(ingested + "new", 0))
            stats.set_value(INC + "changed", stats.get_value(ingested + "changed", 0))
            same = stats.get_value(ingested + "unchanged", 0)
            stats.set_value(INC + "unchanged", same + not_modified)
        self._save_rules()
        if self.assets is not None:
            self.assets.close()
        if self._owned_store is not None:
            self._owned_store.close()
            self._owned_store = None

    def _opened(self, spider: Any = None) -> None:
        """The deadline's clock starts with the crawl (as Scrapy's ``CLOSESPIDER_TIMEOUT``)."""
        if self.deadline > 0:
            self._deadline_at = time.monotonic() + self.deadline
        self._load_rules()

    def _load_rules(self) -> None:
        """The site's rules and dead patterns as earlier crawls left them (never fatal)."""
        if self.rules_store is None:
            return
        try:
            known = self.rules_store.site_rules(self.site.name)
        except Exception as exc:  # the store's errors: the crawl goes on without them
            self.logger.warning("site rules not read: %s", exc)
            return
        self.dust = dust.DustRules.from_stored(
            known["params"], self.dust.threshold, known.get("rejected", [])
        )
        self.dead = dust.DeadPatterns.from_stored(known["dead"], self.dead.threshold)

    def _save_rules(self) -> None:
        """Keep the rules this crawl learnt and its dead patterns with the site."""
        if self.rules_store is None:
            return
        try:
            self.rules_store.save_crawl_rules(
                self.site.name, [r.to_dict() for r in self.dust.learnt], self.dead.to_list()
            )
        except Exception as exc:  # the store's errors: logged, the crawl's pages are stored
            self.logger.warning("site rules not saved: %s", exc)

    # requests -------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """One request per start URL, at depth 0; an incremental crawl also asks each start
        URL's origin for its robots.txt (for its sitemaps). None when the site's pages should
        be rendered and cannot be (the reason is recorded as ``fptrack/render_unavailable``)."""
        if self.render_unavailable:
            self.logger.error("pages cannot be rendered: %s", self.render_unavailable)
            crawler = getattr(self, "crawler", None)
            if crawler is not None:
                crawler.stats.set_value(UNAVAILABLE_STAT, self.render_unavailable)
            return
        for url in self.start_urls:
            request = self._request(url, 0)
            if request is not None:
                request.meta[START] = url
                yield request
        if self.incremental:
            for origin in dict.fromkeys(_origin(url) for url in self.start_urls):
                yield scrapy.Request(
                    origin + "/robots.txt",
                    self.parse_robots,
                    errback=self.on_robots_error,
                    meta={"handle_httpstatus_all": True, "dont_obey_robotstxt": True},
                )

    # incremental crawls: sitemaps and feeds ------------------------------------------------

    def parse_robots(self, response: Response) -> Iterator[scrapy.Request]:
        """The sitemaps robots.txt names (those of a start URL's origin), else /sitemap.xml."""
        from scrapy.utils.sitemap import sitemap_urls_from_robots

        urls: list[str] = []
        if response.status == 200:
            found = sitemap_urls_from_robots(
                response.body[: self.feed_max_bytes], base_url=response.url
            )
            urls = [u for u in found if self._same_origin(u)][:50]
        if not urls:
            urls = [_origin(response.url) + "/sitemap.xml"]
        for url in urls:
            yield self._listing(url, self.parse_sitemap, depth=0)

    def on_robots_error(self, failure: Failure) -> Iterator[scrapy.Request]:
        """A robots.txt not fetched (no answer, or not within ``DOWNLOAD_TIMEOUT``): one line,
        counted as a feed problem, and /sitemap.xml tried instead."""
        request = getattr(failure, "request", None)
        if request is not None:
            self._count_failure(failure)
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
        self._inc(INC + "sitemaps")
        if kind == "sitemapindex":
            nested = response.meta.get("fptrack_sitemap_depth", 0)
            if nested >= 2:  # an index of indexes of indexes: not followed
                return
            for entry in entries[:50]:
                if self._same_origin(entry.url):
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
        self._inc(INC + "feeds")
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
        self._count_failure(failure)
        self._feed_problem(f"{url}: not fetched ({type(failure.value).__name__})")
        return iter(())

    def _feed_problem(self, line: str) -> None:
        self._inc(INC + "feed_problems")
        self.crawler.stats.set_value(INC + "feed_problem", line)
        self.logger.warning("sitemap or feed skipped: %s", line)

    def _listed(self, entries: list[inc.Entry]) -> Iterator[scrapy.Request]:
        """Requests for a sitemap's or feed's pages, one link from the start pages: those not
        stored, and stored ones dated after their fetch (conditional)."""
        if self.max_depth < 1:
            return
        self._inc(INC + "listed", len(entries))
        wanted = {}
        for entry in entries:
            if self._wanted(entry.url):
                wanted.setdefault(self._canon(entry.url), entry)
        known = self._known(wanted)
        for key, entry in wanted.items():
            page = known.get(key)
            if page is not None and not page.older_than(entry.lastmod):
                self._inc(INC + "skipped")
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
            if self._same_origin(url):
                yield self._listing(url, self.parse_feed, 0)

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        """A fetched page: its links to follow, then its item when it has main text."""
        depth = response.meta.get(DEPTH, 0)
        start = response.meta.get(START)
        if start:
            self._start_answered.add(start)
        self.dead.answered(response.url, response.status)
        if response.status == NOT_MODIFIED:  # a conditional request: the page is unchanged
            self._inc(f"fptrack/http_status/{NOT_MODIFIED}")
            self._inc(INC + "not_modified")
            yield UnchangedPage(self._canon(response.url))
            return
        reading = await self._read(response, depth)
        if reading is None:
            return
        store = True
        if reading.needs_browser and self._rendered(response):
            self._inc(RENDER_STILL_THIN)  # it still shows little text: stored as read
        elif reading.needs_browser:
            self._inc(RENDER_FLAGGED)
            if self.auto_render and not self.browser_missing:
                self._inc(RENDER_REQUESTED)
                yield self._render_request(response, depth)
                return
            if self.auto_render:  # its links are followed, its shell is not stored
                store = False
                self._inc(NOT_CRAWLED + NEEDS_BROWSER)
                why = f"built by script, no browser to render it: {self.browser_missing}"
                self._name(NEEDS_BROWSER, response.url, why)
        if response.meta.get(RENDER):
            self._inc(RENDERED)
        url = self._canon(response.url)
        page_url = self._page_url(reading, url)
        digest = _digest(reading)
        if digest is not None:
            alias = self.dust.alias_of(url, digest)
            self._learn(url, digest, alias or page_url)
            if alias is not None:  # the same page under another query: not a page again
                self._inc(ALIAS_FETCHED)
                self._alias(self._key(alias), canonicalize_url(response.url))
                for item in self._alias_items():
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
            url_of_part = part_url(page_url, n + 1)
            for item in self._part_item(response, self._part(reading, n), url_of_part):
                yield item
        parts = len(reading.parts) if len(reading.parts) > 1 else 0
        first = self._part(reading, 0)
        for item in self._item(response, first, next_url, prev_url, page_url, parts):
            yield item
        for item in self._alias_items():
            yield item

    def skip_queued(self, request: scrapy.Request) -> str:
        """Why a queued request is no longer worth making ("" when it is): its path pattern
        died since it was queued; or a rule learnt since drops one of its parameters and the
        page was already requested without it (the first such request still goes, and the
        page is then known as requested); or the page was fetched meanwhile under a URL
        the rule reduces to this one (``/1.html`` queued, ``/1.html?t=9`` fetched first)."""
        if request.callback != self.parse or request.meta.get(RENDER):
            return ""
        if self.dead.dead(request.url):
            return DEAD_MESSAGE
        bare = self.dust.apply(request.url)
        if bare != request.url:
            key = self._key(bare)
            if key in self._requested:
                return ALIAS_MESSAGE
            self._requested.add(key)
        elif self._key(bare) in self._revealed:
            return ALIAS_MESSAGE
        return ""

    def _canon(self, url: str) -> str:
        """The URL a page at ``url`` is stored under: :func:`canonical` once the site's
        parameter rules dropped what they drop (:class:`crawler.dust.DustRules`)."""
        return canonical(self.dust.apply(url))

    def _key(self, url: str) -> int:
        return xxhash.xxh3_64_intdigest(self._canon(url).encode("utf-8", "surrogatepass"))

    def _page_url(self, reading: Reading, url: str) -> str:
        """The page's own ``<link rel="canonical">`` when it is on the site (same origin),
        else ``url``; marked as requested, so links to it are not asked for again."""
        declared = reading.canonical
        if declared and self._on_site(declared) and self._same_origin(declared):
            page_url = self._canon(declared)
            self._requested.add(self._key(page_url))
            return page_url
        return url

    def _learn(self, url: str, digest: int, known_as: str) -> None:
        """Observe a fetch for the site's rules; a rule learnt makes the URLs its pattern's
        pages were fetched under, without its parameter, known: not requested again, and
        kept as those pages' aliases."""
        for rule in self.dust.observe(url, digest, known_as):
            self._inc(RULES_LEARNT)
            self.logger.info(
                "site %s: parameter %r dropped from links on %s (seen %d times)",
                self.site.name,
                rule.param,
                rule.pattern,
                rule.support,
            )
            for stored in self.dust.fetched_on(rule.pattern):
                bare = self._canon(stored)
                key = self._key(bare)
                self._requested.add(key)
                if bare != stored:
                    self._later.append(PageAlias(stored, bare))
                    self._revealed.add(key)

    def _alias(self, key: int, alias: str) -> None:
        """Another URL of the page of ``key``: recorded with its item, or after it."""
        pending = self._aliases.setdefault(key, [])
        if alias not in pending and len(pending) < MAX_PENDING_ALIASES:
            pending.append(alias)

    def _alias_items(self) -> Iterator[PageAlias]:
        """The aliases found for pages already yielded (one store write each)."""
        while self._later:
            yield self._later.pop()
        for key in [k for k in self._aliases if k in self._yielded]:
            for alias in self._aliases.pop(key):
                if alias != self._yielded[key]:
                    yield PageAlias(self._yielded[key], alias)

    def on_error(self, failure: Failure) -> Iterator[Any]:
        """Count a failed request (never fatal to the crawl, but a start URL's failure fails
        it: :meth:`_start_failed`); a 404 or 410 yields a :class:`GonePage`, so that a page
        stored there before is known to be removed."""
        self._count_failure(failure)
        request = getattr(failure, "request", None)
        start = request.meta.get(START) if request is not None else None
        if start:
            self._start_answered.add(start)
            where = "" if request.url == start else f"redirected to {request.url}: "
            self._start_failed(start, where + failure_reason(failure))
        if failure.check(HttpError):
            self.dead.answered(failure.value.response.url, failure.value.response.status)
        if failure.check(HttpError) and failure.value.response.status in GONE_STATUSES:
            response = failure.value.response
            return iter([GonePage(self._canon(response.url), response.status)])
        return iter(())

    # pages built by script --------------------------------------------------------------

    @staticmethod
    def _rendered(response: Response) -> bool:
        """Whether ``response`` is a page the browser rendered (:mod:`crawler.render`)."""
        return bool(response.meta.get(RENDER)) or "playwright" in response.flags

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
        self._inc(NOT_CRAWLED + RENDER_FAILED)
        self._name(RENDER_FAILED, url, f"not rendered ({type(value).__name__}: {message})")
        self.logger.info("page %s not rendered: %s", url or "?", message)
        return iter(())

    # helpers ----------------------------------------------------------------------------

    async def _read(self, response: Response, depth: int) -> Reading | None:
        """The page's reading, done by a reader process (:mod:`crawler.reader_pool`), with
        the stylesheets, fonts and content images' text it needs to be read as a browser
        shows it (:mod:`crawler.asset_fetch`; none for a page that names none)."""
        self._inc(f"fptrack/http_status/{response.status}")
        kind = self._kind(response)
        if not kind:
            self._inc("fptrack/non_html")
            content_type = (response.headers.get("Content-Type") or b"").decode("latin-1")
            why = f"not a page (Content-Type {content_type or 'none'})"
            self._name("not_html", response.url, why)
            if response.meta.get(START):
                self._start_failed(response.meta[START], why)
            return None
        content_type = response.headers.get("Content-Type") or b""
        assets = PageAssets()
        if kind == "html" and self.assets is not None:
            assets = await self.assets.assets(
                response.body, content_type.decode("latin-1"), response.url,
                self.site.content_selector,
            )  # fmt: skip
            if self.assets_seen is not None and assets != PageAssets():
                self.assets_seen.append((response.url, assets))
        job = ReadJob(
            plain=kind == "plain",
            download=kind == "download",
            part_chars=self.download_part_chars,
            body=response.body,
            content_type=content_type.decode("latin-1"),
            url=response.url,
            content_selector=self.site.content_selector,
            next_page_texts=self.site.next_page_texts if self.site.join_next_pages else (),
            max_links=self.max_links + 1,  # at max_depth too: those links are counted
            assets=assets,
            webfont_reference=self.webfont_reference,
            webfont_cache=self.webfont_cache,
        )
        if self._deadline_at is not None and time.monotonic() >= self._deadline_at:
            self._inc(NOT_CRAWLED + "deadline")
            self._name("deadline", response.url, self._past_deadline("before it was read"))
            return None
        future = self.readers.submit(job, self.extract_seconds, self._deadline_at)
        waiting = deferred_from_future(future)
        if self._deadline_at is not None:  # a quick reading after a timeout may outlast it
            from twisted.internet import reactor

            waiting.addTimeout(max(self._deadline_at - time.monotonic(), 0.0), reactor)
        try:
            reading, problem = await maybe_deferred_to_future(waiting)
        except (TwistedTimeout, CancelledError):
            reading, problem = Reading(), DEADLINE
        if problem == DEADLINE:
            self._inc(NOT_CRAWLED + "deadline")
            self._name("deadline", response.url, self._past_deadline("before it was read"))
            return None
        if problem:
            self._inc(f"fptrack/extract_{problem}")
            self.logger.info("page %s read the quick way (%s)", response.url, problem)
        if reading.undecodable:
            self._inc("fptrack/undecodable")
            self._name("undecodable", response.url, reading.undecodable)
            self.logger.info("undecodable page %s: %s", response.url, reading.undecodable)
            return None
        if reading.refused:
            self._inc("fptrack/download_refused")
            self._name("download_refused", response.url, reading.refused)
            self.logger.warning("download %s not read: %s", response.url, reading.refused)
            return None
        return reading

    def _ocr(self) -> Any:
        """The crawl's OCR reader (made on its first content image, closed with it)."""
        from crawler.ocr import ImageReader

        return ImageReader(**self.ocr_options)

    @staticmethod
    def _kind(response: Response) -> str:
        """How the body is read (:func:`crawler.reading.body_kind`)."""
        content_type = response.headers.get("Content-Type", b"") or b""
        return body_kind(response.body, content_type.decode("latin-1"))

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
        same_level = {self._canon(u) for u in neighbours if u}
        for url in neighbours:
            suffix_ok = url and not _IGNORED_SUFFIX.search(url.split("?", 1)[0])
            if suffix_ok and self._same_origin(url):
                request = self._request(url, depth)
                if request is not None:
                    yield request
        siblings = self._siblings(reading, same_level)
        same_level.update(self._canon(u) for u in siblings)
        for url in siblings:
            request = self._request(url, depth)
            if request is not None:
                yield request
        if depth >= self.max_depth:
            self._count_beyond(reading.links[: self.max_links], same_level)
            return
        links = self._capped(reading, page_url)
        for url in links:
            if self._canon(url) not in same_level and self._wanted(url):
                request = self._request(url, depth + 1)
                if request is not None:
                    yield request

    def _capped(self, reading: Reading, page_url: str) -> tuple[str, ...]:
        """The page's first ``max_links`` links; the links after them are counted in
        ``fptrack/links_capped`` (each link attribute, as the page has it), the first of
        them named."""
        links = reading.links
        if len(links) > self.max_links:
            dropped = len(links) - self.max_links + reading.links_beyond
            self._inc("fptrack/links_capped", dropped)
            why = (
                f"one of {dropped:,} links of {page_url} after its first {self.max_links:,}"
                " (FPTRACK_MAX_LINKS_PER_PAGE)"
            )
            self._name("links_capped", links[self.max_links], why)
            links = links[: self.max_links]
        return links

    def _count_beyond(self, links: list[str], taken: set[str]) -> None:
        """Count, once each, the wanted links not requested because they lie beyond
        ``max_depth`` (``fptrack/not_crawled/depth``; at most ``max_requests`` remembered)."""
        for url in links:
            if self._canon(url) in taken:
                continue
            key = self._key(url)
            if key in self._requested or key in self._beyond_depth:
                continue
            if (
                len(self._beyond_depth) >= self.max_requests
                or not self._wanted(url, count=False)
                or not self._on_site(url)
            ):
                continue
            self._beyond_depth.add(key)
            self._inc(NOT_CRAWLED + "depth")
            self._name("depth", url, f"beyond max_depth {self.max_depth}")

    def _siblings(self, reading: Reading, taken: set[str]) -> list[str]:
        """The page's neighbouring chapters (:attr:`Reading.sequence`) to follow at its own
        depth: those ``include`` and ``exclude`` allow, not among the canonical ``taken``."""
        return [u for u in reading.sequence if self._canon(u) not in taken and self._wanted(u)]

    def _follow_new(
        self,
        reading: Reading,
        depth: int,
        neighbours: tuple[str | None, str | None],
        page_url: str,
    ) -> Iterator[scrapy.Request]:
        """An incremental crawl's requests for a page's links: its next and previous pages at
        its own depth (conditional when stored), its neighbouring chapters at its own depth
        and its other links one level deeper, both when not stored."""
        same_level = [
            u
            for u in neighbours
            if u and not _IGNORED_SUFFIX.search(u.split("?", 1)[0]) and self._same_origin(u)
        ]
        skip = {self._canon(u) for u in same_level}
        sequence = self._siblings(reading, skip)
        skip.update(self._canon(u) for u in sequence)
        links: list[str] = []
        if depth < self.max_depth:
            capped = self._capped(reading, page_url)
            links = [u for u in capped if self._canon(u) not in skip and self._wanted(u)]
        known = self._known({self._canon(u) for u in [*same_level, *sequence, *links]})
        for url in same_level:
            request = self._request(url, depth, known.get(self._canon(url)))
            if request is not None:
                yield request
        for url in sequence:
            if self._canon(url) in known:
                self._inc(INC + "skipped")
                continue
            request = self._request(url, depth)
            if request is not None:
                yield request
        for url in links:
            if self._canon(url) in known:
                self._inc(INC + "skipped")
                continue
            request = self._request(url, depth + 1)
            if request is not None:
                yield request

    def _request(
        self, url: str, depth: int, stored: inc.Stored | None = None
    ) -> scrapy.Request | None:
        """A request, unless it is for a new URL and this process already asked for
        ``max_requests`` distinct ones (the frontier's bound: a site generating links without
        end cannot grow it, or this process's memory, without end). A ``stored`` page is
        asked for with its validators (``If-None-Match``, ``If-Modified-Since``): a 304
        answer reaches :meth:`parse`.

        The site's learnt rules first drop the parameters they drop. A new link naming a
        page already requested under another URL is not requested (``fptrack/skipped/
        alias``); one on a dead path pattern neither (``fptrack/skipped/dead_pattern``),
        and one on a pattern that answered 404/410 lately, or one with a query whose path
        was already requested (but the first few of its pattern, :meth:`_probe`), is asked
        for later (lower priority): :mod:`crawler.dust`."""
        given, url = url, self.dust.apply(url)
        key = self._key(url)
        raw = xxhash.xxh3_64_intdigest(given.encode("utf-8", "surrogatepass"))
        new_link = raw not in self._linked
        if new_link and len(self._linked) < self.max_requests:
            self._linked.add(raw)
        priority = 0
        if key in self._dead_links:
            return None
        if key in self._requested:
            alias = canonicalize_url(given)
            if alias != self._canon(url):  # another URL of a page already requested
                if new_link:
                    self._inc(SKIPPED_ALIAS)
                    if url == given:  # an alias by normalisation, not by a learnt rule
                        self._alias(key, alias)
                return None
            if key in self._revealed and new_link:  # fetched under a URL a rule reduces
                self._inc(SKIPPED_ALIAS)
            return None  # asked for already, under this URL or one the rules reduce to it
        else:
            if len(self._requested) >= self.max_requests:
                self._inc("fptrack/requests_capped")
                self._name(
                    "budget",
                    url,
                    f"{self.max_requests:,} URLs already requested (FPTRACK_MAX_REQUESTS)",
                )
                return None
            if self._pending() >= self.max_pending:
                self._inc(PENDING_CAPPED)
                self._name(
                    "pending_capped",
                    url,
                    f"{self.max_pending:,} requests already pending (FPTRACK_MAX_PENDING)",
                )
                return None
            skip, priority = self.dead.verdict(url)
            self._requested.add(key)
            if "?" in url:  # the path already asked for under another query: later
                path = xxhash.xxh3_64_intdigest(self._canon(url).split("?", 1)[0].encode())
                if path in self._paths and not self._probe(url):
                    priority -= 1
                elif len(self._paths) < self.max_requests:
                    self._paths.add(path)
            elif len(self._paths) < self.max_requests:
                self._paths.add(xxhash.xxh3_64_intdigest(self._canon(url).encode()))
            if skip and depth > 0:
                self._inc(SKIPPED_DEAD)
                self._dead_links.add(key)
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
        if len(request.url) <= self._url_limit:  # longer: dropped unseen (UrlLengthMiddleware)
            self._made += 1
            request.meta[NEW] = True
        return request

    def _probe(self, url: str) -> bool:
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

    def _pending(self) -> int:
        """Requests this process made and has not yet fetched: those in its scheduler's
        queue, and those on their way to it (Scrapy schedules a callback's requests while
        it goes on iterating them)."""
        crawler = getattr(self, "crawler", None)
        if crawler is None:
            return 0
        stats = crawler.stats
        return (self._made - self._arrived) + sum(
            stats.get_value(f"scheduler/enqueued/{where}", 0)
            - stats.get_value(f"scheduler/dequeued/{where}", 0)
            for where in ("memory", "disk", "redis")
        )

    def _on_site(self, url: str) -> bool:
        """Within ``allowed_domains`` (what Scrapy's offsite filter lets through: the host,
        any port)."""
        host = (urlsplit(url).hostname or "").lower()
        return any(host == d or host.endswith("." + d) for d in self._domains)

    def _dropped(self, request: scrapy.Request, spider: Any = None) -> None:
        """A request the scheduler refused (a duplicate) is no longer on its way."""
        if request.meta.pop(NEW, False):
            self._arrived += 1

    def _scheduled(self, request: scrapy.Request, spider: Any = None) -> None:
        """A request reaching the scheduler (no longer on its way: :meth:`_pending`); a
        start URL's redirect as it is scheduled: Scrapy drops an off-site one there
        without a word, so :meth:`closed` names it."""
        if request.meta.pop(NEW, False):
            self._arrived += 1
        start = request.meta.get(START)
        if start and request.meta.get("redirect_urls"):
            self._start_redirects[start] = request.url

    def _start_failed(self, url: str, reason: str) -> None:
        """A start URL that gave no page: the crawl fails with the reason (one line)."""
        line = f"start URL {url}: {reason}"
        self._inc(START_FAILED)
        self.logger.warning("%s", line)
        if len(self._start_errors) < MAX_START_ERRORS:
            self._start_errors.append(line)
            crawler = getattr(self, "crawler", None)
            if crawler is not None:
                crawler.stats.set_value(START_ERROR, "; ".join(self._start_errors))

    def _same_origin(self, url: str) -> bool:
        """Not another port of a start URL's host (:mod:`crawler.origin`)."""
        return self._origins.admits(url)

    def _wanted(self, url: str, count: bool = True) -> bool:
        path = url.split("?", 1)[0]
        if _IGNORED_SUFFIX.search(path):
            return False
        if not self._same_origin(url):
            if count:
                self._inc("fptrack/other_port")
                self._name("other_port", url, "on another port of the site's host")
            return False
        if self._include and not any(p.search(url) for p in self._include):
            return False
        return not any(p.search(url) for p in self._exclude)

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
        key = self._key(page_url)
        fetched_as = self._key(response.url)
        if fetched_as != key and fetched_as in self._aliases:
            for alias in self._aliases.pop(fetched_as):
                self._alias(key, alias)
        if canonical(response.url) != page_url:
            self._alias(key, canonicalize_url(response.url))
        if page.own_chars < self.min_text_chars:
            self._inc("fptrack/thin")
            return
        aliases = tuple(a for a in self._aliases.pop(key, []) if a != page_url)
        self._yielded[key] = page_url
        self._inc("fptrack/pages")
        if next_url or prev_url:
            self._inc("fptrack/paged")
        yield self._page_item(
            response,
            page,
            page_url,
            next_url=self._canon(next_url) if next_url else "",
            prev_url=self._canon(prev_url) if prev_url else "",
            aliases=aliases,
            parts=parts,
        )

    def _page_item(self, response: Response, page: Reading, url: str, **links: Any) -> PageItem:
        """The item of ``page`` read from ``response``, stored under ``url`` (``links``:
        its ``next_url``, ``prev_url`` and ``aliases`` when it has them)."""
        exchange = self._exchange(response)
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

    def _exchange(self, response: Response) -> Exchange:
        """The exchange of ``response``, made once however many pages it gives (a download
        in parts): every part refers to the same archived exchange."""
        last = self._last_exchange
        if last is None or last[0]() is not response:  # not the response itself: its bytes go
            exchange = exchange_of(response, datetime.now(UTC))
            self._last_exchange = last = (weakref.ref(response), exchange)
        return last[1]

    @staticmethod
    def _part(reading: Reading, n: int) -> Reading:
        """Part ``n`` (from 0) of a reading in parts (a download, a long plain text), as a
        page of its own: titled by the book and the part's chapters; a reading in one
        piece as it is."""
        if len(reading.parts) < 2:
            return reading
        title, text = reading.parts[n]
        return replace(
            reading,
            title=f"{reading.title}: {title}" if reading.title else title,
            text=text,
            own_chars=content_chars(text),
            parts=(),
        )

    def _part_item(self, response: Response, part: Reading, url: str) -> Iterator[PageItem]:
        """A page of a download's part after the first: under the download's URL with
        ``#partN`` (the first part is the download's own page, with its aliases)."""
        if part.own_chars < self.min_text_chars:
            return
        self._inc("fptrack/pages")
        self._inc("fptrack/download_parts")
        yield self._page_item(response, part, url)

    def _count_failure(self, failure: Failure) -> None:
        """Count a request that got no page under its reason (and name it: :meth:`_name`)."""
        request = getattr(failure, "request", None)
        url = getattr(request, "url", "")
        message = str(failure.value)
        if past_deadline(request, failure):
            self._inc(NOT_CRAWLED + "deadline")
            self._name("deadline", url, self._past_deadline("before it was fetched"))
        elif failure.check(HttpError):
            status = failure.value.response.status
            self._inc(f"fptrack/http_status/{status}")
            self._name(f"http_{status}", url, failure_reason(failure))
        elif failure.check(IgnoreRequest) and message.startswith(DEAD_MESSAGE):
            self._inc(SKIPPED_DEAD)
        elif failure.check(IgnoreRequest) and message.startswith(ALIAS_MESSAGE):
            self._inc(SKIPPED_ALIAS)
        elif failure.check(IgnoreRequest) and "DOWNLOAD_MAXSIZE" not in message:
            self._inc("fptrack/ignored")
            if "robots.txt" in message:
                self._name("robots", url, failure_reason(failure))
            elif "another port" in message:  # a redirect there (crawler.origin)
                self._name("other_port", url, failure_reason(failure))
        elif failure.check(DownloadCancelledError, IgnoreRequest):  # over DOWNLOAD_MAXSIZE
            self._inc("fptrack/too_large")
            why = failure_reason(failure)
            limit = getattr(request, "meta", {}).get("download_maxsize", self._max_size)
            if why.endswith("(DOWNLOAD_MAXSIZE)") and limit:  # cut off while streaming
                why += f": more than {limit:,} bytes received"
            self._name("too_large", url, why)
        else:
            name = type(failure.value).__name__
            self._inc(f"fptrack/errors/{name}")
            self._name(f"error_{name}", url, failure_reason(failure))
            self.logger.info("request failed: %s: %s", url or "?", failure.getErrorMessage())

    def _past_deadline(self, when: str) -> str:
        """Why a page was not crawled at the crawl's deadline."""
        return f"the crawl's deadline ({self.deadline:g} s) came {when}"

    def _name(self, reason: str, url: str, why: str) -> None:
        """Name a page not crawled for ``reason`` (a reason of
        :func:`matcher.crawl_runs.not_crawled`) in the stat ``fptrack/not_crawled_urls``,
        while fewer than ``FPTRACK_NAMED_PER_REASON`` are (its count is kept apart)."""
        crawler = getattr(self, "crawler", None)
        if crawler is None or not url or not self._named.add(reason, url, why):
            return
        if len(self._named.entries) == 1:  # the list itself: those named later go in it
            crawler.stats.set_value(NOT_CRAWLED_URLS, self._named.entries)

    def _inc(self, key: str, count: int = 1) -> None:
        crawler = getattr(self, "crawler", None)
        if crawler is not None:  # a spider made without a crawler counts nothing
            crawler.stats.inc_value(key, count)


def failure_reason(failure: Failure) -> str:
    """Why a request got no page, in a few words (after "start URL X: ").

    >>> from scrapy.exceptions import IgnoreRequest
    >>> failure_reason(Failure(IgnoreRequest("Forbidden by robots.txt")))
    'robots.txt forbids fptrack to crawl it'
    """
    value = failure.value
    if failure.check(HttpError):
        status = value.response.status
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        return f"answered {status} {phrase}".rstrip()
    message = " ".join(str(value).split())
    if failure.check(IgnoreRequest, DownloadCancelledError):
        if "robots.txt" in message:
            return "robots.txt forbids fptrack to crawl it"
        if "DOWNLOAD_MAXSIZE" in message or failure.check(DownloadCancelledError):
            return "over the size limit (DOWNLOAD_MAXSIZE)" + _over_by(message)
        if "offsite" in message.lower():
            return "off the site (allowed_domains)"
        if "another port" in message:
            return "on another port of the site's host"
        return f"not requested ({message})"
    return f"no answer ({type(value).__name__}: {message})".replace(": )", ")")


_ANNOUNCED = re.compile(r"(Expected to receive|Received) (\d+) bytes .*max size \((\d+)\)")
_UNPACKED = re.compile(r"\((\d+) B compressed, (\d+) B decompressed so far\).*\((\d+) B\)")


def _over_by(message: str) -> str:
    """How far Scrapy's message about ``DOWNLOAD_MAXSIZE`` says a body went ("" when it
    does not say).

    >>> _over_by("Expected to receive 2147483648 bytes which is larger than download max "
    ...          "size (10485760) in request <GET http://h/x>.")
    ': 2,147,483,648 bytes announced, the limit 10,485,760'
    >>> _over_by("Ignored response <200 http://h/b> because its body (1043 B compressed, "
    ...          "10485761 B decompressed so far) exceeded DOWNLOAD_MAXSIZE (10485760 B) "
    ...          "during decompression.")
    ': 1,043 bytes unpack to more than 10,485,760'
    """
    if found := _ANNOUNCED.search(message):
        said, size, limit = found.groups()
        done = "announced" if said.startswith("Expected") else "received"
        return f": {int(size):,} bytes {done}, the limit {int(limit):,}"
    if found := _UNPACKED.search(message):
        packed, _, limit = found.groups()
        return f": {int(packed):,} bytes unpack to more than {int(limit):,}"
    return ""


def _digest(reading: Reading) -> int | None:
    """A digest of what makes the page itself: its title, main text and links (None when it
    has none of them: nothing to compare)."""
    if not (reading.text or reading.links):
        return None
    body = "\x00".join([reading.title, reading.text, *sorted(set(reading.links))])
    return xxhash.xxh3_64_intdigest(body.encode("utf-8", "surrogatepass"))


def asset_bounds(settings: Any) -> AssetBounds:
    """The bounds of a page's assets from the crawl's settings (:mod:`crawler.settings`)."""
    return AssetBounds(
        max_stylesheets=settings.getint(
            "FPTRACK_ASSET_MAX_STYLESHEETS", defaults.ASSET_MAX_STYLESHEETS
        ),
        max_fonts=settings.getint("FPTRACK_ASSET_MAX_FONTS", defaults.ASSET_MAX_FONTS),
        max_bytes=settings.getint("FPTRACK_ASSET_MAX_BYTES", defaults.ASSET_MAX_BYTES),
        cache_bytes=settings.getint("FPTRACK_ASSET_CACHE_BYTES", defaults.ASSET_CACHE_BYTES),
        max_images=settings.getint("FPTRACK_OCR_MAX_IMAGES", defaults.OCR_MAX_IMAGES),
        image_max_bytes=settings.getint("FPTRACK_OCR_MAX_BYTES", defaults.OCR_MAX_BYTES),
        page_seconds=settings.getfloat("FPTRACK_OCR_PAGE_SECONDS", defaults.OCR_PAGE_SECONDS),
    )


def ocr_options(settings: Any) -> dict[str, Any]:
    """The arguments of the crawl's :class:`crawler.ocr.ImageReader` from its settings."""
    return {
        "engine": settings.get("FPTRACK_OCR_ENGINE") or defaults.OCR_ENGINE,
        "max_images": settings.getint("FPTRACK_OCR_MAX_IMAGES", defaults.OCR_MAX_IMAGES),
        "max_bytes": settings.getint("FPTRACK_OCR_MAX_BYTES", defaults.OCR_MAX_BYTES),
        "max_pixels": settings.getint("FPTRACK_OCR_MAX_PIXELS", defaults.OCR_MAX_PIXELS),
        "seconds": settings.getfloat("FPTRACK_OCR_SECONDS", defaults.OCR_SECONDS),
        "page_seconds": settings.getfloat("FPTRACK_OCR_PAGE_SECONDS", defaults.OCR_PAGE_SECONDS),
        "max_memory_mb": settings.getint("FPTRACK_OCR_MAX_MEMORY_MB", defaults.OCR_MAX_MEMORY_MB),
        "workers": settings.getint("FPTRACK_OCR_WORKERS", 1),
    }


def _rules_store(settings: Any, opened: Any) -> tuple[Any, Any]:
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


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _header(response: Response, name: bytes) -> str:
    """A response header as text ("" if absent), at most 200 characters."""
    value = response.headers.get(name) or b""
    return value.decode("latin-1").strip()[:200]


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
