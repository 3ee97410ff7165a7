"""The reading stage of a crawl: a fetched body to a :class:`~crawler.reading.Reading`.

:class:`PageReader` is what the spider calls to read a response. It counts its status
(``fptrack/http_status/<code>``) and tells what the body is (:func:`crawler.reading.body_kind`:
HTML, plain text, a download, or not a page: ``fptrack/non_html``).

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

A page past the crawl's deadline is not read (``fptrack/not_crawled/deadline``); one read
the quick way counts ``fptrack/extract_timeout`` or ``fptrack/extract_failed``; one
undecodable ``fptrack/undecodable``; an archive refused ``fptrack/download_refused``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import CancelledError
from twisted.internet.defer import TimeoutError as TwistedTimeout

from crawler import defaults
from crawler.asset_fetch import AssetBounds, AssetFetcher
from crawler.extract import content_chars
from crawler.meta import START
from crawler.reactor import deferred_from_future
from crawler.reader_pool import DEADLINE, ReaderPool, shared_pool
from crawler.reading import DEFAULT_REFERENCE, PageAssets, Reading, ReadJob, body_kind
from crawler.spiders.counts import CrawlCounts
from matcher.sites.crawl_runs import NOT_CRAWLED
from matcher.sites.site_config import SiteConfig

DOWNLOAD_PART_CHARS = 200_000
"""A download, or a plain-text body, longer than this is stored as several pages of at most
this many characters each (``FPTRACK_DOWNLOAD_PART_CHARS``; :mod:`crawler.downloads`)."""


class PageReader:
    """Reads the crawl's responses (see the module docstring)."""

    def __init__(
        self,
        site: SiteConfig,
        counts: CrawlCounts,
        logger: Any,
        max_links: int = 5000,
        extract_workers: int = 2,
        extract_seconds: float = 10.0,
        download_part_chars: int = DOWNLOAD_PART_CHARS,
        webfont_reference: str = DEFAULT_REFERENCE,
        webfont_cache: str = "",
        assets: AssetFetcher | None = None,
        assets_seen: list[tuple[str, PageAssets]] | None = None,
    ) -> None:
        self.site = site
        self.counts = counts
        self.logger = logger
        self.max_links = max_links
        self.extract_workers = extract_workers
        self.extract_seconds = extract_seconds
        self.download_part_chars = download_part_chars
        self.webfont_reference = webfont_reference
        self.webfont_cache = webfont_cache
        self.assets = assets  # a page's stylesheets, fonts and images (None: its HTML alone)
        self.assets_seen = assets_seen  # a test hook
        self.deadline_at: float | None = None

    @classmethod
    def from_crawler(
        cls,
        crawler: Crawler,
        site: SiteConfig,
        counts: CrawlCounts,
        logger: Any,
        origins: Any,
        on_site: Any,
    ) -> PageReader:
        """The reader of the crawl's settings; its deadline's clock starts with the crawl
        (as Scrapy's ``CLOSESPIDER_TIMEOUT``). ``origins`` and ``on_site``: the spider's
        start URLs' origins and domains, for the assets fetched
        (:class:`crawler.asset_fetch.AssetFetcher`)."""
        from crawler.settings import ASSETS_SEEN_SETTING, ByReference

        settings = crawler.settings
        assets = None
        if settings.getbool("FPTRACK_PAGE_ASSETS", True):
            ocr = ocr_options(settings)

            def reader() -> Any:
                """The crawl's OCR reader (made on its first content image, closed with it)."""
                from crawler.ocr import ImageReader

                return ImageReader(**ocr)

            assets = AssetFetcher(crawler, origins, on_site, asset_bounds(settings), reader)
        seen = settings.get(ASSETS_SEEN_SETTING)
        page_reader = cls(
            site,
            counts,
            logger,
            max_links=settings.getint("FPTRACK_MAX_LINKS_PER_PAGE", 5000),
            extract_workers=settings.getint("FPTRACK_EXTRACT_WORKERS", 2),
            extract_seconds=settings.getfloat("FPTRACK_EXTRACT_SECONDS", 10.0),
            download_part_chars=settings.getint("FPTRACK_DOWNLOAD_PART_CHARS", DOWNLOAD_PART_CHARS),
            webfont_reference=settings.get("FPTRACK_WEBFONT_REFERENCE") or DEFAULT_REFERENCE,
            webfont_cache=settings.get("FPTRACK_WEBFONT_CACHE") or "",
            assets=assets,
            assets_seen=seen.value if isinstance(seen, ByReference) else None,
        )
        crawler.signals.connect(page_reader.start_clock, signal=signals.spider_opened)
        return page_reader

    def readers(self) -> ReaderPool:
        """This process's pool of ``extract_workers`` readers (:func:`shared_pool`)."""
        return shared_pool(self.extract_workers)

    def start_clock(self) -> None:
        """The deadline's clock starts with the crawl (as Scrapy's ``CLOSESPIDER_TIMEOUT``)."""
        if self.counts.deadline > 0:
            self.deadline_at = time.monotonic() + self.counts.deadline

    def close(self) -> None:
        if self.assets is not None:
            self.assets.close()

    async def read(self, response: Response) -> Reading | None:
        """The page's reading, done by a reader process (:mod:`crawler.reader_pool`), with
        the stylesheets, fonts and content images' text it needs to be read as a browser
        shows it (:mod:`crawler.asset_fetch`; none for a page that names none)."""
        counts = self.counts
        counts.inc(f"fptrack/http_status/{response.status}")
        content_type = (response.headers.get("Content-Type") or b"").decode("latin-1")
        kind = body_kind(response.body, content_type)
        if not kind:
            counts.inc("fptrack/non_html")
            why = f"not a page (Content-Type {content_type or 'none'})"
            counts.name("not_html", response.url, why)
            if response.meta.get(START):
                counts.start_failed(response.meta[START], why)
            return None
        assets = PageAssets()
        if kind == "html" and self.assets is not None:
            assets = await self.assets.assets(
                response.body, content_type, response.url, self.site.content_selector
            )
            if self.assets_seen is not None and assets != PageAssets():
                self.assets_seen.append((response.url, assets))
        job = ReadJob(
            plain=kind == "plain",
            download=kind == "download",
            part_chars=self.download_part_chars,
            body=response.body,
            content_type=content_type,
            url=response.url,
            content_selector=self.site.content_selector,
            next_page_texts=self.site.next_page_texts if self.site.join_next_pages else (),
            max_links=self.max_links + 1,  # at max_depth too: those links are counted
            assets=assets,
            webfont_reference=self.webfont_reference,
            webfont_cache=self.webfont_cache,
        )
        if self.deadline_at is not None and time.monotonic() >= self.deadline_at:
            counts.inc(NOT_CRAWLED + "deadline")
            counts.name("deadline", response.url, counts.past_deadline("before it was read"))
            return None
        reading, problem = await self._submit(job)
        if problem == DEADLINE:
            counts.inc(NOT_CRAWLED + "deadline")
            counts.name("deadline", response.url, counts.past_deadline("before it was read"))
            return None
        if problem:
            counts.inc(f"fptrack/extract_{problem}")
            self.logger.info("page %s read the quick way (%s)", response.url, problem)
        if reading.undecodable:
            counts.inc("fptrack/undecodable")
            counts.name("undecodable", response.url, reading.undecodable)
            self.logger.info("undecodable page %s: %s", response.url, reading.undecodable)
            return None
        if reading.refused:
            counts.inc("fptrack/download_refused")
            counts.name("download_refused", response.url, reading.refused)
            self.logger.warning("download %s not read: %s", response.url, reading.refused)
            return None
        return reading

    async def _submit(self, job: ReadJob) -> tuple[Reading, str]:
        """A reader process's reading of ``job`` and its problem ("" when none), within
        ``extract_seconds`` and the crawl's deadline."""
        future = self.readers().submit(job, self.extract_seconds, self.deadline_at)
        waiting = deferred_from_future(future)
        if self.deadline_at is not None:  # a quick reading after a timeout may outlast it
            from twisted.internet import reactor

            waiting.addTimeout(max(self.deadline_at - time.monotonic(), 0.0), reactor)
        try:
            return await maybe_deferred_to_future(waiting)
        except (TwistedTimeout, CancelledError):
            return Reading(), DEADLINE


def part_of(reading: Reading, n: int) -> Reading:
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
