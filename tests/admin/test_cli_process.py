"""The ``fptrack`` command in fresh processes, on the test servers (nothing shared with the
test process but the servers): what a new deployment runs first."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta

import redis
from pymongo.database import Database

from admin.health import this_host
from matcher.keys import Keys
from matcher.pages import CrawledPage
from matcher.store import Store, now
from matcher.store.operations import Operations
from tests.admin.cli_support import ROOT, fptrack


def test_schedules_in_a_fresh_process(mongo_db: Database, redis_client: redis.Redis) -> None:
    """redbeat's settings are made on first use, not only by a running beat."""
    added = fptrack(
        "sites", "add", "http://127.0.0.1:9/", "--name", "pirate", "--schedule", "hourly"
    )
    assert added.status == 0, added.err
    listed = fptrack("schedules", "--json")
    assert listed.status == 0, listed.err
    [entry] = json.loads(listed.out)
    assert (entry["name"], entry["task"], entry["args"]) == (
        "crawl:pirate",
        "fptrack.crawl_site",
        ["pirate"],
    )
    due = datetime.fromisoformat(entry["due_at"])
    assert timedelta(0) <= due - datetime.now(UTC) <= timedelta(hours=1)  # hourly: next hour
    [line] = fptrack("schedules").out.splitlines()
    assert re.fullmatch(
        r"crawl:pirate\tfptrack\.crawl_site\tcron \d+ \* \* \* \* \(UTC\)\t"
        r"next \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in \d+(\.\d)? (min|s)( \d+ s)?\)",
        line,
    ), line


def test_index_rebuild_on_empty_stores(mongo_db: Database, redis_client: redis.Redis) -> None:
    """A new deployment's first command (compose's ``init``): nothing to index is no error."""
    ran = fptrack("index", "rebuild")
    assert ran.status == 0, ran.err
    assert "rebuilt: 0 work segment(s), 0 page(s)" in ran.out


def check_lines(out: str) -> dict[str, str]:
    """``fptrack check``'s lines by check name."""
    return {line.split()[1]: line for line in out.splitlines()}


def test_check_names_what_is_not_running(mongo_db: Database, redis_client: redis.Redis) -> None:
    ran = fptrack("check")
    assert ran.status == 1 and ran.err.strip() == "3 problem(s)"
    lines = check_lines(ran.out)
    assert list(lines) == [
        *("mongodb", "redis", "broker", "workers", "beat", "indexes", "schedules", "crawls")
    ]
    assert lines["mongodb"].startswith("ok") and f"database {mongo_db.name}" in lines["mongodb"]
    assert lines["redis"].startswith("ok") and lines["broker"].startswith("ok")
    assert lines["workers"].startswith("FAIL") and "start fptrack worker" in lines["workers"]
    assert lines["beat"].startswith("FAIL") and "start fptrack beat" in lines["beat"]
    assert lines["indexes"].startswith("ok")  # nothing stored, nothing indexed
    assert lines["schedules"].startswith("FAIL") and "daily:match-new-works" in lines["schedules"]
    assert "daily:prune-archive" in lines["schedules"]
    assert lines["crawls"].startswith("ok") and "no crawl failed in the last 1 d" in lines["crawls"]


def test_check_reports_failed_and_stale_crawls(mongo_db: Database) -> None:
    ops = Operations(Store(mongo_db))
    reason = "start URL http://127.0.0.1:9/nosuch/: answered 404 Not Found"
    long_ago = now() - timedelta(days=3)
    ops.record_crawl("old", "typo", outcome="failed", finished_at=long_ago, error="old reason")
    ran = fptrack("check", "crawls")
    assert ran.status == 0 and check_lines(ran.out)["crawls"].startswith("ok")  # 3 days ago
    ops.record_crawl("r1", "typo", outcome="failed", finished_at=now(), error=reason)
    ops.record_crawl_process(
        "r2", "stuck", "a1" * 16, run_started_at=long_ago, started_at=long_ago,
        outcome="running", slot=0,
    )  # fmt: skip
    old_page = CrawledPage("http://p/1", "stuck", "", "正文", fetched_at=now() - timedelta(hours=1))
    ops.store.store_crawled_page(old_page, "h1")  # pending: never matched
    ops.store.store_crawled_page(CrawledPage("http://p/2", "stuck", "", "正文二"), "h2")  # recent
    ran = fptrack("check", "crawls", "--json")
    assert ran.status == 1
    [crawls] = [c for c in json.loads(ran.out)["checks"] if c["name"] == "crawls"]
    assert crawls["state"] == "FAIL"
    assert f"1 crawl(s) failed in the last 1 d (typo); last: typo: {reason}" in crawls["detail"]
    assert (
        "1 crawl run(s) still recorded running past their time and lease (stuck)"
        in (crawls["detail"])
    )
    assert "1 page(s) waiting for their match for over 30 min" in crawls["detail"]
    assert "old reason" not in crawls["detail"]


def test_check_says_starting_while_a_worker_boots(
    mongo_db: Database, redis_client: redis.Redis
) -> None:
    """No worker answers, but one started on this host within the grace: ``starting``,
    exit 3, not FAIL; once its grace is over (its record expired), FAIL."""
    key = Keys("fptrack-test").starting("worker", this_host(), 4242)
    redis_client.set(key, now().isoformat(), ex=120)
    ran = fptrack("check", "workers", "--this-host")
    line = check_lines(ran.out)["workers"]
    assert ran.status == 3 and ran.err.strip() == "0 problem(s), 1 starting"
    assert line.startswith("starting") and "1 worker process(es) started" in line
    redis_client.delete(key)
    ran = fptrack("check", "workers")
    assert ran.status == 1 and check_lines(ran.out)["workers"].startswith("FAIL")


def test_check_finds_indexes_out_of_step(mongo_db: Database, redis_client: redis.Redis) -> None:
    sample = str(ROOT / "samples" / "works" / "lighthouse.txt")
    assert fptrack("works", "add", sample, "--no-match").status == 0
    assert "works: 1 stored, 1 indexed" in check_lines(fptrack("check").out)["indexes"]
    redis_client.flushdb()  # Redis lost its data: MongoDB still holds the fingerprints
    line = check_lines(fptrack("check").out)["indexes"]
    assert line.startswith("FAIL") and "32 of 32 tag groups lost" in line
    assert "fptrack index rebuild --if-incomplete" in line
    assert "rebuilt 32 of 32" in fptrack("index", "rebuild", "--if-incomplete").out
    assert check_lines(fptrack("check").out)["indexes"].startswith("ok")
    redis_client.delete(*redis_client.keys("*:works:*"))  # the works' index lost, not its markers
    line = check_lines(fptrack("check").out)["indexes"]
    assert line.startswith("FAIL") and "works: 1 stored, 0 indexed" in line
    assert fptrack("index", "rebuild").status == 0
    assert check_lines(fptrack("check").out)["indexes"].startswith("ok")
    # Another bucket count than the index was built with: found, and a rebuild mends it.
    other = {"FPTRACK_WINDOW_BUCKET_BITS": "12"}
    line = check_lines(fptrack("check", env=other).out)["indexes"]
    assert line.startswith("FAIL") and "bucket_bits" in line and "fptrack index rebuild" in line
    assert fptrack("index", "rebuild", env=other).status == 0
    assert check_lines(fptrack("check", env=other).out)["indexes"].startswith("ok")


def test_check_as_json(mongo_db: Database, redis_client: redis.Redis) -> None:
    ran = fptrack("check", "--json")
    report = json.loads(ran.out)
    assert ran.status == 1 and report["healthy"] is False
    assert {c["name"]: c["ok"] for c in report["checks"]}["mongodb"] is True


def test_crawl_wait_gives_up_after_its_timeout(mongo_db: Database) -> None:
    """No worker takes the crawl: ``--wait --timeout`` exits 4 with one line, and the
    crawl's message stays for a worker."""
    from matcher.celery_app import CRAWL_QUEUE

    broker = redis.Redis.from_url(os.environ["FPTRACK_BROKER_URL"])
    site = "http://127.0.0.1:9/"
    assert fptrack("sites", "add", site, "--name", "later", "--schedule", "never").status == 0
    try:
        ran = fptrack("crawl", "later", "--wait", "--timeout", "1", "--poll", "0.2")
        assert ran.status == 4, ran.err
        assert ran.err.strip() == "later: waited 1 s: the crawl is not started (is a worker up?)"
        assert broker.llen(CRAWL_QUEUE) == 1
    finally:
        broker.delete(CRAWL_QUEUE)
        broker.close()
