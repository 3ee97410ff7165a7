"""A crawl's deadline (``CLOSESPIDER_TIMEOUT``, the site's ``deadline``) held in wall time.

Scrapy's CloseSpider extension closes the spider when the deadline comes, but the engine
then waits for every request it holds: downloads waiting in a downloader slot (AutoThrottle
delays), downloads under way (up to ``DOWNLOAD_TIMEOUT`` each) and pages waiting for or
being read by a reader process. :class:`DeadlineMiddleware` (a downloader middleware, after
Scrapy's ``DownloadTimeoutMiddleware``) bounds what is left:

- a request reaching the downloader after the deadline is dropped (``IgnoreRequest``);
- a request's ``download_timeout`` is cut to the time left until the deadline, and marked
  (:data:`CUT`), so that its timeout counts as ``fptrack/not_crawled/deadline``, not as an
  error of the site;
- at the deadline, the requests still waiting in the downloader's slots are dropped.

The spider stops reading pages at the deadline (:meth:`crawler.reader_pool.ReaderPool.submit`'s
``not_after``). Every request so dropped counts as ``fptrack/not_crawled/deadline``. The
deadline covers the crawl from the spider's opening to its close; the time to start the
crawl, and a scan's work before and after it, are not in it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

CUT = "fptrack_deadline_cut"
"""Meta key of a request whose download timeout the deadline shortened."""
PAST = "past the crawl's deadline"
"""The message of the ``IgnoreRequest`` of a request dropped at the deadline."""


def deadline_of(crawler: Crawler) -> float:
    """The crawl's deadline in seconds from its opening (0: none)."""
    return crawler.settings.getfloat("CLOSESPIDER_TIMEOUT", 0.0)


class DeadlineMiddleware:
    """Downloads end by the crawl's deadline (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.seconds = deadline_of(crawler)
        self.default_timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT", 180.0)
        self.ends_at: float | None = None
        self._timer: Any = None
        if self.seconds > 0:
            crawler.signals.connect(self._opened, signal=signals.spider_opened)
            crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DeadlineMiddleware:
        return cls(crawler)

    def _opened(self, spider: Any = None) -> None:
        from twisted.internet import reactor  # the crawl's, installed by now

        self.ends_at = time.monotonic() + self.seconds
        self._timer = reactor.callLater(self.seconds, self._drop_queued)

    def _closed(self, spider: Any = None) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()

    def process_request(self, request: Request, spider: Any = None) -> None:
        """Drop the request past the deadline; else cut its timeout to the time left."""
        if self.ends_at is None:
            return
        left = self.ends_at - time.monotonic()
        if left <= 0:
            raise IgnoreRequest(PAST)
        timeout = request.meta.get("download_timeout") or self.default_timeout
        if left < timeout:
            request.meta["download_timeout"] = left
            request.meta[CUT] = True

    def _drop_queued(self) -> None:
        """The deadline: drop the requests waiting in the downloader's slots."""
        engine = getattr(self.crawler, "engine", None)
        slots = getattr(getattr(engine, "downloader", None), "slots", {}) or {}
        dropped = 0
        for slot in list(slots.values()):
            waiting = getattr(slot, "queue", None)
            while waiting:
                _, deferred = waiting.popleft()
                deferred.errback(Failure(IgnoreRequest(PAST)))
                dropped += 1
        if dropped:
            logger.info("deadline: %d request(s) waiting for a download dropped", dropped)


def past_deadline(request: Request | None, failure: Failure) -> bool:
    """A failure the deadline caused: a request dropped, or a download it cut short."""
    if failure.check(IgnoreRequest) and str(failure.value) == PAST:
        return True
    from twisted.internet.error import TimeoutError as TwistedTimeout

    cut = request is not None and bool(request.meta.get(CUT))
    return cut and bool(failure.check(TwistedTimeout, TimeoutError))
