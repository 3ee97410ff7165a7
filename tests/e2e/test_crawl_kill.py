"""A production crawl process (``python -m crawler.run``) killed with SIGKILL mid-crawl and
started again stores what an undisturbed crawl stores: every page once, with its text, and
every page handed to a ``process_page`` task (or left pending for beat's sweep): none lost.
A page gets a second task only when the crawler was killed between sending its first and
recording it (``enqueued_hash``); the task is idempotent.

Both crawls write to the shared MongoDB-wire server and the test broker, each in a database
and a key prefix of its own.

A crawl task whose worker is killed with its whole process tree is not delivered again; its
run is closed ``interrupted`` with the pages it stored, then resumed to its end by beat's
``resume_crawls`` (the last test).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest
import redis
from pymongo.database import Database

from matcher.keys import Keys
from matcher.sites.site_config import SiteConfig
from matcher.store import Store
from matcher.worker import jobs
from matcher.worker.celery_app import CRAWL_QUEUE
from tests.servers.fixture_site import FixtureSite, Resource, page
from tests.support.e2e import ROOT, app, queued_pages, sample
from tests.support.waits import eventually

CHAPTERS = 120
TEXTS = [sample(n) for n in ("lighthouse.txt", "river-town.txt", "star-voyage.txt")]


def novel_site() -> dict[str, Resource]:
    """A catalogue of 120 chapter pages, each with text of its own, ten to a list page."""

    def html(body: str, links: list[tuple[str, str]]) -> Resource:
        anchors = "".join(f'<a href="{href}">{label}</a> ' for label, href in links)
        return page(f"<html><body><div id=c>{body}</div><p>{anchors}</p></body></html>")

    lists = [(f"第{k}卷", f"/list/{k}.html") for k in range(CHAPTERS // 10)]
    pages = {"/": html("", lists)}
    for k in range(CHAPTERS // 10):
        chapters = [(f"第{n}章", f"/c/{n}.html") for n in range(10 * k, 10 * k + 10)]
        pages[f"/list/{k}.html"] = html("", chapters)
    for n in range(CHAPTERS):
        text = TEXTS[n % 3]
        start = (n * 97) % (len(text) - 400)
        body = f"<p>第{n}章</p><p>{text[start : start + 400]}</p>"
        pages[f"/c/{n}.html"] = html(body, [("目录", f"/list/{n // 10}.html")])
    return pages


def crawl(site: FixtureSite, db: str, prefix: str) -> subprocess.Popen[str]:
    config = {"name": "novels", "start_urls": [site.url("/")], "obey_robots": False}
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FPTRACK_MONGO_DB": db,
        "FPTRACK_REDIS_PREFIX": prefix,
        "FPTRACK_CRAWL_LEASE": "3",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "crawler.run", "--site-json", json.dumps(config),
         "--log-level", "WARNING", "--announce"],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(process: subprocess.Popen[str]) -> int:
    """Wait for the crawl; its exit status, 0 or 3 (its slot still held by a dead process)."""
    _, err = process.communicate(timeout=240)
    assert process.returncode in (0, 3), err[-2000:]
    return process.returncode


def stored(store: Store) -> dict[str, Any]:
    pages = list(store.db.pages.find({}, {"url": 1, "text": 1, "content_hash": 1}))
    return {
        "pages": sorted((p["url"], p["text"], p["content_hash"]) for p in pages),
        "ids": {str(p["_id"]) for p in pages},
        "pending": {str(page_id) for page_id in store.page_marks.pending_pages()},
    }


@pytest.fixture
def site() -> Any:
    with FixtureSite(novel_site()) as served:
        yield served


def test_a_crawl_killed_mid_way_and_run_again_stores_what_an_undisturbed_one_does(
    site: FixtureSite, broker: redis.Redis, redis_client: redis.Redis, mongo_db: Database
) -> None:
    client = mongo_db.client
    names = {run: f"{mongo_db.name}-{run}" for run in ("calm", "killed")}
    try:
        assert finish(crawl(site, names["calm"], f"fptrack-calm-{uuid.uuid4().hex[:6]}")) == 0
        calm = stored(Store(client[names["calm"]]))
        calm_tasks = queued_pages(broker)
        broker.delete("fptrack")
        assert len(calm["pages"]) == CHAPTERS and set(calm_tasks) == calm["ids"]

        prefix = f"fptrack-killed-{uuid.uuid4().hex[:6]}"
        killed_store = Store(client[names["killed"]])
        first = crawl(site, names["killed"], prefix)
        eventually(lambda: killed_store.count("pages") >= CHAPTERS // 3, 120, "a third")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert killed_store.count("pages") < CHAPTERS, "the crawl ended before the kill"
        unmarked = {  # stored, their task maybe sent, the crawler killed before noting it
            str(p["_id"])
            for p in killed_store.db.pages.find({}, {"content_hash": 1, "enqueued_hash": 1})
            if p.get("enqueued_hash") != p["content_hash"]
        }
        assert len(unmarked) < 20
        while finish(crawl(site, names["killed"], prefix)) == 3:  # as resume_crawls does
            time.sleep(1)
        after = stored(killed_store)
        after_tasks = queued_pages(broker)
    finally:
        for name in names.values():
            client.drop_database(name)
    assert after["pages"] == calm["pages"]  # every page once, with the same text
    twice = {page_id for page_id, count in after_tasks.items() if count > 1}
    assert max(after_tasks.values()) <= 2 and twice <= unmarked
    assert set(after_tasks) | after["pending"] == after["ids"]  # none lost
    assert set(after_tasks) <= after["ids"]


def worker(queues: str) -> subprocess.Popen[bytes]:
    """An ``fptrack worker`` process (one child) with 3-second crawl leases, in a session of
    its own: its crawls' subprocesses die with it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FPTRACK_CRAWL_LEASE": "3"}
    return subprocess.Popen(
        [sys.executable, "-m", "admin.cli", "worker", "--queues", queues, "--concurrency", "1",
         "--loglevel", "WARNING"],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip


def kill(process: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    if process.poll() is None:
        os.killpg(process.pid, sig)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def test_a_crawl_whose_worker_died_is_closed_interrupted_then_resumed_to_its_end(
    site: FixtureSite, broker: redis.Redis, redis_client: redis.Redis, mongo_db: Database
) -> None:
    store = Store(mongo_db)
    store.ensure_indexes()
    store.sites.save_site(SiteConfig(name="novels", start_urls=(site.url("/"),), obey_robots=False))
    keys = Keys("fptrack-test")
    frontier = keys.crawl("novels")
    first = worker(CRAWL_QUEUE)
    try:
        app.send_task("fptrack.crawl_site", args=["novels"])
        eventually(lambda: store.count("pages") >= CHAPTERS // 3, 120, "a third of the pages")
    finally:
        kill(first)  # the worker, its pool child and the crawl subprocess
    in_flight = redis_client.zcard(frontier.inflight(0))
    # acknowledged as it started: no crawl message waits to be delivered again
    assert broker.llen(CRAWL_QUEUE) == 0 and broker.hlen("unacked") == 0
    [run] = store.crawls.last_crawls("novels")
    assert run["outcome"] == "running"

    # beat's resume_crawls once the lease has expired: the run is closed ...
    eventually(lambda: not redis_client.exists(frontier.slot_lock(0)), 30, "the lease to expire")
    # counted once the lease expired: a page write the crawl's ingest lanes sent just before
    # the kill may reach the server after it
    at_kill = store.count("pages")
    assert at_kill < CHAPTERS, "the crawl ended before the kill"
    assert jobs.close_lost_crawls(store, redis_client, keys) == [run["run_id"]]
    [closed] = store.crawls.last_crawls("novels")
    assert closed["outcome"] == "interrupted" and closed["lost"] == 1
    assert closed["stats"]["fptrack/pages"] == at_kill == store.count("pages")
    assert closed["finished_at"] is not None

    # ... and resumed by the task itself, on a new worker, to the end of the same run
    second = worker(f"fptrack,{CRAWL_QUEUE}")
    try:
        app.send_task("fptrack.resume_crawls")
        eventually(
            lambda: store.crawls.last_crawls("novels")[0]["outcome"] == "finished",
            240,
            "the resumed run",
        )
    finally:
        kill(second, signal.SIGTERM)
    [done] = store.crawls.last_crawls("novels")  # one run, not a new crawl
    assert done["run_id"] == run["run_id"] and done["crawlers"] == 2 and done["lost"] == 1
    assert store.count("pages") == CHAPTERS
    assert done["stats"]["fptrack/pages"] == CHAPTERS  # the dead process's pages too
    [resumed] = [p for p in done["processes"].values() if p["outcome"] == "finished"]
    # it went on from the frontier: only what was left and what was in flight at the kill
    assert resumed["stats"]["fptrack/pages"] <= CHAPTERS - at_kill + in_flight
    print(f"{at_kill} pages at the kill, {in_flight} in flight; the resumed process stored "
          f"{resumed['stats']['fptrack/pages']}")  # fmt: skip
