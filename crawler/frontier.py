"""A site's crawl frontier in Redis, shared by every crawler process of the site.

Several crawler processes, on any machines, crawl one site together: they take requests
from one queue and check every new link against one dupefilter, both in the standalone
Redis of ``FPTRACK_REDIS_URL`` under the keys :class:`matcher.keys.CrawlKeys` names. The
frontier is scrapy-redis' (:class:`FrontierScheduler` extends its ``Scheduler``): its
priority queue (a sorted set of serialized requests; callbacks by name, ``meta`` kept, so
the spider's own depth and its next/previous page links at the same depth survive), its
request fingerprints and dupefilter. What this module adds makes it safe against a crash:

- **Leases.** A process crawls a site only while it holds one of the site's ``crawlers``
  slots, a redis-py :class:`~redis.lock.Lock` that expires after ``lease_seconds``
  (``FPTRACK_CRAWL_LEASE``, default 120 s) and is renewed every third of that by a thread
  (:class:`CrawlLease`). A process that takes a slot finds the run under way and joins
  it (its start requests are dupes by then), or starts a new run.
- **In-flight requests.** Taking a request from the queue moves it, in one Lua script, to
  the process's in-flight set; it leaves that set only once Scrapy is done with it: its
  callback's requests are in the queue and its item went through the pipelines. A new
  link is added to the dupefilter and the queue in one script too. So a process killed at
  any instant (SIGKILL, a lost machine) loses nothing: when its lease has expired, another
  process of the run (checking with every renewal) or the next one to take its slot puts
  its in-flight requests back in the queue, and they are fetched again. A request that was
  being downloaded when its process died is thus fetched twice; no other is.
- **Run lifetime.** A process whose queue is empty waits while other processes still hold
  requests in flight (they may find more links). When the queue and every in-flight set
  are empty the run is over: the process that sees it first deletes the queue, the
  dupefilter and the run (one script), so the next crawl of the site starts again from the
  start URLs and fetches every page again. A crawl stopped early (timeout, SIGTERM,
  ``--max-pages`` excepted) puts its in-flight requests back and keeps the frontier: the
  next crawl of the site resumes it. Reaching ``max_pages`` (which applies to each
  process) ends the run for every process.

Requests are stored as JSON (:data:`REQUEST_CODEC`), never pickled: whoever can write to
Redis must not be able to run code in the crawlers.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import redis
from redis.exceptions import LockError
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, DontCloseSpider
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler

from crawler.settings import FRONTIER_SETTING, ByReference
from matcher.keys import CrawlKeys, Keys
from matcher.sites import MAX_CRAWLERS, SiteConfig

logger = logging.getLogger(__name__)

STAT = "fptrack/frontier/"
RUN_OVER = -1

# KEYS: run, seen, queue. ARGV: run id, fingerprint, score, data, "1" to filter dupes.
_PUSH = """
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return -1 end
if ARGV[5] == '1' and redis.call('SADD', KEYS[2], ARGV[2]) == 0 then return 0 end
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
return 1
"""
# KEYS: run, queue, in-flight set. ARGV: run id. The request with the lowest score.
_POP = """
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return -1 end
local popped = redis.call('ZPOPMIN', KEYS[2])
if #popped == 0 then return false end
redis.call('ZADD', KEYS[3], popped[2], popped[1])
return popped[1]
"""
# KEYS: queue, in-flight set. Moves every in-flight request back, keeping its priority.
_REQUEUE = """
local n = redis.call('ZCARD', KEYS[2])
if n > 0 then
  redis.call('ZUNIONSTORE', KEYS[1], 2, KEYS[1], KEYS[2], 'AGGREGATE', 'MIN')
  redis.call('DEL', KEYS[2])
end
return n
"""
# KEYS: run, frontiers set. ARGV: new run id, start time, slot, token, site.
_JOIN = """
redis.call('HSETNX', KEYS[1], 'id', ARGV[1])
redis.call('HSETNX', KEYS[1], 'started_at', ARGV[2])
redis.call('HSET', KEYS[1], 'slot:' .. ARGV[3], ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
return redis.call('HMGET', KEYS[1], 'id', 'started_at')
"""
# KEYS: run, queue, seen, frontiers set, in-flight sets... ARGV: run id, site, "1" to end
# the run even if requests are left. 1: the run is over now; 0: requests are left;
# -1: the run was over already.
_FINISH = """
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return -1 end
if ARGV[3] ~= '1' then
  for i = 5, #KEYS do
    if redis.call('ZCARD', KEYS[i]) > 0 then return 0 end
  end
  if redis.call('ZCARD', KEYS[2]) > 0 then return 0 end
end
for i = 5, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('SREM', KEYS[4], ARGV[2])
return 1
"""


class RequestCodec:
    """Scrapy's request dicts (``Request.to_dict``) as JSON; bytes and bytes keys tagged.

    >>> codec = RequestCodec()
    >>> codec.loads(codec.dumps({"body": b"\\x00", "headers": {b"Accept": [b"*/*"]}}))
    {'body': b'\\x00', 'headers': {b'Accept': [b'*/*']}}
    """

    def dumps(self, obj: Any) -> bytes:
        """JSON bytes of ``obj`` (dicts, lists, str, bytes, numbers, booleans, None)."""
        return json.dumps(_tag(obj), ensure_ascii=False, separators=(",", ":")).encode()

    def loads(self, data: bytes | str) -> Any:
        """The object :meth:`dumps` encoded."""
        return _untag(json.loads(data))


def _tag(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return {"$b": base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in obj):
            return {k: _tag(v) for k, v in obj.items()}
        return {"$d": [[_tag(k), _tag(v)] for k, v in obj.items()]}
    if isinstance(obj, list | tuple):
        return [_tag(v) for v in obj]
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    raise TypeError(f"a request holds a {type(obj).__name__}, which the frontier cannot store")


def _untag(obj: Any) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"$b"}:
            return base64.b64decode(obj["$b"])
        if set(obj) == {"$d"}:
            return {_untag(k): _untag(v) for k, v in obj["$d"]}
        return {k: _untag(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_untag(v) for v in obj]
    return obj


REQUEST_CODEC = RequestCodec()


class Frontier:
    """One site's frontier: the Redis operations on its keys, each one atomic."""

    def __init__(self, client: redis.Redis, keys: CrawlKeys, frontiers_key: str, site: str):
        self.client = client
        self.keys = keys
        self.frontiers_key = frontiers_key
        self.site = site
        self._push = client.register_script(_PUSH)
        self._pop = client.register_script(_POP)
        self._requeue = client.register_script(_REQUEUE)
        self._join = client.register_script(_JOIN)
        self._finish = client.register_script(_FINISH)

    def join(self, slot: int, token: str) -> tuple[str, str, bool]:
        """Join the site's run, or start one: ``(run id, started at, resumed)``."""
        new_id = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{token[:8]}"
        started = datetime.now(UTC).isoformat()
        run_id, started_at = self._join(
            keys=[self.keys.run, self.frontiers_key],
            args=[new_id, started, slot, token, self.site],
        )
        run_id = run_id.decode()
        return run_id, started_at.decode(), run_id != new_id

    def push(self, run_id: str, fingerprint: str, score: float, data: bytes, dupes: bool) -> int:
        """Queue a request: 1; 0 when ``dupes`` filters it (seen in this run); -1 run over."""
        return int(
            self._push(
                keys=[self.keys.run, self.keys.seen, self.keys.queue],
                args=[run_id, fingerprint, score, data, "1" if dupes else "0"],
            )
        )

    def pop(self, run_id: str, slot: int) -> bytes | int | None:
        """The next request, moved to ``slot``'s in-flight set; None: empty; -1: run over."""
        out = self._pop(
            keys=[self.keys.run, self.keys.queue, self.keys.inflight(slot)], args=[run_id]
        )
        return out if out is None or isinstance(out, bytes) else int(out)

    def ack(self, slot: int, data: list[bytes]) -> None:
        """``slot`` is done with these requests."""
        if data:
            self.client.zrem(self.keys.inflight(slot), *data)

    def requeue(self, slot: int) -> int:
        """Put ``slot``'s in-flight requests back in the queue; how many there were."""
        return int(self._requeue(keys=[self.keys.queue, self.keys.inflight(slot)]))

    def finish(self, run_id: str, force: bool = False) -> int:
        """End the run if nothing is queued or in flight (or ``force``): see ``_FINISH``."""
        keys = [self.keys.run, self.keys.queue, self.keys.seen, self.frontiers_key]
        keys += [self.keys.inflight(slot) for slot in range(MAX_CRAWLERS)]
        return int(self._finish(keys=keys, args=[run_id, self.site, "1" if force else "0"]))

    def queued(self) -> int:
        """Requests waiting in the queue."""
        return int(self.client.zcard(self.keys.queue))

    def run_id(self) -> str | None:
        """The id of the run under way, if any."""
        value = self.client.hget(self.keys.run, "id")
        return value.decode() if value else None

    def leave(self, slot: int, token: str) -> None:
        """Forget that ``token`` holds ``slot`` (it stopped)."""
        if self.client.hget(self.keys.run, f"slot:{slot}") == token.encode():
            self.client.hdel(self.keys.run, f"slot:{slot}")

    def abandoned(self, own_slot: int) -> list[tuple[int, str]]:
        """Slots a process joined the run in or left requests in flight, lease expired."""
        pipe = self.client.pipeline(transaction=False)
        slots = [s for s in range(MAX_CRAWLERS) if s != own_slot]
        for slot in slots:
            pipe.exists(self.keys.slot_lock(slot))
            pipe.zcard(self.keys.inflight(slot))
            pipe.hget(self.keys.run, f"slot:{slot}")
        replies = pipe.execute()
        out = []
        for i, slot in enumerate(slots):
            locked, inflight, token = replies[3 * i : 3 * i + 3]
            if not locked and (inflight or token):
                out.append((slot, token.decode() if token else ""))
        return out


@dataclass
class CrawlLease:
    """One process's slot in a site's crawl: a renewed redis-py ``Lock`` and the run it joined.

    :meth:`acquire` takes the first free slot of ``site.crawlers``; :meth:`release` gives
    it back. While held, a thread renews the lock every ``lease_seconds / 3`` and puts back
    in the queue the in-flight requests of any process whose lease has expired
    (``reclaimed``, and the tokens of those processes in ``lost``). If the lock cannot be
    renewed (it expired: Redis was unreachable longer than the lease), ``lost_lease`` is set
    and the crawl stops.
    """

    frontier: Frontier
    lock: Any
    slot: int
    token: str
    lease_seconds: float
    run_id: str
    run_started_at: str
    resumed: bool
    requeued: int
    reclaimed: int = 0
    lost: list[str] = field(default_factory=list)
    lost_lease: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @classmethod
    def acquire(
        cls, client: redis.Redis, prefix: str, site: SiteConfig, lease_seconds: float
    ) -> CrawlLease | None:
        """A slot of ``site``'s crawl, or None when all ``site.crawlers`` slots are held."""
        keys = Keys(prefix)
        frontier = Frontier(client, keys.crawl(site.name), keys.crawl_frontiers, site.name)
        for slot in range(site.crawlers):
            lock = client.lock(
                frontier.keys.slot_lock(slot), timeout=lease_seconds, thread_local=False
            )
            if lock.acquire(blocking=False):
                break
        else:
            return None
        token = lock.local.token.decode()
        requeued = frontier.requeue(slot)  # left by the slot's last holder, which died
        run_id, started_at, resumed = frontier.join(slot, token)
        lease = cls(
            frontier, lock, slot, token, lease_seconds, run_id, started_at, resumed, requeued
        )
        lease._thread = threading.Thread(
            target=lease._renew, name=f"fptrack-lease-{site.name}-{slot}", daemon=True
        )
        lease._thread.start()
        return lease

    def release(self) -> None:
        """Stop renewing; put unfinished requests back; free the slot."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        if not self.lock.owned():  # expired: whoever took the slot put the requests back
            logger.warning("crawl lease of %s slot %d had expired", self.frontier.site, self.slot)
            return
        self.frontier.requeue(self.slot)
        self.frontier.leave(self.slot, self.token)
        with contextlib.suppress(LockError):  # it expired just now
            self.lock.release()

    def describe(self) -> dict[str, Any]:
        """Who holds the lease, for the run's record: run, slot, token, host, pid."""
        return {
            "run_id": self.run_id,
            "run_started_at": self.run_started_at,
            "slot": self.slot,
            "token": self.token,
            "resumed": self.resumed,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }

    def facts(self) -> dict[str, Any]:
        """The lease as crawl stats (``fptrack/frontier/...``)."""
        return {
            STAT + "run_id": self.run_id,
            STAT + "run_started_at": self.run_started_at,
            STAT + "token": self.token,
            STAT + "slot": self.slot,
            STAT + "host": socket.gethostname(),
            STAT + "resumed": int(self.resumed),
            STAT + "requeued": self.requeued,
            STAT + "reclaimed": self.reclaimed,
            STAT + "lost_processes": list(self.lost),
        }

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_seconds / 3):
            try:
                self.lock.reacquire()
            except LockError:
                logger.error("crawl lease of %s lost", self.frontier.site)
                self.lost_lease.set()
                return
            except redis.RedisError as exc:
                logger.warning("could not renew the crawl lease (will retry): %s", exc)
                continue
            try:
                self.reclaim()
            except redis.RedisError as exc:
                logger.warning("could not look for abandoned crawl slots: %s", exc)

    def reclaim(self) -> int:
        """Put back the in-flight requests of processes whose lease expired; how many."""
        count = 0
        for slot, token in self.frontier.abandoned(self.slot):
            lock = self.frontier.client.lock(
                self.frontier.keys.slot_lock(slot), timeout=self.lease_seconds, thread_local=False
            )
            if not lock.acquire(blocking=False):
                continue  # a process just took the slot: it puts them back itself
            try:
                moved = self.frontier.requeue(slot)
                if token:
                    self.frontier.leave(slot, token)
                    self.lost.append(token)
            finally:
                lock.release()
            count += moved
            logger.warning(
                "crawl of %s: slot %d's lease expired; %d request(s) put back in the queue",
                self.frontier.site,
                slot,
                moved,
            )
        self.reclaimed += count
        return count


@dataclass(frozen=True)
class RedisFrontiers:
    """Where the sites' frontiers live: a Redis client, the key prefix, the lease length."""

    client: redis.Redis
    prefix: str
    lease_seconds: float

    def lease(self, site: SiteConfig) -> CrawlLease | None:
        """A slot of ``site``'s crawl (see :meth:`CrawlLease.acquire`)."""
        return CrawlLease.acquire(self.client, self.prefix, site, self.lease_seconds)


class FrontierScheduler(Scheduler):
    """scrapy-redis' scheduler on one site's :class:`Frontier`, under a :class:`CrawlLease`.

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
            self.ended_run = self.frontier.finish(self.lease.run_id, force=True) == 1
        for key, value in self.lease.facts().items():
            self.stats.set_value(key, value)
        self.stats.set_value(STAT + "ended_run", int(self.ended_run))

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
            raise CloseSpider("lease_lost")
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
        "SCHEDULER": "crawler.frontier.FrontierScheduler",
        FRONTIER_SETTING: ByReference(lease),
    }


LeaseCallback = Callable[[SiteConfig, CrawlLease], None]
