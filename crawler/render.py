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
media and fonts are not fetched by the browser, nor anything on another port of the page's
host or on an internal address of another host (:func:`refused`).

When rendering is not possible (scrapy-playwright not installed, no Chromium at
``FPTRACK_CHROMIUM``, a reactor other than asyncio's), :func:`render_settings` says why in
``FPTRACK_RENDER_UNAVAILABLE`` instead: the spider then requests nothing and records the
reason, a problem of the crawl (:func:`matcher.crawl_runs.problems`), one line.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from crawler import defaults
from crawler.meta import DEPTH
from matcher.crawl_runs import RENDER_UNAVAILABLE

if TYPE_CHECKING:  # the command line reads this module's defaults without loading Scrapy
    from scrapy import Request
    from scrapy.crawler import Crawler

CHROMIUM = defaults.CHROMIUM
RENDER_SECONDS = 30.0
SETTLE_SECONDS = 10.0
RENDER_PAGES = 4
HANDLER = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
UNAVAILABLE_SETTING = "FPTRACK_RENDER_UNAVAILABLE"
UNAVAILABLE_STAT = RENDER_UNAVAILABLE
SKIPPED_RESOURCES = frozenset({"image", "media", "font"})
DEFAULT_PORTS = {"http": 80, "https": 443}
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
        "PLAYWRIGHT_ABORT_REQUEST": "crawler.render.refused",
    }


async def settle(page: Any, seconds: float) -> None:
    """Wait until the page's network is idle, at most ``seconds``; a page still busy then
    is taken as it is."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):
        await page.wait_for_load_state("networkidle", timeout=seconds * 1000)


def refused(request: Any) -> bool:
    """Whether the browser is kept from a request a page's scripts or markup make: images,
    media and fonts (they carry no text), and the requests :func:`internal_target` refuses
    (a hostile page may not use the crawler's browser to reach the crawler's network)."""
    if request.resource_type in SKIPPED_RESOURCES:
        return True
    try:
        frame = request.frame
        main_document = request.is_navigation_request() and frame.parent_frame is None
        page_url = frame.url
    except Exception:  # a service worker's request has no frame
        main_document, page_url = False, ""
    return not main_document and internal_target(request.url, page_url)


def internal_target(url: str, page_url: str) -> bool:
    """Whether a page at ``page_url`` may not have its browser request ``url``: another
    scheme than http(s) (``data:`` and ``blob:`` aside), another port of the page's own host
    (as the crawler never crawls one, :mod:`crawler.origin`), or, on another host, a
    loopback, private, link-local or reserved address, or ``localhost``.

    >>> internal_target("http://127.0.0.1:8080/api/1.json", "http://127.0.0.1:8080/book/1.html")
    False
    >>> internal_target("http://127.0.0.1:6379/", "http://127.0.0.1:8080/book/1.html")
    True
    >>> internal_target("http://169.254.169.254/latest/", "https://pirate.example/1.html")
    True
    >>> internal_target("https://cdn.example/app.js", "https://pirate.example/1.html")
    False
    """
    target = urlsplit(url)
    if target.scheme in ("data", "blob"):
        return False
    if target.scheme not in ("http", "https"):
        return True
    try:
        host, port = (target.hostname or "").lower(), target.port or DEFAULT_PORTS[target.scheme]
        page = urlsplit(page_url)
        page_host = (page.hostname or "").lower()
        page_port = page.port or DEFAULT_PORTS.get(page.scheme, 0)
    except ValueError:  # a port out of range
        return True
    if host == page_host:
        return port != page_port
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: resolved by the browser, as the page's own host was
    return not address.is_global


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

        if DEPTH in request.meta:
            request.meta["playwright"] = True
            request.meta["playwright_page_goto_kwargs"] = {"wait_until": "load"}
            request.meta[PAGE_METHODS] = [PageMethod(settle, self.settle_seconds)]

    def process_response(self, request: Request, response: Any, spider: Any = None) -> Any:
        request.meta.pop(PAGE_METHODS, None)
        return response

    def process_exception(self, request: Request, exception: Exception, spider: Any = None) -> None:
        request.meta.pop(PAGE_METHODS, None)
