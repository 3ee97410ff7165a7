"""Crawls on a site's Redis frontier, in this process: requests through the queue, runs
stopped and resumed, finished and started over, slots, leases, ``max_pages``."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue

from crawler.frontier import REQUEST_CODEC
from crawler.lease import CrawlLease, RedisFrontiers
from crawler.run import BUSY, crawl_in_process
from crawler.spiders.site import DEPTH, SiteSpider
from matcher.keys import Keys
from matcher.sites.site_config import SiteConfig
from tests.servers.fixture_site import FixtureSite, Resource, page
from tests.support.crawl import RecordingIngest

PREFIX = "fptrack-test"
TEXT = "渡口的灯笼被风吹得左右摇晃，船家老周披着蓑衣蹲在石阶上抽旱烟，等最后一班客人。"
CHAIN = 12


def slow(html: str, delay: float) -> Resource:
    """A page that takes ``delay`` seconds to answer."""

    def body() -> Iterator[bytes]:
        time.sleep(delay)
        yield html.encode()

    return 200, {"Content-Type": "text/html; charset=utf-8"}, body


def chain_site(delay: float = 0.0) -> dict[str, Resource]:
    """Pages 0..CHAIN-1, each linking the next (page 0 is the start)."""
    pages = {}
    for n in range(CHAIN):
        link = f'<a href="/{n + 1}.html">下一章</a>' if n + 1 < CHAIN else ""
        html = f"<html><body><div id=content><p>第{n}章 {TEXT}</p></div>{link}</body></html>"
        pages[f"/{n}.html"] = slow(html, delay) if delay else page(html)
    return pages


def config(site: FixtureSite, **fields: Any) -> SiteConfig:
    values = {"name": "chain", "start_urls": [site.url("/0.html")], "obey_robots": False}
    return SiteConfig.from_dict({**values, "max_depth": 20, **fields})


@pytest.fixture
def frontiers(redis_client: redis.Redis) -> RedisFrontiers:
    return RedisFrontiers(redis_client, PREFIX, lease_seconds=3)


def test_requests_keep_callbacks_and_depth_through_the_queue(redis_client: redis.Redis) -> None:
    spider = SiteSpider(site={"name": "chain", "start_urls": ["http://novels.test/"]})
    queue = PriorityQueue(redis_client, spider, "q", serializer=REQUEST_CODEC)
    request = spider._request("http://novels.test/book/4_2.html", 3)
    request.meta["redirect_urls"] = ["http://novels.test/book/4-2.html"]
    request.headers["Referer"] = "http://novels.test/book/4.html"
    queue.push(request)
    [stored] = redis_client.zrange("q", 0, -1)
    assert stored.startswith(b"{") and b"\x80" not in stored  # JSON, never a pickle
    again = queue.pop()
    assert (again.url, again.meta[DEPTH], again.meta["redirect_urls"]) == (
        request.url,
        3,
        ["http://novels.test/book/4-2.html"],
    )
    assert again.callback == spider.parse and again.errback == spider.on_error
    assert again.headers["Referer"] == b"http://novels.test/book/4.html"
    with pytest.raises(TypeError, match="cannot store"):
        REQUEST_CODEC.dumps({"meta": {"when": object()}})


def test_a_stopped_crawl_resumes_and_a_finished_one_starts_over(
    frontiers: RedisFrontiers,
    redis_client: redis.Redis,
    ingest: RecordingIngest,
    test_overrides: dict[str, Any],
) -> None:
    keys = Keys(PREFIX).crawl("chain")
    overrides = {**test_overrides, "CONCURRENT_REQUESTS": 1}
    with FixtureSite(chain_site(delay=0.3)) as site:
        stopped = crawl_in_process([config(site)], overrides, 1.5, frontiers)["chain"]
        assert stopped["finish_reason"] == "shutdown"
        assert stopped["fptrack/frontier/ended_run"] == 0
        assert 0 < len(site.requested()) < CHAIN
        assert redis_client.zcard(keys.queue) == 1  # the next chapter, kept for the next run
        assert redis_client.exists(keys.run, keys.seen) == 2
        assert redis_client.keys(f"{PREFIX}:lock:*") == []  # the slot was given back
        run_id = stopped["fptrack/frontier/run_id"]
        site.pages.update(chain_site())  # the same pages, answered at once

        resumed = crawl_in_process([config(site)], overrides, None, frontiers)["chain"]
        assert resumed["fptrack/frontier/resumed"] == 1
        assert resumed["fptrack/frontier/run_id"] == run_id
        assert resumed["fptrack/frontier/ended_run"] == 1
        fetched = Counter(site.requested())
        assert fetched == Counter(f"/{n}.html" for n in range(CHAIN))  # each once, none missed
        assert redis_client.keys(f"{PREFIX}:*") == []

        again = crawl_in_process([config(site)], overrides, None, frontiers)["chain"]
        assert again["fptrack/frontier/resumed"] == 0
        assert again["fptrack/frontier/run_id"] != run_id
        assert Counter(site.requested()) == Counter({p: 2 for p in fetched})  # all fetched again
    assert len(ingest.calls) == 2 * CHAIN


def test_a_dead_process_requests_go_back_when_its_slot_is_taken(
    frontiers: RedisFrontiers, redis_client: redis.Redis, test_overrides: dict[str, Any]
) -> None:
    with FixtureSite(chain_site()) as site:
        dead = frontiers.lease(config(site))
        assert dead is not None
        dead._renewal.stop()  # it stops renewing, as a killed process does
        spider = SiteSpider(site=config(site))
        fingerprint = RFPDupeFilter(redis_client, "unused").request_fingerprint
        for n in (0, 5):
            request = spider._request(site.url(f"/{n}.html"), n)
            data = REQUEST_CODEC.dumps(request.to_dict(spider=spider))
            dead.frontier.push(dead.run_id, fingerprint(request), 0, data, dupes=True)
        assert dead.frontier.pop(dead.run_id, dead.slot) is not None  # in flight, never done
        redis_client.delete(dead.frontier.keys.slot_lock(dead.slot))  # its lease expired

        stats = crawl_in_process([config(site)], test_overrides, None, frontiers)["chain"]
    assert stats["fptrack/frontier/resumed"] == 1 and stats["fptrack/frontier/requeued"] == 1
    assert sorted(site.requested()) == sorted(f"/{n}.html" for n in range(CHAIN))


def test_every_slot_held_means_no_crawl(
    frontiers: RedisFrontiers, test_overrides: dict[str, Any]
) -> None:
    with FixtureSite(chain_site()) as site:
        held = frontiers.lease(config(site))
        try:
            stats = crawl_in_process([config(site)], test_overrides, None, frontiers)["chain"]
        finally:
            assert held is not None
            held.release()
        assert stats == {
            "finish_reason": BUSY,
            "fptrack/frontier/crawlers": 1,
            "fptrack/busy": "all 1 crawler slot(s) are held",
        }
        assert site.requested() == []


def test_max_pages_ends_the_run(
    frontiers: RedisFrontiers, redis_client: redis.Redis, test_overrides: dict[str, Any]
) -> None:
    with FixtureSite(chain_site()) as site:
        stats = crawl_in_process(
            [config(site, max_pages=3)], {**test_overrides, "CONCURRENT_REQUESTS": 1}, 30, frontiers
        )["chain"]
    assert stats["finish_reason"].startswith("closespider_")
    assert stats["fptrack/frontier/ended_run"] == 1
    assert redis_client.keys(f"{PREFIX}:*") == []  # the next crawl starts from the start URLs


def test_a_lost_lease_stops_the_crawl(
    frontiers: RedisFrontiers, redis_client: redis.Redis, test_overrides: dict[str, Any]
) -> None:
    def steal(site: SiteConfig, lease: CrawlLease) -> None:
        redis_client.delete(lease.frontier.keys.slot_lock(lease.slot))

    overrides = {**test_overrides, "CONCURRENT_REQUESTS": 1}
    with FixtureSite(chain_site(delay=0.4)) as site:
        stats = crawl_in_process([config(site)], overrides, 30, frontiers, on_lease=steal)
    assert stats["chain"]["finish_reason"] == "lease_lost"
    assert len(site.requested()) < CHAIN
