"""Pages rendered in headless Chromium, for sites that load their text by script.

A site with ``render`` on (:class:`matcher.sites.SiteConfig`) is crawled through
scrapy-playwright (extra ``render``): :func:`render_settings` gives its crawl the playwright
download handler for http and https, Debian's Chromium (``FPTRACK_CHROMIUM``, default
``/usr/bin/chromium``; no browser is ever downloaded) and :class:`RenderMiddleware`, which
marks the spider's page requests ``playwright: True``. Each such page is opened in
Chromium, which waits for its ``load`` event (at most ``FPTRACK_RENDER_SECONDS``, 30 s)
and then for the network to settle (:func:`settle`: no request for 500 ms, at most
``FPTRACK_RENDER_SETTLE_SECONDS``, 10 s; a page still busy then, with an ad that polls, is
taken as it is); the rendered DOM (``page.content()``) is the response body the spider
reads. Other requests of the crawl (robots.txt) go through the handler to Scrapy's own
HTTP download, and sites without ``render`` never get the handler: they never start a
browser. At most ``FPTRACK_RENDER_PAGES`` (4) pages are open at once per crawl; images,
media and fonts are not fetched by the browser (:func:`skip_heavy`).

When rendering is not possible (scrapy-playwright not installed, no Chromium at
``FPTRACK_CHROMIUM``, a reactor other than asyncio's), :func:`render_settings` says why in
``FPTRACK_RENDER_UNAVAILABLE`` instead: the spider then requests nothing and records the
reason, a problem of the crawl (:func:`matcher.crawl_runs.problems`), one line.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from matcher.crawl_runs import RENDER_UNAVAILABLE

if TYPE_CHECKING:  # the command line reads this module's defaults without loading Scrapy
    from scrapy import Request
    from scrapy.crawler import Crawler

CHROMIUM = "/usr/bin/chromium"
RENDER_SECONDS = 30.0
SETTLE_SECONDS = 10.0
RENDER_PAGES = 4
HANDLER = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
UNAVAILABLE_SETTING = "FPTRACK_RENDER_UNAVAILABLE"
UNAVAILABLE_STAT = RENDER_UNAVAILABLE
SKIPPED_RESOURCES = frozenset({"image", "media", "font"})
INSTALL_HINT = "pip install 'fptrack[render]'"
# Last before the download handler: it marks a request after every other middleware, and
# sees the response (or error) first, before the retry and redirect middlewares copy it.
MIDDLEWARE_ORDER = 950
PAGE_METHODS = "playwright_page_methods"


def unavailable(chromium: str) -> str | None:
    """Why pages cannot be rendered here (one line), or None when they can."""
    try:
        import scrapy_playwright.handler  # noqa: F401
    except ImportError as exc:
        if (exc.name or "").startswith("scrapy_playwright"):
            return f"scrapy-playwright is not installed ({INSTALL_HINT})"
        return f"scrapy-playwright cannot be loaded: {exc} ({INSTALL_HINT})"
    if not (os.path.isfile(chromium) and os.access(chromium, os.X_OK)):
        return (
            f"no Chromium at {chromium} (install Debian's chromium package, "
            "or set FPTRACK_CHROMIUM)"
        )
    from scrapy.utils.reactor import is_asyncio_reactor_installed

    if not is_asyncio_reactor_installed():
        return "the process runs a Twisted reactor other than asyncio's"
    return None


def render_settings(values: dict[str, Any]) -> dict[str, Any]:
    """The Scrapy settings that render a crawl's pages, from its other ``values``
    (``FPTRACK_CHROMIUM``, ``FPTRACK_RENDER_SECONDS``, ``FPTRACK_RENDER_PAGES``); or only
    :data:`UNAVAILABLE_SETTING` with the reason when pages cannot be rendered here."""
    chromium = str(values.get("FPTRACK_CHROMIUM") or CHROMIUM)
    problem = unavailable(chromium)
    if problem:
        return {UNAVAILABLE_SETTING: problem}
    seconds = float(values.get("FPTRACK_RENDER_SECONDS", RENDER_SECONDS))
    middlewares = dict(values.get("DOWNLOADER_MIDDLEWARES") or {})
    middlewares["crawler.render.RenderMiddleware"] = MIDDLEWARE_ORDER
    return {
        "DOWNLOAD_HANDLERS": {"http": HANDLER, "https": HANDLER},
        "DOWNLOADER_MIDDLEWARES": middlewares,
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": {"executable_path": chromium, "headless": True},
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": seconds * 1000,
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": int(values.get("FPTRACK_RENDER_PAGES", RENDER_PAGES)),
        "PLAYWRIGHT_ABORT_REQUEST": "crawler.render.skip_heavy",
    }


async def settle(page: Any, seconds: float) -> None:
    """Wait until the page's network is idle, at most ``seconds``; a page still busy then
    is taken as it is."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):
        await page.wait_for_load_state("networkidle", timeout=seconds * 1000)


def skip_heavy(request: Any) -> bool:
    """Whether the browser skips a subresource: images, media and fonts carry no text."""
    return request.resource_type in SKIPPED_RESOURCES


class RenderMiddleware:
    """Marks the spider's page requests to be rendered (robots.txt and other requests of the
    crawl are downloaded as they are). The marks hold a :class:`PageMethod`, which a shared
    frontier (:mod:`crawler.frontier`, JSON) cannot store: they are added just before the
    download and taken off the request as soon as its response or error comes back, so that
    a retried request goes back to the frontier without them (and gets them again on its
    next download)."""

    def __init__(self, settle_seconds: float) -> None:
        self.settle_seconds = settle_seconds

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        return cls(crawler.settings.getfloat("FPTRACK_RENDER_SETTLE_SECONDS", SETTLE_SECONDS))

    def process_request(self, request: Request, spider: Any = None) -> None:
        from scrapy_playwright.page import PageMethod

        from crawler.spiders.site import DEPTH

        if DEPTH in request.meta:
            request.meta["playwright"] = True
            request.meta["playwright_page_goto_kwargs"] = {"wait_until": "load"}
            request.meta[PAGE_METHODS] = [PageMethod(settle, self.settle_seconds)]

    def process_response(self, request: Request, response: Any, spider: Any = None) -> Any:
        request.meta.pop(PAGE_METHODS, None)
        return response

    def process_exception(self, request: Request, exception: Exception, spider: Any = None) -> None:
        request.meta.pop(PAGE_METHODS, None)
