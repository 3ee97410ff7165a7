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
from twisted.python.failure import Failure

from crawler.extract import SelectorError
from crawler.items import PageItem
from crawler.settings import crawl_settings
from crawler.spiders.site import ALIAS_MESSAGE, DEPTH, SiteSpider
from matcher.sites.site_config import SiteConfig, SiteConfigError
from tests.support.crawl import parsed

PAGES = Path(__file__).parent / "pages"
BASE = "http://novels.test"
PART1 = "老周把船撑到河心，雨忽然小了，远处的镇子亮起了几盏灯，像是有人在等我们回去。"
PART2 = "船靠岸的时候天已经蒙蒙亮，码头上的搬运工正卸下第一批货，没有人注意到我们。"


def make_spider(**site: Any) -> SiteSpider:
    config = SiteConfig.from_dict({"name": "novels", "start_urls": [BASE + "/"], **site})
    settings = crawl_settings(config)
    crawler = get_crawler(SiteSpider, settings.copy_to_dict())
    crawler.stats.open_spider()
    return SiteSpider.from_crawler(crawler, site=config)


def response(
    url: str,
    html: str | bytes,
    depth: int = 0,
    content_type: str = "text/html; charset=utf-8",
    status: int = 200,
) -> HtmlResponse:
    body = html.encode("utf-8") if isinstance(html, str) else html
    request = Request(url, meta={DEPTH: depth})
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
    out = parsed(results)
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
    assert "渡口的灯笼被风吹得左右摇晃" in item.text
    assert (item.next_url, item.prev_url) == ("", "")  # 上一章 / 下一章 are no page links
    assert item.fetched_at.tzinfo is not None
    depths = {r.url: r.meta[DEPTH] for r in requests}
    assert depths.pop(BASE + "/book/17/4.html") == 0  # 下一章: a sibling, at the page's depth
    assert depths.pop(BASE + "/book/17/2.html") == 0  # 上一章 too
    assert set(depths.values()) == {1} and not any(r.dont_filter for r in requests)
    assert stat(spider, "fptrack/pages") == 1


def test_index_page_yields_links_only() -> None:
    spider = make_spider()
    html = (PAGES / "index.html").read_text(encoding="utf-8")
    items, requests = split(spider.parse(response(BASE + "/book/17/", html)))
    assert items == []
    assert {BASE + f"/book/17/{n}.html" for n in range(1, 7)} <= {r.url for r in requests}
    assert stat(spider, "fptrack/thin") == 1


def test_every_part_of_a_split_chapter_is_an_item_with_its_neighbours() -> None:
    spider = make_spider()
    first = chapter(PART1, ("下一页", "4_2.html"), ("下一章", "5.html"))
    items, requests = split(spider.parse(response(BASE + "/book/17/4.html", first, depth=2)))
    [item] = items
    assert item.url == BASE + "/book/17/4.html" and PART1 in item.text
    assert (item.next_url, item.prev_url) == (BASE + "/book/17/4_2.html", "")
    depths = {r.url: r.meta[DEPTH] for r in requests}
    assert depths[BASE + "/book/17/4_2.html"] == 2  # a page of the same chapter: same depth
    assert depths[BASE + "/book/17/5.html"] == 2  # the next chapter: a sibling as well
    assert all(r.callback == spider.parse and not r.dont_filter for r in requests)

    second = chapter(PART2, ("上一页", "4.html"), ("下一章", "5.html"))
    [item], _ = split(spider.parse(response(BASE + "/book/17/4_2.html", second, depth=2)))
    assert item.url == BASE + "/book/17/4_2.html" and PART2 in item.text and PART1 not in item.text
    assert (item.next_url, item.prev_url) == ("", BASE + "/book/17/4.html")
    assert stat(spider, "fptrack/pages") == 2 and stat(spider, "fptrack/paged") == 2


def test_neighbour_pages_are_followed_past_the_depth_limit_and_include() -> None:
    spider = make_spider(max_depth=2, include=[r"/book/\d+/\d+\.html$"], exclude=[r"/vip/"])
    html = chapter(
        PART1,
        ("上一页", "/book/3/8.html"),
        ("下一页", "/book/3/8-p2.html"),
        ("甲", "/book/3/9.html"),
    )
    _, requests = split(spider.parse(response(BASE + "/book/3/8_x.html", html, depth=2)))
    assert {(r.url, r.meta[DEPTH]) for r in requests} == {
        (BASE + "/book/3/8.html", 2),
        (BASE + "/book/3/8-p2.html", 2),  # include does not apply to a chapter's next page
    }
    excluded = chapter(PART1, ("下一页", "/vip/8_2.html"))
    [item], requests = split(spider.parse(response(BASE + "/book/3/8.html", excluded, depth=2)))
    assert requests == [] and item.next_url == ""


def test_neighbour_chapters_are_followed_past_the_depth_limit_within_include() -> None:
    spider = make_spider(max_depth=2, include=[r"/book/\d+/\d+\.html$"], exclude=[r"/vip/"])
    html = chapter(
        PART1,
        ("上一章", "/vip/3/7.html"),
        ("【下一章】", "/book/3/9.html"),
        ("下一篇", "/forum/12.html"),
        ("甲", "/book/3/10.html"),
    )
    [item], requests = split(spider.parse(response(BASE + "/book/3/8.html", html, depth=2)))
    assert [(r.url, r.meta[DEPTH]) for r in requests] == [(BASE + "/book/3/9.html", 2)]
    assert (item.next_url, item.prev_url) == ("", "")  # a chapter is no part of this one


def test_join_off_records_no_neighbours() -> None:
    spider = make_spider(join_next_pages=False)
    first = chapter(PART1, ("下一页", "4_2.html"))
    [item], requests = split(spider.parse(response(BASE + "/book/17/4.html", first)))
    assert (item.url, item.next_url, item.prev_url) == (BASE + "/book/17/4.html", "", "")
    assert {r.url: r.meta[DEPTH] for r in requests}[BASE + "/book/17/4_2.html"] == 1


def test_non_html_and_undecodable_bodies_are_skipped_and_counted() -> None:
    spider = make_spider()
    png = Response(
        BASE + "/cover",
        body=b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        headers={"Content-Type": "image/png"},
        request=Request(BASE + "/cover", meta={DEPTH: 1}),
    )
    assert parsed(spider.parse(png)) == []
    binary = response(BASE + "/fake.html", b"\x00\x01\x02\x03\x89PNG binary", depth=1)
    assert parsed(spider.parse(binary)) == []
    assert stat(spider, "fptrack/non_html") == 1
    assert stat(spider, "fptrack/undecodable") == 1


def test_a_plain_text_download_is_a_page_of_its_whole_text() -> None:
    spider = make_spider()
    body = f"《渡口》 作者：佚名\r\n\r\n第一章 雨夜\r\n{PART1}\r\n第二章 天明\r\n{PART2}\r\n"
    txt = response(BASE + "/down/17.txt", body.encode("gbk"), 1, "text/plain")
    [item], requests = split(spider.parse(txt))
    assert (item.url, item.title, item.encoding) == (
        BASE + "/down/17.txt",
        "《渡口》 作者：佚名",
        "gb18030",
    )
    assert PART1 in item.text and PART2 in item.text and "\r" not in item.text
    assert requests == []  # no links in plain text
    markup = response(BASE + "/misnamed", chapter(PART1, ("下一页", "2.html")), 1, "text/plain")
    [item], requests = split(spider.parse(markup))  # markup served as text/plain: HTML
    assert PART1 in item.text and "<" not in item.text and item.next_url == BASE + "/2.html"
    binary = response(BASE + "/x.txt", b"\x00\x01\x02\x89PNG\x00\x00", 1, "text/plain")
    assert parsed(spider.parse(binary)) == []
    assert stat(spider, "fptrack/pages") == 2 and stat(spider, "fptrack/undecodable") == 1


def test_gbk_page_with_a_wrong_header_is_read_right() -> None:
    spider = make_spider()
    html = chapter(PART1).replace("<head>", '<head><meta charset="gbk">')
    page = response(BASE + "/gbk.html", html.encode("gbk"), content_type="text/html; charset=utf-8")
    [item] = split(spider.parse(page))[0]
    assert PART1 in item.text and item.encoding == "gb18030"


def test_include_exclude_and_depth_limit_links() -> None:
    links = [("甲", "/book/1.html"), ("乙", "/forum/2.html"), ("丙", "/book/3.jpg")]
    links += [("丁", "/book/vip/4.html"), ("外", "http://other.test/book/5.html")]
    links += [("TXT下载", "/book/6.zip"), ("EPUB下载", "/book/7.epub"), ("RAR下载", "/book/8.rar")]
    html = chapter(PART1, *links)
    spider = make_spider(include=[r"/book/"], exclude=[r"/vip/"], max_depth=2)
    _, requests = split(spider.parse(response(BASE + "/", html, depth=1)))
    # Offsite links are left to Scrapy's OffsiteMiddleware; file extensions are never fetched
    # but those of the downloads fptrack reads (zip, epub, 7z).
    assert {r.url for r in requests} == {
        BASE + "/book/1.html", "http://other.test/book/5.html",
        BASE + "/book/6.zip", BASE + "/book/7.epub",
    }  # fmt: skip
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
    outputs = []
    for failure in failures:
        failure.request = not_found.request  # type: ignore[attr-defined]
        outputs.append(list(spider.on_error(failure)))
    [[gone], ignored] = outputs  # a 404 says a page stored there was removed
    assert (gone.url, gone.status, ignored) == (BASE + "/gone.html", 404, [])
    assert stat(spider, "fptrack/http_status/404") == 1
    assert stat(spider, "fptrack/ignored") == 1


def test_a_queued_url_the_learnt_rule_reduces_another_fetch_to_is_not_fetched() -> None:
    """``/book/2.html`` queued while ``/book/2.html?t=5`` was fetched; a rule learnt since
    drops ``t`` on that pattern: the queued request is an alias, not fetched."""
    spider = make_spider()
    queued = Request(BASE + "/book/2.html", spider.parse)
    never_fetched = Request(BASE + "/book/3.html", spider.parse)
    split(spider.parse(response(BASE + "/book/2.html?t=5", chapter(PART2))))
    assert spider.skip_queued(queued) == ""  # no rule yet: t may change the page
    for t in range(4):  # the same body under other values of t: the rule's support
        parsed(spider.parse(response(f"{BASE}/book/1.html?t={t}", chapter(PART1))))
    assert stat(spider, "fptrack/rules/learnt") == 1
    assert spider.skip_queued(queued) == ALIAS_MESSAGE
    assert spider.skip_queued(never_fetched) == ""


def test_the_first_queried_links_of_a_path_pattern_go_early_the_rest_later() -> None:
    """A link whose path was already requested under another query may be a cache-buster:
    the first few of each path pattern (the sightings a rule needs, FPTRACK_DUST_THRESHOLD)
    are asked for at once, the others after the pages."""
    spider = make_spider()
    assert spider._request(BASE + "/book/1.html", 1).priority == 0
    queried = [spider._request(BASE + f"/book/1.html?t={n}", 1) for n in range(5)]
    assert [r.priority for r in queried] == [0, 0, 0, -1, -1]
    other = spider._request(BASE + "/book/2/", 1), spider._request(BASE + "/book/2/?t=1", 1)
    assert [r.priority for r in other] == [0, 0]  # another pattern: its own first sightings


def test_a_page_asked_for_under_a_dropped_parameter_is_not_asked_for_again() -> None:
    """A queued ``/book/5.html?t=9`` that goes after a rule dropping ``t`` was learnt stands
    for ``/book/5.html``: a link to that URL found later is not requested again."""
    spider = make_spider()
    queued = spider._request(BASE + "/book/5.html?t=9", 1)
    spider.urls.dust.rules["/book/*.html"] = {"t"}  # learnt meanwhile
    assert spider.skip_queued(queued) == ""  # the page's first request goes
    assert spider._request(BASE + "/book/5.html", 1) is None
    assert spider._request(BASE + "/book/5.html?t=10", 1) is None  # reduced by the rule
