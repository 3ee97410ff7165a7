"""A crawl's deadline stops it even when it passes before the crawl started: the reactor had
not made the crawler yet, or the crawler was still opening its spider (Scrapy's own stop
acts only on a running engine, and such a stop was lost: the crawl ran to its end)."""

from __future__ import annotations

from typing import Any

from crawler.run import crawl_in_process
from tests.crawler.test_frontier import CHAIN, chain_site, config
from tests.servers.fixture_site import FixtureSite


def test_a_deadline_passed_before_the_crawl_started_still_stops_it(
    test_overrides: dict[str, Any],
) -> None:
    with FixtureSite(chain_site(delay=0.5)) as site:  # 6 s to crawl to its end
        overrides = {**test_overrides, "CONCURRENT_REQUESTS": 1}
        stats = crawl_in_process([config(site)], overrides, 0.001)["chain"]
        assert stats["finish_reason"] == "shutdown"
        assert 0 < len(site.requested()) < CHAIN  # stopped on the way, not run to its end
