"""Scrapy settings of the fptrack crawler: project defaults, then one site's, then overrides.

:func:`crawl_settings` builds the settings of one site's crawl. The module constants below
are the project defaults (they also make this module usable as
``SCRAPY_SETTINGS_MODULE=crawler.settings``); every one can be replaced through the
``overrides`` argument.

Defaults:

- ``ROBOTSTXT_OBEY``: ``True``, per site from ``SiteConfig.obey_robots``.
- ``AUTOTHROTTLE_ENABLED``: ``True``; ``AUTOTHROTTLE_START_DELAY`` 1.0 s,
  ``AUTOTHROTTLE_MAX_DELAY`` 60.0 s, ``AUTOTHROTTLE_TARGET_CONCURRENCY`` 4.0;
  ``DOWNLOAD_DELAY`` 0 (AutoThrottle's lower bound).
- ``CONCURRENT_REQUESTS``: 16; ``CONCURRENT_REQUESTS_PER_DOMAIN``: 8. The per-domain bound
  holds only with a download delay (AutoThrottle's, by default): with AutoThrottle off and
  ``DOWNLOAD_DELAY`` 0, Scrapy (2.14 on, asyncio reactor) starts requests before it counts
  them, and one host gets up to ``CONCURRENT_REQUESTS`` at once.
- ``CONCURRENT_ITEMS``: 32 (Scrapy's 100), :data:`crawler.ingest_lanes.BATCH`: the outputs
  of one response (its items and requests) taken through the spider middlewares and the
  pipeline at once. Scrapy starts that many asyncio tasks for every response, whatever it
  yields (0.9 ms of the reactor thread's CPU a response at 100, 0.4 ms at 32); 32 still
  lets a download's parts fill one ingest lane's batch.
- ``RETRY_TIMES``: 2 (Scrapy's retried errors and HTTP codes).
- ``DOWNLOAD_TIMEOUT``: 30 s.
- ``DOWNLOAD_MAXSIZE``: 10 MiB (10485760 bytes). A bigger response is cancelled by Scrapy;
  the spider counts it as ``fptrack/too_large`` and the crawl goes on.
- ``USER_AGENT``: :data:`USER_AGENT`, which says who crawls and why.
- ``DEPTH_LIMIT``: 0 (Scrapy's own limit is off): the spider applies ``SiteConfig.max_depth``
  itself, passed as ``FPTRACK_MAX_DEPTH``, because a page's "next page" and "previous page"
  links (下一页 / 上一页) are not a level deeper than the page itself.
- ``CLOSESPIDER_TIMEOUT``: ``SiteConfig.deadline`` when above 0 (``max_pages`` is
  ``FPTRACK_MAX_PAGES``, below).
- ``LOG_LEVEL``: ``INFO``; ``TELNETCONSOLE_ENABLED`` and ``REMOTE_CONTROL_ENABLED``:
  ``False`` (no console or control port is opened by a crawl).
- ``ITEM_PIPELINES``: :class:`crawler.pipelines.IngestPipeline` only.
- ``DOWNLOADER_MIDDLEWARES``: :class:`crawler.origin.SameOriginMiddleware` at 50 (before
  robots.txt): no request to another port of a start URL's host;
  :class:`crawler.dust.QueuedRequestMiddleware` at 60: a queued request whose path pattern
  died since (404/410 ``FPTRACK_DEAD_THRESHOLD`` times in a row), or that a parameter rule
  learnt since makes an alias of a page already requested, is dropped, counted as
  ``fptrack/skipped/dead_pattern`` or ``fptrack/skipped/alias``;
  :class:`crawler.robots.RobotsMiddleware` at 100 in place of Scrapy's robots.txt
  middleware: a robots.txt that cannot be read (as Scrapy, the host is then crawled as if it
  allowed everything) is one line and ``fptrack/robots_unread``, not a traceback;
  :class:`crawler.in_flight.InFlightMiddleware` at 340: a download waits while the
  crawl holds ``FPTRACK_MAX_BYTES_IN_FLIGHT`` in responses (below);
  :class:`crawler.deadline.DeadlineMiddleware` at 360 (after Scrapy's download timeout):
  downloads end by ``CLOSESPIDER_TIMEOUT`` (the site's ``deadline``), and requests still
  waiting then are dropped, counted as ``fptrack/not_crawled/deadline``;
  :class:`crawler.meta_refresh.HeadMetaRefreshMiddleware` at 580 in place of Scrapy's
  ``MetaRefreshMiddleware``: the same redirects, without decoding a whole big page.
- ``FPTRACK_INGEST``: unset: the pipeline builds the production ingest (MongoDB store and
  Celery ``fptrack.process_page`` tasks). In-process runs put an object with
  ``.page(**fields)`` here; :func:`crawl_settings` wraps it in :class:`ByReference` so that
  Scrapy's deep copy of its settings keeps the very same object (a mongomock store must not
  be copied).
- ``FPTRACK_INGEST_LANES``: 4 threads storing pages for the pipeline, in order per page,
  the pages waiting in a lane stored in one batch (at most
  :data:`crawler.ingest_lanes.BATCH`, 32), when the ingest is ``thread_safe``
  (:mod:`crawler.ingest_lanes`); otherwise, above 0, in the reactor thread in batches of
  what waits (:class:`crawler.ingest_lanes.ReactorBatches`); 0: in the reactor thread,
  one page at a time.
- ``FPTRACK_SETTINGS``: unset; a production crawl's entry point (``python -m crawler.run``)
  puts the :class:`matcher.settings.Settings` it read here (by reference), and the pipeline
  builds its store and Celery app from them.
- ``SCHEDULER_MEMORY_QUEUE``: :class:`crawler.packed_queue.PackedLifoQueue`, Scrapy's
  last-in first-out memory queue with each waiting request packed into its pickled
  ``to_dict`` (about 500 bytes a waiting request instead of 2.2 kB).
- ``SCHEDULER``: Scrapy's own, in memory. A crawl on a shared Redis frontier
  (:mod:`crawler.frontier`) sets ``crawler.scheduler.FrontierScheduler`` and puts its lease in
  ``FPTRACK_FRONTIER`` (by reference, like ``FPTRACK_INGEST``).
- ``FPTRACK_MIN_TEXT_CHARS``: 20 letters or CJK characters of main text (outside links)
  make a page worth storing.
- ``FPTRACK_DOWNLOAD_PART_CHARS``: 200,000 characters: a whole-book download (ZIP, EPUB,
  7z) or a plain-text body longer than this is stored as one page per part of at most this
  many characters, cut at chapter headings (:mod:`crawler.downloads`).
- ``FPTRACK_MAX_LINKS_PER_PAGE``: 5,000: links taken from one page (the first in it; the
  links after them are counted, each, in ``fptrack/links_capped``).
- ``FPTRACK_MAX_REQUESTS``: 1,000,000 distinct URLs requested by one crawler process (new
  links beyond it count ``fptrack/requests_capped``): the bound of its frontier, and of its
  memory, against sites that generate links without end.
- ``FPTRACK_MAX_PENDING``: 100,000 requests queued and not yet fetched by one crawler
  process (new links beyond it count ``fptrack/pending_capped``): its queue (packed: about
  50 MB when full) stays bounded however many new links each page brings.
- ``FPTRACK_MAX_BYTES_IN_FLIGHT``: 32 MiB (33554432 bytes) of response bodies held by one
  crawl (downloaded and not yet read), with an estimate for each download under way (the
  largest body of its path pattern so far): a download waits while one more would go over
  it (:mod:`crawler.in_flight`; one always goes when nothing is held or under way; 0: no
  bound). It bounds bytes, not concurrency: a site of usual pages keeps
  ``CONCURRENT_REQUESTS``, a site of 6 MB pages gets about five at once instead of 16.
- ``FPTRACK_NAMED_PER_REASON``: 20 pages not crawled named per reason (robots, too_large,
  download_refused, http_404 ...: :func:`matcher.sites.crawl_runs.not_crawled_urls`), each with
  its URL and why, in the stat ``fptrack/not_crawled_urls``; the others are counted.
- ``FPTRACK_EXTRACT_WORKERS``: 2 reader processes per crawling process decode and extract
  pages off the reactor thread (:mod:`crawler.reader_pool`).
- ``FPTRACK_EXTRACT_SECONDS``: 10 s to read one page; a page over it is read the quick way
  (the densest block, no trafilatura) and counted as ``fptrack/extract_timeout``.
- ``FPTRACK_AUTO_RENDER``: on (``True``): a page whose text is built by script
  (:func:`crawler.scripted.needs_browser`) is requested again and rendered in the browser
  when it is available, else counted as ``not_crawled/needs_browser``; off, such a page is
  read as served (:mod:`crawler.render`).
- For those pages, and every page of a site with ``render`` on (:mod:`crawler.render`):
  ``FPTRACK_CHROMIUM`` (``/usr/bin/chromium``), the browser; ``FPTRACK_RENDER_SECONDS``
  (30 s) for a page's ``load`` event, then ``FPTRACK_RENDER_SETTLE_SECONDS`` (10 s) at most
  for its network to settle, and 10 s more at most to take its visible DOM; a page over
  their sum is closed and counted as ``not_crawled/render_failed``;
  ``FPTRACK_RENDER_PAGES`` (4) pages open at once. The render settings
  (``DOWNLOAD_HANDLERS`` and ``PLAYWRIGHT_*``) are set after ``overrides``, from them.

- What a page is fetched with to be read as a browser shows it (:mod:`crawler.asset_fetch`,
  issue 38): ``FPTRACK_PAGE_ASSETS``: ``True`` (``False``: pages are read from their HTML
  alone); ``FPTRACK_ASSET_MAX_STYLESHEETS``: 8 and ``FPTRACK_ASSET_MAX_FONTS``: 4 a page,
  ``FPTRACK_ASSET_MAX_BYTES``: 2 MiB (2097152 bytes) each; ``FPTRACK_ASSET_CACHE_BYTES``:
  32 MiB (33554432 bytes) of stylesheets and fonts kept for the crawl (each fetched once).
  The images placed in a page's content are read by OCR (:mod:`crawler.ocr`):
  ``FPTRACK_OCR_ENGINE``: ``rapidocr`` (or ``tesseract``); ``FPTRACK_OCR_MAX_IMAGES``: 20
  images a page; ``FPTRACK_OCR_MAX_BYTES``: 8 MiB (8388608 bytes) and
  ``FPTRACK_OCR_MAX_PIXELS``: 30,000,000 pixels an image; ``FPTRACK_OCR_SECONDS``: 60 s an
  image and ``FPTRACK_OCR_PAGE_SECONDS``: 180 s a page; ``FPTRACK_OCR_MAX_MEMORY_MB``: 1536
  MiB for an OCR worker; ``FPTRACK_OCR_WORKERS``: 1 worker process per crawl (started on
  the crawl's first content image, stopped with the crawl). Web fonts are identified
  against ``FPTRACK_WEBFONT_REFERENCE`` (WenQuanYi Zen Hei), whose index is kept in
  ``FPTRACK_WEBFONT_CACHE`` (``~/.cache/fptrack/webfont``,
  :attr:`matcher.settings.Settings.webfont_cache`; "": rebuilt by each reader process).
- ``FPTRACK_RECRAWL_DEPTH``: 2: an incremental crawl (``SiteConfig.recrawl``,
  :mod:`crawler.incremental`) follows links at most this far from a start page (and never
  beyond the site's ``max_depth``); sitemap and feed entries are one link away.
- ``FPTRACK_FEED_MAX_BYTES``: 5 MiB (5242880 bytes): a sitemap or feed bigger than this (after
  gunzip) is skipped with one line (``fptrack/incremental/feed_problems``).
- ``FPTRACK_FEED_MAX_ENTRIES``: 50,000 entries read from one sitemap or feed (the sitemap
  protocol's own limit).
- ``FPTRACK_DUST_THRESHOLD``: 3: a query parameter is dropped from a path pattern's links
  once the same body was fetched under another value of it that many times
  (:class:`crawler.dust.DustRules`); the rule is kept with the site.
- ``FPTRACK_DEAD_THRESHOLD``: 3: a path pattern answering 404/410 that many times in a row
  (in this crawl and earlier ones) is skipped (:class:`crawler.dust.DeadPatterns`).
- ``FPTRACK_MAX_PAGES``: ``SiteConfig.max_pages`` (0: no limit): the crawl stops once that
  many distinct pages are stored (:class:`crawler.pipelines.IngestPipeline`; requests for
  aliases, dead links and link lists do not count; pages already fetched then are still
  stored).
- ``FPTRACK_REQUESTS_PER_PAGE``: 4: with ``max_pages``, the crawl also stops after
  ``max_pages`` x 4 responses (``CLOSESPIDER_PAGECOUNT``): a site of link lists without
  end (no page with main text) is held all the same.

``REQUEST_FINGERPRINTER_IMPLEMENTATION`` is not set: Scrapy 2.12 and later have only the
"2.7" implementation and no longer read the setting.
"""

from __future__ import annotations

import os
from typing import Any

from scrapy.settings import Settings

from crawler import defaults, render
from matcher.settings import Settings as FptrackSettings
from matcher.sites.crawl_runs import NAMED_PER_REASON
from matcher.sites.site_config import SiteConfig

BOT_NAME = "fptrack"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"

USER_AGENT = "fptrack/0.1 (+copy monitoring; https://github.com/fptrack)"
ROBOTSTXT_OBEY = True

AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_MAX_DELAY = 60.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 4.0
DOWNLOAD_DELAY = 0

CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
CONCURRENT_ITEMS = 32
RETRY_TIMES = 2
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024

DEPTH_LIMIT = 0
LOG_LEVEL = "INFO"
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

ITEM_PIPELINES = {"crawler.pipelines.IngestPipeline": 300}
SCHEDULER_MEMORY_QUEUE = "crawler.packed_queue.PackedLifoQueue"
DOWNLOADER_MIDDLEWARES = {
    "crawler.origin.SameOriginMiddleware": 50,
    "crawler.dust.QueuedRequestMiddleware": 60,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "crawler.robots.RobotsMiddleware": 100,
    "crawler.in_flight.InFlightMiddleware": 340,
    "crawler.deadline.DeadlineMiddleware": 360,
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "crawler.meta_refresh.HeadMetaRefreshMiddleware": 580,
}

FPTRACK_MIN_TEXT_CHARS = 20
FPTRACK_DOWNLOAD_PART_CHARS = 200_000
FPTRACK_MAX_LINKS_PER_PAGE = defaults.MAX_LINKS_PER_PAGE
FPTRACK_MAX_REQUESTS = 1_000_000
FPTRACK_MAX_PENDING = defaults.MAX_PENDING
FPTRACK_MAX_BYTES_IN_FLIGHT = defaults.MAX_BYTES_IN_FLIGHT
FPTRACK_NAMED_PER_REASON = NAMED_PER_REASON
FPTRACK_EXTRACT_WORKERS = 2
FPTRACK_EXTRACT_SECONDS = 10.0
FPTRACK_AUTO_RENDER = render.AUTO_RENDER
FPTRACK_CHROMIUM = render.CHROMIUM
FPTRACK_RENDER_SECONDS = render.RENDER_SECONDS
FPTRACK_RENDER_SETTLE_SECONDS = render.SETTLE_SECONDS
FPTRACK_RENDER_PAGES = render.RENDER_PAGES
FPTRACK_PAGE_ASSETS = True
FPTRACK_WEBFONT_REFERENCE = FptrackSettings.webfont_reference
FPTRACK_WEBFONT_CACHE = os.path.expanduser(FptrackSettings.webfont_cache)
FPTRACK_ASSET_MAX_STYLESHEETS = defaults.ASSET_MAX_STYLESHEETS
FPTRACK_ASSET_MAX_FONTS = defaults.ASSET_MAX_FONTS
FPTRACK_ASSET_MAX_BYTES = defaults.ASSET_MAX_BYTES
FPTRACK_ASSET_CACHE_BYTES = defaults.ASSET_CACHE_BYTES
FPTRACK_OCR_ENGINE = defaults.OCR_ENGINE
FPTRACK_OCR_MAX_IMAGES = defaults.OCR_MAX_IMAGES
FPTRACK_OCR_MAX_BYTES = defaults.OCR_MAX_BYTES
FPTRACK_OCR_MAX_PIXELS = defaults.OCR_MAX_PIXELS
FPTRACK_OCR_SECONDS = defaults.OCR_SECONDS
FPTRACK_OCR_PAGE_SECONDS = defaults.OCR_PAGE_SECONDS
FPTRACK_OCR_MAX_MEMORY_MB = defaults.OCR_MAX_MEMORY_MB
FPTRACK_OCR_WORKERS = 1
FPTRACK_RECRAWL_DEPTH = 2
FPTRACK_FEED_MAX_BYTES = 5 * 1024 * 1024
FPTRACK_FEED_MAX_ENTRIES = 50_000
FPTRACK_DUST_THRESHOLD = 3
FPTRACK_DEAD_THRESHOLD = 3
FPTRACK_REQUESTS_PER_PAGE = 4
FPTRACK_INGEST_LANES = 4

INGEST_SETTING = "FPTRACK_INGEST"
SETTINGS_SETTING = "FPTRACK_SETTINGS"
FRONTIER_SETTING = "FPTRACK_FRONTIER"
ASSETS_SEEN_SETTING = "FPTRACK_ASSETS_SEEN"
"""A test hook: a :class:`ByReference` of a list, to which the spider appends
``(page URL, PageAssets)`` for every page it reads with assets."""


class ByReference:
    """Holds a value that a deep copy of the settings must share, not copy."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __copy__(self) -> ByReference:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> ByReference:
        return self

    def __repr__(self) -> str:
        return f"ByReference({self.value!r})"


def project_defaults() -> dict[str, Any]:
    """The module's upper-case constants, as a plain dict."""
    return {
        name: value
        for name, value in globals().items()
        if name.isupper()
        and name
        not in ("INGEST_SETTING", "SETTINGS_SETTING", "FRONTIER_SETTING", "ASSETS_SEEN_SETTING")
        and not name.startswith("_")
    }


def crawl_settings(site: SiteConfig, overrides: dict[str, Any] | None = None) -> Settings:
    """The settings of one crawl of ``site``: project defaults, the site's, then ``overrides``.

    >>> site = SiteConfig.from_dict({"name": "demo", "start_urls": ["http://127.0.0.1/"],
    ...                              "obey_robots": False, "max_pages": 40})
    >>> s = crawl_settings(site, {"AUTOTHROTTLE_ENABLED": False})
    >>> s.getbool("ROBOTSTXT_OBEY"), s.getint("FPTRACK_MAX_PAGES"), s["FPTRACK_MAX_DEPTH"]
    (False, 40, 5)
    >>> s.getbool("AUTOTHROTTLE_ENABLED")
    False
    """
    values = project_defaults()
    values["ROBOTSTXT_OBEY"] = site.obey_robots
    values["FPTRACK_MAX_DEPTH"] = site.max_depth
    values["FPTRACK_MAX_PAGES"] = max(site.max_pages, 0)
    if site.deadline > 0:
        values["CLOSESPIDER_TIMEOUT"] = site.deadline
    values.update(overrides or {})
    per_page = int(values.get("FPTRACK_REQUESTS_PER_PAGE") or 0)
    if site.max_pages > 0 and per_page > 0 and "CLOSESPIDER_PAGECOUNT" not in (overrides or {}):
        values["CLOSESPIDER_PAGECOUNT"] = site.max_pages * per_page
    if site.render:
        values.update(render.render_settings(values))
    elif render.auto_render(values):
        values.update(render.render_settings(values, every_page=False))
    for name in (INGEST_SETTING, SETTINGS_SETTING):
        value = values.get(name)
        if value is not None and not isinstance(value, ByReference):
            values[name] = ByReference(value)
    return Settings(values, priority="project")
