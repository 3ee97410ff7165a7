"""crawl_in_process on the shared reactor: reuse, timeouts, failures, JSON stats."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from crawler import reactor
from crawler.run import CrawlFailed, crawl_in_process, crawl_problem
from matcher.sites.site_config import SiteConfig, SiteConfigError
from tests.servers.fixture_site import FixtureSite, page
from tests.support.crawl import RecordingIngest

TEXT = "守塔人提着油灯一级一级爬上螺旋楼梯，灯室里很冷，远处的海面漆黑一片。"


def site_config(site: FixtureSite, name: str) -> SiteConfig:
    return SiteConfig.from_dict({"name": name, "start_urls": [site.url("/")]})


def test_many_crawls_in_one_process_share_one_reactor(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    with FixtureSite({"/": page(f"<p>{TEXT}</p>")}) as site:
        for round_ in range(3):
            stats = crawl_in_process([site_config(site, "lighthouse")], test_overrides)
            assert stats["lighthouse"]["fptrack/pages"] == 1
            assert len(ingest.calls) == round_ + 1
    json.dumps(stats)  # plain JSON values only
    threads = [t for t in threading.enumerate() if t.name == "fptrack-reactor"]
    assert len(threads) == 1 and threads[0].daemon
    with pytest.raises(RuntimeError, match="deadlock"):
        reactor.run_in_reactor(lambda: reactor.run_in_reactor(lambda: None), timeout=10)


def test_timeout_stops_the_crawl_gracefully(test_overrides: dict[str, Any]) -> None:
    """After the timeout no new request starts; one in flight ends by DOWNLOAD_TIMEOUT."""
    release = threading.Event()

    def slow() -> Iterator[bytes]:
        release.wait(20)
        yield f"<p>{TEXT}</p>".encode()

    pages = {
        "/": page('<a href="/slow">慢</a>'),
        "/slow": (200, {"Content-Type": "text/html"}, slow),
    }
    with FixtureSite(pages) as site:
        try:
            stats = crawl_in_process(
                [site_config(site, "slow")], {**test_overrides, "DOWNLOAD_TIMEOUT": 3}, timeout=1
            )
        finally:
            release.set()
    assert stats["slow"]["finish_reason"] == "shutdown"  # the timeout stopped it
    timeouts = "downloader/exception_type_count/scrapy.exceptions.DownloadTimeoutError"
    assert stats["slow"][timeouts] == 1  # cut by DOWNLOAD_TIMEOUT, not awaited to the end
    assert stats["slow"]["downloader/response_status_count/200"] == 1  # "/": /slow never was


def test_a_crawler_that_cannot_run_fails_after_the_others(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    with FixtureSite({"/": page(f"<p>{TEXT}</p>")}) as site:
        good, bad = site_config(site, "good"), site_config(site, "bad")
        crawl_in_process([good], test_overrides)  # warm: the same site works
        overrides = {**test_overrides, "FPTRACK_INGEST": object()}
        with pytest.raises(CrawlFailed, match="site bad: TypeError") as failed:
            crawl_in_process([bad], overrides)
        assert set(failed.value.errors) == {"bad"}
        assert "bad" in failed.value.stats


def test_site_names_must_be_distinct(test_overrides: dict[str, Any]) -> None:
    site = SiteConfig.from_dict({"name": "twice", "start_urls": ["http://127.0.0.1:9/"]})
    with pytest.raises(SiteConfigError, match="distinct"):
        crawl_in_process([site, site], test_overrides)


def test_crawl_problem() -> None:
    assert crawl_problem({"downloader/response_count": 3}) is None
    assert crawl_problem({"fptrack/errors/DNSLookupError": 1}) == (
        "no page could be fetched (DNSLookupError)"
    )
    assert crawl_problem({}) == "no page could be fetched"


def test_nothing_fetched_is_no_failure_once_the_run_state_is_gone() -> None:
    """Redis lost the frontier, or the lease, before anything was fetched: an interruption;
    a start URL that gave no page still fails the crawl."""
    assert crawl_problem({"fptrack/frontier/run_gone": 1}) is None
    assert crawl_problem({"finish_reason": "lease_lost"}) is None
    assert crawl_problem({"fptrack/frontier/run_gone": 0}) == "no page could be fetched"
    start = "start URL http://127.0.0.1:9/: connection refused"
    failed = {"fptrack/start_failed": 1, "fptrack/start_error": start}
    assert crawl_problem({**failed, "fptrack/frontier/run_gone": 1}) == start
