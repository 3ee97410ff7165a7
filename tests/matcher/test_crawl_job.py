"""The ``crawl_site`` job: a real ``python -m crawler.run`` subprocess, its run recorded in
``crawls``, one crawl per site at a time (a lock in the real Redis)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis
from pymongo.database import Database

from matcher import jobs
from matcher.operations import Operations
from matcher.settings import Settings
from matcher.sites import SiteConfig
from matcher.store import Store

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = Settings(redis_prefix="fptrack-test", crawl_timeout=120, visibility_timeout=300)


@pytest.fixture
def ops(mongo_db: Database) -> Operations:
    store = Store(mongo_db)
    store.ensure_indexes()
    ops = Operations(store)
    ops.save_site(SiteConfig(name="pirate", start_urls=("http://127.0.0.1:9/",)))
    return ops


def test_unknown_site(ops: Operations, redis_client: redis.Redis) -> None:
    with pytest.raises(jobs.CrawlFailed, match="no site named"):
        jobs.crawl_site(SETTINGS, ops, redis_client, "nobody")


def test_one_crawl_per_site_at_a_time(ops: Operations, redis_client: redis.Redis) -> None:
    redis_client.set("fptrack-test:lock:crawl:pirate", "another-run")
    result = jobs.crawl_site(SETTINGS, ops, redis_client, "pirate")
    assert result["skipped"] == "a crawl of this site is running"
    assert ops.last_crawls("pirate") == []
    assert redis_client.get("fptrack-test:lock:crawl:pirate") == b"another-run"


def test_failed_crawl_is_recorded_and_the_lock_released(
    ops: Operations, redis_client: redis.Redis
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FPTRACK_MONGO_URI": "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300",
    }
    with pytest.raises(jobs.CrawlFailed) as failed:
        jobs.crawl_site(SETTINGS, ops, redis_client, "pirate", environ=env)
    assert "exited 1" in str(failed.value) and "\n" not in str(failed.value)
    [run] = ops.last_crawls("pirate")
    assert run["outcome"] == "failed" and run["error"] == str(failed.value)
    assert run["finished_at"] >= run["started_at"]
    assert run["stats"]["finish_reason"]  # what the crawl wrote before failing is kept
    assert redis_client.get("fptrack-test:lock:crawl:pirate") is None


def test_the_crawl_subprocess_stores_into_the_shared_store(
    ops: Operations, redis_client: redis.Redis
) -> None:
    """The real ``python -m crawler.run`` of the sample site writes its pages into the test's
    database over the wire (``FPTRACK_MONGO_URI`` / ``FPTRACK_MONGO_DB``) and sends one
    ``process_page`` task per page to the broker."""
    from admin.scan import serve_directory
    from matcher.celery_app import PAGE_QUEUE
    from tests import servers

    broker = redis.Redis.from_url(servers.session().redis_url(1))
    broker.flushdb()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        with serve_directory(ROOT / "samples" / "site") as base:
            ops.save_site(SiteConfig(name="sample", start_urls=(base,), schedule="never"))
            result = jobs.crawl_site(SETTINGS, ops, redis_client, "sample", environ=env)
        pages = ops.store.count("pages")
        assert result["pages"] == pages >= 17  # samples/site/README.md ("/" and its index.html)
        assert broker.llen(PAGE_QUEUE) == pages == len(list(ops.store.pending_pages()))
        [run] = ops.last_crawls("sample")
        assert run["outcome"] == "finished" and run["stats"]["fptrack/pages"] == pages
    finally:
        broker.flushdb()
