"""Leases: a crawler process's slot in a site's crawl (:mod:`crawler.frontier`).

A process crawls a site only while it holds one of the site's ``crawlers`` slots (having
waited, up to half a lease, for the site's running incremental crawl to end): a
redis-py :class:`~redis.lock.Lock` of ``lease_seconds`` (``FPTRACK_CRAWL_LEASE``) renewed by
a thread every third of that. With every renewal the thread also looks for slots whose
lease expired while requests were in flight there (their process died) and puts those
requests back in the queue.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import redis
from redis.exceptions import LockError

from crawler.frontier import STAT, Frontier
from matcher.index.redis_clients import connect_server
from matcher.index.renewal import Renewal
from matcher.keys import Keys
from matcher.sites.site_config import MAX_CRAWLERS, SiteConfig

if TYPE_CHECKING:
    from matcher.settings import Settings

logger = logging.getLogger(__name__)


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
    _renewal: Renewal | None = None

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
        _wait_for_recrawl(client, frontier.keys.recrawl_lock, lease_seconds / 2)
        token = lock.local.token.decode()
        requeued = frontier.requeue(slot)  # left by the slot's last holder, which died
        run_id, started_at, resumed = frontier.join(slot, token)
        lease = cls(
            frontier, lock, slot, token, lease_seconds, run_id, started_at, resumed, requeued
        )
        name = f"the crawl lease of {site.name} slot {slot}"
        lease._renewal = Renewal(lock, lease_seconds, name, lease._lost, lease._reclaim).start()
        return lease

    def release(self) -> None:
        """Stop renewing; put unfinished requests back; free the slot."""
        if self._renewal is not None:
            self._renewal.stop()
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

    def _lost(self) -> None:
        logger.error("crawl lease of %s lost", self.frontier.site)
        self.lost_lease.set()

    def _reclaim(self) -> None:
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

    @classmethod
    def connect(cls, settings: Settings) -> RedisFrontiers:
        """The frontiers of a deployment: the Redis of ``FPTRACK_REDIS_URL`` (a server or the
        primary Sentinel watches, never a cluster:
        :func:`matcher.index.redis_clients.connect_server`),
        under its ``redis_prefix``, with leases of ``crawl_lease`` seconds."""
        client = connect_server(settings.redis_target)
        return cls(client, settings.redis_prefix, settings.crawl_lease)

    def lease(self, site: SiteConfig) -> CrawlLease | None:
        """A slot of ``site``'s crawl (see :meth:`CrawlLease.acquire`)."""
        return CrawlLease.acquire(self.client, self.prefix, site, self.lease_seconds)

    def recrawl_lease(self, site: SiteConfig) -> RecrawlLease | None:
        """The lease of ``site``'s incremental crawl (see :meth:`RecrawlLease.acquire`)."""
        return RecrawlLease.acquire(self.client, self.prefix, site, self.lease_seconds)


LeaseCallback = Callable[[SiteConfig, CrawlLease], None]
RECRAWL_POLL = 0.2


def _wait_for_recrawl(client: redis.Redis, key: str, at_most: float) -> None:
    """Let a running incremental crawl of the site finish (they take seconds) before a full
    crawl starts, at most ``at_most`` seconds (then both run: pages are stored idempotently).
    A full crawl holds its slot meanwhile, so no new incremental crawl starts."""
    deadline = time.monotonic() + at_most
    while client.exists(key) and time.monotonic() < deadline:
        time.sleep(RECRAWL_POLL)
    if client.exists(key):
        logger.warning("an incremental crawl still runs; the full crawl starts beside it")


class FullCrawlRunning(Exception):
    """An incremental crawl is not started: a full crawl of the site holds a crawler slot."""


@dataclass
class RecrawlLease:
    """The lease of a site's incremental crawl: one at a time, never beside a full crawl.

    :meth:`acquire` takes the site's recrawl lock (a redis-py ``Lock`` of
    ``lease_seconds``, renewed by a thread every third of that), then gives it back and
    raises :class:`FullCrawlRunning` if any crawler slot of the site is held: a full crawl
    is under way and fetches every page anyway. An incremental crawl keeps its queue in its
    own process (it is short); it does not touch the site's shared frontier.
    """

    lock: Any
    lease_seconds: float
    _renewal: Renewal | None = None

    @classmethod
    def acquire(
        cls, client: redis.Redis, prefix: str, site: SiteConfig, lease_seconds: float
    ) -> RecrawlLease | None:
        """The lease, or None while another incremental crawl of the site holds it."""
        keys = Keys(prefix).crawl(site.name)
        lock = client.lock(keys.recrawl_lock, timeout=lease_seconds, thread_local=False)
        if not lock.acquire(blocking=False):
            return None
        if client.exists(*(keys.slot_lock(slot) for slot in range(MAX_CRAWLERS))):
            with contextlib.suppress(LockError):
                lock.release()
            raise FullCrawlRunning(f"a full crawl of {site.name} is running")
        lease = cls(lock, lease_seconds)
        name = f"the incremental crawl lease of {site.name}"
        lease._renewal = Renewal(lock, lease_seconds, name, on_lost=lease._lost).start()
        return lease

    def release(self) -> None:
        if self._renewal is not None:
            self._renewal.stop()
        with contextlib.suppress(LockError):
            self.lock.release()

    def _lost(self) -> None:
        logger.error("incremental crawl lease lost")
