"""Real Celery workers consuming from the test Redis broker turn stored pages into match
records; failures leave records (workers killed mid-task: ``test_worker_kills.py``).

Two ``fptrack worker`` processes share the test's store over the wire (the first test); the
other tests run a worker in this process (``start_worker``), to count its tasks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pymongo
import pytest
import redis
from celery.contrib.testing.worker import start_worker
from celery.result import EagerResult
from celery.signals import task_success
from pymongo.database import Database

from matcher.index.redis_clients import COMMAND
from matcher.keys import Keys
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.settings import Settings
from matcher.store import Store, now, tallies
from matcher.worker import tasks
from matcher.worker.ingest import Ingest
from matcher.worker.runtime import Runtime
from tests.servers.raw_servers import hanging_up_redis
from tests.support.e2e import CHROME, ROOT, UNRELATED, app, sample
from tests.support.waits import eventually


def succeeded(result: EagerResult) -> None:
    """An eager task ran to success. (Not ``result.get()``: once a test of this process ran
    a worker in it, Celery takes every later ``get`` for one inside a task, and refuses.)"""
    assert result.successful(), result.traceback


def enqueue(page_id: str) -> None:
    tasks.process_page.delay(page_id)


@contextmanager
def worker(transport_options: dict | None = None):
    """A worker of this process on the test broker (solo pool, like one worker process)."""
    saved = app.conf.broker_transport_options
    if transport_options:
        app.conf.broker_transport_options = {**saved, **transport_options}
    try:
        with start_worker(
            app, pool="solo", perform_ping_check=False, loglevel="WARNING", shutdown_timeout=20
        ) as w:
            yield w
    finally:
        app.conf.broker_transport_options = saved


@contextmanager
def worker_processes(count: int, **settings: str) -> Iterator[None]:
    """``fptrack worker`` processes (one process each) on the test broker and store, with
    ``settings`` (``FPTRACK_*`` variables) besides the test's."""
    env = {**os.environ, **settings, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "admin.cli", "worker", "--concurrency", "1"]
    processes = [
        subprocess.Popen(
            [*argv, "--loglevel", "WARNING"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(count)
    ]
    try:
        yield
        assert all(p.poll() is None for p in processes), "a worker exited"
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)  # warm shutdown: the running task ends
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


@contextmanager
def count_successes():
    done: Counter[str] = Counter()

    def on_success(sender=None, result=None, **kwargs):
        done[sender.name] += 1

    task_success.connect(on_success, weak=False)
    try:
        yield done
    finally:
        task_success.disconnect(on_success)


def test_worker_turns_pages_into_match_records(engine: Engine, broker: redis.Redis) -> None:
    works = {
        n: engine.add_work(sample(n), title=n, source=n)
        for n in ("lighthouse.txt", "river-town.txt", "tea-history.txt")
    }
    ingest = Ingest(engine.store, enqueue)
    copy = ingest.page(
        CrawledPage(
            url="http://pirate/1",
            site="pirate",
            title="",
            text=CHROME.format(sample("lighthouse.txt")),
        )
    )
    both = ingest.page(
        CrawledPage(
            url="http://pirate/2",
            site="pirate",
            title="",
            text=CHROME.format(sample("river-town.txt") + "\n" + sample("tea-history.txt")),
        )
    )
    other = ingest.page(
        CrawledPage(url="http://pirate/3", site="pirate", title="", text=CHROME.format(UNRELATED))
    )
    assert broker.llen("fptrack") == 3
    # the workers gather their dashboard tallies longer than the test runs: only their
    # warm shutdown sends them
    with worker_processes(2, FPTRACK_TALLY_SECONDS="60"):
        eventually(
            lambda: not list(engine.store.page_marks.pending_pages()),
            90,
            "the pages to be processed",
        )
        # every message acknowledged while the workers run (a message still unacknowledged
        # when a worker stops goes back to the queue: delivered at least once, never lost)
        eventually(
            lambda: broker.llen("fptrack") == 0 and not broker.hlen("unacked"), 30, "the acks"
        )
    found = {(m["url"], str(m["work_id"])) for m in engine.store.db.matches.find()}
    assert found == {
        ("http://pirate/1", works["lighthouse.txt"]),
        ("http://pirate/2", works["river-town.txt"]),
        ("http://pirate/2", works["tea-history.txt"]),
    }
    assert other.page_id not in {str(m["page_id"]) for m in engine.store.db.matches.find()}
    assert copy.enqueued and both.enqueued
    counted = tallies.total(engine.store.db)
    assert counted["matches_seen"] == 3 and counted["active"]["new"] == 3


def test_a_page_that_cannot_be_processed_leaves_a_failure_record(
    engine: Engine, broker: redis.Redis
) -> None:
    missing = "0123456789abcdef01234567"
    tasks.process_page.delay(missing)
    with worker():
        eventually(lambda: engine.store.failure_log.recent(), 30, "the failure record")
    [failure] = engine.store.failure_log.recent()
    assert failure["task"] == "fptrack.process_page" and failure["ref"] == missing
    assert "no page with id" in failure["error"]
    # counted for the admin's /metrics (admin/metrics.py), with no retry (bad input)
    counted = {b"failure|fptrack.process_page": b"1"}
    eventually(lambda: engine.redis.hgetall(engine.keys.task_events) == counted, 10, "counts")


def test_a_batch_s_page_that_cannot_be_processed_fails_alone(
    engine: Engine, broker: redis.Redis
) -> None:
    """In a ``process_pages`` batch, a page that cannot be matched gets the failure record its
    own ``process_page`` would have; the batch's other pages are matched."""
    engine.add_work(sample("river-town.txt"), title="river", source="river-town.txt")
    text = CHROME.format(sample("river-town.txt"))
    page = Ingest(engine.store, lambda page_id: None).page(
        CrawledPage(url="http://pirate/river", site="pirate", title="", text=text)
    )
    missing = "0123456789abcdef01234567"
    tasks.process_pages.delay([missing, page.page_id])
    with worker():
        eventually(lambda: engine.store.failure_log.recent(), 30, "the failure record")
        eventually(lambda: not list(engine.store.page_marks.pending_pages()), 30, "the other page")
    [failure] = engine.store.failure_log.recent()
    assert failure["task"] == "fptrack.process_page" and failure["ref"] == missing
    assert "no page with id" in failure["error"]
    [match] = engine.store.db.matches.find()
    assert str(match["page_id"]) == page.page_id
    counted = {b"failure|fptrack.process_pages": b"1"}
    eventually(lambda: engine.redis.hgetall(engine.keys.task_events) == counted, 10, "counts")


def test_a_batch_an_outage_ends_for_good_leaves_records_on_its_pending_pages_only(
    engine: Engine, mongo_db: Database, dead_redis: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``process_pages`` batch whose retries an outage (Redis not answering) exhausted
    leaves failure records on its pages still pending, never on one already matched: no
    later success would clear that one (the embedded scan reported every page of a batch
    that met a Redis restart half-way as an error, all of them matched)."""
    engine.add_work(sample("river-town.txt"), title="river", source="river-town.txt")
    ingest = Ingest(engine.store, lambda page_id: None)
    matched, pending = (
        ingest.page(CrawledPage(url=url, site="pirate", title="", text=CHROME.format(text)))
        for url, text in (
            ("http://pirate/river", sample("river-town.txt")),
            ("http://pirate/news", UNRELATED),
        )
    )
    succeeded(tasks.process_page.apply(args=[matched.page_id]))
    assert list(engine.store.page_marks.pending_pages()) == [pending.page_id]
    down = Engine(engine.settings, engine.store, dead_redis)
    monkeypatch.setattr(tasks.process_pages, "max_retries", 1)
    app.fptrack.use(down)
    eager, propagates = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    try:
        result = tasks.process_pages.delay([matched.page_id, pending.page_id])
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = eager, propagates
        app.fptrack.use(engine)
    assert result.failed()
    [failure] = engine.store.failure_log.recent()
    assert (failure["task"], failure["ref"]) == ("fptrack.process_page", pending.page_id)
    assert failure["error"].startswith("IndexUnavailable: ")


def test_a_batch_retried_to_success_clears_the_failure_records_of_its_matched_pages_only(
    engine: Engine,
) -> None:
    store = engine.store
    for ref in ("a", "b"):
        store.failure_log.record_failure("fptrack.process_page", ref, "UnusableText: earlier", 0)
    task = tasks.process_pages
    task.push_request(retries=1)
    try:
        task.on_success({"failed": ["a"]}, "task-id", (["a", "b"],), {})
    finally:
        task.pop_request()
    assert [f["ref"] for f in store.failure_log.recent()] == ["a"]  # b was matched this time


def test_new_work_finds_pages_crawled_before(engine: Engine, broker: redis.Redis) -> None:
    ingest = Ingest(engine.store, enqueue)
    page = ingest.page(
        CrawledPage(
            url="http://pirate/old",
            site="pirate",
            title="",
            text=CHROME.format(sample("star-voyage.txt")),
        )
    )
    with worker():
        eventually(lambda: not list(engine.store.page_marks.pending_pages()), 30, "the page")
        assert engine.store.db.matches.count_documents({}) == 0
        text = sample("star-voyage.txt")
        doc, _ = engine.store.works.upsert_work(
            "star", title="star", content_hash="h", length=len(text), segments=1
        )
        segment = {"index": 0, "start": 0, "end": len(text), "title": "", "text": text}
        engine.store.works.save_work_segment(doc["_id"], segment)
        tasks.index_work.delay(str(doc["_id"]))
        eventually(lambda: engine.store.db.matches.count_documents({}) == 1, 30, "the match")
    [match] = engine.store.db.matches.find()
    assert str(match["page_id"]) == page.page_id and match["work_id"] == doc["_id"]


def test_retries_and_failures_are_counted_in_redis_for_the_metrics(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch, mongo_db: Database
) -> None:
    """MongoDB down for good, Redis up: each retry and the failure are counted under
    ``Keys.task_events``, which the admin's ``/metrics`` reads; the failure record, which the
    store cannot take (it is what is down), is kept in Redis and written, with the time the
    task failed, by the first task that finds MongoDB answering."""
    settings = Settings.from_env(redis_prefix="fptrack-test", mongo_db=mongo_db.name)
    dead = pymongo.MongoClient("mongodb://127.0.0.1:1", serverSelectionTimeoutMS=200)
    down = Engine(settings, Store(dead[mongo_db.name]), redis_client)
    monkeypatch.setattr(tasks.process_page, "max_retries", 2)
    app.fptrack.use(down)
    eager, propagates = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    try:
        result = tasks.process_page.delay("0123456789abcdef01234567")
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = eager, propagates
        app.fptrack.use(None)
        dead.close()
    assert result.failed()
    failed_at = now()
    counted = {b"retry|fptrack.process_page": b"2", b"failure|fptrack.process_page": b"1"}
    eventually(lambda: redis_client.hgetall(down.keys.task_events) == counted, 10, "counts")
    assert redis_client.llen(
        down.keys.kept_failures
    ) == 1 and not mongo_db.failures.count_documents({})

    app.fptrack.use(Engine(settings, Store(mongo_db), redis_client))  # MongoDB answers again
    try:
        succeeded(tasks.requeue_pending.apply())  # beat's minute sweep
    finally:
        app.fptrack.use(None)
    assert redis_client.llen(down.keys.kept_failures) == 0
    [record] = mongo_db.failures.find()
    assert (record["task"], record["ref"]) == ("fptrack.process_page", "0123456789abcdef01234567")
    assert record["error"].startswith("StoreUnavailable: ") and record["attempts"] == 2
    assert timedelta(0) <= failed_at - record["failed_at"] < timedelta(seconds=10)


def test_a_worker_counts_in_the_background_with_a_client_that_gives_up_at_once(
    redis_client: redis.Redis,
) -> None:
    """Built from the settings, a worker's runtime counts on the indexes' Redis, in a thread
    of its own, with a quick client: a Redis down costs a count a second or two of that
    thread, never the task's time (nor the engine's ~20 s of retries)."""
    runtime = Runtime(Settings.from_env(redis_prefix="fptrack-test-count"))
    for _ in range(2):
        runtime.count("retry", "fptrack.process_page").result(timeout=10)
    assert redis_client.hgetall(Keys("fptrack-test-count").task_events) == {
        b"retry|fptrack.process_page": b"2"
    }
    answer = threading.Event()
    with hanging_up_redis(answer) as (url, connections):
        down = Runtime(Settings.from_env(index_redis_url=url))
        counting = down.count("retry", "fptrack.process_page")
        assert not counting.done()  # the server holds the count: the caller does not wait
        answer.set()
        with pytest.raises(redis.ConnectionError):
            counting.result(timeout=60)
    # Given up after COMMAND's one retry, of the command and of redis-py's health check
    # before it (the engine's client, SERVICE, retries 12 times each).
    assert 1 <= len(connections) <= (COMMAND.retries + 1) ** 2


CRAWLS = ("fptrack.crawl_site", "fptrack.recrawl_site")


@pytest.mark.parametrize("name", sorted(n for n in app.tasks if n.startswith("fptrack.")))
def test_every_task_but_the_crawls_acks_late_and_all_retry_outages(name: str) -> None:
    """A crawl's message is acknowledged as it starts: its frontier's leases, not the broker,
    bring back a crawl whose worker died (``tests/e2e/test_crawl_kill.py``)."""
    task = app.tasks[name]
    assert task.acks_late is (name not in CRAWLS)
    assert task.reject_on_worker_lost
    assert issubclass(redis.ConnectionError, task.autoretry_for) and task.retry_jitter


def test_outage_is_retried_then_recorded_and_nothing_is_half_written(
    redis_client: redis.Redis,
    dead_redis: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    mongo_db: Database,
) -> None:
    """Redis down for good: the task retries (eagerly here), then leaves a failure record;
    the page stays pending with no match, fingerprint or index entry written."""
    settings = Settings.from_env(redis_prefix="fptrack-test", mongo_db=mongo_db.name)
    up = Engine.open(settings, mongo_client=mongo_db.client, redis_client=redis_client)
    up.add_work(sample("lighthouse.txt"), title="lighthouse", source="l.txt")
    page = Ingest(up.store, lambda page_id: None).page(
        CrawledPage(
            url="http://pirate/l",
            site="pirate",
            title="",
            text=CHROME.format(sample("lighthouse.txt")),
        )
    )
    down = Engine(settings, up.store, dead_redis)
    monkeypatch.setattr(tasks.process_page, "max_retries", 2)
    app.fptrack.use(down)
    eager, propagates = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    try:
        result = tasks.process_page.delay(page.page_id)
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = eager, propagates
        app.fptrack.use(None)
    assert result.failed()
    [failure] = up.store.failure_log.recent()
    assert failure["ref"] == page.page_id and "IndexUnavailable" in failure["error"]
    assert failure["attempts"] == 2
    assert list(up.store.page_marks.pending_pages()) == [page.page_id]
    assert up.store.db.matches.count_documents({}) == 0
    assert up.store.db.pages.count_documents({"fingerprints": {"$exists": True}}) == 0
    # Redis is back: the same task now completes and clears the failure record
    app.fptrack.use(up)
    try:
        succeeded(tasks.process_page.apply(args=[page.page_id], retries=1))
    finally:
        app.fptrack.use(None)
    assert up.store.db.matches.count_documents({}) == 1
    assert up.store.failure_log.recent() == []
