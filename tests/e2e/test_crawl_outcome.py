"""A crawl's outcome is a fact everywhere: a real ``fptrack worker`` crawls a fixture site on
127.0.0.1 from a start URL that answers 404, then from a good one; ``fptrack crawl --wait``
exits with each outcome, the run record, ``fptrack sites list`` and ``fptrack check`` say
it, and the worker logs the failure in one line, with no traceback. The pages not crawled
(the 404, a page robots.txt forbids) are named with their URL and why in the run's stats,
by ``crawl --wait`` and by ``sites list --json``. While the worker boots,
``fptrack check workers`` says ``starting``, not FAIL."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from pymongo.database import Database

from matcher.keys import Keys
from matcher.store import Store
from tests.servers.fixture_site import FixtureSite, page
from tests.support.cli import fptrack
from tests.support.e2e import ROOT, sample
from tests.support.waits import eventually

STARTING_EXIT = 3


@pytest.fixture
def site() -> Iterator[FixtureSite]:
    text = sample("lighthouse.txt")[:600]
    links = '<a href="/2.html">下一章</a><a href="/3.html">附录</a>'
    pages = {
        "/robots.txt": (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /3.html\n"),
        "/": page(f"<html><body><p>{text}</p>{links}</body></html>"),
        "/2.html": page(f"<html><body><p>{text[::-1]}</p></body></html>"),
        "/3.html": page(f"<html><body><p>{text}</p></body></html>"),
    }
    with FixtureSite(pages) as served:
        yield served


@pytest.fixture
def worker_log(tmp_path: Path) -> Path:
    return tmp_path / "worker.log"


def start_worker(log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "admin.cli", "worker", "--concurrency", "1",
             "--loglevel", "WARNING"],
            env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def stop(process: subprocess.Popen[bytes]) -> None:
    """A warm shutdown (SIGTERM to the worker's main process only: SIGTERM to its pool
    child too would be a worker lost, with Celery's traceback), then the rest of its group."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # anything left of it


def test_a_failed_crawl_is_seen_everywhere(
    site: FixtureSite,
    broker: redis.Redis,
    redis_client: redis.Redis,
    mongo_db: Database,
    worker_log: Path,
) -> None:
    store = Store(mongo_db)
    store.ensure_indexes()
    typo, good = site.url("/nosuch/"), site.url("/")
    assert fptrack("sites", "add", typo, "--name", "typo", "--schedule", "never").status == 0
    assert fptrack("sites", "add", good, "--name", "good", "--schedule", "never").status == 0

    worker = start_worker(worker_log)
    try:
        # booting: its "starting" record is there before it answers a ping
        starting = Keys("fptrack-test").starting_pattern("worker")
        eventually(lambda: any(redis_client.scan_iter(starting)), 60, "the starting record")
        checked = fptrack("check", "workers")
        assert checked.status in (0, 1, STARTING_EXIT), checked.out
        if checked.status == 1:  # never FAIL while booting: it was up (its record gone) but
            assert not any(redis_client.scan_iter(starting)), checked.out  # not answering yet
        if checked.status == STARTING_EXIT:  # else it came up meanwhile: nothing to see
            assert "starting" in checked.out and "FAIL" not in checked.out
            assert "1 starting" in checked.err
        eventually(
            lambda: fptrack("check", "workers").status == 0, 90, "the worker to answer a ping"
        )
        assert not any(redis_client.scan_iter(starting))  # up: its record is gone

        failed = fptrack("crawl", "typo", "--wait", "--poll", "0.5", timeout=180)
        good_run = fptrack("crawl", "good", "--wait", "--poll", "0.5", timeout=180)
    finally:
        stop(worker)

    reason = f"start URL {typo}: answered 404 Not Found"
    assert failed.status == 1, failed.err
    assert "crawl of typo enqueued" in failed.out
    assert failed.err.strip().splitlines()[-1].startswith("typo: crawl failed: 0 page(s)")
    assert reason in failed.err and "Traceback" not in failed.err
    assert f"  http_404: {typo} (answered 404 Not Found)" in failed.err
    assert good_run.status == 0, good_run.err
    assert "good: crawl finished: 2 page(s), not crawled: 1 robots" in good_run.err
    forbidden = site.url("/3.html")
    assert f"  robots: {forbidden} (robots.txt forbids fptrack to crawl it)" in good_run.err
    assert "/3.html" not in site.requested()

    [run] = store.crawls.last_crawls("typo")
    assert run["outcome"] == "failed" and reason in run["error"]
    named = [{"reason": "http_404", "url": typo, "why": "answered 404 Not Found"}]
    assert run["stats"]["fptrack/not_crawled_urls"] == named  # as the store keeps it

    listed = fptrack("sites", "list", "--json")
    last = {s["name"]: s["last_crawl"] for s in json.loads(listed.out)}
    assert last["typo"]["outcome"] == "failed" and reason in last["typo"]["error"]
    assert last["typo"]["not_crawled"] == {"http_404": 1} and last["typo"]["errors"] == 1
    assert last["typo"]["not_crawled_urls"] == {
        "http_404": {"urls": [{"url": typo, "why": "answered 404 Not Found"}], "more": 0}
    }
    why = "robots.txt forbids fptrack to crawl it"
    assert last["good"]["not_crawled_urls"] == {
        "robots": {"urls": [{"url": forbidden, "why": why}], "more": 0}
    }
    assert (last["good"]["outcome"], last["good"]["pages"]) == ("finished", 2)
    assert last["good"]["matches"] == 0 and last["good"]["errors"] == 0
    text = fptrack("sites", "list").out
    assert "last crawl " in text and "failed, 0 page(s), 0 match(es), 1 error(s)" in text

    check = fptrack("check", "crawls")
    assert check.status == 1
    assert "FAIL" in check.out and "1 crawl(s) failed in the last 1 d (typo)" in check.out
    assert reason in check.out

    log = worker_log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log
    [line] = [x for x in log.splitlines() if "crawl_site(typo) failed" in x]
    assert reason in line
