"""A page's stylesheets, fonts and content images fetched with it, within bounds, cached per
crawl, and its images read by OCR: the :class:`~crawler.reading.PageAssets` of its
:class:`~crawler.reading.ReadJob` (issue 38, "What the reader sees").

:meth:`AssetFetcher.assets` is awaited by the spider's reading stage
(:meth:`crawler.spiders.page_reader.PageReader.read`) before a page is read. A page whose
bytes hold no marker of an asset (:func:`crawler.page_assets.may_need`) costs that one
search and nothing else; another is
decoded and looked at (:func:`crawler.page_assets.discover`) in a thread off the reactor,
and what it names is fetched through the crawl's own downloader
(``crawler.engine.download_async``, Scrapy 2.14 and later: its downloader middlewares,
robots.txt, throttling and deadline apply, and the responses never reach the spider's
callbacks), one at a time, in document order:

- the page's **stylesheets** (and the stylesheets they ``@import``, before them, at most
  :data:`MAX_IMPORT_DEPTH` deep), at most ``max_stylesheets`` a page
  (``FPTRACK_ASSET_MAX_STYLESHEETS``, 8);
- the **fonts** the page's ``<style>`` blocks and its stylesheets name in ``@font-face``
  (one source per face), at most ``max_fonts`` a page (``FPTRACK_ASSET_MAX_FONTS``, 4);
  a ``data:`` URL is decoded where it stands, never fetched, and kept under that URL;
- the **images** placed in its content, at most ``max_images`` a page
  (``FPTRACK_OCR_MAX_IMAGES``, 20), each read by the crawl's
  :class:`~crawler.ocr.ImageReader` (made on the first image, with the ``FPTRACK_OCR_*``
  settings the spider read at its start, closed with the spider) within its bounds and
  ``FPTRACK_OCR_PAGE_SECONDS`` a page; its text goes into ``image_texts``.

A stylesheet or font is at most ``max_bytes`` (``FPTRACK_ASSET_MAX_BYTES``, 2 MiB), an image
at most ``FPTRACK_OCR_MAX_BYTES`` (8 MiB): Scrapy's ``download_maxsize`` cancels a bigger
download as it streams. Only what the crawl itself would request is fetched: http(s), within
``allowed_domains`` (``offsite``), never another port of a start URL's host
(:mod:`crawler.origin`: ``other_port``) nor an internal address
(:func:`crawler.render.internal_target`: ``internal``). Stylesheets and fonts are cached
for the crawl by URL (their refusals too) in an LRU of at most ``cache_bytes``
(``FPTRACK_ASSET_CACHE_BYTES``, 32 MiB): five pages sharing a stylesheet fetch it once,
and pages that ask for it while it is on its way wait for that one download. A failing
asset never loses its page: the page is read with what was fetched.

Stats (``fptrack/assets/...``): ``pages`` (pages read with assets), ``<kind>/fetched``,
``<kind>/cached`` (taken from the cache, or from a download another page was waiting for),
``<kind>/inline`` (``data:`` URLs decoded) and ``<kind>/refused/<reason>`` for each kind
``stylesheet``, ``font``, ``image`` (reasons: ``page_cap``, ``too_big``, ``http_<status>``,
``offsite``, ``other_port``, ``internal``, ``robots``, ``deadline``, ``bad_data``,
``error``, ``not_found_in_time``...), and ``ocr/<outcome>`` for each image handed to OCR
(:mod:`crawler.ocr`: ``read``, ``empty``, ``not_text``, ``too_small``, ``too_big``,
``no_engine``, ``timeout``, ``page_time`` ...).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from crawler import defaults
from crawler.encoding import UndecodableBody, decode_body
from crawler.origin import Origins
from crawler.page_assets import (
    FONT,
    IMAGE,
    STYLESHEET,
    CssNeeds,
    PageNeeds,
    css_needs,
    decode_data_url,
    discover,
    may_need,
)
from crawler.reading import PageAssets
from crawler.render import internal_target

STATS = "fptrack/assets/"
MAX_IMPORT_DEPTH = 3
"""``@import`` rules followed this deep (a stylesheet importing one importing one ...)."""
ASSET_META = "fptrack_asset"
"""Meta key of an asset's request: its kind."""


@dataclass(frozen=True)
class AssetBounds:
    """The bounds of a page's assets (see the module docstring; defaults in
    :mod:`crawler.defaults`)."""

    max_stylesheets: int = defaults.ASSET_MAX_STYLESHEETS
    max_fonts: int = defaults.ASSET_MAX_FONTS
    max_bytes: int = defaults.ASSET_MAX_BYTES
    cache_bytes: int = defaults.ASSET_CACHE_BYTES
    max_images: int = defaults.OCR_MAX_IMAGES
    image_max_bytes: int = defaults.OCR_MAX_BYTES
    page_seconds: float = defaults.OCR_PAGE_SECONDS


class Refused(Exception):
    """An asset not had: ``reason`` is its stat's last part."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class _Entry:
    data: bytes = b""
    needs: CssNeeds | None = None  # a stylesheet's imports and fonts
    refused: str = ""


class AssetCache:
    """Stylesheets and fonts by URL, least recently used first out, at most ``max_bytes``
    (an entry counts its bytes, its URL and :data:`ENTRY_BYTES`); a refusal is kept too,
    so that an asset that failed is not asked for again in the crawl.

    >>> cache = AssetCache(450)  # an entry here counts 178 bytes
    >>> cache.put("http://h/a.css", b"x" * 100)
    >>> cache.put("http://h/b.css", b"y" * 100)
    >>> cache.get("http://h/a.css") is not None  # a is now the most recent
    True
    >>> cache.put("http://h/c.css", b"z" * 100)
    >>> [u for u in ("http://h/a.css", "http://h/b.css", "http://h/c.css") if cache.get(u)]
    ['http://h/a.css', 'http://h/c.css']
    """

    ENTRY_BYTES = 64

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._entries: OrderedDict[str, tuple[_Entry, int]] = OrderedDict()

    def get(self, url: str) -> _Entry | None:
        found = self._entries.get(url)
        if found is None:
            return None
        self._entries.move_to_end(url)
        return found[0]

    def put(self, url: str, data: bytes, needs: CssNeeds | None = None, refused: str = "") -> None:
        size = len(data) + len(url) + self.ENTRY_BYTES
        if needs is not None:
            size += sum(len(u) for u in (*needs.imports, *needs.fonts))
        if size > self.max_bytes:
            return
        old = self._entries.pop(url, None)
        if old is not None:
            self.size -= old[1]
        self._entries[url] = (_Entry(data, needs, refused), size)
        self.size += size
        while self.size > self.max_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.size -= dropped


class AssetFetcher:
    """Fetches the assets of a crawl's pages (see the module docstring) through
    ``crawler``'s engine, counting in its stats. ``on_site`` says whether a URL is within
    the crawl's ``allowed_domains``; ``origins`` are its start URLs'; ``ocr`` makes the
    crawl's :class:`~crawler.ocr.ImageReader` (called once, on the first image)."""

    def __init__(
        self,
        crawler: Any,
        origins: Origins,
        on_site: Callable[[str], bool],
        bounds: AssetBounds,
        ocr: Callable[[], Any],
    ) -> None:
        self.crawler = crawler
        self.origins = origins
        self.on_site = on_site
        self.bounds = bounds
        self.cache = AssetCache(bounds.cache_bytes)
        self._make_reader = ocr
        self.reader: Any = None
        self._waiting: dict[str, list[Any]] = {}  # URL on its way -> Deferreds of waiters

    def close(self) -> None:
        """Stop the OCR workers, if any were started."""
        reader, self.reader = self.reader, None
        if reader is not None:
            reader.close()

    async def assets(
        self, body: bytes, content_type: str, url: str, content_selector: str = ""
    ) -> PageAssets:
        """The assets of the page ``body`` at ``url`` (empty when it names none)."""
        if not may_need(body):
            return PageAssets()
        needs = await _in_thread(_needs_of, body, content_type, url, content_selector)
        if not needs:
            return PageAssets()
        for kind, beyond in needs.beyond.items():
            if kind in (STYLESHEET, FONT, IMAGE):
                self._inc(f"{kind}/refused/page_cap", beyond)
        sheets, sheet_fonts = await self._stylesheets(needs.stylesheets, url)
        fonts = await self._fonts([*needs.fonts, *sheet_fonts], url)
        texts = await self._images(needs.images, url)
        assets = PageAssets(tuple(sheets), tuple(fonts), tuple(texts))
        if assets != PageAssets():
            self._inc("pages")
        return assets

    # stylesheets and fonts ----------------------------------------------------------------

    async def _stylesheets(
        self, urls: tuple[str, ...], page_url: str
    ) -> tuple[list[tuple[str, str]], list[str]]:
        """The stylesheets' text (their imports first) and the fonts they name."""
        out: list[tuple[str, str]] = []
        fonts: list[str] = []
        seen: set[str] = set()

        async def take(url: str, depth: int) -> None:
            if url in seen:
                return
            seen.add(url)
            if len(out) >= self.bounds.max_stylesheets:
                self._inc(f"{STYLESHEET}/refused/page_cap")
                return
            try:
                entry = await self._shared(url, STYLESHEET, page_url)
            except Refused:
                return
            assert entry.needs is not None
            if depth < MAX_IMPORT_DEPTH:
                for imported in entry.needs.imports:
                    await take(imported, depth + 1)
            if len(out) >= self.bounds.max_stylesheets:
                self._inc(f"{STYLESHEET}/refused/page_cap")
                return
            out.append((url, entry.data.decode("utf-8", "replace")))
            fonts.extend(entry.needs.fonts)

        for url in urls:
            await take(url, 0)
        return out, fonts

    async def _fonts(self, urls: list[str], page_url: str) -> list[tuple[str, bytes]]:
        out: list[tuple[str, bytes]] = []
        for url in dict.fromkeys(urls):
            if len(out) >= self.bounds.max_fonts:
                self._inc(f"{FONT}/refused/page_cap")
                continue
            if url[:5].lower() == "data:":
                data = decode_data_url(url, self.bounds.max_bytes)
                if data is None:
                    self._inc(f"{FONT}/refused/bad_data")
                else:
                    self._inc(f"{FONT}/inline")
                    out.append((url, data))
                continue
            try:
                entry = await self._shared(url, FONT, page_url)
            except Refused:
                continue
            out.append((url, entry.data))
        return out

    async def _shared(self, url: str, kind: str, page_url: str) -> _Entry:
        """A stylesheet or font from the cache, from a download already on its way, or
        fetched (and cached); :class:`Refused` when it is not had (counted)."""
        entry = self.cache.get(url)
        if entry is None and url in self._waiting:
            from scrapy.utils.defer import maybe_deferred_to_future
            from twisted.internet.defer import Deferred

            waiter: Deferred[_Entry] = Deferred()
            self._waiting[url].append(waiter)
            entry = await maybe_deferred_to_future(waiter)
        if entry is not None:
            if entry.refused:
                raise Refused(entry.refused)  # counted once, when it was refused
            self._inc(f"{kind}/cached")
            return entry
        self._waiting[url] = []
        try:
            data = await self._fetch(url, kind, page_url, self.bounds.max_bytes)
        except Refused as exc:
            entry = _Entry(refused=exc.reason)
        else:
            needs = None
            if kind == STYLESHEET:
                needs = await _in_thread(_css_of, data, url)
            entry = _Entry(data, needs)
        self.cache.put(url, entry.data, entry.needs, entry.refused)
        for waiter in self._waiting.pop(url, []):
            waiter.callback(entry)
        if entry.refused:
            raise Refused(entry.refused)
        return entry

    # images -------------------------------------------------------------------------------

    async def _images(self, urls: tuple[str, ...], page_url: str) -> list[tuple[str, str]]:
        """The text OCR reads in each content image, within the page's bounds."""
        out: list[tuple[str, str]] = []
        if not urls:
            return out
        ends = time.monotonic() + self.bounds.page_seconds
        for n, url in enumerate(urls):
            if n >= self.bounds.max_images:
                self._inc(f"{IMAGE}/refused/page_cap", len(urls) - n)
                break
            if time.monotonic() >= ends:
                self._inc("ocr/page_time", len(urls) - n)
                break
            if url[:5].lower() == "data:":
                data = decode_data_url(url, self.bounds.image_max_bytes)
                if data is None:
                    self._inc(f"{IMAGE}/refused/bad_data")
                    continue
                self._inc(f"{IMAGE}/inline")
            else:
                try:
                    data = await self._fetch(url, IMAGE, page_url, self.bounds.image_max_bytes)
                except Refused:
                    continue
            if self.reader is None:
                self.reader = self._make_reader()
            left = max(ends - time.monotonic(), 0.001)
            result = await _in_thread(self.reader.read, data, min(self.reader.seconds, left))
            self._inc(f"ocr/{result.outcome}")
            if result.ok:
                out.append((url, result.text))
        return out

    # fetching -----------------------------------------------------------------------------

    async def _fetch(self, url: str, kind: str, page_url: str, max_bytes: int) -> bytes:
        """An asset's body through the crawl's downloader, or :class:`Refused` (counted)."""
        reason = self._refusal(url, page_url)
        if reason:
            raise self._refused(kind, reason)
        import scrapy
        from scrapy.exceptions import IgnoreRequest

        request = scrapy.Request(
            url,
            meta={
                ASSET_META: kind,
                "download_maxsize": max_bytes,
                "download_warnsize": 0,
                "handle_httpstatus_all": True,
            },
            headers={"Referer": page_url},
        )
        try:
            response = await self.crawler.engine.download_async(request)
        except IgnoreRequest as exc:
            raise self._refused(kind, _ignored(str(exc))) from None
        except Exception as exc:  # no answer: timeouts, refused connections, cancellations
            name = type(exc).__name__
            raise self._refused(kind, "too_big" if "Cancelled" in name else "error") from None
        if response.status != 200:
            raise self._refused(kind, f"http_{response.status}")
        body = response.body
        if len(body) > max_bytes:
            raise self._refused(kind, "too_big")
        self._inc(f"{kind}/fetched")
        return body

    def _refusal(self, url: str, page_url: str) -> str:
        """Why the crawl would not request ``url`` ("" when it would)."""
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            return "scheme"
        if not self.origins.admits(url):
            return "other_port"
        if not self.on_site(url):
            return "offsite"
        if internal_target(url, page_url):
            return "internal"
        return ""

    def _refused(self, kind: str, reason: str) -> Refused:
        self._inc(f"{kind}/refused/{reason}")
        return Refused(reason)

    def _inc(self, key: str, count: int = 1) -> None:
        stats = getattr(self.crawler, "stats", None)
        if stats is not None:
            stats.inc_value(STATS + key, count)


def _needs_of(body: bytes, content_type: str, url: str, selector: str) -> PageNeeds:
    """What a page names (in a thread: decoding and parsing a big page takes a while)."""
    try:
        html, _ = decode_body(body, content_type or None)
    except UndecodableBody:
        return PageNeeds()
    return discover(html, url, selector)


def _css_of(data: bytes, url: str) -> CssNeeds:
    """A fetched stylesheet's imports and fonts (its bytes read as UTF-8, as most are)."""
    return css_needs(data.decode("utf-8", "replace"), url)


def _ignored(message: str) -> str:
    """The reason of a request a downloader middleware dropped."""
    lowered = message.lower()
    if "robots.txt" in lowered:
        return "robots"
    if "download_maxsize" in lowered or "max size" in lowered:
        return "too_big"
    if "offsite" in lowered:
        return "offsite"
    if "another port" in lowered:
        return "other_port"
    if "deadline" in lowered:
        return "deadline"
    return "ignored"


async def _in_thread(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in the reactor's thread pool, awaited."""
    from scrapy.utils.defer import maybe_deferred_to_future
    from twisted.internet.threads import deferToThread

    return await maybe_deferred_to_future(deferToThread(function, *args))
