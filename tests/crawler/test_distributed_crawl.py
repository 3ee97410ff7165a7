"""Two crawler processes share one site's Redis frontier; one is killed (SIGKILL) mid-crawl.

The site has 611 pages, three levels deep under ``max_depth`` 3: hubs (link lists), books,
and chapters cut in two parts (下一页 / 上一页, the second part at the chapter's depth),
each chapter also linking a page one level too deep, which must never be fetched. Every
request the server answers is counted, so a page fetched twice or never is seen.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
import redis

from matcher.keys import Keys
from tests.conftest import TEST_REDIS_URL
from tests.servers.fixture_site import FixtureSite, Resource, page

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "fptrack-test"
HUBS, BOOKS = 10, 20
PAGES = 1 + HUBS + HUBS * BOOKS * 3
LEASE = 8.0
RECLAIM_GUARD_S = 120.0
"""How long the test waits for the survivor to put back a killed process's requests: a hang
guard (the survivor's own finish gets as long), far over the lease."""
PER_PROCESS = 16
"""The most requests one crawler process has in flight at once: ``CONCURRENT_REQUESTS``, as
the test crawl runs without a download delay (see ``crawler/settings.py``)."""
GATE_GUARD_S = 8.0
"""The longest a book page waits at the gate: under the crawl's 10 s download timeout."""
TEXT = "江南的雨总是下个不停，青石板路被洗得发亮，巷口的茶馆里坐满了躲雨的客人，说书人讲到"


def big_site() -> dict[str, Resource]:
    """The :data:`PAGES` pages (and the ``HUBS * BOOKS`` too deep ones) of the crawled site."""

    def html(body: str, *links: tuple[str, str]) -> Resource:
        anchors = "".join(f'<a href="{href}">{label}</a> ' for label, href in links)
        return page(f"<html><body><div id=content>{body}</div><p>{anchors}</p></body></html>")

    pages = {"/": html("", *((f"第{h}区", f"/hub/{h}.html") for h in range(HUBS)))}
    for h in range(HUBS):
        books = [(f"书{h}-{k}", f"/b/{h}/{k}.html") for k in range(BOOKS)]
        pages[f"/hub/{h}.html"] = html("", *books)
        for k in range(BOOKS):
            book, chapter = f"/b/{h}/{k}", f"{h}之{k}"
            pages[f"{book}.html"] = html(
                f"<p>书{chapter}简介：{TEXT}</p>", ("第一章", f"{k}/c.html")
            )
            pages[f"{book}/c.html"] = html(
                f"<p>第一章{chapter}上半：{TEXT}</p>",
                ("下一页", "c_2.html"),
                ("番外", "deeper.html"),
            )
            pages[f"{book}/c_2.html"] = html(
                f"<p>第一章{chapter}下半：{TEXT}</p>", ("上一页", "c.html")
            )
            pages[f"{book}/deeper.html"] = html(f"<p>太深了{chapter}：{TEXT}</p>")
    return pages


def expected_paths() -> set[str]:
    paths = {"/", *(f"/hub/{h}.html" for h in range(HUBS))}
    for h in range(HUBS):
        for k in range(BOOKS):
            paths |= {f"/b/{h}/{k}.html", f"/b/{h}/{k}/c.html", f"/b/{h}/{k}/c_2.html"}
    return paths


class Crowd:
    """A gate for the book pages: once closed, each waits until more than
    :data:`PER_PROCESS` of them wait (both processes are fetching them), or at most
    :data:`GATE_GUARD_S`, after which the gate stays open.

    A process that found the queue empty polls it again only at Scrapy's next heartbeat
    (5 s), so on a quick machine one process could crawl the whole site alone.
    """

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.waiting = 0
        self.open = True

    def close(self) -> None:
        with self.condition:
            self.open, self.waiting = False, 0

    def pass_through(self) -> None:
        with self.condition:
            if self.open:
                return
            self.waiting += 1
            if self.waiting > PER_PROCESS:
                self.open = True
                self.condition.notify_all()
            self.condition.wait_for(lambda: self.open, GATE_GUARD_S)
            self.open = True


@pytest.fixture(scope="module")
def books() -> Crowd:
    return Crowd()


@pytest.fixture(scope="module")
def site(books: Crowd) -> Iterator[FixtureSite]:
    pages = big_site()
    gated = {path: pages.pop(path) for path in list(pages) if path.count("/") == 3}

    def book(path: str) -> Resource:
        books.pass_through()
        return gated.get(path, (404, {"Content-Type": "text/html"}, b"no such book"))

    with FixtureSite(pages, generated={"/b/": book}) as served:
        yield served


class Crawler:
    """A ``tests.support.frontier_crawler`` process and what it announced."""

    def __init__(self, site: FixtureSite, tmp: Path, name: str) -> None:
        config = {"name": "big", "start_urls": [site.url("/")], "obey_robots": False}
        config |= {"max_depth": 3, "crawlers": 2, "content_selector": "#content"}
        self.stats_path = tmp / f"{name}.json"
        self.stderr: IO[str] = (tmp / f"{name}.log").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.frontier_crawler", "--site-json",
             json.dumps(config), "--redis-url", TEST_REDIS_URL, "--prefix", PREFIX,
             "--lease", str(LEASE), "--items-key", "items", "--stats", str(self.stats_path)],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE, stderr=self.stderr, text=True,
        )  # fmt: skip
        self.lease: dict[str, Any] = {}

    def announced(self) -> dict[str, Any]:
        """The lease line the process prints before crawling."""
        if not self.lease:
            assert self.process.stdout is not None
            self.lease = json.loads(self.process.stdout.readline())
        return self.lease

    def finish(self, timeout: float) -> dict[str, Any]:
        """Wait for a clean exit; the process's crawl stats."""
        assert self.process.wait(timeout) == 0, self.log()
        return json.loads(self.stats_path.read_text(encoding="utf-8"))

    def log(self) -> str:
        self.stderr.flush()
        return Path(self.stderr.name).read_text(encoding="utf-8")[-3000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.stderr.close()


def test_two_processes_one_killed_mid_crawl(
    site: FixtureSite, redis_client: redis.Redis, tmp_path: Path
) -> None:
    keys = Keys(PREFIX).crawl("big")
    first, second = Crawler(site, tmp_path, "first"), Crawler(site, tmp_path, "second")
    try:
        leases = [first.announced(), second.announced()]
        assert {lease["slot"] for lease in leases} == {0, 1}
        assert leases[0]["run_id"] == leases[1]["run_id"]  # one run, two processes

        while len(site.requests) < PAGES // 3:  # mid-crawl
            assert first.process.poll() is None and second.process.poll() is None
            time.sleep(0.02)
        # Kill a process that holds requests (on a loaded machine one may be between them).
        while not redis_client.zcard(keys.inflight(leases[0]["slot"])):
            if redis_client.zcard(keys.inflight(leases[1]["slot"])):
                first, second, leases = second, first, leases[::-1]
                break
            assert first.process.poll() is None and second.process.poll() is None
            time.sleep(0.005)
        first.process.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        first.process.wait(10)
        in_flight = {
            m.decode() for m in redis_client.zrange(keys.inflight(leases[0]["slot"]), 0, -1)
        }
        fetched_before = Counter(site.requested())
        assert in_flight, "the killed process held no request: it was not mid-crawl"

        while redis_client.zcard(keys.inflight(leases[0]["slot"])):
            assert second.process.poll() is None, "the crawl ended, the dead lease not reclaimed"
            # A hang guard, not a speed figure: the stats below show how it was reclaimed.
            assert time.monotonic() - killed_at < RECLAIM_GUARD_S, (
                "the dead lease was not reclaimed"
            )
            time.sleep(0.05)
        recovery = time.monotonic() - killed_at
        stats = second.finish(120)
        finished = time.monotonic() - killed_at
    finally:
        first.stop()
        second.stop()

    fetched = Counter(site.requested())
    twice = {path for path, n in fetched.items() if n > 1}
    missed = expected_paths() - set(fetched)
    stored = Counter(m.decode() for m in redis_client.lrange("items", 0, -1))
    reclaimed_urls = {json.loads(m)["url"] for m in in_flight}
    print(
        f"\n{PAGES}-page site, 2 processes, one SIGKILLed after {sum(fetched_before.values())} "
        f"fetches: {len(fetched)} pages fetched, {len(missed)} missed, {len(twice)} fetched "
        f"twice (the killed process held {len(in_flight)} in flight); recovered in "
        f"{recovery:.1f} s (lease {LEASE:g} s), crawl over {finished:.1f} s after the kill"
    )
    assert missed == set()
    assert set(fetched) == expected_paths()  # nothing deeper than max_depth
    assert {site.url(p) for p in twice} <= reclaimed_urls  # only the dead process's requests
    assert all(n <= 2 for n in fetched.values())
    assert len(stored) == HUBS * BOOKS * 3  # every page with text stored ...
    assert {u for u, n in stored.items() if n > 1} <= reclaimed_urls  # ... once, but those

    assert stats["finish_reason"] == "finished"
    assert stats["fptrack/frontier/ended_run"] == 1
    # Reclaimed by the lease mechanism: the survivor put back exactly what the dead process
    # held, and names that process's lease as lost.
    assert stats["fptrack/frontier/reclaimed"] == len(in_flight)
    assert stats["fptrack/frontier/lost_processes"] == [leases[0]["token"]]
    assert redis_client.keys(f"{PREFIX}:*") == []  # the finished run left nothing behind


def test_two_processes_share_the_crawl(
    site: FixtureSite, books: Crowd, redis_client: redis.Redis, tmp_path: Path
) -> None:
    site.requests.clear()
    books.close()
    crawlers = [Crawler(site, tmp_path, "one"), Crawler(site, tmp_path, "two")]
    try:
        runs = {c.announced()["run_id"] for c in crawlers}
        stats = [c.finish(120) for c in crawlers]
    finally:
        for crawler in crawlers:
            crawler.stop()
    fetched = Counter(site.requested())
    stored = Counter(m.decode() for m in redis_client.lrange("items", 0, -1))
    shares = [s["fptrack/pages"] for s in stats]
    print(f"\n{PAGES}-page site, 2 processes: pages stored by each {shares}")
    assert len(runs) == 1
    assert set(fetched) == expected_paths() and set(fetched.values()) == {1}  # once each
    assert len(stored) == sum(shares) == HUBS * BOOKS * 3 and set(stored.values()) == {1}
    # Both crawled (the book pages waited for both; on a loaded machine one's share may
    # still be small).
    assert min(shares) >= 10
    assert sorted(s["fptrack/frontier/ended_run"] for s in stats) == [0, 1]
    assert all(s["finish_reason"] == "finished" for s in stats)
    assert redis_client.keys(f"{PREFIX}:*") == []
