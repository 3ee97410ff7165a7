"""The ``recrawl_site`` job: a real ``python -m crawler.run --incremental`` subprocess, one at a
time per site, never beside a full crawl of the site (slot leases in the real Redis), recorded
in ``crawls`` with its new / changed / unchanged counts."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from pymongo.database import Database

from crawler.lease import CrawlLease, FullCrawlRunning, RecrawlLease
from matcher.keys import Keys
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from matcher.store import Store
from matcher.worker import jobs
from tests.conftest import SERVERS, TEST_BROKER_URL, TEST_REDIS_URL
from tests.servers.fixture_site import FixtureSite, page

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = Settings.from_env(
    redis_prefix="fptrack-test", crawl_timeout=120, visibility_timeout=300, crawl_lease=10
)
KEYS = Keys("fptrack-test").crawl("pirate")
TEXT = "那天夜里雨下得很大，渡口的灯笼被风吹得左右摇晃，船夫把缆绳又紧了一圈。她提着竹篮走下石阶。"


@pytest.fixture
def site() -> Iterator[FixtureSite]:
    with FixtureSite() as fixture:
        fixture.pages["/"] = page('<ul><li><a href="/1.html">第一章</a></li></ul>')
        fixture.pages["/1.html"] = page(f"<h1>第一章</h1><p>{TEXT}</p>")
        yield fixture


@pytest.fixture
def store(store: Store, site: FixtureSite) -> Store:
    """The shared ``store``, with ``site`` saved (recrawled every 2 minutes)."""
    store.sites.save_site(
        SiteConfig(name="pirate", start_urls=(site.url("/"),), recrawl="every 2m")
    )
    return store


def environ(mongo_db: Database) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FPTRACK_REDIS_URL": TEST_REDIS_URL,
        "FPTRACK_BROKER_URL": TEST_BROKER_URL,
        "FPTRACK_REDIS_PREFIX": "fptrack-test",
        "FPTRACK_CRAWL_LEASE": "10",
        "FPTRACK_MONGO_URI": SERVERS.mongo_uri,
        "FPTRACK_MONGO_DB": mongo_db.name,
    }


def test_a_recrawl_is_skipped_while_a_full_crawl_holds_a_slot(
    store: Store, mongo_db: Database, redis_client: redis.Redis, site: FixtureSite
) -> None:
    full = redis_client.lock(KEYS.slot_lock(0), timeout=60)
    assert full.acquire(blocking=False)
    result = jobs.recrawl_site(SETTINGS, store, "pirate", environ=environ(mongo_db))
    assert result["skipped"] == "a full crawl of pirate is running"
    assert store.crawls.last_crawls("pirate") == [] and site.requested() == []
    assert not redis_client.exists(KEYS.recrawl_lock)  # given back at once


def test_one_recrawl_of_a_site_at_a_time(
    store: Store, mongo_db: Database, redis_client: redis.Redis, site: FixtureSite
) -> None:
    other = redis_client.lock(KEYS.recrawl_lock, timeout=60)
    assert other.acquire(blocking=False)
    result = jobs.recrawl_site(SETTINGS, store, "pirate", environ=environ(mongo_db))
    assert result["skipped"] == "an incremental crawl of pirate is running"
    assert site.requested() == []


def test_a_recrawl_stores_new_pages_sends_their_tasks_and_is_recorded(
    store: Store,
    mongo_db: Database,
    redis_client: redis.Redis,
    broker: redis.Redis,
    site: FixtureSite,
) -> None:
    result = jobs.recrawl_site(SETTINGS, store, "pirate", environ=environ(mongo_db))
    assert result["new"] == 1 and result["unchanged"] == 0
    [crawl] = store.crawls.last_crawls("pirate")
    assert crawl["kind"] == "incremental" and crawl["outcome"] == "finished"
    assert crawl["stats"]["fptrack/incremental/new"] == 1
    assert b"fptrack.process_page" in broker.lindex("fptrack", 0)
    assert not redis_client.exists(KEYS.recrawl_lock)

    again = jobs.recrawl_site(SETTINGS, store, "pirate", environ=environ(mongo_db))
    assert (again["new"], again["changed"]) == (0, 0)  # the chapter is stored: not asked for
    assert site.requested().count("/1.html") == 1


def test_the_recrawl_lease_refuses_beside_a_full_crawl(redis_client: redis.Redis) -> None:
    config = SiteConfig(name="pirate", start_urls=("http://127.0.0.1:9/",))
    lease = RecrawlLease.acquire(redis_client, "fptrack-test", config, 10)
    assert lease is not None
    assert RecrawlLease.acquire(redis_client, "fptrack-test", config, 10) is None
    lease.release()
    full = redis_client.lock(KEYS.slot_lock(3), timeout=60)
    assert full.acquire(blocking=False)
    with pytest.raises(FullCrawlRunning):
        RecrawlLease.acquire(redis_client, "fptrack-test", config, 10)


def test_a_full_crawl_waits_for_the_running_recrawl(redis_client: redis.Redis) -> None:
    config = SiteConfig(name="pirate", start_urls=("http://127.0.0.1:9/",))
    recrawl = RecrawlLease.acquire(redis_client, "fptrack-test", config, 10)
    assert recrawl is not None
    released: list[float] = []

    def finish() -> None:
        time.sleep(1)
        released.append(time.monotonic())
        recrawl.release()

    threading.Thread(target=finish).start()
    lease = CrawlLease.acquire(redis_client, "fptrack-test", config, 10)
    try:
        assert lease is not None and released  # it returned only once the recrawl ended
        assert not redis_client.exists(KEYS.recrawl_lock)
    finally:
        lease.release()
