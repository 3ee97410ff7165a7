"""Prometheus metrics of the whole deployment, computed by the admin at scrape time.

The workers and beat keep their state in MongoDB and Redis, so the admin's ``/metrics``
(:mod:`admin.web.metrics`) computes every figure from there when it is scraped, with
prometheus_client's custom collector protocol (``collect()`` yielding metric families): no
worker needs an exporter of its own, and a worker that died takes no figure with it.

A scrape is kept cheap: every MongoDB read is a bounded one of the store layer (the
dashboard's counters, :mod:`matcher.store.tallies`, for the per-site figures; one aggregation
grouped by site and outcome over the crawl runs; counts served by indexes), Redis reads are
one ``MGET`` of the 32 index markers, one ``HGETALL``, and an ``LLEN``/``ZCARD`` per queue
and frontier; and the families computed are kept ``FPTRACK_METRICS_CACHE_SECONDS``
(default 15) seconds in each admin process, so Prometheus scraping every 15 s costs MongoDB
one computation per admin process per 15 s. The served admin's clients ride out restarts;
the Redis ones here give up within about a second instead, so a scrape is not held past
Prometheus' timeout by a Redis that is down (MongoDB's already do: ``admin.context``).

A source that does not answer does not fail the scrape: its figures are left out and
``fptrack_metrics_source_up{source}`` says 0 (sources: ``mongodb``, ``index_redis``,
``redis``, ``broker``); ``fptrack_store_internal_errors`` says 1 when MongoDB answered,
but with internal errors (its disk full?).

The metrics (``site``, ``status``, ``outcome``, ``task``, ``queue``, ``state``, ``group``,
``kind`` are labels; counters end in ``_total``): :data:`METRICS`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

import pymongo.errors
import redis
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry

from admin.context import Context
from matcher.errors import INTERNAL_ERRORS, MatcherError, store_failing
from matcher.index.integrity import read_markers
from matcher.index.redis_clients import COMMAND, IndexClient, connect, connect_server
from matcher.index.storage import RedisStorage
from matcher.keys import CELERY_UNACKED, TAG_GROUPS, Keys, celery_queue_keys
from matcher.store import STATUSES
from matcher.store.alerts import STATES as OUTBOX_STATES
from matcher.store.alerts import AlertStore
from matcher.store.index_state import IndexState
from matcher.worker.celery_app import CRAWL_QUEUE, PAGE_QUEUE

log = logging.getLogger(__name__)

QUEUES = (PAGE_QUEUE, CRAWL_QUEUE)
FAILURES = (MatcherError, redis.RedisError, pymongo.errors.PyMongoError, OSError)
"""What a source that does not answer raises."""
TASK_EVENTS = {"retry": "fptrack_task_retries", "failure": "fptrack_task_failed"}

METRICS: dict[str, str] = {
    "fptrack_works": "works registered",
    "fptrack_pages_stored": "pages stored, per site",
    "fptrack_pages_pending": "pages whose current text is not matched yet",
    "fptrack_crawl_pages_total": "pages stored or fetched again by the crawl runs, per site",
    "fptrack_matches": "active match records per site and review status",
    "fptrack_matches_infringing": "active matches neither false positive nor authorised, per site",
    "fptrack_matches_created_total": "match records ever created, per site",
    "fptrack_crawl_runs": "crawl runs recorded, per site and outcome",
    "fptrack_crawl_last_start_timestamp_seconds": "start of each site's newest crawl run",
    "fptrack_crawl_last_outcome": "1 for the outcome of each site's newest crawl run",
    "fptrack_crawl_frontier_requests": "requests waiting in each unfinished crawl's frontier",
    "fptrack_task_failures": "failure records kept (tasks that failed for good), per task",
    "fptrack_task_failures_waiting": "failure records kept in Redis until MongoDB takes them",
    "fptrack_task_retries_total": "task retries counted by the workers, per task",
    "fptrack_task_failed_total": "tasks failed for good counted by the workers, per task",
    "fptrack_queue_messages": "messages waiting in each Celery queue of the broker",
    "fptrack_queue_unacked": "messages delivered to workers and not yet acknowledged",
    "fptrack_index_group_present": "1 when the tag group's marker is in Redis (0: lost)",
    "fptrack_index_groups_lost": "tag groups whose marker is missing",
    "fptrack_index_whole_timestamp_seconds": "when the indexes were last seen whole",
    "fptrack_index_last_heal_timestamp_seconds": "when lost tag groups were last rebuilt",
    "fptrack_index_rebuilding": "1 while a process holds the rebuild lease",
    "fptrack_index_rematch_pending": "1 while pages and works wait to be matched again",
    "fptrack_index_shortfall": "owners the indexes lacked at the heal job's last count, per kind",
    "fptrack_alert_outbox": "alert outbox entries per state",
    "fptrack_metrics_source_up": "1 when the source answered this computation",
    "fptrack_store_internal_errors": "1 when MongoDB answers with internal errors (disk full?)",
    "fptrack_metrics_compute_seconds": "seconds the last computation of these metrics took",
}  # fmt: skip
"""Every metric family this module exposes, with its help text."""


def _gauge(name: str, labels: Iterable[str] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, METRICS[name], labels=list(labels))


def _counter(name: str, labels: Iterable[str] = ()) -> CounterMetricFamily:
    return CounterMetricFamily(name.removesuffix("_total"), METRICS[name], labels=list(labels))


def _seconds(value: Any) -> float | None:
    """A stored time as Unix seconds (naive ones are UTC), None if it is not a time."""
    if not isinstance(value, datetime):
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


class StoreMetrics:
    """A prometheus_client collector computing the deployment's metrics from the store and
    Redis, cached ``cache_seconds`` (see the module docstring)."""

    def __init__(self, ctx: Context, cache_seconds: float | None = None) -> None:
        self.ctx = ctx
        self.cache_seconds = (
            ctx.settings.metrics_cache_seconds if cache_seconds is None else cache_seconds
        )
        self._lock = threading.Lock()
        self._families: list[Metric] = []
        self._computed_at = float("-inf")
        self._clients: dict[str, Any] = {}

    def registry(self) -> CollectorRegistry:
        """A registry of this collector alone (not described at registration: no query)."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        return registry

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if time.monotonic() - self._computed_at >= self.cache_seconds:
                self._families = self.compute()
                self._computed_at = time.monotonic()
            return iter(list(self._families))

    def compute(self) -> list[Metric]:
        """Every family, now (sources that fail are left out and said down)."""
        started = time.perf_counter()
        families: list[Metric] = []
        up = _gauge("fptrack_metrics_source_up", ["source"])
        failing = 0
        for source, part in (
            ("mongodb", self._store),
            ("index_redis", self._indexes),
            ("redis", self._frontiers),
            ("broker", self._queues),
        ):
            try:
                found = list(part())
            except FAILURES as exc:
                if source == "mongodb" and store_failing(exc):
                    failing = 1
                    log.warning("metrics: MongoDB %s (%s)", INTERNAL_ERRORS, type(exc).__name__)
                else:
                    log.warning("metrics: %s did not answer: %s", source, exc)
                up.add_metric([source], 0)
                continue
            families += found
            up.add_metric([source], 1)
        internal = _gauge("fptrack_store_internal_errors")
        internal.add_metric([], failing)
        took = _gauge("fptrack_metrics_compute_seconds")
        took.add_metric([], time.perf_counter() - started)
        return [*families, up, internal, took]

    def _index_client(self) -> IndexClient:
        """The indexes' Redis: the engine's client when the context is already quick to give
        up (a command's, the embedded scan's), else a quick client of its own (the served
        admin's engine rides out restarts, which would hold a scrape past its timeout)."""
        if self.ctx.patience is COMMAND:
            return self.ctx.engine.redis
        if "index" not in self._clients:
            self._clients["index"] = connect(self.ctx.settings.index_redis, COMMAND)
        return self._clients["index"]

    def _server(self, name: str, target: Any) -> redis.Redis:
        """A quick-to-give-up client of a standalone Redis (or Sentinel primary)."""
        if name not in self._clients:
            self._clients[name] = connect_server(target, COMMAND)
        return self._clients[name]

    # sources -----------------------------------------------------------------------------

    def _store(self) -> Iterator[Metric]:
        store = self.ctx.engine.store
        works = _gauge("fptrack_works")
        works.add_metric([], int(store.dashboard.tally_total().get("works", 0)))
        yield works
        pending = _gauge("fptrack_pages_pending")
        pending.add_metric([], store.page_marks.pending_page_count())
        yield pending

        stored = _gauge("fptrack_pages_stored", ["site"])
        matches = _gauge("fptrack_matches", ["site", "status"])
        infringing = _gauge("fptrack_matches_infringing", ["site"])
        created = _counter("fptrack_matches_created_total", ["site"])
        for doc in store.dashboard.tally_sites():
            site = str(doc.get("key", ""))
            stored.add_metric([site], int(doc.get("pages", 0)))
            active = doc.get("active") or {}
            for status in STATUSES:
                matches.add_metric([site, status], int(active.get(status, 0)))
            infringing.add_metric([site], int(doc.get("infringing", 0)))
            created.add_metric([site], int(doc.get("matches_seen", 0)))
        yield from (stored, matches, infringing, created)

        runs = _gauge("fptrack_crawl_runs", ["site", "outcome"])
        fetched: dict[str, int] = {}
        for row in store.crawls.crawl_outcomes():
            runs.add_metric([row["site"], row["outcome"]], row["runs"])
            fetched[row["site"]] = fetched.get(row["site"], 0) + row["pages"]
        pages = _counter("fptrack_crawl_pages_total", ["site"])
        for site, n in sorted(fetched.items()):
            pages.add_metric([site], n)
        yield from (runs, pages)

        last_start = _gauge("fptrack_crawl_last_start_timestamp_seconds", ["site"])
        last_outcome = _gauge("fptrack_crawl_last_outcome", ["site", "outcome"])
        for site, run in sorted(store.crawls.latest_crawls().items()):
            started = _seconds(run.get("started_at"))
            if started is not None:
                last_start.add_metric([str(site)], started)
            last_outcome.add_metric([str(site), str(run.get("outcome") or "unknown")], 1)
        yield from (last_start, last_outcome)

        failures = _gauge("fptrack_task_failures", ["task"])
        for task, n in sorted(store.failure_log.failure_counts().items()):
            failures.add_metric([task], n)
        yield failures

        outbox = _gauge("fptrack_alert_outbox", ["state"])
        counts = AlertStore(store).outbox_counts()
        for state in OUTBOX_STATES:
            outbox.add_metric([state], counts.get(state, 0))
        yield outbox

        yield from self._index_record(IndexState(store))

    def _index_record(self, state: IndexState) -> Iterator[Metric]:
        """The heal record (``index.health``) and the rebuild lease, from the store."""
        health = state.health()
        last_heal = (health.get("last_heal") or {}).get("at")
        for name, value in (
            ("fptrack_index_whole_timestamp_seconds", health.get("whole_at")),
            ("fptrack_index_last_heal_timestamp_seconds", last_heal),
        ):
            seconds = _seconds(value)
            if seconds is not None:
                family = _gauge(name)
                family.add_metric([], seconds)
                yield family
        rematch = _gauge("fptrack_index_rematch_pending")
        rematch.add_metric([], 1 if health.get("rematch_since") else 0)
        rebuilding = _gauge("fptrack_index_rebuilding")
        rebuilding.add_metric([], 1 if state.rebuilding() else 0)
        shortfall = _gauge("fptrack_index_shortfall", ["kind"])
        for kind, n in sorted((health.get("shortfall") or {}).items()):
            shortfall.add_metric([str(kind)], int(n))
        yield from (rematch, rebuilding, shortfall)

    def _indexes(self) -> Iterator[Metric]:
        """The 32 tag groups' markers (:mod:`matcher.index.integrity`), the workers' task counts
        and the failure records waiting for MongoDB (:mod:`matcher.worker.kept_failures`), from the
        indexes' Redis."""
        engine = self.ctx.engine
        client = self._index_client()
        snapshot = read_markers(RedisStorage(client), engine.keys)
        present = _gauge("fptrack_index_group_present", ["group"])
        for group in range(TAG_GROUPS):
            present.add_metric([str(group)], 0 if snapshot.markers[group] is None else 1)
        lost = _gauge("fptrack_index_groups_lost")
        lost.add_metric([], len(snapshot.lost))
        yield from (present, lost)

        counted = client.hgetall(engine.keys.task_events)
        families = {e: _counter(f"{name}_total", ["task"]) for e, name in TASK_EVENTS.items()}
        for field, value in sorted(counted.items()):
            event, _, task = field.decode("utf-8", "replace").partition("|")
            if event in families and task:
                families[event].add_metric([task], int(value))
        yield from families.values()
        waiting = _gauge("fptrack_task_failures_waiting")
        waiting.add_metric([], int(client.llen(engine.keys.kept_failures)))
        yield waiting

    def _frontiers(self) -> Iterator[Metric]:
        """Requests waiting in the frontier of every site with an unfinished crawl (the
        standalone Redis of ``FPTRACK_REDIS_URL``)."""
        client = self._server("redis", self.ctx.settings.redis_target)
        keys = Keys(self.ctx.settings.redis_prefix)
        sites = sorted(s.decode("utf-8", "replace") for s in client.smembers(keys.crawl_frontiers))
        pipe = client.pipeline(transaction=False)
        for site in sites:
            pipe.zcard(keys.crawl(site).queue)
        family = _gauge("fptrack_crawl_frontier_requests", ["site"])
        for site, n in zip(sites, pipe.execute() if sites else [], strict=True):
            family.add_metric([site], int(n))
        yield family

    def _queues(self) -> Iterator[Metric]:
        """Messages waiting in each Celery queue, and those delivered and unacknowledged
        (the broker's Redis: ``FPTRACK_BROKER_URL``)."""
        client = self._server("broker", self.ctx.settings.broker_target)
        pipe = client.pipeline(transaction=False)
        for queue in QUEUES:
            for key in celery_queue_keys(queue):
                pipe.llen(key)
        pipe.hlen(CELERY_UNACKED)
        found = pipe.execute()
        steps = len(celery_queue_keys(PAGE_QUEUE))
        family = _gauge("fptrack_queue_messages", ["queue"])
        for i, queue in enumerate(QUEUES):
            family.add_metric([queue], sum(found[i * steps : (i + 1) * steps]))
        unacked = _gauge("fptrack_queue_unacked")
        unacked.add_metric([], int(found[-1]))
        yield from (family, unacked)
