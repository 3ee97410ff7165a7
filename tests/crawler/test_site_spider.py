"""SiteSpider's callbacks on responses built offline (no network)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.test import get_crawler
from twisted.internet.error import DNSLookupError
from twisted.python.failure import Failure

from crawler.extract import SelectorError
from crawler.items import PageItem
from crawler.settings import crawl_settings
from crawler.spiders.site import DEPTH, SiteSpider
from matcher.sites import SiteConfig, SiteConfigError

PAGES = Path(__file__).parent / "pages"
BASE = "http://novels.test"
PART1 = "老周把船撑到河心，雨忽然小了，远处的镇子亮起了几盏灯，像是有人在等我们回去。"
PART2 = "船靠岸的时候天已经蒙蒙亮，码头上的搬运工正卸下第一批货，没有人注意到我们。"


def make_spider(max_parts: int = 50, **site: Any) -> SiteSpider:
    config = SiteConfig.from_dict({"name": "novels", "start_urls": [BASE + "/"], **site})
    settings = crawl_settings(config, {"FPTRACK_MAX_PARTS": max_parts})
    crawler = get_crawler(SiteSpider, settings.copy_to_dict())
    crawler.stats.open_spider()
    return SiteSpider.from_crawler(crawler, site=config)


def response(
    url: str,
    html: str | bytes,
    depth: int = 0,
    content_type: str = "text/html; charset=utf-8",
    status: int = 200,
    cb_kwargs: dict[str, Any] | None = None,
) -> HtmlResponse:
    body = html.encode("utf-8") if isinstance(html, str) else html
    request = Request(url, meta={DEPTH: depth}, cb_kwargs=cb_kwargs or {})
    return HtmlResponse(
        url, body=body, headers={"Content-Type": content_type}, status=status, request=request
    )


def chapter(text: str, *links: tuple[str, str]) -> str:
    anchors = " ".join(f'<a href="{href}">{label}</a>' for label, href in links)
    return (
        "<html><head><title>第四章 城里的舅舅</title></head><body>"
        f'<div class="nav"><a href="/">首页</a></div><h1>第四章 城里的舅舅</h1>'
        f'<div id="content">{text}</div><div class="page">{anchors}</div></body></html>'
    )


def split(results: Any) -> tuple[list[PageItem], list[Request]]:
    out = list(results)
    items = [o for o in out if isinstance(o, PageItem)]
    requests = [o for o in out if isinstance(o, Request)]
    assert len(items) + len(requests) == len(out)
    return items, requests


def stat(spider: SiteSpider, key: str) -> Any:
    return spider.crawler.stats.get_value(key)


def test_chapter_page_yields_one_item_and_follows_links() -> None:
    spider = make_spider()
    html = (PAGES / "chapter.html").read_text(encoding="utf-8")
    items, requests = split(spider.parse(response(BASE + "/book/17/3.html#top", html)))
    [item] = items
    assert item.url == BASE + "/book/17/3.html"
    assert (item.site, item.title, item.status, item.encoding) == (
        "novels",
        "第三章 雨夜渡口",
        200,
        "utf-8",
    )
    assert "渡口的灯笼被风吹得左右摇晃" in item.text and item.parts == []
    assert item.fetched_at.tzinfo is not None
    urls = {r.url for r in requests}
    assert BASE + "/book/17/4.html" in urls  # 下一章 is an ordinary link
    assert all(r.meta[DEPTH] == 1 and not r.dont_filter for r in requests)
    assert stat(spider, "fptrack/pages") == 1


def test_index_page_yields_links_only() -> None:
    spider = make_spider()
    html = (PAGES / "index.html").read_text(encoding="utf-8")
    items, requests = split(spider.parse(response(BASE + "/book/17/", html)))
    assert items == []
    assert {BASE + f"/book/17/{n}.html" for n in range(1, 7)} <= {r.url for r in requests}
    assert stat(spider, "fptrack/thin") == 1


def test_split_chapter_is_joined_into_one_item() -> None:
    spider = make_spider()
    first = chapter(PART1, ("下一页", "4_2.html"), ("下一章", "5.html"))
    items, requests = split(spider.parse(response(BASE + "/book/17/4.html", first, depth=2)))
    assert items == []  # held until the chapter is complete
    [cont] = [r for r in requests if r.url.endswith("4_2.html")]
    assert cont.dont_filter and cont.meta[DEPTH] == 2
    assert cont.callback == spider.parse_continuation
    assert cont.errback == spider.on_continuation_error
    assert BASE + "/book/17/5.html" in {r.url for r in requests}

    second = chapter(PART2, ("上一页", "4.html"), ("下一章", "5.html"))
    page2 = response(cont.url, second, depth=2, cb_kwargs=cont.cb_kwargs)
    items, requests = split(spider.parse_continuation(page2, **cont.cb_kwargs))
    [item] = items
    assert item.url == BASE + "/book/17/4.html"
    assert item.parts == [BASE + "/book/17/4.html", BASE + "/book/17/4_2.html"]
    assert item.text.index(PART1) < item.text.index(PART2)
    assert stat(spider, "fptrack/joined") == 1
    # A continuation reached again by an ordinary link is not an item of its own.
    again, _ = split(spider.parse(response(cont.url, second, depth=3)))
    assert again == []


def test_later_part_reached_first_waits_for_its_chain() -> None:
    spider = make_spider()
    second = chapter(PART2, ("上一页", "4.html"), ("下一页", "4_3.html"))
    items, requests = split(spider.parse(response(BASE + "/book/17/4_2.html", second)))
    assert items == []
    assert BASE + "/book/17/4.html" in {r.url for r in requests}  # leads to the first part


def test_join_off_yields_every_page() -> None:
    spider = make_spider(join_next_pages=False)
    first = chapter(PART1, ("下一页", "4_2.html"))
    items, requests = split(spider.parse(response(BASE + "/book/17/4.html", first)))
    assert [i.url for i in items] == [BASE + "/book/17/4.html"]
    assert not any(r.dont_filter for r in requests)


def test_failed_continuation_still_yields_the_parts_so_far() -> None:
    spider = make_spider()
    first = chapter(PART1, ("下一页", "4_2.html"))
    _, requests = split(spider.parse(response(BASE + "/book/17/4.html", first)))
    [cont] = [r for r in requests if r.dont_filter]
    failure = Failure(DNSLookupError("no such host"))
    failure.request = cont  # type: ignore[attr-defined]
    items, _ = split(spider.on_continuation_error(failure))
    [item] = items
    assert item.url == BASE + "/book/17/4.html" and PART1 in item.text and item.parts == []
    assert stat(spider, "fptrack/errors/DNSLookupError") == 1


def test_chain_stops_at_a_loop_and_at_the_parts_limit() -> None:
    spider = make_spider(max_parts=2)
    urls = [BASE + f"/c/1_{n}.html" for n in range(1, 5)]
    page1 = chapter(PART1, ("下一页", urls[1]))
    _, requests = split(spider.parse(response(urls[0], page1)))
    [cont] = [r for r in requests if r.dont_filter]
    page2 = chapter(PART2, ("下一页", urls[2]))
    items, requests = split(spider.parse_continuation(response(urls[1], page2), **cont.cb_kwargs))
    assert [i.parts for i in items] == [urls[:2]]  # the limit of 2 parts
    assert not any(r.dont_filter for r in requests)
    assert stat(spider, "fptrack/join_truncated") == 1

    spider = make_spider()
    _, requests = split(spider.parse(response(urls[0], page1)))
    [cont] = [r for r in requests if r.dont_filter]
    looping = chapter(PART2, ("下一页", urls[0]))  # "next" leads back to the first part
    items, requests = split(spider.parse_continuation(response(urls[1], looping), **cont.cb_kwargs))
    assert [i.parts for i in items] == [urls[:2]]
    assert not any(r.dont_filter for r in requests)


def test_non_html_and_undecodable_bodies_are_skipped_and_counted() -> None:
    spider = make_spider()
    png = Response(
        BASE + "/cover",
        body=b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        headers={"Content-Type": "image/png"},
        request=Request(BASE + "/cover", meta={DEPTH: 1}),
    )
    assert list(spider.parse(png)) == []
    binary = response(BASE + "/fake.html", b"<html>\x00\x01\x02\x03 binary", depth=1)
    assert list(spider.parse(binary)) == []
    assert stat(spider, "fptrack/non_html") == 1
    assert stat(spider, "fptrack/undecodable") == 1


def test_gbk_page_with_a_wrong_header_is_read_right() -> None:
    spider = make_spider()
    html = chapter(PART1).replace("<head>", '<head><meta charset="gbk">')
    page = response(BASE + "/gbk.html", html.encode("gbk"), content_type="text/html; charset=utf-8")
    [item] = split(spider.parse(page))[0]
    assert PART1 in item.text and item.encoding == "gb18030"


def test_include_exclude_and_depth_limit_links() -> None:
    links = [("甲", "/book/1.html"), ("乙", "/forum/2.html"), ("丙", "/book/3.zip")]
    links += [("丁", "/book/vip/4.html"), ("外", "http://other.test/book/5.html")]
    html = chapter(PART1, *links)
    spider = make_spider(include=[r"/book/"], exclude=[r"/vip/"], max_depth=2)
    _, requests = split(spider.parse(response(BASE + "/", html, depth=1)))
    # Offsite links are left to Scrapy's OffsiteMiddleware; file extensions are never fetched.
    assert {r.url for r in requests} == {BASE + "/book/1.html", "http://other.test/book/5.html"}
    _, deeper = split(spider.parse(response(BASE + "/x.html", html, depth=2)))
    assert deeper == []  # max_depth 2: a page at depth 2 is fetched, its links are not


def test_start_requests_and_configuration_forms() -> None:
    site = {"name": "novels", "start_urls": [BASE + "/a", BASE + "/b"], "max_depth": 0}
    spider = SiteSpider(site=json.dumps(site))
    assert spider.allowed_domains == ["novels.test"] and spider.max_depth == 0

    async def starts() -> list[Request]:
        return [r async for r in spider.start()]

    requests = asyncio.run(starts())
    assert [(r.url, r.meta[DEPTH]) for r in requests] == [(BASE + "/a", 0), (BASE + "/b", 0)]
    with pytest.raises(SiteConfigError, match="JSON"):
        SiteSpider(site="{not json")
    with pytest.raises(SiteConfigError, match="unknown site fields"):
        SiteSpider(site={"name": "x", "start_urls": [BASE], "colour": "red"})
    with pytest.raises(SiteConfigError):
        SiteSpider()
    with pytest.raises(SelectorError):
        SiteSpider(site={"name": "x", "start_urls": [BASE], "content_selector": "div[["})


def test_http_errors_and_ignored_requests_are_counted() -> None:
    spider = make_spider()
    not_found = response(BASE + "/gone.html", "<h1>404</h1>", status=404)
    failures = [Failure(HttpError(not_found)), Failure(IgnoreRequest("robots.txt"))]
    for failure in failures:
        failure.request = not_found.request  # type: ignore[attr-defined]
        assert list(spider.on_error(failure)) == []
    assert stat(spider, "fptrack/http_status/404") == 1
    assert stat(spider, "fptrack/ignored") == 1
