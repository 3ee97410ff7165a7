"""A crawl's deadline stops it even when it passes before the crawl started: the reactor had
not made the crawler yet, or the crawler was still opening its spider (Scrapy's own stop
acts only on a running engine, and such a stop was lost: the crawl ran to its end)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from crawler.run import crawl_in_process
from matcher.sites import SiteConfig
from tests.servers.fixture_site import FixtureSite, Resource

PAGES = 12
DELAY_S = 0.5
TEXT = "渡口的灯笼被风吹得左右摇晃，船家老周披着蓑衣蹲在石阶上抽旱烟，等最后一班客人。"


def slow_chain() -> dict[str, Resource]:
    """Pages 0..PAGES-1, each linking the next and answering after DELAY_S."""

    def slow(html: str) -> Resource:
        def body() -> Iterator[bytes]:
            time.sleep(DELAY_S)
            yield html.encode()

        return 200, {"Content-Type": "text/html; charset=utf-8"}, body

    pages = {}
    for n in range(PAGES):
        link = f'<a href="/{n + 1}.html">下一章</a>' if n + 1 < PAGES else ""
        pages[f"/{n}.html"] = slow(f"<html><body><p>第{n}章 {TEXT}</p>{link}</body></html>")
    return pages


def test_a_deadline_passed_before_the_crawl_started_still_stops_it(
    test_overrides: dict[str, Any],
) -> None:
    with FixtureSite(slow_chain()) as site:
        config = SiteConfig.from_dict(
            {"name": "late", "start_urls": [site.url("/0.html")], "obey_robots": False}
        )
        overrides = {**test_overrides, "CONCURRENT_REQUESTS": 1}
        stats = crawl_in_process([config], overrides, 0.001)["late"]
        assert stats["finish_reason"] == "shutdown"
        assert 0 < len(site.requested()) < PAGES  # stopped on the way, not run to its end
