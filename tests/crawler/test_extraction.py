"""Main text, links and "next page" links of saved pages (tests/crawler/pages/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler import extract as extract_module
from crawler.extract import (
    PREV_PAGE_TEXTS,
    SEQUENCE_TEXTS,
    SelectorError,
    check_selector,
    content_chars,
    densest_block_text,
    extract,
    find_page_link,
    find_page_links,
    find_rel_link,
    page_links,
    parse_html,
    untracked,
)
from matcher.sites.site_config import DEFAULT_NEXT_PAGE_TEXTS

PAGES = Path(__file__).parent / "pages"
CHAPTER_LINES = [
    "那天夜里雨下得很大，渡口的灯笼被风吹得左右摇晃，船家老周披着蓑衣蹲在石阶上抽旱烟。",
    "我提着一只旧藤箱跑下堤坝，鞋子早已湿透，裤脚沾满了泥点，远远就听见河水拍打木桩的声音。",
    "我坐在船头，听着橹声一下一下地响，心里反复默念着母亲临走前交代的那句话：到了城里，先去找你舅舅。",
]
CHROME = ["玄幻小说", "排行榜单", "章节目录", "加入书签", "本站所有小说为转载作品", "Copyright"]
NEWS_PARAGRAPHS = [
    "本报讯 为改善古镇水环境，青溪镇自本月起试行河道分段保洁制度",
    "据了解，镇里还计划在河道沿线增设十二处垃圾分类投放点",
]
NEWS_CHROME = ["点击领取新人大礼包", "相关阅读", "古镇旅游旺季来临", "招聘信息", "版权所有", "财经"]


def saved(name: str) -> str:
    return (PAGES / name).read_text(encoding="utf-8")


def test_novel_chapter_in_site_chrome() -> None:
    page = extract(saved("chapter.html"), "http://novels.test/book/17/3.html")
    assert page.title == "第三章 雨夜渡口"
    lines = page.text.splitlines()
    for line in CHAPTER_LINES:
        assert line in lines  # one paragraph per line, indentation stripped
    for chrome in CHROME:
        assert chrome not in page.text
    assert page.own_chars >= sum(map(content_chars, CHAPTER_LINES))


def test_news_article_in_site_chrome() -> None:
    page = extract(saved("news.html"), "http://news.test/2024/0512/river.html")
    assert page.title == "江南古镇试行河道分段保洁 居民参与巡河"
    for paragraph in NEWS_PARAGRAPHS:
        assert paragraph in page.text
    for chrome in NEWS_CHROME:
        assert chrome not in page.text
    assert page.method == "trafilatura"


def test_chapter_index_has_no_own_text() -> None:
    page = extract(saved("index.html"), "http://novels.test/book/17/")
    assert page.own_chars < 20  # only links: not a page worth storing
    assert "第三章 雨夜渡口" not in page.text


def test_css_and_xpath_selectors() -> None:
    html = saved("chapter.html")
    by_css = extract(html, "http://novels.test/", selector="#content")
    by_xpath = extract(html, "http://novels.test/", selector="//div[@id='content']")
    assert by_css.method == by_xpath.method == "selector"
    assert by_css.text == by_xpath.text
    assert by_css.text.splitlines()[0] == CHAPTER_LINES[0]
    assert "手机用户请访问" not in by_css.text  # the ad sits outside #content
    texts = extract(html, "http://novels.test/", selector="//div[@id='content']/text()")
    assert CHAPTER_LINES[1] in texts.text.splitlines()
    nothing = extract(html, "http://novels.test/", selector=".no-such-class")
    assert nothing.text == "" and nothing.own_chars == 0


@pytest.mark.parametrize("selector", ["div[[", "//div[@id=", "(//p"])
def test_invalid_selectors_are_a_clear_error(selector: str) -> None:
    with pytest.raises(SelectorError, match="content_selector"):
        check_selector(selector)
    with pytest.raises(SelectorError):
        extract("<p>正文</p>", "http://x.test/", selector=selector)


@pytest.mark.parametrize(
    "html",
    [
        "",
        "   ",
        "<<<>>>&&&",
        "<html><body><div><p>未闭合的段落<div>嵌套错误<span></p></td></table>尾巴",
        "<html><head><title>只有标题",
        "<div id=content>第一段<br>第二段<br><script>var x = '<div>';</script>第三段",
        "\x0c<html>\x00</html>",
        "<?xml version='1.0'?><!DOCTYPE html><html><body>&nbsp;&#xD800;&bogus;</body></html>",
    ],
)
def test_malformed_html_never_raises(html: str) -> None:
    page = extract(html, "http://x.test/")
    assert isinstance(page.text, str) and isinstance(page.title, str)
    parsed = parse_html(html)
    assert isinstance(page_links(parsed, "http://x.test/"), list)
    assert find_page_link(parsed, "http://x.test/", DEFAULT_NEXT_PAGE_TEXTS) is None


def test_broken_markup_keeps_its_text() -> None:
    html = "<html><body><div id=content><p>雨夜渡口的故事<p>老周撑船过河<div>一直到天亮</td></body>"
    page = extract(html, "http://x.test/", selector="#content")
    assert page.text.splitlines() == ["雨夜渡口的故事", "老周撑船过河", "一直到天亮"]


def test_densest_block_on_a_table_layout() -> None:
    html = (
        "<html><body><table><tr><td class=left><a href=/>首页</a><br><a href=/a>分类一</a></td>"
        "<td><b>第九章 灯塔</b><br>　　海风把灯塔的门吹得吱呀作响。<br>　　守塔人点亮了灯。</td>"
        "</tr></table><div class=footer>旧站 版权所有</div></body></html>"
    )
    text = densest_block_text(parse_html(html))
    assert text.splitlines() == ["第九章 灯塔", "海风把灯塔的门吹得吱呀作响。", "守塔人点亮了灯。"]


def test_fallback_when_trafilatura_finds_nothing_or_too_little(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    html = saved("chapter.html")
    for result in (None, "", "手机用户请访问最新网址"):
        monkeypatch.setattr(extract_module.trafilatura, "extract", lambda *a, r=result, **k: r)
        page = extract(html, "http://novels.test/book/17/3.html")
        assert page.method == "densest"
        assert page.text.splitlines()[:2] == CHAPTER_LINES[:2]
        for chrome in CHROME:
            assert chrome not in page.text


def test_navigation_lines_are_dropped() -> None:
    nav = "".join(f'<li><a href="/c{i}">分类{i}</a></li>' for i in range(5))
    body = "<br>".join(["守塔人披上外衣，提着油灯爬上楼梯。", "灯室里很冷，远处的海面漆黑一片。"])
    html = f"<html><body><ul>{nav}</ul><div>{body}</div></body></html>"
    page = extract(html, "http://x.test/")
    assert "分类1" not in page.text
    assert "守塔人披上外衣，提着油灯爬上楼梯。" in page.text


def test_next_page_link_but_not_next_chapter() -> None:
    chapter = parse_html(saved("chapter.html"))  # has 下一章 and 上一章 only
    url = "http://novels.test/book/17/3.html"
    assert find_page_link(chapter, url, DEFAULT_NEXT_PAGE_TEXTS) is None
    assert find_page_link(chapter, url, PREV_PAGE_TEXTS) is None
    split = parse_html(
        '<div class="page"><a href="3.html">上一章</a> <a href="3_2.html"> [下一页] </a>'
        '<a href="/book/17/4.html">下一章→</a> <a href="3.html">上一页</a></div>'
    )
    assert find_page_link(split, url, DEFAULT_NEXT_PAGE_TEXTS) == (
        "http://novels.test/book/17/3_2.html"
    )
    assert find_page_link(split, url, ["下一章"]) == "http://novels.test/book/17/4.html"
    # 上一页 pointing at the page itself is not a link to another page.
    assert find_page_link(split, url, PREV_PAGE_TEXTS) is None
    english = parse_html('<a href="?page=2">Next Page &raquo;</a>')
    assert find_page_link(english, url, DEFAULT_NEXT_PAGE_TEXTS) == url + "?page=2"


def test_neighbour_chapters_are_every_chapter_link_but_no_page_link() -> None:
    url = "http://novels.test/book/17/3.html"
    chapter = parse_html(saved("chapter.html"))  # 上一章 and 下一章, at the top and bottom
    assert find_page_links(chapter, url, SEQUENCE_TEXTS) == (
        "http://novels.test/book/17/2.html",
        "http://novels.test/book/17/4.html",
    )
    paged = parse_html(
        '<a href="3_2.html">下一页</a><a href="/">首页</a><a href="3.html">下一章</a>'
    )
    assert find_page_links(paged, url, SEQUENCE_TEXTS) == ()  # nor a link to itself


def test_neighbours_named_in_the_head_only() -> None:
    url = "http://docs.test/guide/install.html"
    head = (
        '<head><link rel="stylesheet" href="s.css"><link rel="Prev" href="intro.html">'
        '<link rel="next" title="快速上手" href="quickstart.html?from=nav"></head>'
        "<body><button onclick=\"go('quickstart.html')\">下一页</button></body>"
    )
    page = parse_html(head)
    assert find_page_link(page, url, DEFAULT_NEXT_PAGE_TEXTS) is None  # a button, no link
    assert find_rel_link(page, url, {"next"}) == "http://docs.test/guide/quickstart.html"
    assert find_rel_link(page, url, {"prev", "previous"}) == "http://docs.test/guide/intro.html"
    assert find_rel_link(parse_html("<p>正文</p>"), url, {"next"}) is None


def test_frames_are_links() -> None:
    html = '<frameset><frame src="toc.html"><frame src="ch1.html"></frameset>'
    iframe = '<p>正文</p><iframe src="/read/12.html"></iframe>'
    assert page_links(parse_html(html), "http://d.test/a/") == [
        "http://d.test/a/toc.html",
        "http://d.test/a/ch1.html",
    ]
    assert page_links(parse_html(iframe), "http://d.test/a/") == ["http://d.test/read/12.html"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://n.test/12.html?from=next", "http://n.test/12.html"),
        ("http://n.test/12.html?from=40", "http://n.test/12.html?from=40"),  # an offset
        ("http://n.test/t?id=3&utm_source=wx&from=wap&t=9", "http://n.test/t?id=3&t=9"),
        ("http://n.test/t?q=%B6%C9&SPM=a.b.c", "http://n.test/t?q=%B6%C9"),
        ("http://n.test/list?page=2", "http://n.test/list?page=2"),
    ],
)
def test_tracking_parameters_are_dropped_and_the_rest_kept_as_written(
    url: str, expected: str
) -> None:
    assert untracked(url) == expected


def test_page_links_are_absolute_without_fragments() -> None:
    html = (
        '<head><base href="http://novels.test/book/17/"></head>'
        '<a href="1.html#top">一</a><a href="/about">关于</a><a href="#">顶部</a>'
        '<a href="javascript:void(0)">脚本</a><a href="mailto:a@b.c">信</a>'
        '<a href="http://other.test/x">外站</a><a href="1.html">重复</a>'
        '<area href="map.html"><a href="搜索?q=渡口">搜</a><a href="1.html?from=list">一</a>'
    )
    links = page_links(parse_html(html), "http://ignored.test/", encoding="gb18030")
    assert links == [
        "http://novels.test/book/17/1.html",
        "http://novels.test/about",
        "http://other.test/x",
        "http://novels.test/book/17/map.html",
        # the path in UTF-8, the query in the page's encoding, as browsers send them
        "http://novels.test/book/17/%E6%90%9C%E7%B4%A2?q=%B6%C9%BF%DA",
    ]
