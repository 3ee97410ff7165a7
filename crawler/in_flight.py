"""The bytes a crawl holds in responses, bounded: new downloads wait while they are too many.

A crawl downloads up to ``CONCURRENT_REQUESTS`` (16) pages at once, and each response is
held from its download until the spider has read it (a reader process reads one page of
more than 2 MiB at a time: :mod:`crawler.reader_pool`). On a site of 6 MB pages (a link
flood) that is 16 pages, about 100 MB, waiting for one reader, while a site of usual pages
(tens of kilobytes) holds a few megabytes at most. :class:`InFlightMiddleware` bounds the
bytes, not the concurrency: a request waits before its download while the bodies held
(:attr:`InFlight.held`: each response's body from its download until the response is gone,
decompressed once decompressed), the estimates of the downloads under way and its own
would go over ``FPTRACK_MAX_BYTES_IN_FLIGHT`` (:data:`MAX_BYTES_IN_FLIGHT`, 32 MiB; 0: no
bound). A download is estimated at the largest body of its path pattern so far
(``/book/*/*.html``: :func:`crawler.dust.pattern_of`), else at the largest of the last
:data:`RECENT` bodies: a site of small pages keeps its whole concurrency, a site of big ones
gets fewer at once, and a site's chapters are not held back by its whole-book downloads.

A download always goes when nothing is held or under way (a page bigger than the bound is
fetched, alone), and when it waited :data:`STALL_SECONDS` while nothing moved (no download
under way, no body let go): bodies held for good never stall the crawl. The first downloads
of a path pattern are bounded only by what the crawl saw before them (at worst
``CONCURRENT_REQUESTS`` times ``DOWNLOAD_MAXSIZE``). Nothing waits once the crawl is ending:
at its deadline (``CLOSESPIDER_TIMEOUT``), or when its engine closes (it then waits for every
request it holds). The middleware sits before Scrapy's ``DownloadTimeoutMiddleware`` and
:class:`crawler.deadline.DeadlineMiddleware` (at 340), so a request that waited until the
deadline is dropped there, counted as ``fptrack/not_crawled/deadline``, and a download
timeout counts from when it leaves.

Stats: ``fptrack/in_flight/waited`` (requests that waited) and
``fptrack/in_flight/max_bytes`` (the most bytes of bodies held at once).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.defer import TimeoutError as TwistedTimeout

from crawler import defaults
from crawler.deadline import deadline_of
from crawler.dust import pattern_of
from matcher.sites.crawl_runs import IN_FLIGHT_MAX, IN_FLIGHT_WAITED

MAX_BYTES_IN_FLIGHT = defaults.MAX_BYTES_IN_FLIGHT
"""Bytes of response bodies a crawl holds before its next download waits (the default of
``FPTRACK_MAX_BYTES_IN_FLIGHT``: 32 MiB)."""
RECENT = 16
"""A download of a path pattern not seen yet is counted as the largest of this many last
bodies."""
MAX_PATTERNS = 10_000
"""Path patterns whose largest body is remembered."""
RECHECK_SECONDS = 1.0
"""A waiting request looks again after this long, whatever it heard."""
STALL_SECONDS = 30.0
"""A request goes anyway once it waited this long with no download under way and no body
let go: bodies held for good (a response something keeps) never stop the crawl."""


class InFlight:
    """The bodies a crawl holds and the downloads under way, against ``budget`` bytes.

    Responses are let go in whatever thread drops them last, so the count of bodies held
    is kept under a lock; everything else runs in the reactor thread.

    >>> gate = InFlight(100)
    >>> gate.fits(60), gate.estimate("http://site.test/b/1.zip")
    (True, 0)
    """

    def __init__(self, budget: int, over: Callable[[], bool] = lambda: False) -> None:
        self.budget = budget
        self.over = over  # whether the crawl is ending: nothing waits any more
        self.held = 0
        self.max_held = 0
        self._lock = threading.Lock()
        self._under_way: weakref.WeakKeyDictionary[Request, int] = weakref.WeakKeyDictionary()
        self._held: weakref.WeakSet[Response] = weakref.WeakSet()
        self._recent: deque[int] = deque(maxlen=RECENT)
        self._largest: dict[str, int] = {}  # path pattern -> its largest body
        self._waiting: deque[Deferred[None]] = deque()

    def estimate(self, url: str) -> int:
        """What a download of ``url`` is counted as until it is done: the largest body of
        its path pattern (:func:`crawler.dust.pattern_of`), else the largest of the last
        :data:`RECENT` bodies."""
        known = self._largest.get(pattern_of(url))
        return known if known is not None else max(self._recent, default=0)

    def fits(self, size: int) -> bool:
        """Whether a download counted as ``size`` stays within the budget with the bodies
        held and the downloads under way (always when nothing is held or under way, or
        there is no budget)."""
        if self.budget <= 0 or (not self._under_way and self.held <= 0):
            return True
        return self.held + sum(self._under_way.values()) + size <= self.budget

    async def admit(self, request: Request) -> bool:
        """Wait until ``request``'s download fits (or the crawl is ending, or
        :data:`STALL_SECONDS` passed with no download under way and no body let go), then
        count it as under way; whether it waited."""
        size = self.estimate(request.url)
        waited = False
        stall: tuple[float, int] | None = None  # since when nothing moved, and what was held
        while not self.fits(size) and not self.over():
            if self._under_way or (stall is not None and self.held < stall[1]):
                stall = None
            elif stall is None:
                stall = (time.monotonic(), self.held)
            elif time.monotonic() - stall[0] >= STALL_SECONDS:
                break
            waited = True
            turn: Deferred[None] = Deferred()
            self._waiting.append(turn)
            from twisted.internet import reactor

            turn.addTimeout(RECHECK_SECONDS, reactor)
            try:
                await maybe_deferred_to_future(turn)
            except (CancelledError, TwistedTimeout):
                pass
            finally:
                if turn in self._waiting:
                    self._waiting.remove(turn)
        self._under_way[request] = size
        self._wake()  # the next in line may fit too
        return waited

    def done(self, request: Request) -> None:
        """``request``'s download ended (with a response or without)."""
        if self._under_way.pop(request, None) is not None:
            self._wake()

    def hold(self, response: Response) -> None:
        """Count ``response``'s body until the response is gone (once), and learn its
        size for its path pattern."""
        size = len(response.body)
        if not size or response in self._held:
            return
        self._held.add(response)
        self._recent.append(size)
        pattern = pattern_of(response.url)
        if pattern in self._largest or len(self._largest) < MAX_PATTERNS:
            self._largest[pattern] = max(self._largest.get(pattern, 0), size)
        with self._lock:
            self.held += size
            self.max_held = max(self.max_held, self.held)
        weakref.finalize(response, self._let_go, size)

    def release_all(self) -> None:
        """Let every waiting request look again (the crawl is closing)."""
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.called:
                turn.callback(None)

    def _let_go(self, size: int) -> None:
        with self._lock:
            self.held -= size
        from twisted.internet import reactor

        if reactor.running:  # else the waiting requests look again within RECHECK_SECONDS
            reactor.callFromThread(self._wake)

    def _wake(self) -> None:
        """Let the first waiting request look again (it lets the next one look once it
        goes)."""
        if self._waiting:
            turn = self._waiting.popleft()
            if not turn.called:
                turn.callback(None)


class InFlightMiddleware:
    """Downloads wait while the crawl holds too many bytes (see the module docstring).

    A body is counted from Scrapy's ``response_downloaded`` signal, and again, decompressed,
    when the response reaches :meth:`process_response`; a download is under way from
    :meth:`process_request` to the ``request_left_downloader`` signal (or an exception
    before it got there)."""

    def __init__(self, crawler: Crawler, budget: int) -> None:
        self.crawler = crawler
        self.gate = InFlight(budget, self._ending)
        self.seconds = deadline_of(crawler)
        self.ends_at: float | None = None
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._left, signal=signals.request_left_downloader)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> InFlightMiddleware:
        budget = crawler.settings.getint("FPTRACK_MAX_BYTES_IN_FLIGHT", MAX_BYTES_IN_FLIGHT)
        return cls(crawler, budget)

    async def process_request(self, request: Request, spider: Any = None) -> None:
        if await self.gate.admit(request):
            self.crawler.stats.inc_value(IN_FLIGHT_WAITED)

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Any:
        self._hold(response)
        return response

    def process_exception(self, request: Request, exception: Exception, spider: Any = None) -> None:
        self.gate.done(request)

    def _downloaded(self, response: Response, request: Request, spider: Any = None) -> None:
        self._hold(response)

    def _hold(self, response: Response) -> None:
        self.gate.hold(response)
        self.crawler.stats.max_value(IN_FLIGHT_MAX, self.gate.max_held)

    def _left(self, request: Request, spider: Any = None) -> None:
        self.gate.done(request)

    def _opened(self, spider: Any = None) -> None:
        """The deadline's clock starts with the crawl (as :mod:`crawler.deadline`'s)."""
        if self.seconds > 0:
            from twisted.internet import reactor

            self.ends_at = time.monotonic() + self.seconds
            reactor.callLater(self.seconds, self.gate.release_all)

    def _ending(self) -> bool:
        """Whether the crawl's deadline passed or its engine is closing (it then waits for
        the requests under way, those waiting here too)."""
        if self.ends_at is not None and time.monotonic() >= self.ends_at:
            return True
        try:
            slot = getattr(self.crawler.engine, "_slot", None)
        except (AttributeError, RuntimeError):  # no engine yet, or any more
            return False
        return getattr(slot, "closing", None) is not None

    def _closed(self, spider: Any = None) -> None:
        self.gate.release_all()
