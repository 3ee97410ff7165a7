"""The link rules on saved pages of real site shapes (offline ``HtmlResponse`` objects).

Each shape's pages are parsed by the spider: every page is an item of its own with its
"next page" / "previous page" links, and :func:`matcher.matching.split.continues` tells the parts of
a split chapter (or a paginated thread) from whole pages that merely link their neighbours
(a DocBook or Sphinx manual, a novel whose chapters link with 上一页/下一页).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from crawler.items import PageItem
from crawler.settings import crawl_settings
from crawler.spiders.site import DEPTH, SiteSpider
from matcher.matching.split import Part, continues
from matcher.sites.site_config import SiteConfig
from tests.support.crawl import parsed

SHAPES = Path(__file__).parent / "pages" / "shapes"
HOST = "http://shape.test"


def parse(name: str, url: str, charset: str = "utf-8") -> tuple[PageItem, list[Request]]:
    config = SiteConfig.from_dict({"name": "shapes", "start_urls": [HOST + "/"]})
    crawler = get_crawler(SiteSpider, crawl_settings(config).copy_to_dict())
    crawler.stats.open_spider()
    spider = SiteSpider.from_crawler(crawler, site=config)
    body = (SHAPES / name).read_text(encoding="utf-8").encode(charset)
    headers = {"Content-Type": f"text/html; charset={charset}"}
    response = HtmlResponse(url, body=body, headers=headers, request=Request(url, meta={DEPTH: 1}))
    out = parsed(spider.parse(response))
    [item] = [o for o in out if isinstance(o, PageItem)]
    return item, [o for o in out if isinstance(o, Request)]


def part(item: PageItem) -> Part:
    return Part(item.url, item.title, item.next_url, item.prev_url)


def test_docbook_sections_link_their_neighbours_but_are_whole_pages() -> None:
    first, requests = parse("docbook-ch02s03.html", HOST + "/ref/ch02s03.html")
    second, _ = parse("docbook-ch02s04.html", HOST + "/ref/ch02s04.html")
    assert first.title == "2.3. 安装软件包" and "应当先更新软件包索引" in first.text
    assert "上一页" not in first.text and "起始页" not in first.text
    assert (first.prev_url, first.next_url) == (HOST + "/ref/ch02s02.html", second.url)
    assert second.prev_url == first.url
    assert {r.url: r.meta[DEPTH] for r in requests}[second.url] == 1  # followed, same depth
    assert not continues(part(first), part(second))


def test_sphinx_pages_link_their_neighbours_but_are_whole_pages() -> None:
    first, _ = parse("sphinx-install.html", HOST + "/docs/install.html")
    second, _ = parse("sphinx-quickstart.html", HOST + "/docs/quickstart.html")
    assert (first.prev_url, first.next_url) == (HOST + "/docs/intro.html", second.url)
    assert second.prev_url == first.url and "创建一个独立的虚拟环境" in first.text
    assert not continues(part(first), part(second))


def test_novel_chapters_linked_by_next_chapter_have_no_page_links() -> None:
    item, requests = parse("novel-chapter.html", HOST + "/book/88/12.html")
    assert "渡口的老槐树下" in item.text and (item.next_url, item.prev_url) == ("", "")
    depths = {r.url: r.meta[DEPTH] for r in requests}
    assert depths[HOST + "/book/88/13.html"] == 1  # 下一章: a sibling, at the page's depth


def test_novel_chapters_linked_by_next_page_are_whole_chapters() -> None:
    first, _ = parse("novel-paged-chapter.html", HOST + "/book/88/12.html")
    second, _ = parse("novel-paged-chapter-next.html", HOST + "/book/88/13.html")
    assert first.next_url == second.url and second.prev_url == first.url
    assert not continues(part(first), part(second))  # 第十二章 and 第十三章 differ


@pytest.mark.parametrize("charset", ["utf-8", "gbk"])
def test_split_chapter_parts_continue_each_other(charset: str) -> None:
    first, _ = parse("split-part1.html", HOST + "/book/21/5.html", charset)
    second, _ = parse("split-part2.html", HOST + "/book/21/5_2.html", charset)
    assert "舰桥上的灯光" in first.text and "引擎的轰鸣声" not in first.text
    assert "引擎的轰鸣声" in second.text
    assert first.next_url == second.url and second.prev_url == first.url
    assert continues(part(first), part(second)) and not continues(part(second), part(first))


def test_paginated_thread_pages_continue_each_other() -> None:
    first, _ = parse("forum-thread-p1.html", HOST + "/viewthread.php?tid=88")
    second, _ = parse("forum-thread-p2.html", HOST + "/viewthread.php?tid=88&page=2")
    assert first.next_url == second.url
    assert second.prev_url == HOST + "/viewthread.php?page=1&tid=88"  # canonical form
    assert continues(part(first), part(second))
