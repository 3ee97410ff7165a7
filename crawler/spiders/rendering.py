"""Pages built by script, as a part of the spider: read as served, or requested again to be
rendered in the browser (:mod:`crawler.render`).

A page whose text looks built by script (:func:`crawler.scripted.needs_browser`) counts
``fptrack/render/flagged``; with ``FPTRACK_AUTO_RENDER`` on and a browser at hand it is
requested again to be rendered (``fptrack/render/requested``; ``fptrack/render/rendered``
when the browser rendered it), once; without a browser its links are followed and its shell
is not stored (``fptrack/not_crawled/needs_browser``). A rendered page that still looks
built by script is stored as read (``fptrack/render/still_flagged``). A page the browser
did not render counts ``fptrack/not_crawled/render_failed``.

The callbacks are the spider's own methods, so that its requests can wait in a shared
frontier.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from crawler.deadline import past_deadline
from crawler.meta import DEPTH, RENDER, START
from crawler.reading import Reading
from crawler.render import AUTO_RENDER
from matcher.sites.crawl_runs import NOT_CRAWLED

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


class RenderAgain:
    """The spider's pages built by script (see the module docstring). It needs the spider's
    ``counts``, ``parse``, ``on_error`` and ``logger``."""

    auto_render = AUTO_RENDER
    browser_missing = ""  # why no browser renders pages here ("": one does)

    def _built_by_script(
        self, response: Response, reading: Reading, depth: int
    ) -> tuple[bool, scrapy.Request | None]:
        """Whether the page of ``response`` is stored as read, and its request to be
        rendered (then it is not stored now)."""
        store = True
        if reading.needs_browser and _rendered(response):
            self.counts.inc(RENDER_STILL_THIN)  # it still shows little text: stored as read
        elif reading.needs_browser:
            self.counts.inc(RENDER_FLAGGED)
            if self.auto_render and not self.browser_missing:
                self.counts.inc(RENDER_REQUESTED)
                return False, self._render_request(response, depth)
            if self.auto_render:  # its links are followed, its shell is not stored
                store = False
                self.counts.inc(NOT_CRAWLED + NEEDS_BROWSER)
                why = f"built by script, no browser to render it: {self.browser_missing}"
                self.counts.name(NEEDS_BROWSER, response.url, why)
        if response.meta.get(RENDER):
            self.counts.inc(RENDERED)
        return store, None

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
        self.counts.inc(NOT_CRAWLED + RENDER_FAILED)
        self.counts.name(RENDER_FAILED, url, f"not rendered ({type(value).__name__}: {message})")
        self.logger.info("page %s not rendered: %s", url or "?", message)
        return iter(())


def _rendered(response: Response) -> bool:
    """Whether ``response`` is a page the browser rendered (:mod:`crawler.render`)."""
    return bool(response.meta.get(RENDER)) or "playwright" in response.flags
