"""What a crawl counts and names: its stats, the pages it did not crawl, its start URLs.

:class:`CrawlCounts` is where the spider and its parts count in the crawl's stats, name the
pages not crawled (:meth:`CrawlCounts.name`), count a request that got no page under its
reason (:meth:`CrawlCounts.count_failure`), and record the start URLs that gave no page. A
spider made without a crawler counts nothing.

Stats (never fatal; every fetched page that yields no item is counted under its reason):
``fptrack/pages`` (items), ``fptrack/paged`` (items with a next or previous page link),
``fptrack/thin`` (HTML pages with too little main text: link lists), ``fptrack/non_html``,
``fptrack/undecodable``, ``fptrack/download_refused`` (an archive past a bound of
:mod:`crawler.downloads`, the reason logged), ``fptrack/download_parts`` (pages of a
download's parts after its first), ``fptrack/too_large`` (cancelled above ``DOWNLOAD_MAXSIZE``, or
decompressed beyond it),
``fptrack/ignored`` (requests a middleware dropped, such as those robots.txt forbids;
offsite links are Scrapy's ``offsite/filtered``), ``fptrack/other_port`` (links to, or
redirects to, another port of a start URL's host: never followed),
``fptrack/errors/<ExceptionName>`` (timeouts, DNS, refused connections...),
``fptrack/extract_timeout`` and ``fptrack/extract_failed`` (pages read the quick way because
their reader overran its time or died; they still yield their item),
``fptrack/http_status/<code>`` (every final status the spider sees, errors included),
``fptrack/not_crawled/depth`` (links not followed because they lie beyond ``max_depth``,
each counted once) and ``fptrack/not_crawled/<deadline|budget|stopped>`` (requests still
queued when the crawl closed, by why it closed; :func:`matcher.sites.crawl_runs.not_crawled` sums
every reason). The first ``FPTRACK_NAMED_PER_REASON`` (20) pages of each of those reasons are
named, with their URL and why, in ``fptrack/not_crawled_urls`` (:meth:`CrawlCounts.name`; the
requests still queued at the close are counted only).

A start URL that gives no page fails the crawl (the one exception to "never fatal"): an HTTP
error, robots.txt forbidding it, a redirect off ``allowed_domains`` (which Scrapy drops
without a word: seen on ``request_scheduled``) or to another port, no answer, a body that is
neither HTML nor plain text. Each counts in ``fptrack/start_failed`` and, for the first
:data:`MAX_START_ERRORS`, in the one line ``fptrack/start_error``
(``start URL http://host/nosuch/: answered 404 Not Found``), which
:func:`crawler.run.crawl_problem` makes the crawl's error.
"""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

import scrapy
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from crawler.deadline import deadline_of, past_deadline
from crawler.meta import START
from matcher.sites.crawl_runs import (
    NAMED_PER_REASON,
    NOT_CRAWLED,
    NOT_CRAWLED_URLS,
    START_ERROR,
    START_FAILED,
    NamedPages,
    stop_reason,
)

MAX_START_ERRORS = 3
SKIPPED_ALIAS = "fptrack/skipped/alias"
"""Stat: links not requested because they name a page already requested under another URL
(a default document, a parameter a learnt rule drops, a ``rel=canonical``)."""
SKIPPED_DEAD = "fptrack/skipped/dead_pattern"
"""Stat: requests not made because their path pattern is dead
(:class:`crawler.dust.DeadPatterns`)."""
DEAD_MESSAGE = "dead link pattern"
ALIAS_MESSAGE = "alias of a page already requested"


class CrawlCounts:
    """The crawl's stats, its pages not crawled named, its start URLs' failures."""

    def __init__(
        self,
        stats: Any = None,
        logger: Any = None,
        named_per_reason: int = NAMED_PER_REASON,
        deadline: float = 0.0,
        max_size: int = 0,
    ) -> None:
        self._stats = stats  # None: counts nothing (a spider made without a crawler)
        self._crawler: Crawler | None = None  # its stats, once the crawl starts
        self.logger = logger
        self.deadline = deadline
        self.max_size = max_size  # Scrapy's DOWNLOAD_MAXSIZE
        self._named = NamedPages(named_per_reason)  # the first pages not crawled, named
        self._start_answered: set[str] = set()
        self._start_redirects: dict[str, str] = {}
        self._start_errors: list[str] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler, logger: Any) -> CrawlCounts:
        """The counts of the crawl's stats (Scrapy sets them when the crawl starts)."""
        settings = crawler.settings
        counts = cls(
            None,
            logger,
            named_per_reason=settings.getint("FPTRACK_NAMED_PER_REASON", NAMED_PER_REASON),
            deadline=deadline_of(crawler),
            max_size=settings.getint("DOWNLOAD_MAXSIZE", 0),
        )
        counts._crawler = crawler
        return counts

    @property
    def stats(self) -> Any:
        return self._stats if self._crawler is None else self._crawler.stats

    def inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)

    def set(self, key: str, value: Any) -> None:
        if self.stats is not None:
            self.stats.set_value(key, value)

    def get(self, key: str) -> Any:
        return self.stats.get_value(key, 0) if self.stats is not None else 0

    def name(self, reason: str, url: str, why: str) -> None:
        """Name a page not crawled for ``reason`` (a reason of
        :func:`matcher.sites.crawl_runs.not_crawled`) in the stat ``fptrack/not_crawled_urls``,
        while fewer than ``FPTRACK_NAMED_PER_REASON`` are (its count is kept apart)."""
        if self.stats is None or not url or not self._named.add(reason, url, why):
            return
        if len(self._named.entries) == 1:  # the list itself: those named later go in it
            self.stats.set_value(NOT_CRAWLED_URLS, self._named.entries)

    def past_deadline(self, when: str) -> str:
        """Why a page was not crawled at the crawl's deadline."""
        return f"the crawl's deadline ({self.deadline:g} s) came {when}"

    def count_failure(self, failure: Failure) -> None:
        """Count a request that got no page under its reason (and name it: :meth:`name`)."""
        request = getattr(failure, "request", None)
        url = getattr(request, "url", "")
        message = str(failure.value)
        if past_deadline(request, failure):
            self.inc(NOT_CRAWLED + "deadline")
            self.name("deadline", url, self.past_deadline("before it was fetched"))
        elif failure.check(HttpError):
            status = failure.value.response.status
            self.inc(f"fptrack/http_status/{status}")
            self.name(f"http_{status}", url, failure_reason(failure))
        elif failure.check(IgnoreRequest) and message.startswith(DEAD_MESSAGE):
            self.inc(SKIPPED_DEAD)
        elif failure.check(IgnoreRequest) and message.startswith(ALIAS_MESSAGE):
            self.inc(SKIPPED_ALIAS)
        elif failure.check(IgnoreRequest) and "DOWNLOAD_MAXSIZE" not in message:
            self.inc("fptrack/ignored")
            if "robots.txt" in message:
                self.name("robots", url, failure_reason(failure))
            elif "another port" in message:  # a redirect there (crawler.origin)
                self.name("other_port", url, failure_reason(failure))
        elif failure.check(DownloadCancelledError, IgnoreRequest):  # over DOWNLOAD_MAXSIZE
            self.inc("fptrack/too_large")
            why = failure_reason(failure)
            limit = getattr(request, "meta", {}).get("download_maxsize", self.max_size)
            if why.endswith("(DOWNLOAD_MAXSIZE)") and limit:  # cut off while streaming
                why += f": more than {limit:,} bytes received"
            self.name("too_large", url, why)
        else:
            name = type(failure.value).__name__
            self.inc(f"fptrack/errors/{name}")
            self.name(f"error_{name}", url, failure_reason(failure))
            self.logger.info("request failed: %s: %s", url or "?", failure.getErrorMessage())

    # start URLs -------------------------------------------------------------------------

    def answered(self, start: str | None) -> None:
        """The start URL ``start`` got an answer (a page, or an error said already)."""
        if start:
            self._start_answered.add(start)

    def failed_start(self, failure: Failure) -> None:
        """A failed request that was a start URL's (or its redirect's) fails the crawl."""
        request = getattr(failure, "request", None)
        start = request.meta.get(START) if request is not None else None
        if start:
            self._start_answered.add(start)
            where = "" if request.url == start else f"redirected to {request.url}: "
            self.start_failed(start, where + failure_reason(failure))

    def scheduled(self, request: scrapy.Request) -> None:
        """A start URL's redirect as it is scheduled: Scrapy drops an off-site one there
        without a word, so :meth:`closed` names it."""
        start = request.meta.get(START)
        if start and request.meta.get("redirect_urls"):
            self._start_redirects[start] = request.url

    def start_failed(self, url: str, reason: str) -> None:
        """A start URL that gave no page: the crawl fails with the reason (one line)."""
        line = f"start URL {url}: {reason}"
        self.inc(START_FAILED)
        self.logger.warning("%s", line)
        if len(self._start_errors) < MAX_START_ERRORS:
            self._start_errors.append(line)
            self.set(START_ERROR, "; ".join(self._start_errors))

    def closed(self, reason: str, on_site: Any) -> None:
        """Record the start URLs redirected off the site (``on_site``: whether a URL is
        within ``allowed_domains``), and the requests left unfetched, by why the crawl
        stopped."""
        for url, target in self._start_redirects.items():
            if url not in self._start_answered and not on_site(target):
                self.start_failed(url, f"redirected off the site, to {target}")
        if self.stats is not None:
            left = self.get("scheduler/enqueued/memory") - self.get("scheduler/dequeued/memory")
            why = stop_reason(reason)
            if left > 0 and why:
                self.inc(NOT_CRAWLED + why, left)


def failure_reason(failure: Failure) -> str:
    """Why a request got no page, in a few words (after "start URL X: ").

    >>> from scrapy.exceptions import IgnoreRequest
    >>> failure_reason(Failure(IgnoreRequest("Forbidden by robots.txt")))
    'robots.txt forbids fptrack to crawl it'
    """
    value = failure.value
    if failure.check(HttpError):
        status = value.response.status
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        return f"answered {status} {phrase}".rstrip()
    message = " ".join(str(value).split())
    if failure.check(IgnoreRequest, DownloadCancelledError):
        if "robots.txt" in message:
            return "robots.txt forbids fptrack to crawl it"
        if "DOWNLOAD_MAXSIZE" in message or failure.check(DownloadCancelledError):
            return "over the size limit (DOWNLOAD_MAXSIZE)" + _over_by(message)
        if "offsite" in message.lower():
            return "off the site (allowed_domains)"
        if "another port" in message:
            return "on another port of the site's host"
        return f"not requested ({message})"
    return f"no answer ({type(value).__name__}: {message})".replace(": )", ")")


_ANNOUNCED = re.compile(r"(Expected to receive|Received) (\d+) bytes .*max size \((\d+)\)")
_UNPACKED = re.compile(r"\((\d+) B compressed, (\d+) B decompressed so far\).*\((\d+) B\)")


def _over_by(message: str) -> str:
    """How far Scrapy's message about ``DOWNLOAD_MAXSIZE`` says a body went ("" when it
    does not say).

    >>> _over_by("Expected to receive 2147483648 bytes which is larger than download max "
    ...          "size (10485760) in request <GET http://h/x>.")
    ': 2,147,483,648 bytes announced, the limit 10,485,760'
    >>> _over_by("Ignored response <200 http://h/b> because its body (1043 B compressed, "
    ...          "10485761 B decompressed so far) exceeded DOWNLOAD_MAXSIZE (10485760 B) "
    ...          "during decompression.")
    ': 1,043 bytes unpack to more than 10,485,760'
    """
    if found := _ANNOUNCED.search(message):
        said, size, limit = found.groups()
        done = "announced" if said.startswith("Expected") else "received"
        return f": {int(size):,} bytes {done}, the limit {int(limit):,}"
    if found := _UNPACKED.search(message):
        packed, _, limit = found.groups()
        return f": {int(packed):,} bytes unpack to more than {int(limit):,}"
    return ""
