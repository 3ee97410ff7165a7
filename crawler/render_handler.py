"""The download handler of crawls that may render pages (:mod:`crawler.render`): scrapy-
playwright's, started only when a page first needs the browser, and bounded in time and
concurrency per page. Imported only when scrapy-playwright is (extra ``render``).

:class:`RenderHandler` downloads requests not marked ``playwright`` as Scrapy's own HTTP
handler does. Playwright and Chromium start with the first marked request (scrapy-playwright
starts Playwright with the engine): a crawl whose pages are all read as served never starts
them. At most ``FPTRACK_RENDER_PAGES`` marked requests are under way at once (the others
wait their turn before their clock starts); each gets at most ``FPTRACK_RENDER_SECONDS`` +
``FPTRACK_RENDER_SETTLE_SECONDS`` + :data:`crawler.render.SLACK_SECONDS` (or
``FPTRACK_RENDER_SECONDS`` when shorter) from opening its page to its rendered DOM, after
which it fails with :class:`crawler.render.RenderTimedOut`; its page is closed whatever
happened (a page whose script never ends holds no renderer).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from scrapy.crawler import Crawler
from scrapy.http import Request, Response
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from crawler.render import (
    RENDER_PAGES,
    RENDER_SECONDS,
    SETTLE_SECONDS,
    SLACK_SECONDS,
    RenderTimedOut,
)

CLOSE_SECONDS = 10.0
INCLUDE_PAGE = "playwright_include_page"
PAGE = "playwright_page"


class RenderHandler(ScrapyPlaywrightDownloadHandler):
    """scrapy-playwright's handler, started late and bounded (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        load = settings.getfloat("FPTRACK_RENDER_SECONDS", RENDER_SECONDS)
        settle = settings.getfloat("FPTRACK_RENDER_SETTLE_SECONDS", SETTLE_SECONDS)
        self.page_seconds = load + settle + min(SLACK_SECONDS, load)
        pages = settings.getint("FPTRACK_RENDER_PAGES", RENDER_PAGES)
        self.turns = asyncio.Semaphore(max(1, pages))
        self.start_lock = asyncio.Lock()
        self.started = False

    async def _maybe_launch_in_thread(self) -> None:
        """Not at the engine's start: with the first page to render (:meth:`_start`)."""

    def _engine_started(self) -> Any:  # Scrapy before 2.14
        from twisted.internet.defer import succeed

        return succeed(None)

    async def _start(self) -> None:
        async with self.start_lock:
            if not self.started:
                await self._maybe_future_from_coro(self._launch())
                await self._maybe_launch_browser()  # before the first page's clock starts
                self.started = True

    async def download_request(self, request: Request) -> Response:  # type: ignore[override]
        if not request.meta.get("playwright"):
            return await super().download_request(request)
        async with self.turns:
            await self._start()
            request.meta[INCLUDE_PAGE] = True
            try:
                return await asyncio.wait_for(super().download_request(request), self.page_seconds)
            except TimeoutError:
                raise RenderTimedOut(
                    f"not rendered within {self.page_seconds:g} s (FPTRACK_RENDER_SECONDS and "
                    "FPTRACK_RENDER_SETTLE_SECONDS)"
                ) from None
            finally:
                request.meta.pop(INCLUDE_PAGE, None)
                page = request.meta.pop(PAGE, None)
                if page is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(page.close(), CLOSE_SECONDS)
