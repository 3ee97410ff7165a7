"""Detection of script-built pages (:mod:`crawler.scripted`) through the real reader
(:func:`crawler.reading.read_page`), on pages shaped like those of the field: the two
techniques of :mod:`tests.sites.hiding_scripts` are flagged on every draw; plain chapters, chapter
lists, book pages and short pages without a building script never are, whatever scripts
(analytics, a login box fetched by ``$.get``, ads by ``document.write``) they carry."""

from __future__ import annotations

import random

import pytest

from crawler.reading import ReadJob, read_page
from tests.sites import hiding_scripts
from tests.sites.eval_corpus import make_sites
from tests.sites.script_site import SHELL, halves
from tests.sites.site_html import Pager, novel_book, novel_chapter, novel_list

TEXT = halves()[0]
LINES = [line for line in TEXT.splitlines() if line.strip()]
SITE = make_sites(random.Random(7), 1)[0]
PAGER = Pager(("1.html", "上一章"), "index.html", ("3.html", "下一章"))
ANALYTICS = (
    '<script src="https://hm.baidu.com/hm.js?0f1e2d3c"></script>'
    "<script>var _hmt=_hmt||[];(function(){var hm=document.createElement('script');"
    "hm.src='https://hm.baidu.com/hm.js';document.getElementsByTagName('head')[0]"
    ".appendChild(hm);})();</script>"
)
LOGIN = (
    '<div id="login"></div><script src="/js/jquery.min.js"></script><script>'
    "$.get('/user/status.php',function(d){$('#login').html(d);});</script>"
)
ADS = "<script>document.write('<script src=\"/ads/banner.js\"><\\/script>');</script>"


def flagged(html: str) -> bool:
    job = ReadJob(body=html.encode("utf-8"), content_type="text/html", url="http://h/b/2.html")
    return read_page(job).needs_browser


def with_scripts(html: str, scripts: str) -> str:
    return html.replace("</body>", scripts + "</body>")


@pytest.mark.parametrize("seed", range(40))
def test_every_script_built_chapter_is_flagged(seed: int) -> None:
    rng = random.Random(seed)
    lines = LINES[rng.randrange(20) :][: rng.randrange(5, 60)]
    hidden = hiding_scripts.disguise("第二章 灯塔", "\n".join(lines), rng)
    assert flagged(hidden.html)
    assert flagged(with_scripts(hidden.html, ANALYTICS + LOGIN))


def test_the_render_tests_shell_is_flagged() -> None:
    assert flagged(SHELL.replace("ENDPOINT", "/api/chapter/1.json"))


@pytest.mark.parametrize("br_style", [True, False])
@pytest.mark.parametrize("scripts", ["", ANALYTICS, LOGIN, ADS, ANALYTICS + LOGIN + ADS])
def test_plain_chapters_lists_and_book_pages_are_never_flagged(
    br_style: bool, scripts: str
) -> None:
    chapter = novel_chapter(
        "b/2.html", "第二章", LINES, "灯塔", SITE, PAGER, "index.html", br_style
    )
    entries = [(f"{n}.html", f"第{n}章 灯塔") for n in range(1, 200)]
    listing = novel_list("index.html", "灯塔", entries, ["index.html"], SITE)
    book = novel_book("book.html", "灯塔", "某人", LINES[:2], "index.html", entries[:12], SITE)
    for page in (chapter, listing, book):
        assert not flagged(with_scripts(page, scripts))


@pytest.mark.parametrize("scripts", ["", ANALYTICS, LOGIN, ADS])
def test_short_pages_without_a_building_script_are_not_flagged(scripts: str) -> None:
    short = novel_chapter("b/2.html", "第二章", LINES[1:2], "灯塔", SITE, PAGER, "index.html", True)
    empty = '<html><body><h1>公告</h1><div id="content"></div><p>本站已改版。</p></body></html>'
    notice = "<html><body><p>页面加载中</p><p>本站已停止更新，请访问新站。</p></body></html>"
    assert not flagged(with_scripts(short, scripts))
    assert not flagged(with_scripts(empty, scripts))
    assert not flagged(notice)  # a placeholder without any script


def test_flagged_shapes_named_in_the_docstring() -> None:
    payload = "5Lit5paH" * 40
    document_write = (
        '<html><body><h1>第一章</h1><div id="content"></div><script>document.write('
        f'decodeURIComponent(escape(atob("{payload}"))));</script></body></html>'
    )
    external = (
        '<html><body><h1>第一章</h1><div id="txt">正在加载中，请稍候…</div>'
        '<script src="/js/chapter.js"></script></body></html>'
    )
    noscript = (
        '<html><body><h1>第一章</h1><div id="box"></div><noscript>请开启JavaScript后阅读'
        "</noscript><script>fetch('/c/1').then(r=>r.text()).then(t=>{"
        "document.getElementById('box').innerHTML=t});</script></body></html>"
    )
    for page in (document_write, external, noscript):
        assert flagged(page)


@pytest.mark.parametrize("seed", range(6))
def test_a_chapter_hidden_until_a_script_shows_it_is_flagged(seed: int) -> None:
    """The chapter is in the HTML, but the page's stylesheet hides it until a script shows
    it: only a browser tells what a person sees. Hidden without any script, it is not."""
    hidden = hiding_scripts.disguise_reveal("第二章 灯塔", "\n".join(LINES), random.Random(seed))
    assert flagged(hidden.html)
    without_script = hidden.html.split("<script>")[0] + "</body></html>"
    assert "display" in without_script or "visibility" in without_script
    assert not flagged(without_script)


def test_a_list_page_with_a_hidden_menu_is_not_flagged() -> None:
    entries = [(f"{n}.html", f"第{n}章 灯塔") for n in range(1, 200)]
    listing = novel_list("index.html", "灯塔", entries, ["index.html"], SITE)
    menu = "".join(f'<li><a href="/sort/{n}/">分类{n}小说排行榜</a></li>' for n in range(80))
    hidden_menu = f'<style>.m{{display:none}}</style><ul class="m">{menu}</ul>'
    assert not flagged(with_scripts(listing.replace("<body>", "<body>" + hidden_menu), ANALYTICS))
