"""A page's stylesheets, fonts and content images fetched with it (:mod:`crawler.page_assets`,
:mod:`crawler.asset_fetch`): found in its HTML and CSS, and fetched by real Scrapy crawls of
fixture sites on 127.0.0.1, within bounds, cached, counted; content images read by the real
OCR engine."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from crawler.page_assets import css_needs, decode_data_url, discover, may_need
from crawler.reading import PageAssets
from crawler.run import crawl_in_process
from crawler.settings import ASSETS_SEEN_SETTING, ByReference
from matcher.sites.site_config import SiteConfig
from tests.servers.fixture_site import FixtureSite, Resource, page
from tests.support.crawl import RecordingIngest

LINES = [
    "那天夜里雨下得很大，渡口的灯笼被风吹得左右摇晃，船夫把缆绳又紧了一圈。",
    "她提着一只竹篮走下石阶，篮里是给弟弟带的干粮和一封还没有拆开的家书。",
    "远处的钟声响了三下，镇上的狗跟着叫起来，河面上的雾气越来越浓。",
]
WOFF2 = b"wOF2" + bytes(range(256)) * 4
TTF = b"\x00\x01\x00\x00" + b"t" * 500
INLINE_FONT = b"wOFF" + b"i" * 300
INLINE_URL = "data:font/woff;base64," + base64.b64encode(INLINE_FONT).decode()
SITE_CSS = (
    '@import url("/css/more.css");\n'
    "@font-face { font-family: hide; src: url(../fonts/a.ttf) format('truetype'),"
    " url(../fonts/a.woff2) format('woff2'); }\n"
    ".x{display:none}"
)
MORE_CSS = ".content span.n { font-size: 0 }"


def css(text: str) -> Resource:
    return 200, {"Content-Type": "text/css"}, text.encode()


def binary(data: bytes, kind: str = "font/woff2") -> Resource:
    return 200, {"Content-Type": kind}, data


def chapter(n: int, head: str = "", content: str = "") -> Resource:
    return page(
        f"<html><head><title>第{n}章</title>"
        '<link rel="stylesheet" href="/css/site.css">'
        f"<style>@font-face {{ font-family: inl; src: url({INLINE_URL}); }}</style>{head}"
        '</head><body><div class="header"><img src="/logo.png"></div>'
        f"<nav><img src='/nav.png'></nav><h1>第{n}章</h1>"
        f"<div id='content'><p>{LINES[n % 3]}第{n}章。</p>{content}</div>"
        '<div id="footer"><img src="/footer.png"></div></body></html>'
    )


def crawl(
    site: FixtureSite, overrides: dict[str, Any], **settings: Any
) -> tuple[dict[str, Any], dict[str, PageAssets]]:
    seen: list[tuple[str, PageAssets]] = []
    config = SiteConfig.from_dict(
        {"name": "assets", "start_urls": [site.url("/")], "obey_robots": False, "max_depth": 2}
    )
    stats = crawl_in_process(
        [config],
        {**overrides, ASSETS_SEEN_SETTING: ByReference(seen), **settings},
        timeout=120,
    )["assets"]
    return stats, {url.removeprefix(site.url("")).lstrip("/"): a for url, a in seen}


def requested(site: FixtureSite, path: str) -> int:
    return sum(1 for p, _ in site.requests if p == path)


# discovery (pure) -------------------------------------------------------------------------


def test_a_plain_page_costs_one_search() -> None:
    plain = "<html><body><div id='content'><p>只有文字。</p></div></body></html>"
    assert not may_need(plain.encode())
    assert not discover(plain, "http://h/1.html")


def test_discovery_in_document_order_outside_the_chrome() -> None:
    html = (
        '<html><head><base href="/b/"><link rel="alternate stylesheet" href="alt.css">'
        '<link rel="stylesheet" href="print.css" media="print">'
        '<link rel=stylesheet href="one.css#x"><style>@import "two.css";</style>'
        '<link rel="stylesheet" href="one.css"></head><body>'
        '<header><img src="h.png"></header><aside><img src="a.png"></aside>'
        '<div class="sidebar left"><img src="s.png"></div><!-- <img src="c.png"> -->'
        '<div><img src="1.png"><p><img data-src="2.png" src="blank.gif"></p>'
        '<img src="javascript:x"><img src="data:image/png;base64,iVBORw0KGgo="></div>'
        "<footer><img src='f.png'></footer></body></html>"
    )
    needs = discover(html, "http://h/book/1.html")
    assert needs.stylesheets == ("http://h/b/one.css", "http://h/b/two.css")
    assert needs.images == (
        "http://h/b/1.png",
        "http://h/b/2.png",
        "data:image/png;base64,iVBORw0KGgo=",
    )
    selected = discover(html, "http://h/book/1.html", "p")
    assert selected.images == ("http://h/b/2.png",)


def test_one_font_per_face_the_best_format() -> None:
    found = css_needs(
        "@font-face{src:url(a.eot);src:url(a.eot?#iefix) format('embedded-opentype'),"
        "url(a.svg#f) format('svg'),url(a.ttf),url(a.woff) format('woff')}"
        "@font-face{src:local('X'),url('b.otf')}"
        "@font-face{src:url(c.svg)}"
        "/* @font-face{src:url(d.woff2)} */",
        "http://h/css/s.css",
    )
    assert found.fonts == ("http://h/css/a.woff", "http://h/css/b.otf")
    assert decode_data_url(INLINE_URL, 1000) == INLINE_FONT
    assert decode_data_url(INLINE_URL, 100) is None  # over the bytes allowed
    assert decode_data_url("data:font/woff;base64,@@@", 100) in (None, b"")


# real crawls -------------------------------------------------------------------------------


def test_a_crawl_fetches_stylesheets_and_fonts_once_and_passes_them_to_the_reader(
    test_overrides: dict[str, Any], ingest: RecordingIngest
) -> None:
    links = "".join(f'<li><a href="/book/{n}.html">第{n}章</a></li>' for n in range(1, 6))
    pages: dict[str, Resource] = {
        "/": page(f"<html><body><ul>{links}</ul></body></html>"),
        "/css/site.css": css(SITE_CSS),
        "/css/more.css": css(MORE_CSS),
        "/fonts/a.woff2": binary(WOFF2),
        "/fonts/a.ttf": binary(TTF, "font/ttf"),
    }
    for n in range(1, 6):
        pages[f"/book/{n}.html"] = chapter(n)
    with FixtureSite(pages) as site:
        stats, seen = crawl(site, test_overrides, CONCURRENT_REQUESTS=8)
    assert sorted(seen) == [f"book/{n}.html" for n in range(1, 6)]
    for assets in seen.values():
        assert assets.stylesheets == (
            (site.url("/css/more.css"), MORE_CSS),  # imported: before its importer
            (site.url("/css/site.css"), SITE_CSS),
        )
        assert assets.fonts == ((INLINE_URL, INLINE_FONT), (site.url("/fonts/a.woff2"), WOFF2))
        assert assets.image_texts == ()
    for path in ("/css/site.css", "/css/more.css", "/fonts/a.woff2"):
        assert requested(site, path) == 1, path
    for path in ("/fonts/a.ttf", "/logo.png", "/nav.png", "/footer.png"):
        assert requested(site, path) == 0, path
    assert stats["fptrack/assets/stylesheet/fetched"] == 2
    assert stats["fptrack/assets/stylesheet/cached"] == 8
    assert stats["fptrack/assets/font/fetched"] == 1
    assert stats["fptrack/assets/font/cached"] == 4
    assert stats["fptrack/assets/font/inline"] == 5
    assert stats["fptrack/assets/pages"] == 5
    assert stats["fptrack/pages"] == 5  # the chapters (the index is a list of links)
    assert len(ingest.calls) == 5


def test_assets_past_their_bounds_are_refused_and_the_page_is_read_all_the_same(
    test_overrides: dict[str, Any], ingest: RecordingIngest
) -> None:
    with FixtureSite({"/x.css": css(".y{}"), "/f.woff2": binary(WOFF2)}) as other:
        head = (
            '<link rel="stylesheet" href="/gone.css">'
            f'<link rel="stylesheet" href="{other.url("/x.css")}">'  # another port
            '<link rel="stylesheet" href="http://localhost:9/y.css">'  # another host
            + "".join(f'<link rel="stylesheet" href="/s{i}.css">' for i in range(4))
            + "<style>@font-face{src:url(/big.woff2)}@font-face{src:url(/ok.woff)}"
            f"@font-face{{src:url({other.url('/f.woff2')})}}</style>"
        )
        images = "".join(f'<img src="/i{i}.png">' for i in range(3))
        pages: dict[str, Resource] = {
            "/": chapter(1, head, images),
            "/big.woff2": binary(b"wOF2" + b"b" * 5000),
            "/ok.woff": binary(b"wOFF" + b"o" * 100, "font/woff"),
            **{f"/s{i}.css": css(f".s{i}{{}}") for i in range(4)},
            **{f"/i{i}.png": binary(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "image/png")
               for i in range(3)},
        }  # fmt: skip
        with FixtureSite(pages) as site:
            stats, seen = crawl(
                site,
                {**test_overrides, "RETRY_TIMES": 0},
                FPTRACK_ASSET_MAX_STYLESHEETS=3,
                FPTRACK_ASSET_MAX_BYTES=1000,
                FPTRACK_OCR_MAX_IMAGES=2,
            )
        assert other.requests == []  # another port: never asked
    assets = seen[""]
    assert [url for url, _ in assets.stylesheets] == [
        site.url("/s0.css"),
        site.url("/s1.css"),
        site.url("/s2.css"),
    ]
    assert [url for url, _ in assets.fonts] == [INLINE_URL, site.url("/ok.woff")]
    refused = "fptrack/assets/stylesheet/refused/"
    assert stats[refused + "http_404"] == 2  # /gone.css and /css/site.css
    assert stats[refused + "other_port"] == 1
    assert stats[refused + "offsite"] == 1
    assert stats[refused + "page_cap"] == 1  # /s3.css
    assert stats["fptrack/assets/font/refused/too_big"] == 1
    assert stats["fptrack/assets/font/refused/other_port"] == 1
    assert stats["fptrack/assets/image/refused/page_cap"] == 1
    assert stats["fptrack/assets/image/fetched"] == 2
    assert stats["fptrack/assets/ocr/undecodable"] == 2  # not images: refused before OCR
    assert requested(site, "/i2.png") == 0
    assert [c["url"] for c in ingest.calls] == [site.url("/")]
    assert "第1章" in ingest.calls[0]["text"]


def test_pages_without_assets_fetch_nothing_more(
    test_overrides: dict[str, Any], ingest: RecordingIngest
) -> None:
    plain = "<html><body><div id='content'><p>{}</p></div>{}</body></html>"
    pages = {
        "/": page(plain.format(LINES[0], '<a href="/2.html">下一章</a>')),
        "/2.html": page(plain.format(LINES[1], "")),
    }
    with FixtureSite(pages) as site:
        stats, seen = crawl(site, test_overrides)
    assert seen == {}
    assert not [k for k in stats if k.startswith("fptrack/assets/")]
    assert len(ingest.calls) == 2


def test_content_images_are_read_by_ocr(
    test_overrides: dict[str, Any], ingest: RecordingIngest
) -> None:
    from tests.sites.text_images import STYLES, cer, font_available, render_chapter

    style = STYLES[0]
    if not font_available(style):
        pytest.skip("fonts-wqy-zenhei is not installed")
    text = LINES[0] + "\n" + LINES[1]
    drawn_image, drawn = render_chapter(text, style)
    logo, _ = render_chapter(LINES[2], style)
    pages: dict[str, Resource] = {
        "/": chapter(1, "", '<img src="/blank.gif" data-original="/ch/1.png">'),
        "/ch/1.png": binary(drawn_image, "image/png"),
        "/logo.png": binary(logo, "image/png"),
    }
    with FixtureSite(pages) as site:
        stats, seen = crawl(site, test_overrides)
    assert requested(site, "/logo.png") == 0  # the site's chrome
    (url, read), = seen[""].image_texts  # fmt: skip
    assert url == site.url("/ch/1.png")
    assert cer(drawn, read) < 0.1
    assert stats["fptrack/assets/ocr/read"] == 1
    assert stats["fptrack/assets/image/fetched"] == 1


def test_the_hiding_fixtures_pages_are_fetched_with_what_they_need(
    test_overrides: dict[str, Any], ingest: RecordingIngest
) -> None:
    """The image and font techniques' pages (``tests/sites/hiding_images.py``,
    ``tests/sites/hiding_fonts.py``) crawled: each page's reader gets its content images' text
    and its font; the site's logo and the lazy-load placeholder are never fetched."""
    import mimetypes
    import random

    from tests.sites.hiding_shape import technique
    from tests.sites.text_images import cer

    text = "\n".join(LINES)
    rng = random.Random(38)
    pages: dict[str, Resource] = {}
    hidden: dict[str, Any] = {}
    for name in ("chapter-images", "font-pua", "font-shuffle"):
        for k in range(3):
            made = technique(name)(f"第{k + 1}章", text, rng)
            pages[f"/{name}/{k}.html"] = page(made.html)
            for path, data in made.files.items():
                kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
                pages[path] = binary(data, kind)
            hidden[f"{name}/{k}.html"] = made
    links = "".join(f'<a href="/{path}">{path}</a>' for path in hidden)
    pages["/"] = page(f"<html><body>{links}</body></html>")
    with FixtureSite(pages) as site:
        stats, seen = crawl(site, test_overrides)
        never = [p for p in pages if p.endswith(("logo.png", "loading.gif"))]
        assert never and not [p for p in never if requested(site, p)]
    for path, made in hidden.items():
        assets = seen[path]
        if path.startswith("chapter-images"):
            images = [p for p in made.files if p.endswith((".png", ".jpg"))]
            images = [p for p in images if not p.endswith("logo.png")]
            assert [u for u, _ in assets.image_texts] == [site.url(p) for p in images]
            assert cer(text, "".join(t for _, t in assets.image_texts)) < 0.1, path
            assert assets.fonts == ()
        else:
            ((url, font),) = assets.fonts
            assert font[:4] in (b"wOF2", b"wOFF", b"\x00\x01\x00\x00")
            if not url.startswith("data:"):
                assert font == made.files[url.removeprefix(site.url(""))]
            assert assets.image_texts == ()
    assert stats["fptrack/assets/ocr/read"] >= 3
    # every page read (stored, or thin until the reader puts what the assets say in place)
    assert stats["fptrack/pages"] + stats.get("fptrack/thin", 0) == len(hidden) + 1
