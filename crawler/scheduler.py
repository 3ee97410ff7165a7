"""The Scrapy scheduler of a crawl on a site's shared frontier (:mod:`crawler.frontier`).

:class:`FrontierScheduler` is scrapy-redis' scheduler with the frontier's atomic scripts:
it takes requests into its process's in-flight set and acknowledges each once Scrapy is done
with it, waits while other processes hold requests in flight, and ends the run when the
frontier is empty.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, DontCloseSpider
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler

from crawler.frontier import REQUEST_CODEC, RUN_OVER, STAT
from crawler.lease import CrawlLease
from crawler.settings import FRONTIER_SETTING, ByReference
from matcher.sites.crawl_runs import LEASE_LOST, NOT_CRAWLED, RUN_GONE, stop_reason

logger = logging.getLogger(__name__)


class FrontierScheduler(Scheduler):
    """scrapy-redis' scheduler on a site's :class:`~crawler.frontier.Frontier`, under a lease.

    Read from the crawler's settings: ``FPTRACK_FRONTIER`` (the lease, by reference) and
    ``DUPEFILTER_DEBUG``.
    """

    def __init__(self, crawler: Crawler, lease: CrawlLease, debug: bool = False) -> None:
        frontier = lease.frontier
        super().__init__(
            server=frontier.client,
            persist=True,
            queue_key=frontier.keys.queue,
            dupefilter=RFPDupeFilter(frontier.client, frontier.keys.seen, debug=debug),
            serializer=REQUEST_CODEC,
        )
        self.crawler = crawler
        self.lease = lease
        self.frontier = frontier
        self.stats = crawler.stats
        self._leased: dict[Request, bytes] = {}
        self.run_over = False
        self.ended_run = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        """The scheduler of the lease in the crawler's settings."""
        lease = crawler.settings.get(FRONTIER_SETTING)
        if isinstance(lease, ByReference):
            lease = lease.value
        if not isinstance(lease, CrawlLease):
            raise TypeError(f"{FRONTIER_SETTING} must hold a CrawlLease, got {lease!r}")
        return cls(crawler, lease, crawler.settings.getbool("DUPEFILTER_DEBUG"))

    def open(self, spider: Any) -> None:
        """Bind the queue to the spider (callbacks are found by name on it)."""
        self.spider = spider
        self.queue = PriorityQueue(self.server, spider, self.queue_key, self.serializer)
        _in_progress(self.crawler)  # fails now, not mid-crawl, if Scrapy changed
        self.crawler.signals.connect(self._idle, signal=signals.spider_idle)
        if self.lease.resumed:
            logger.info(
                "crawl of %s: joined run %s (%d requests queued)",
                self.frontier.site,
                self.lease.run_id,
                self.frontier.queued(),
            )

    def close(self, reason: str) -> None:
        """Ack what is done; end the run if ``max_pages`` stopped it; record the facts."""
        self._ack_done()
        if reason.startswith("closespider_") and not self.run_over:
            left = self.frontier.queued()
            if left and stop_reason(reason):  # the run ends here: its queue is dropped
                self.stats.inc_value(NOT_CRAWLED + stop_reason(reason), left)
            self.ended_run = self.frontier.finish(self.lease.run_id, force=True) == 1
        for key, value in self.lease.facts().items():
            self.stats.set_value(key, value)
        self.stats.set_value(STAT + "ended_run", int(self.ended_run))
        # the run was over when this process looked: another process ended it, or Redis
        # lost the frontier (then no process records an end of the run)
        self.stats.set_value(RUN_GONE, int(self.run_over and not self.ended_run))

    def __len__(self) -> int:
        return self.frontier.queued()

    def has_pending_requests(self) -> bool:
        """Requests wait in the shared queue (other processes may take them first)."""
        if self.run_over or self.lease.lost_lease.is_set():
            return False
        return self.frontier.queued() > 0

    def enqueue_request(self, request: Request) -> bool:
        """Add the request to the dupefilter and the queue at once (False: seen, or over)."""
        data = self.queue._encode_request(request)
        fingerprint = self.df.request_fingerprint(request)
        pushed = self.frontier.push(
            self.lease.run_id, fingerprint, -request.priority, data, not request.dont_filter
        )
        if pushed == RUN_OVER:
            self.run_over = True
        if pushed != 1:
            self.df.log(request, self.spider)
            return False
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def next_request(self) -> Request | None:
        """The next request of the shared queue, now in flight in this process."""
        self._ack_done()
        if self.run_over or self.lease.lost_lease.is_set():
            return None
        data = self.frontier.pop(self.lease.run_id, self.lease.slot)
        if data == RUN_OVER:
            self.run_over = True
            return None
        if not isinstance(data, bytes):
            return None
        try:
            request = self.queue._decode_request(data)
        except Exception as exc:  # a request this spider cannot rebuild: drop it, counted
            logger.error("undecodable request in the frontier of %s: %s", self.frontier.site, exc)
            self.stats.inc_value(STAT + "undecodable")
            self.frontier.ack(self.lease.slot, [data])
            return None
        self._leased[request] = data
        self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def _ack_done(self) -> None:
        """Take out of the in-flight set every request Scrapy has finished with."""
        in_progress = _in_progress(self.crawler)
        done = [r for r in self._leased if r not in in_progress]
        if done:
            self.frontier.ack(self.lease.slot, [self._leased.pop(r) for r in done])

    def _idle(self) -> None:
        """The queue is empty here: wait for the other processes, or end the run."""
        self._ack_done()
        if self.lease.lost_lease.is_set():
            raise CloseSpider(LEASE_LOST)
        if self.run_over:
            return
        ended = self.frontier.finish(self.lease.run_id)
        if ended == 0:
            raise DontCloseSpider  # requests in flight elsewhere may bring new links
        self.run_over = True
        self.ended_run = ended == 1
        if self.ended_run:
            logger.info("crawl of %s: run %s is over", self.frontier.site, self.lease.run_id)


def _in_progress(crawler: Crawler) -> Any:
    """The requests Scrapy's engine took from the scheduler and is not done with.

    The engine drops a request from this set (``ExecutionEngine._remove_request``) only
    after its response or failure went through the callback or errback, the requests that
    yielded were scheduled and its items left the pipelines, and a redirect or a retry was
    scheduled in its place. Scrapy has no public signal for that moment, so this reads the
    engine's slot; :meth:`FrontierScheduler.open` calls it first, so a Scrapy without it
    fails at once rather than mid-crawl.
    """
    slot = getattr(getattr(crawler, "engine", None), "_slot", None)
    in_progress = getattr(slot, "inprogress", None)
    if not isinstance(in_progress, set):
        raise RuntimeError("this Scrapy's engine has no slot.inprogress; the frontier needs it")
    return in_progress


def frontier_settings(lease: CrawlLease) -> dict[str, Any]:
    """Crawl settings that put a crawl on ``lease``'s frontier."""
    return {
        "SCHEDULER": "crawler.scheduler.FrontierScheduler",
        FRONTIER_SETTING: ByReference(lease),
    }
