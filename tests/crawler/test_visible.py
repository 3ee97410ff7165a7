"""The page's own CSS cascade (crawler/visible.py): what a browser does not show is dropped
from the text, what it shows is kept; read through crawler.reading.read_page."""

from __future__ import annotations

import time

import pytest

from crawler.extract import parse_html
from crawler.reading import PageAssets, ReadJob, read_page
from crawler.visible import (
    MAX_CSS_CHARS,
    MAX_SELECTORS,
    make_visible,
    media_applies,
    parse_sheet,
)

URL = "http://site.test/book/1/1000.html"


def shown(body: str, head: str = "", sheets: tuple[tuple[str, str], ...] = ()) -> str:
    """The body's text once what a browser hides is dropped, whitespace removed."""
    page = parse_html(f"<html><head>{head}</head><body>{body}</body></html>")
    make_visible(page.root, URL, sheets)
    return "".join("".join(page.root.find("body").itertext()).split())


@pytest.mark.parametrize(
    "hiding",
    [
        "display:none",
        "visibility:hidden",
        "visibility:collapse",
        "font-size:0",
        "font-size:0.01em",
        "font:0/0 a",
        "opacity:0",
        "opacity:0%",
        "display:inline-block;width:0;overflow:hidden",
        "display:block;height:0;overflow:hidden",
        "float:left;max-width:0;overflow:hidden",
        "position:absolute;left:-9999px",
        "position:fixed;top:-10000px",
        "position:relative;left:-200em",
        "display:block;text-indent:-9999px",
        "display:inline-block;transform:translateX(-9999px)",
        "display:inline-block;transform:scale(0)",
        "position:absolute;clip:rect(0 0 0 0)",
        "position:absolute;clip:rect(0,0,0,0)",
        "clip-path:inset(50%)",
        "clip-path:circle(0)",
        "color:transparent",
        "color:rgba(0,0,0,0)",
        "color:#fff",
        "color:#FEFEFE",
        "color:white",
        "color:rgb(255, 255, 255)",
        "-webkit-text-fill-color:transparent",
        "content-visibility:hidden",
    ],
)
def test_each_way_of_hiding_drops_the_noise(hiding: str) -> None:
    body = '<p>天地<span class="n">噪</span>玄黄</p>'
    assert shown(body, f"<style>.n{{{hiding}}}</style>") == "天地玄黄"
    assert shown(f'<p>天地<span style="{hiding}">噪</span>玄黄</p>') == "天地玄黄"


def test_what_a_browser_shows_is_kept() -> None:
    # a span is inline: width and height do not apply, its text overflows and is seen
    assert shown('<p>天<span style="width:0;overflow:hidden">地</span></p>') == "天地"
    # zero size without overflow hidden: the text overflows the box and is seen
    assert shown('<p>天<span style="display:inline-block;width:0">地</span></p>') == "天地"
    # off-screen only when positioned
    assert shown('<p>天<span style="left:-9999px">地</span></p>') == "天地"
    # small but readable, grey on white, white on a dark background
    assert shown('<p style="font-size:10px;color:#999">天地</p>') == "天地"
    assert shown('<div style="background:#222"><p style="color:#fff">天地</p></div>') == "天地"
    assert shown(
        '<table bgcolor="black"><tr><td><font color="white">天地</font></td></tr></table>'
    ) == ("天地")
    # white text over a background image is seen (the image is behind it)
    assert (
        shown('<div style="background:url(bg.png)"><font color="#fff">天地</font></div>') == "天地"
    )
    # and with a shadow
    assert shown('<p style="color:#fff;text-shadow:0 0 2px #000">天地</p>') == "天地"
    # print-only and narrow-screen rules do not apply to a desktop browser
    head = (
        "<style>@media print{.n{display:none}} @media (max-width:600px){.n{display:none}}</style>"
    )
    assert shown('<p>天<span class="n">地</span></p>', head) == "天地"


def test_the_cascade_decides() -> None:
    head = "<style>#c .n{display:none} div#c span.n.k{display:inline}</style>"
    assert shown(
        '<div id="c">天<span class="n">噪</span><span class="n k">地</span></div>', head
    ) == ("天地")
    # later rule of equal specificity wins; !important beats a more specific rule
    head = "<style>.n{display:none} .n{display:inline}</style>"
    assert shown('<p>天<span class="n">地</span></p>', head) == "天地"
    head = "<style>.n{display:none!important} #x{display:inline}</style>"
    assert shown('<p>天<span class="n" id="x">噪</span>地</p>', head) == "天地"
    # the style attribute beats the sheet; the hidden attribute yields to author CSS
    head = "<style>.n{display:none}</style>"
    assert shown('<p>天<span class="n" style="display:inline">地</span></p>', head) == "天地"
    assert shown("<p>天<span hidden>噪</span>地</p>") == "天地"
    assert shown('<p>天<span hidden style="display:inline">地</span></p>') == "天地"


def test_inheritance() -> None:
    # visibility: a visible child of a hidden parent is seen, the parent's own text is not
    body = '<div style="visibility:hidden">噪<p style="visibility:visible">天地</p>噪</div>'
    assert shown(body) == "天地"
    # font size 0 inherited, a child with a size of its own is seen; em compounds
    body = '<div style="font-size:0">噪<span style="font-size:16px">天</span><b>噪</b></div>'
    assert shown(body) == "天"
    assert (
        shown('<div style="font-size:0.1em"><span style="font-size:0.1em">噪</span>天</div>') == ""
    )
    # the colour is inherited, and compared with the nearest background
    head = "<style>.bg{background-color:#f5f1e6;color:#333} .n{color:#F5F1E6}</style>"
    body = '<div class="bg">天<i class="n">噪</i>地<p style="color:#f5f1e6">噪<b>噪</b></p></div>'
    assert shown(body, head) == "天地"
    # display: none drops the whole subtree whatever its children say, never what follows
    body = '<div><p style="display:none">噪<span style="display:inline">噪</span></p>天地</div>'
    assert shown(body) == "天地"
    # custom properties and var()
    head = "<style>:root{--hide:none} .n{display:var(--hide)}</style>"
    assert shown('<p>天<span class="n">噪</span>地</p>', head) == "天地"


def test_legacy_attributes() -> None:
    assert shown('<p>天<font color="#FFFFFF">噪</font>地<font color="fff">噪</font></p>') == "天地"
    body = '<p>天<font color="#000">地</font></p>'
    assert shown(body) == "天地"
    body = '<table bgcolor="#336699"><tr><td>天<font color="#336699">噪</font>地</td></tr></table>'
    assert shown(body) == "天地"


def test_nested_rules_and_external_sheets_in_document_order() -> None:
    head = '<link rel="stylesheet" href="/a.css"><style>.n{display:inline}</style>'
    sheets = (("http://site.test/a.css", ".n{display:none}"),)
    assert shown('<p>天<span class="n">地</span></p>', head, sheets) == "天地"
    head = '<style>.n{display:inline}</style><link rel="stylesheet" href="../../a.css">'
    assert shown('<p>天<span class="n">噪</span>地</p>', head, sheets) == "天地"
    head = "<style>#c { .n { display:none } & .m { visibility:hidden } }</style>"
    assert shown('<div id="c">天<b class="n">噪</b><i class="m">噪</i>地</div>', head) == "天地"


def test_a_plain_page_is_left_as_it_is() -> None:
    page = parse_html(
        '<html><body><h2 style="clear:both">天</h2><p style="color:#333">地</p></body></html>'
    )
    before = page.root.getroottree().getroot()
    seen = make_visible(page.root, URL)
    assert not seen.styled and not seen.changed and page.root is before


def test_media_queries() -> None:
    assert media_applies("screen") and media_applies("all and (min-width: 768px)")
    assert not media_applies("print") and not media_applies("screen and (max-width: 480px)")
    assert media_applies("print, screen") and not media_applies("not screen")


def test_read_page_drops_noise_hidden_by_an_external_stylesheet() -> None:
    css = ".a1{color:#333} .x9q{display:none} .b2{font-weight:bold}"
    html = (
        '<html><head><meta charset="utf-8"><link rel="stylesheet" href="/css/x.css"></head>'
        '<body><div id="content">'
        + "<br/><br/>".join(
            f'&nbsp;&nbsp;第{n}段 天地玄<span class="x9q">噪音</span>黄宇宙洪荒日月盈昃辰宿列张'
            for n in range(12)
        )
        + '</div><div><a href="/book/1/999.html">上一章</a>'
        '<a href="/book/1/1001.html">下<span class="x9q">噪</span>一章</a></div></body></html>'
    )
    body = html.encode()
    assets = PageAssets(stylesheets=(("http://site.test/css/x.css", css),))
    plain = read_page(ReadJob(body, "text/html", URL))
    seen = read_page(ReadJob(body, "text/html", URL, assets=assets))
    assert "噪" in plain.text and "天地玄黄宇宙" not in plain.text
    assert "噪" not in seen.text and seen.text.count("天地玄黄宇宙洪荒") == 12
    assert seen.hidden == 13
    # the 下一章 link read as a browser shows its label
    assert seen.sequence == (
        "http://site.test/book/1/999.html",
        "http://site.test/book/1/1001.html",
    )


def test_image_texts_take_the_place_of_their_images() -> None:
    html = (
        '<html><body><div id="content"><p>第一段天地玄黄宇宙洪荒。</p>'
        '<img src="/img/c1.png"><p>第三段日月盈昃辰宿列张。</p>'
        '<img src="/img/ad.png" style="display:none"></div></body></html>'
    )
    texts = (
        ("http://site.test/img/c1.png", "第二段寒来暑往\n秋收冬藏"),
        ("http://site.test/img/ad.png", "广告"),
    )
    reading = read_page(
        ReadJob(html.encode(), "text/html", URL, assets=PageAssets(image_texts=texts))
    )
    lines = reading.text.split("\n")
    assert lines.index("第二段寒来暑往") == lines.index("第一段天地玄黄宇宙洪荒。") + 1
    assert "秋收冬藏" in lines and "广告" not in reading.text and reading.images == 1


def test_hostile_stylesheets_are_bounded() -> None:
    many = ".a{color:red}\n" * 200_000  # 2.8 MB: cut at MAX_CSS_CHARS
    started = time.process_time()
    sheet = parse_sheet(many, URL)
    assert time.process_time() - started < 30  # bounded, not timed: a runaway would hang
    assert sheet.cut and len(sheet.rules) <= MAX_CSS_CHARS // 14
    hidden = "".join(f".c{n}{{display:none}}" for n in range(MAX_SELECTORS + 500))
    sheet = parse_sheet(hidden, URL)
    assert sheet.selectors == MAX_SELECTORS and sheet.skipped == 500
    deep = "a " * 5000 + "{display:none}" + ":not(" * 3000 + "b" + ")" * 3000 + "{display:none}"
    sheet = parse_sheet(deep, URL)
    assert sheet.selectors == 0 and sheet.skipped == 2
    body = "<p>天<span>地</span></p>"
    assert shown(body, f"<style>{deep}</style>") == "天地"


@pytest.fixture(scope="module")
def webfont_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Where the reference font's index is kept (built once by the first test process)."""
    import fcntl

    shared = tmp_path_factory.getbasetemp().parent / "webfont-index"
    shared.mkdir(exist_ok=True)
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        from crawler.webfont import DEFAULT_REFERENCE, load_reference

        load_reference(DEFAULT_REFERENCE, cache_dir=str(shared))
    return str(shared)


@pytest.mark.parametrize("inline", [False, True], ids=["fetched", "data-url"])
def test_web_fonts_named_by_the_cascade_are_decoded(inline: bool, webfont_cache: str) -> None:
    from pathlib import Path

    from tests.sites.font_sites import TYPEFACES, obfuscate

    source = (Path(__file__).resolve().parents[2] / "samples/works/lighthouse.txt").read_text(
        "utf-8"
    )[:600]
    page = obfuscate(source, TYPEFACES["droid"], seed=3, inline=inline)
    url = "http://site.test/book/1/1000.html"
    fonts = () if inline else (("http://site.test/book/1/" + page.font_url, page.font),)
    job = ReadJob(
        page.html.encode(), "text/html", url, assets=PageAssets(fonts=fonts),
        webfont_cache=webfont_cache,
    )  # fmt: skip
    reading = read_page(job)
    plain = read_page(ReadJob(page.html.encode(), "text/html", url))
    assert reading.fonts == 1 and reading.fonts_refused == ()
    hidden = [ch for ch in set(page.text) if ord(ch) in page.mapping]
    assert hidden and not any(ch in reading.text for ch in hidden)
    real = set(page.mapping.values())
    assert sum(ch in reading.text for ch in real) >= 0.97 * len(real)
    if not inline:  # without the fetched font the characters are lost
        assert sum(ch in plain.text for ch in real) <= 0.1 * len(real)
