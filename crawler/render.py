"""Pages rendered in headless Chromium: those whose text is built by script, and every page
of a site with ``render`` on.

**Automatic render** (``FPTRACK_AUTO_RENDER``, on by default; ``fptrack scan
--no-auto-render``): a page read as served that looks built by script (little visible text
and a script that builds it: :func:`crawler.scripted.needs_browser`) is requested once more,
marked :data:`crawler.meta.RENDER`, and that request alone is opened in the browser; its
rendered DOM is read and stored as the page (a page that still shows little text then is
stored as read, never requested again). Every crawl whose browser is available gets the
handler below, but the handler starts Playwright and Chromium only for the first page that
needs them: a crawl of plain pages never starts a browser, and pays nothing. When the
browser is not available (no scrapy-playwright, no Chromium at ``FPTRACK_CHROMIUM``),
:func:`render_settings` puts why in :data:`AUTO_UNAVAILABLE_SETTING`: such a page is then
counted under ``fptrack/not_crawled/needs_browser`` and named with the reason; its links are
followed; :data:`matcher.sites.crawl_runs.NEEDS_BROWSER_HINT` says, in one line, what to install.

**Every page** of a site with ``render`` on (:class:`matcher.sites.site_config.SiteConfig`) is
rendered instead, as its crawl's pages were before automatic render: when rendering is not
possible there, :func:`render_settings` says why in ``FPTRACK_RENDER_UNAVAILABLE``: the
spider then requests nothing and records the reason, a problem of the crawl
(:func:`matcher.sites.crawl_runs.problems`), one line.

Either way the crawl goes through scrapy-playwright (extra ``render``) with
:class:`crawler.render_handler.RenderHandler` as the download handler for http and https,
Debian's Chromium (``FPTRACK_CHROMIUM``, default ``/usr/bin/chromium``; no browser is ever
downloaded) and :class:`RenderMiddleware`, which marks the requests to render
``playwright: True``. Each such page is opened in Chromium, which waits for its ``load``
event (at most ``FPTRACK_RENDER_SECONDS``, 30 s) and then for the network to settle
(:func:`settle`: no request for 500 ms, at most ``FPTRACK_RENDER_SETTLE_SECONDS``, 10 s; a
page still busy then, with an ad that polls, is taken as it is); then what a person does not
see is taken out of its DOM (:func:`visible_only`), and the rendered DOM
(``page.content()``), what the browser shows, is the response body the spider reads and
archives (marked ``rendered``). A page takes at most ``FPTRACK_RENDER_SECONDS`` +
``FPTRACK_RENDER_SETTLE_SECONDS`` + :data:`SLACK_SECONDS` (or ``FPTRACK_RENDER_SECONDS``
when shorter) in all (a script that never ends
included): past that it is closed and counted under ``fptrack/not_crawled/render_failed``.
Other requests of the crawl (robots.txt, pages read as served) go through the handler to
Scrapy's own HTTP download. At most ``FPTRACK_RENDER_PAGES`` (4) pages are open at once per
crawl; images, media and fonts are not fetched by the browser, nor anything on another port
of the page's host or on an internal address of another host (:func:`refused`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from crawler import defaults
from crawler.meta import DEPTH, RENDER
from matcher.sites.crawl_runs import RENDER_UNAVAILABLE

if TYPE_CHECKING:  # the command line reads this module's defaults without loading Scrapy
    from scrapy import Request
    from scrapy.crawler import Crawler

CHROMIUM = defaults.CHROMIUM
RENDER_SECONDS = 30.0
SETTLE_SECONDS = 10.0
RENDER_PAGES = 4
AUTO_RENDER = defaults.AUTO_RENDER
SLACK_SECONDS = 10.0
"""A rendered page's time for :func:`visible_only` and ``page.content()``, beyond its load
and settle times (``FPTRACK_RENDER_SECONDS`` when shorter)."""
MAX_VISIBLE_ELEMENTS = 50_000
"""Elements of a rendered page looked at by :func:`visible_only` (the first ones)."""
HANDLER = "crawler.render_handler.RenderHandler"
UNAVAILABLE_SETTING = "FPTRACK_RENDER_UNAVAILABLE"
AUTO_UNAVAILABLE_SETTING = "FPTRACK_AUTO_RENDER_UNAVAILABLE"
"""Why pages built by script cannot be rendered in this crawl ("" or absent: they can)."""
EVERY_PAGE_SETTING = "FPTRACK_RENDER_EVERY_PAGE"
"""Whether every page of the crawl is rendered (a site with ``render`` on), or only the
requests marked :data:`crawler.meta.RENDER`."""
UNAVAILABLE_STAT = RENDER_UNAVAILABLE
SKIPPED_RESOURCES = frozenset({"image", "media", "font"})
DEFAULT_PORTS = {"http": 80, "https": 443}
INSTALL_HINT = "pip install 'fptrack[render]'"
# Last before the download handler: it marks a request after every other middleware, and
# sees the response (or error) first, before the retry and redirect middlewares copy it.
MIDDLEWARE_ORDER = 950
PAGE_METHODS = "playwright_page_methods"


class RenderTimedOut(Exception):
    """A page was not rendered within its time (:mod:`crawler.render_handler`)."""


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
    from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

    # None installed yet: the crawl installs asyncio's (crawler.reactor, Scrapy's default)
    if is_reactor_installed() and not is_asyncio_reactor_installed():
        return "the process runs a Twisted reactor other than asyncio's"
    return None


def render_settings(values: dict[str, Any], every_page: bool = True) -> dict[str, Any]:
    """The Scrapy settings that render a crawl's pages (all of them with ``every_page``,
    else those marked :data:`crawler.meta.RENDER`), from its other ``values``
    (``FPTRACK_CHROMIUM``, ``FPTRACK_RENDER_SECONDS``, ``FPTRACK_RENDER_PAGES``); or only
    :data:`UNAVAILABLE_SETTING` (``every_page``) or :data:`AUTO_UNAVAILABLE_SETTING` with
    the reason when pages cannot be rendered here."""
    chromium = str(values.get("FPTRACK_CHROMIUM") or CHROMIUM)
    problem = unavailable(chromium)
    if problem:
        return {UNAVAILABLE_SETTING if every_page else AUTO_UNAVAILABLE_SETTING: problem}
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
        EVERY_PAGE_SETTING: every_page,
    }


def auto_render(values: dict[str, Any]) -> bool:
    """Whether ``FPTRACK_AUTO_RENDER`` is on in ``values`` (default :data:`AUTO_RENDER`; a
    string such as ``"0"``, ``"off"`` or ``"false"`` is off)."""
    value = values.get("FPTRACK_AUTO_RENDER", AUTO_RENDER)
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "off", "no", "")
    return bool(value)


async def settle(page: Any, seconds: float) -> None:
    """Wait until the page's network is idle, at most ``seconds``; a page still busy then
    is taken as it is."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):
        await page.wait_for_load_state("networkidle", timeout=seconds * 1000)


# What a person does not see, taken out of a rendered page's body: elements the browser does
# not show (display, visibility, opacity, content-visibility: checkVisibility), boxes of at
# most 1 px clipping their content (overflow other than visible), boxes wholly left of or
# above the page, and text nodes drawn below 1 px or in their background's colour (or a
# transparent one); scripts and styles are left as they are.
VISIBLE_ONLY = """(limit) => {
  const body = document.body;
  if (!body) return 0;
  const all = body.getElementsByTagName("*");
  const n = Math.min(all.length, limit);
  const rgba = (value) => {
    const m = (value || "").match(/[\\d.]+/g);
    if (!m || m.length < 3) return null;
    return [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1];
  };
  const backgrounds = new Map();
  const background = (el) => {
    const seen = [];
    let found = [255, 255, 255, 1];
    for (let e = el; e; e = e.parentElement) {
      if (backgrounds.has(e)) { found = backgrounds.get(e); break; }
      seen.push(e);
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0.5) { found = c; break; }
    }
    for (const e of seen) backgrounds.set(e, found);
    return found;
  };
  const ownText = (el) => {
    for (const node of el.childNodes) {
      if (node.nodeType === 3 && node.nodeValue.trim()) return true;
    }
    return false;
  };
  const options = {checkOpacity: true, checkVisibilityCSS: true,
                   opacityProperty: true, visibilityProperty: true};
  const gone = [], silent = [];
  for (let i = 0; i < n; i++) {
    const el = all[i];
    const tag = el.tagName;
    if (tag === "SCRIPT" || tag === "STYLE" || tag === "BR" || tag === "TEMPLATE") continue;
    const s = getComputedStyle(el);
    if (s.display === "contents") continue;
    if (!el.checkVisibility(options)) { gone.push(el); continue; }
    const r = el.getBoundingClientRect();
    const clips = s.overflowX !== "visible" || s.overflowY !== "visible";
    if ((r.width <= 1 || r.height <= 1) && clips) { gone.push(el); continue; }
    if (r.right + window.scrollX <= 0 || r.bottom + window.scrollY <= 0) {
      gone.push(el); continue;
    }
    if (!ownText(el)) continue;
    const c = rgba(s.color);
    const b = background(el);
    const same = c && Math.abs(c[0] - b[0]) + Math.abs(c[1] - b[1]) + Math.abs(c[2] - b[2]) < 24;
    if (parseFloat(s.fontSize) < 1 || !c || c[3] < 0.1 || same) silent.push(el);
  }
  for (const el of silent) {
    for (const node of Array.from(el.childNodes)) if (node.nodeType === 3) node.remove();
  }
  for (const el of gone) el.remove();
  return gone.length + silent.length;
}"""


async def visible_only(page: Any, limit: int = MAX_VISIBLE_ELEMENTS) -> None:
    """Take what a person does not see out of the rendered page's DOM (:data:`VISIBLE_ONLY`),
    so that ``page.content()`` holds what the browser shows: the text of the page as its
    ``innerText`` reads, in the DOM's paragraphs. A page that closed or navigated
    meanwhile is left as it is."""
    from playwright.async_api import Error as PlaywrightError

    with contextlib.suppress(PlaywrightError):
        await page.evaluate(VISIBLE_ONLY, limit)


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
    """Marks the requests to be rendered: those marked :data:`crawler.meta.RENDER` (a page
    built by script, requested again), and with ``every_page`` all the spider's page
    requests (robots.txt and other requests of the crawl are downloaded as they are). The
    marks hold a :class:`PageMethod`, which a shared
    frontier (:mod:`crawler.frontier`, JSON) cannot store: they are added just before the
    download and taken off the request as soon as its response or error comes back, so that
    a retried request goes back to the frontier without them (and gets them again on its
    next download)."""

    def __init__(self, settle_seconds: float, every_page: bool = True) -> None:
        self.settle_seconds = settle_seconds
        self.every_page = every_page

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        settings = crawler.settings
        return cls(
            settings.getfloat("FPTRACK_RENDER_SETTLE_SECONDS", SETTLE_SECONDS),
            settings.getbool(EVERY_PAGE_SETTING, True),
        )

    def process_request(self, request: Request, spider: Any = None) -> None:
        from scrapy_playwright.page import PageMethod

        meta = request.meta
        if meta.get(RENDER) or (self.every_page and DEPTH in meta):
            meta["playwright"] = True
            meta["playwright_page_goto_kwargs"] = {"wait_until": "load"}
            meta[PAGE_METHODS] = [
                PageMethod(settle, self.settle_seconds),
                PageMethod(visible_only),
            ]

    def process_response(self, request: Request, response: Any, spider: Any = None) -> Any:
        request.meta.pop(PAGE_METHODS, None)
        return response

    def process_exception(self, request: Request, exception: Exception, spider: Any = None) -> None:
        request.meta.pop(PAGE_METHODS, None)
