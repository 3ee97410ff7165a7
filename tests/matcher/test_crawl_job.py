"""The ``crawl_site`` job: a real ``python -m crawler.run`` subprocess on the site's Redis
frontier, its part of the run recorded in ``crawls``, at most ``crawlers`` processes per site
at a time (slot leases in the real Redis)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from pymongo.database import Database

from matcher.keys import Keys
from matcher.pages import CrawledPage
from matcher.settings import Settings
from matcher.sites import crawl_runs
from matcher.sites.site_config import SiteConfig
from matcher.store import Store, now
from matcher.worker import jobs
from tests.conftest import TEST_REDIS_URL
from tests.servers.net import wait_until

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = Settings.from_env(
    redis_prefix="fptrack-test", crawl_timeout=120, visibility_timeout=300, crawl_lease=10
)
KEYS = Keys("fptrack-test").crawl("pirate")


@pytest.fixture
def store(store: Store) -> Store:
    """The shared ``store``, with a site of two crawlers saved."""
    store.sites.save_site(
        SiteConfig(name="pirate", start_urls=("http://127.0.0.1:9/",), crawlers=2)
    )
    return store


def environ() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FPTRACK_REDIS_URL": TEST_REDIS_URL,
        "FPTRACK_REDIS_PREFIX": "fptrack-test",
        "FPTRACK_CRAWL_LEASE": "10",
        "FPTRACK_MONGO_URI": "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300",
    }


def test_unknown_site(store: Store) -> None:
    with pytest.raises(jobs.CrawlFailed, match="no site named"):
        jobs.crawl_site(SETTINGS, store, "nobody")


def test_at_most_crawlers_processes_per_site(store: Store, redis_client: redis.Redis) -> None:
    held = [redis_client.lock(KEYS.slot_lock(slot), timeout=60) for slot in (0, 1)]
    assert all(lock.acquire(blocking=False) for lock in held)
    result = jobs.crawl_site(SETTINGS, store, "pirate", environ=environ())
    assert result["skipped"] == "all 2 crawler slot(s) are held"
    assert store.crawls.last_crawls("pirate") == []
    assert all(lock.owned() for lock in held)  # the other processes' leases are untouched


def test_failed_crawl_is_recorded_and_its_slot_freed(
    store: Store, redis_client: redis.Redis
) -> None:
    helpers: list[str] = []
    with pytest.raises(jobs.CrawlFailed) as failed:
        jobs.crawl_site(
            SETTINGS, store, "pirate", environ=environ(), fan_out=lambda: helpers.append("x")
        )
    assert "exited 1" in str(failed.value) and "\n" not in str(failed.value)
    assert helpers == ["x"]  # the site wants two crawlers: one more was started
    [run] = store.crawls.last_crawls("pirate")
    assert run["outcome"] == "failed" and run["error"] == str(failed.value)
    [process] = run["processes"].values()
    assert process["outcome"] == "failed" and process["slot"] == 0
    assert process["finished_at"] >= process["started_at"] >= run["started_at"]
    assert run["stats"]["fptrack/errors/DownloadConnectionRefusedError"] == 1
    assert run["stats"]["finish_reason"] == "finished"  # what the crawl wrote is kept
    assert process["ended_run"] is True  # nothing was left to crawl: the run is over
    assert redis_client.keys("fptrack-test:*") == []  # slot free, frontier cleared


def test_a_run_of_two_processes_one_lost(store: Store) -> None:
    """The run's pages are counted from the store: the lost process's too, whose own count
    died with it."""
    start = now() - timedelta(minutes=10)
    alive, dead = "a1" * 16, "b2" * 16
    for token, slot in ((alive, 0), (dead, 1)):
        store.crawls.record_crawl_process(
            "run-1", "pirate", token, run_started_at=start, started_at=start, outcome="running",
            slot=slot,
        )  # fmt: skip
    assert store.crawls.last_crawls("pirate")[0]["outcome"] == "running"
    for n in range(7):  # 5 by the live process, 2 by the dead one
        store.pages.store_crawled_page(CrawledPage(f"http://p/{n}", "pirate", "", f"t{n}"), f"h{n}")
    store.pages.store_crawled_page(CrawledPage("http://o/1", "other", "", "t"), "h")
    stats = {"fptrack/pages": 5, "fptrack/frontier/reclaimed": 3, "finish_reason": "finished"}
    end = start + timedelta(minutes=5)
    store.crawls.record_crawl_process(
        "run-1", "pirate", alive, lost=(dead,), finished_at=end, outcome="finished",
        ended_run=True, error="", stats=stats,
    )  # fmt: skip
    [run] = store.crawls.last_crawls("pirate")
    assert (run["outcome"], run["crawlers"], run["lost"]) == ("finished", 2, 1)
    assert run["processes"][dead]["outcome"] == "lost"
    assert run["stats"]["fptrack/pages"] == 7 and run["stats"]["fptrack/pages_reported"] == 5
    assert run["stats"]["fptrack/frontier/reclaimed"] == 3
    assert _utc(run["started_at"]) == start and _utc(run["finished_at"]) == end


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def test_abandoned_crawls_are_resumed(redis_client: redis.Redis) -> None:
    keys = Keys("fptrack-test")
    for site in ("dead", "alive", "done", "removed"):
        redis_client.sadd(keys.crawl_frontiers, site)
    for site in ("dead", "alive", "removed"):
        redis_client.hset(keys.crawl(site).run, "id", "run-1")
        redis_client.zadd(keys.crawl(site).queue, {"request": 0})
    redis_client.set(keys.crawl("alive").slot_lock(1), "token", ex=60)  # a live crawler
    started: list[str] = []
    sites = {"dead", "alive", "done"}
    assert jobs.resume_crawls(redis_client, keys, sites, started.append) == ["dead"] == started
    assert redis_client.smembers(keys.crawl_frontiers) == {b"dead", b"alive"}
    assert redis_client.keys("fptrack-test:crawl:removed:*") == []  # a removed site's frontier


def test_the_crawl_subprocess_stores_into_the_shared_store(
    store: Store, redis_client: redis.Redis
) -> None:
    """The real ``python -m crawler.run`` of the sample site writes its pages into the test's
    database over the wire (``FPTRACK_MONGO_URI`` / ``FPTRACK_MONGO_DB``) and sends one
    ``process_page`` task per page to the broker (pages stored together in one
    ``process_pages``)."""
    from admin.scan import serve_directory
    from matcher.worker.celery_app import PAGE_QUEUE
    from tests.servers import session
    from tests.support.e2e import queued_pages

    broker = redis.Redis.from_url(session.session().redis_url(1))
    broker.flushdb()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        with serve_directory(ROOT / "samples" / "site") as base:
            store.sites.save_site(SiteConfig(name="sample", start_urls=(base,), schedule="never"))
            result = jobs.crawl_site(SETTINGS, store, "sample", environ=env)
        pages = store.count("pages")
        assert result["pages"] == pages >= 17  # samples/site/README.md ("/" and its index.html)
        queued = queued_pages(broker, PAGE_QUEUE)
        assert len(queued) == sum(queued.values()) == pages  # each page's task, once
        assert set(queued) == set(store.page_marks.pending_pages())
        [run] = store.crawls.last_crawls("sample")
        assert run["outcome"] == "finished" and run["stats"]["fptrack/pages"] == pages
    finally:
        broker.flushdb()


def crawl_while(
    store: Store, redis_client: redis.Redis, losing: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A crawl of a slow site (60 chapters, a second each), during which Redis loses the
    keys ``losing`` matches, as a server back without its data does; the job's result and
    the run's record."""
    import threading
    import time

    from tests.servers.fixture_site import FixtureSite, page

    def slow() -> list[bytes]:
        time.sleep(1.0)
        return [b"<html><body><p>" + "盗版章节正文。".encode() * 40 + b"</p></body></html>"]

    links = "".join(f'<a href="/c/{n}.html">第{n}章</a>' for n in range(60))
    pages = {"/": page(f"<html><body>{links}</body></html>")}
    pages |= {f"/c/{n}.html": (200, {"Content-Type": "text/html"}, slow) for n in range(60)}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FPTRACK_REDIS_URL": TEST_REDIS_URL}
    env |= {"FPTRACK_REDIS_PREFIX": "fptrack-test", "FPTRACK_CRAWL_LEASE": "3"}
    settings = Settings.from_env(redis_prefix="fptrack-test", crawl_timeout=120, crawl_lease=3)
    with FixtureSite(pages) as site:
        store.sites.save_site(SiteConfig(name="pirate", start_urls=(site.url("/"),)))
        result: list[dict] = []
        crawl = threading.Thread(
            target=lambda: result.append(jobs.crawl_site(settings, store, "pirate", environ=env))
        )
        crawl.start()
        assert wait_until(lambda: redis_client.exists(KEYS.slot_lock(0)), 60)
        # under way: the start page read and its chapters asked for (a run that loses its
        # frontier before its start page is read: test_a_run_whose_redis_is_emptied_...)
        assert wait_until(lambda: any(p.startswith("/c/") for p in site.requested()), 60)
        redis_client.delete(*redis_client.keys(losing))
        crawl.join(60)
    [run] = store.crawls.last_crawls("pirate")
    return result[0], run


def test_a_process_whose_lease_is_lost_ends_lost_and_asks_for_another(
    store: Store, redis_client: redis.Redis, mongo_db: Database
) -> None:
    """Redis came back without the crawl's lease (restarted empty, or unreachable longer than
    a lease): the process ends, recorded ``lost``, and says so, so that its task starts
    another (which resumes the frontier, or crawls anew)."""
    result, run = crawl_while(store, redis_client, "fptrack-test:*")
    assert result["lease_lost"] is True
    [process] = run["processes"].values()
    assert process["outcome"] == "lost" and run["outcome"] == "interrupted"
    assert run["stats"]["finish_reason"] == jobs.LEASE_LOST


def test_a_run_whose_frontier_is_lost_asks_for_another(
    store: Store, redis_client: redis.Redis, mongo_db: Database
) -> None:
    """Redis lost the frontier (its queue and run), not yet the lease: the process finds the
    run over, though nobody ended it; the run is interrupted, and the job asks for a new
    crawl rather than taking the run for finished."""
    result, run = crawl_while(store, redis_client, "fptrack-test:crawl:*")
    assert result["frontier_lost"] is True and result["lease_lost"] is False
    [process] = run["processes"].values()
    assert run["outcome"] == "interrupted" and process["stats"]["fptrack/frontier/run_gone"] == 1


def crawl_emptied(
    store: Store, at_lease: bool
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A crawl on a Redis of its own, emptied (FLUSHALL, as a server restarted without its
    data) before its start page was fetched: ``at_lease``, once its process announced its
    slot in a new run (``fan_out`` is called then, before the process has queued its start
    request), else while the start page is being fetched (the site holds it until the test
    lets it go). The job's result, the run's record, and the result of the job sent again
    (as its task does on ``frontier_lost``)."""
    import threading

    from tests.servers.fixture_site import FixtureSite, page
    from tests.servers.session import own_redis
    from tests.support.waits import eventually

    gate = threading.Event()

    def start_page() -> list[bytes]:
        gate.wait(60)
        return [b'<html><body><a href="/c/1.html">1</a></body></html>']

    server = own_redis()
    server.start()
    url = f"redis://{server.host}:{server.port}/0"
    client = redis.Redis.from_url(url)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FPTRACK_REDIS_URL": url}
    env |= {"FPTRACK_REDIS_PREFIX": "fptrack-test", "FPTRACK_CRAWL_LEASE": "3"}
    settings = Settings.from_env(redis_prefix="fptrack-test", crawl_timeout=120, crawl_lease=3)
    pages = {"/": (200, {"Content-Type": "text/html"}, start_page)}
    pages["/c/1.html"] = page("<html><body><p>" + "盗版章节正文。" * 40 + "</p></body></html>")
    result: list[dict[str, Any]] = []

    def job() -> None:
        """The job (its failure as ``{"failed": error}``); ``at_lease``, FLUSHALL in its
        ``fan_out``, called once the process announced its lease."""
        fan_out = client.flushall if at_lease else None
        try:
            result.append(jobs.crawl_site(settings, store, "pirate", environ=env, fan_out=fan_out))
        except jobs.CrawlFailed as exc:
            result.append({"failed": str(exc)})

    try:
        with FixtureSite(pages) as site:
            # two crawlers, so that the job calls fan_out (here: FLUSHALL) for the second
            store.sites.save_site(
                SiteConfig(name="pirate", start_urls=(site.url("/"),), crawlers=2)
            )
            crawl = threading.Thread(target=job)
            crawl.start()
            if not at_lease:
                eventually(lambda: "/" in site.requested(), 60, "the start page asked for")
                client.flushall()
            gate.set()
            crawl.join(60)
            again = jobs.crawl_site(settings, store, "pirate", environ=env) if result else {}
    finally:
        gate.set()
        client.close()
        server.stop()
    assert result, "the crawl job did not end within 60 s"
    [run] = [r for r in store.crawls.last_crawls("pirate") if r["run_id"] != again.get("run_id")]
    return result[0], run, again


@pytest.mark.parametrize("at_lease", [True, False], ids=["start-request-unqueued", "in-flight"])
def test_a_run_whose_redis_is_emptied_before_its_start_page_is_interrupted(
    store: Store, mongo_db: Database, at_lease: bool
) -> None:
    """The run's state is gone with Redis, not a fault of the site: the run is
    ``interrupted``, says why in one line, and the job asks for another crawl (whether
    nothing could be fetched, or the start page was answered and its links found no run)."""
    result, run, again = crawl_emptied(store, at_lease)
    assert result["frontier_lost"] is True  # crawl_site's task sends itself again
    [process] = run["processes"].values()
    assert process["stats"]["fptrack/frontier/run_gone"] == 1
    assert run["outcome"] == "interrupted" and run["error"] == crawl_runs.FRONTIER_LOST
    fetched = process["stats"].get("downloader/response_count", 0)
    assert (fetched == 0) == at_lease  # at_lease: nothing asked for, not even robots.txt
    [anew] = [r for r in store.crawls.last_crawls("pirate") if r["run_id"] == again["run_id"]]
    assert anew["outcome"] == "finished" and again["pages"] == 1  # the site crawled anew
