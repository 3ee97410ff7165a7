"""Incremental crawls of fixture sites into a real store (SecantusDB): sitemaps found through
robots.txt and /sitemap.xml, RSS and Atom feeds found on the start page, only new pages
fetched, stored ones asked for conditionally (304), lastmod refetches, hostile feeds."""

from __future__ import annotations

import gzip
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from crawler.run import crawl_in_process
from matcher.sites import crawl_runs
from matcher.sites.site_config import SiteConfig
from matcher.store import Store
from matcher.worker.ingest import Ingest
from tests.servers.fixture_site import FixtureSite, page

LINES = [
    "那天夜里雨下得很大，渡口的灯笼被风吹得左右摇晃，船夫把缆绳又紧了一圈。",
    "她提着一只竹篮走下石阶，篮里是给弟弟带的干粮和一封还没有拆开的家书。",
    "远处的钟声响了三下，镇上的狗跟着叫起来，河面上的雾气越来越浓。",
    "掌柜的把算盘往柜台上一放，说今年的米价又涨了，怕是撑不到开春。",
    "少年把剑横在膝上，望着窗外的月亮，想起师父临走前说过的那句话。",
    "第二天一早，码头上挤满了看热闹的人，谁也不知道那条船是从哪里来的。",
]


def chapter(
    n: int, last: int, extra: str = "", labels: tuple[str, str] = ("上一页", "下一页")
) -> tuple[int, dict[str, str], bytes]:
    """Chapter ``n`` of a novel of ``last`` chapters, with links to the previous and next
    one labelled ``labels`` (上一页 / 下一页) and an ETag."""
    prev = f'<a href="/book/{n - 1}.html">{labels[0]}</a>' if n > 1 else ""
    nxt = f'<a href="/book/{n + 1}.html">{labels[1]}</a>' if n < last else ""
    text = "".join(f"<p>{LINES[(n + i) % len(LINES)]}{n}</p>" for i in range(4)) + extra
    status, headers, body = page(
        f"<html><head><title>第{n}章</title></head><body><h1>第{n}章</h1>"
        f"<div id='content'>{text}</div>{prev}{nxt}</body></html>"
    )
    return status, {**headers, "ETag": f'"ch{n}-{len(body)}"'}, body


def index(chapters: int, head: str = "", body_extra: str = "") -> tuple[int, dict[str, str], bytes]:
    links = "".join(
        f'<li><a href="/book/{n}.html">第{n}章</a></li>' for n in range(1, chapters + 1)
    )
    return page(
        f"<html><head><title>目录</title>{head}</head>"
        f"<body><ul>{links}</ul>{body_extra}</body></html>"
    )


def sitemap(entries: list[tuple[str, str]], site: FixtureSite) -> tuple[int, dict[str, str], bytes]:
    urls = "".join(
        f"<url><loc>{site.url(path)}</loc>{f'<lastmod>{mod}</lastmod>' if mod else ''}</url>"
        for path, mod in entries
    )
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    )
    return 200, {"Content-Type": "application/xml"}, body.encode()


def rss(paths: list[str], site: FixtureSite) -> tuple[int, dict[str, str], bytes]:
    items = "".join(
        f"<item><title>t</title><link>{site.url(p)}</link>"
        "<pubDate>Fri, 27 Nov 2026 05:00:00 GMT</pubDate></item>"
        for p in paths
    )
    body = (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>x</title>{items}</channel></rss>'
    )
    return 200, {"Content-Type": "application/rss+xml"}, body.encode()


def atom(paths: list[str], site: FixtureSite) -> tuple[int, dict[str, str], bytes]:
    entries = "".join(
        f'<entry><title>t</title><link rel="alternate" href="{site.url(p)}"/>'
        "<updated>2026-11-27T05:00:00Z</updated></entry>"
        for p in paths
    )
    body = f'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">{entries}</feed>'
    return 200, {"Content-Type": "application/atom+xml"}, body.encode()


def crawl(site: FixtureSite, store: Store, incremental: bool, **overrides: Any) -> dict[str, Any]:
    config = SiteConfig(name="novel", start_urls=(site.url("/book/"),), max_depth=3)
    sent: list[str] = []
    settings = {
        "FPTRACK_INGEST": Ingest(store, sent.append),
        "AUTOTHROTTLE_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 5,
        "LOG_LEVEL": "WARNING",
        **overrides,
    }
    stats = crawl_in_process([config], settings, incremental=incremental)["novel"]
    assert stats["finish_reason"] == "finished"
    return stats


def stored_paths(store: Store) -> set[str]:
    return {d["url"].split("/", 3)[3] for d in store.db.pages.find({}, {"url": 1})}


def requests_since(site: FixtureSite, start: int) -> list[tuple[str, dict[str, str]]]:
    with site._lock:
        return list(site.requests[start:])


def test_full_then_incremental_fetches_only_new_pages_and_asks_stored_ones_conditionally(
    store: Store,
) -> None:
    with FixtureSite() as site:
        site.pages["/book/"] = index(3)
        for n in range(1, 4):
            site.pages[f"/book/{n}.html"] = chapter(n, 3)
        crawl(site, store, incremental=False)
        assert stored_paths(store) == {"book/1.html", "book/2.html", "book/3.html"}
        third = store.pages.page_by_url(site.url("/book/3.html"))
        assert third["etag"].startswith('"ch3-')

        # chapter 4 appears: in the index, and chapter 3 keeps its text (no link to it)
        site.pages["/book/"] = index(4)
        site.pages["/book/4.html"] = chapter(4, 4)
        before = len(site.requests)
        stats = crawl(site, store, incremental=True)
        requested = requests_since(site, before)
        paths = [path for path, _ in requested]

        assert "/book/4.html" in paths
        assert "/book/1.html" not in paths and "/book/2.html" not in paths
        [(_, headers)] = [(p, h) for p, h in requested if p == "/book/3.html"]  # 上一页 of 4
        assert headers["If-None-Match"].startswith('"ch3-')
        assert stats["fptrack/incremental/new"] == 1
        assert stats["fptrack/incremental/not_modified"] == 1
        assert stats["fptrack/incremental/unchanged"] == 1
        assert stats["fptrack/incremental/changed"] == 0
        assert stats["fptrack/http_status/304"] == 1
        assert stored_paths(store) == {f"book/{n}.html" for n in range(1, 5)}
        # the 304 moved chapter 3's fetch time on (a sitemap date before it will not ask again)
        assert store.pages.page_by_url(site.url("/book/3.html"))["fetched_at"] > third["fetched_at"]


def mobile_chapter(n: int, last: int) -> tuple[int, dict[str, str], bytes]:
    """Chapter ``n`` of a mobile novel site: linked to its neighbours by 上一章 / 下一章 only."""
    return chapter(n, last, labels=("上一章", "下一章"))


def mobile_home(last: int) -> tuple[int, dict[str, str], bytes]:
    return page(
        "<html><body><a href='/book/1.html'>开始阅读</a>"
        f"<a href='/book/{last}.html'>最新章节</a></body></html>"
    )


def test_chapters_linked_only_to_each_other_are_crawled_to_the_last_then_incrementally(
    store: Store,
) -> None:
    with FixtureSite() as site:
        site.pages["/book/"] = mobile_home(30)
        for n in range(1, 31):
            site.pages[f"/book/{n}.html"] = mobile_chapter(n, 30)
        crawl(site, store, incremental=False)  # max_depth 3: the chain is 30 chapters long
        assert stored_paths(store) == {f"book/{n}.html" for n in range(1, 31)}

        site.pages["/book/"] = mobile_home(33)
        for n in range(30, 34):
            site.pages[f"/book/{n}.html"] = mobile_chapter(n, 33)
        before = len(site.requests)
        stats = crawl(site, store, incremental=True)
        paths = {path for path, _ in requests_since(site, before)}
        # the newest chapter, then back along 上一章 while the chapters are new
        assert {"/book/31.html", "/book/32.html", "/book/33.html"} <= paths
        assert not paths & {f"/book/{n}.html" for n in range(2, 31)}
        assert stats["fptrack/incremental/new"] == 3
        assert stored_paths(store) == {f"book/{n}.html" for n in range(1, 34)}


def test_sitemap_named_in_robots_txt(store: Store) -> None:
    with FixtureSite() as site:
        site.pages["/book/"] = index(1)
        site.pages["/book/1.html"] = chapter(1, 1)
        site.pages["/hidden/7.html"] = chapter(7, 7)  # linked from nowhere but the sitemap
        site.pages["/robots.txt"] = (
            200,
            {"Content-Type": "text/plain"},
            f"User-agent: *\nAllow: /\nSitemap: {site.url('/maps/novel.xml.gz')}\n".encode(),
        )
        status, _, body = sitemap([("/hidden/7.html", "")], site)
        site.pages["/maps/novel.xml.gz"] = (
            status,
            {"Content-Type": "application/gzip"},
            gzip.compress(body),
        )
        stats = crawl(site, store, incremental=True)
        assert "/sitemap.xml" not in site.requested()
        assert "hidden/7.html" in stored_paths(store)
        assert stats["fptrack/incremental/sitemaps"] == 1
        assert stats["fptrack/incremental/listed"] == 1


def test_sitemap_xml_when_robots_txt_names_none(store: Store) -> None:
    with FixtureSite() as site:
        site.pages["/book/"] = index(1)
        site.pages["/book/1.html"] = chapter(1, 1)
        site.pages["/hidden/8.html"] = chapter(8, 8)
        site.pages["/sitemap.xml"] = sitemap([("/hidden/8.html", "2026-11-27")], site)
        crawl(site, store, incremental=True)
        assert "/sitemap.xml" in site.requested()
        assert stored_paths(store) == {"book/1.html", "hidden/8.html"}


@pytest.mark.parametrize(
    ("kind", "make"), [("application/rss+xml", rss), ("application/atom+xml", atom)]
)
def test_feed_announced_on_the_start_page(store: Store, kind: str, make: Any) -> None:
    with FixtureSite() as site:
        head = f'<link rel="alternate" type="{kind}" title="更新" href="/feed.xml">'
        site.pages["/book/"] = index(1, head)
        site.pages["/book/1.html"] = chapter(1, 1)
        site.pages["/latest/9.html"] = chapter(9, 9)  # only the feed links it
        site.pages["/feed.xml"] = make(["/latest/9.html"], site)
        stats = crawl(site, store, incremental=True)
        assert "/feed.xml" in site.requested()
        assert "latest/9.html" in stored_paths(store)
        assert stats["fptrack/incremental/feeds"] == 1


def test_a_newer_lastmod_refetches_a_stored_page_and_an_older_one_does_not(
    store: Store,
) -> None:
    with FixtureSite() as site:
        note = '<a href="/notes/1.html">作者的话</a>'
        site.pages["/book/"] = index(2, body_extra=note)
        site.pages["/book/1.html"] = chapter(1, 2)
        site.pages["/book/2.html"] = chapter(2, 2)
        site.pages["/notes/1.html"] = chapter(11, 11)
        crawl(site, store, incremental=False)
        assert "notes/1.html" in stored_paths(store)
        later = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
        site.pages["/sitemap.xml"] = sitemap(
            [("/notes/1.html", "2001-01-01"), ("/book/2.html", later)], site
        )
        site.pages["/book/2.html"] = chapter(
            2, 2, extra="<p>作者修订了这一章的结尾，补上了三百字。</p>"
        )
        before = len(site.requests)
        stats = crawl(site, store, incremental=True)
        requested = requests_since(site, before)
        paths = [p for p, _ in requested]
        assert "/book/2.html" in paths and "/notes/1.html" not in paths
        # chapter 1, the 上一页 of the refetched chapter 2, is only asked for conditionally
        assert all("If-None-Match" in h for p, h in requested if p == "/book/1.html")
        assert stats["fptrack/incremental/changed"] == 1
        assert "补上了三百字" in store.pages.page_by_url(site.url("/book/2.html"))["text"]


@pytest.mark.parametrize(
    "body",
    [
        b"<?xml version='1.0'?><rss><channel><item><link>http://x/1</link></item>",  # cut off
        b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;">]>'
        b"<rss><channel><item><link>&b;</link></item></channel></rss>",  # entities
        b"<rss><channel>" + b"<item><link>/x</link></item>" * 400 + b"</channel></rss>",  # huge
    ],
    ids=["malformed", "entities", "huge"],
)
def test_a_hostile_feed_is_one_line_and_the_crawl_completes(store: Store, body: bytes) -> None:
    with FixtureSite() as site:
        head = '<link rel="alternate" type="application/rss+xml" href="/feed.xml">'
        site.pages["/book/"] = index(1, head)
        site.pages["/book/1.html"] = chapter(1, 1)
        site.pages["/feed.xml"] = (200, {"Content-Type": "application/rss+xml"}, body)
        stats = crawl(site, store, incremental=True, FPTRACK_FEED_MAX_BYTES=8000)
        assert stats["fptrack/incremental/feed_problems"] == 1
        problem = stats["fptrack/incremental/feed_problem"]
        assert "\n" not in problem and problem.startswith(site.url("/feed.xml"))
        assert stored_paths(store) == {"book/1.html"}


def test_a_hostile_sitemap_is_one_line_and_the_crawl_completes(store: Store) -> None:
    with FixtureSite() as site:
        site.pages["/book/"] = index(1)
        site.pages["/book/1.html"] = chapter(1, 1)
        site.pages["/sitemap.xml"] = (200, {"Content-Type": "application/xml"}, b"\x00\xffnot xml")
        stats = crawl(site, store, incremental=True)
        assert stats["fptrack/incremental/feed_problems"] == 1
        assert "not a" in stats["fptrack/incremental/feed_problem"]
        assert stored_paths(store) == {"book/1.html"}


SLOW_TIMEOUT = 3
"""The crawl's DOWNLOAD_TIMEOUT in the slow-loris tests: Scrapy cancels a download, body
and all, at this deadline (each of its RETRY_TIMES tries)."""


def drip() -> Any:
    """A body sent one byte a second, without end (60 s at most, so a failed test ends)."""

    def body() -> Any:
        ends = time.monotonic() + 60
        while time.monotonic() < ends:
            yield b"<"
            time.sleep(1)

    return body


def test_a_slow_loris_sitemap_is_one_line_and_the_crawl_completes(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    with FixtureSite() as site:
        site.pages["/book/"] = index(1)
        site.pages["/book/1.html"] = chapter(1, 1)
        site.pages["/robots.txt"] = (
            200,
            {"Content-Type": "text/plain"},
            f"User-agent: *\nAllow: /\nSitemap: {site.url('/maps/slow.xml')}\n".encode(),
        )
        site.pages["/maps/slow.xml"] = (200, {"Content-Type": "application/xml"}, drip())
        stats = crawl(site, store, incremental=True, DOWNLOAD_TIMEOUT=SLOW_TIMEOUT)
        assert "/maps/slow.xml" in site.requested()
    assert stats["fptrack/incremental/feed_problems"] == 1
    problem = stats["fptrack/incremental/feed_problem"]
    assert problem == f"{site.url('/maps/slow.xml')}: not fetched (DownloadTimeoutError)"
    assert stored_paths(store) == {"book/1.html"}  # the start page, crawled all the same
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def test_a_slow_loris_robots_txt_is_one_line_and_the_crawl_completes(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Scrapy's robots.txt middleware gives up at DOWNLOAD_TIMEOUT and crawls the host as if
    robots.txt allowed everything: said in one line and counted; the incremental crawl's own
    fetch of it (for its sitemaps) gives up too, and /sitemap.xml is tried instead."""
    with FixtureSite() as site:
        site.pages["/book/"] = index(1)
        site.pages["/book/1.html"] = chapter(1, 1)
        site.pages["/robots.txt"] = (200, {"Content-Type": "text/plain"}, drip())
        site.pages["/hidden/8.html"] = chapter(8, 8)
        site.pages["/sitemap.xml"] = sitemap([("/hidden/8.html", "")], site)
        stats = crawl(site, store, incremental=True, DOWNLOAD_TIMEOUT=SLOW_TIMEOUT)
    robots = site.url("/robots.txt")
    assert stats["fptrack/robots_unread"] == 1
    line = stats["fptrack/robots_problem"]
    assert line.startswith(f"{robots} not read (DownloadTimeoutError: ")
    assert line.endswith("crawled as if it allowed everything")
    assert line in crawl_runs.problems(stats)
    assert stats["fptrack/incremental/feed_problems"] == 1
    assert stats["fptrack/incremental/feed_problem"].startswith(f"{robots}: not fetched")
    assert stored_paths(store) == {"book/1.html", "hidden/8.html"}
    said = [r for r in caplog.records if r.levelno >= logging.WARNING and robots in r.getMessage()]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert [r.getMessage() for r in said if r.name == "crawler.robots"] == [line]
