"""Automatic render (:mod:`crawler.render`), crawled for real on 127.0.0.1 with Debian's
Chromium: on a site mixing plain chapters with chapters built by script
(:mod:`tests.sites.hiding_scripts`), only the latter are requested again through the browser and
their text stored; a site of plain pages never starts one. Without a browser the pages built
by script are counted as ``needs_browser`` with a one-line hint. A page whose script never
ends is bounded. A rendered page keeps only what a person sees."""

from __future__ import annotations

import time
from typing import Any

from crawler.run import crawl_in_process, crawl_problem
from matcher.evidence.archive import Exchange
from matcher.sites.crawl_runs import NEEDS_BROWSER_HINT, hints, not_crawled, not_crawled_urls
from matcher.sites.site_config import SiteConfig
from tests.servers.fixture_site import FixtureSite, page
from tests.sites.hiding_site import mixed_pages
from tests.sites.script_site import chromium, halves
from tests.support.crawl import RecordingIngest

PLAIN, BASE64, JSON = 3, 2, 2


def squeezed(text: str) -> str:
    return "".join(text.split())


def config(name: str, site: FixtureSite, **fields: Any) -> SiteConfig:
    return SiteConfig.from_dict({"name": name, "start_urls": [site.url("/")], **fields})


def built_by_script(served: dict[str, str]) -> list[str]:
    return list(served)[PLAIN:]


def test_only_pages_built_by_script_are_rendered_and_their_text_is_stored(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    pages, served = mixed_pages(PLAIN, BASE64, JSON)
    plain_pages, _ = mixed_pages(4, 0, 0, seed=2)
    overrides = {**test_overrides, "FPTRACK_CHROMIUM": chromium()}
    with FixtureSite(pages) as mixed, FixtureSite(plain_pages) as plain:
        stats = crawl_in_process([config("mixed", mixed), config("plain", plain)], overrides)
        fetched, fetched_plain = mixed.requested(), plain.requested()
        stored = {url: p for url, p in ingest.by_url().items() if p["site"] == "mixed"}
        urls = {path: mixed.url(path) for path in served}
    scripted = built_by_script(served)
    s = stats["mixed"]
    assert [fetched.count(path) for path in served] == [1] * PLAIN + [2] * (BASE64 + JSON)
    assert s["fptrack/render/flagged"] == s["fptrack/render/requested"] == BASE64 + JSON
    assert s["fptrack/render/rendered"] == s["playwright/page_count"] == BASE64 + JSON
    assert "fptrack/render/still_flagged" not in s and s["playwright/browser_count"] == 1
    assert set(stored) == set(urls.values()) and s["fptrack/pages"] == len(served)
    for path, text in served.items():
        found = stored[urls[path]]
        assert squeezed(text) in squeezed(found["text"]), path
        assert Exchange(**found["exchange"]).rendered == (path in scripted)
    assert sum(fetched.count(p) for p in fetched if p.endswith(".json")) == JSON  # by Chromium
    p = stats["plain"]  # a site of plain pages: no page flagged, no browser started
    assert p["fptrack/pages"] == 4 and all(fetched_plain.count(x) == 1 for x in fetched_plain)
    assert not [key for key in p if key.startswith(("playwright/", "fptrack/render/"))]


def test_without_a_browser_pages_built_by_script_are_counted_with_a_hint(
    ingest: RecordingIngest, test_overrides: dict[str, Any], tmp_path: Any
) -> None:
    pages, served = mixed_pages(PLAIN, BASE64, JSON)
    missing = str(tmp_path / "no-chromium")
    with FixtureSite(pages) as site:
        overrides = {**test_overrides, "FPTRACK_CHROMIUM": missing}
        stats = crawl_in_process([config("mixed", site)], overrides)["mixed"]
        fetched = site.requested()
        stored = set(ingest.by_url())
        urls = {path: site.url(path) for path in served}
    scripted = built_by_script(served)
    assert crawl_problem(stats) is None and stats["finish_reason"] == "finished"
    assert not_crawled(stats) == {"needs_browser": BASE64 + JSON}
    named = not_crawled_urls(stats)["needs_browser"]["urls"]
    assert {n["url"] for n in named} == {urls[p] for p in scripted}
    assert all(f"no Chromium at {missing}" in n["why"] for n in named)
    assert hints(stats) == [NEEDS_BROWSER_HINT.format(n=BASE64 + JSON)]
    assert stored == {urls[p] for p in served if p not in scripted}  # shells not stored
    assert [fetched.count(p) for p in served] == [1] * len(served)
    assert not any(p.endswith(".json") for p in fetched)


def test_with_auto_render_off_pages_are_read_as_served(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    pages, served = mixed_pages(PLAIN, BASE64, JSON)
    overrides = {**test_overrides, "FPTRACK_CHROMIUM": chromium(), "FPTRACK_AUTO_RENDER": False}
    with FixtureSite(pages) as site:
        stats = crawl_in_process([config("mixed", site)], overrides)["mixed"]
        fetched = site.requested()
    assert stats["fptrack/render/flagged"] == BASE64 + JSON
    assert not_crawled(stats) == {} and hints(stats) == []
    assert not [key for key in stats if key.startswith("playwright/")]
    assert [fetched.count(p) for p in served] == [1] * len(served)


HANGS_AFTER_LOAD = (
    '<html><body><h1>第九章</h1><div id="content">正在加载...</div><script>'
    "window.addEventListener('load',function(){setTimeout(function(){"
    "document.getElementById('content').textContent='';while(true){}},50);});"
    "</script></body></html>"
)
HANGS_BEFORE_LOAD = (
    '<html><body><h1>第十章</h1><div id="content">加载中</div><script>'
    "document.getElementById('content').textContent='';while(true){}</script></body></html>"
)


def test_a_page_whose_script_never_ends_is_bounded_and_counted(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    pages, served = mixed_pages(2, 0, 1)
    pages["/book/9.html"] = page(HANGS_AFTER_LOAD)
    pages["/book/10.html"] = page(HANGS_BEFORE_LOAD)
    pages["/"] = page(
        pages["/"][2]
        .decode()
        .replace("</ul>", '<a href="/book/9.html">九</a> <a href="/book/10.html">十</a></ul>')
    )
    overrides = {
        **test_overrides,
        "FPTRACK_CHROMIUM": chromium(),
        "FPTRACK_RENDER_SECONDS": 2,
        "FPTRACK_RENDER_SETTLE_SECONDS": 1,
    }
    began = time.monotonic()
    with FixtureSite(pages) as site:
        stats = crawl_in_process([config("mixed", site)], overrides, timeout=120)["mixed"]
        stored = set(ingest.by_url())
        urls = {path: site.url(path) for path in [*served, "/book/9.html", "/book/10.html"]}
    took = time.monotonic() - began
    assert stats["finish_reason"] == "finished" and took < 60
    assert not_crawled(stats) == {"render_failed": 2}
    named = {n["url"]: n["why"] for n in not_crawled_urls(stats)["render_failed"]["urls"]}
    assert set(named) == {urls["/book/9.html"], urls["/book/10.html"]}
    assert "not rendered within 5 s" in named[urls["/book/9.html"]]  # 2 + 1 + 2
    assert "Page.goto: Timeout 2000ms" in named[urls["/book/10.html"]]  # no load event
    assert stored == {urls[p] for p in served}  # the chapter built by script among them


NOISE = [
    '<span class="n">{}</span>',  # hidden by the external stylesheet's class
    '<font color="#ffffff">{}</font>',
    '<span style="font-size:0">{}</span>',
    '<span style="position:absolute;left:-9999px">{}</span>',
    '<span style="opacity:0">{}</span>',
    '<span style="display:inline-block;width:0;overflow:hidden">{}</span>',
    '<span style="visibility:hidden">{}</span>',
    '<span style="color:#fefefe">{}</span>',
]


def noisy(line: str, every: int = 3) -> str:
    out = []
    for i in range(0, len(line), every):
        out.append(line[i : i + every])
        out.append(NOISE[(i // every) % len(NOISE)].format("鑫垚犇淼"[(i // every) % 4]))
    return "".join(out)


def test_a_rendered_page_keeps_only_what_a_person_sees(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    text = halves()[0]
    lines = "".join(f"<p>{noisy(line)}</p>" for line in text.splitlines() if line.strip())
    html = (
        '<html><head><meta charset="utf-8"><link rel="stylesheet" href="/css/a.css"></head>'
        f'<body style="background:#fff"><h1>第一章</h1><div id="content">{lines}</div>'
        "</body></html>"
    )
    pages = {
        "/": page(html),
        "/css/a.css": (200, {"Content-Type": "text/css"}, b".n{display:none}"),
    }
    with FixtureSite(pages) as site:
        overrides = {**test_overrides, "FPTRACK_CHROMIUM": chromium()}
        crawl_in_process([config("noisy", site, render=True)], overrides)
        found = ingest.by_url()[site.url("/")]["text"]
        body = Exchange(**ingest.by_url()[site.url("/")]["exchange"]).body.decode()
    assert squeezed(text) in squeezed(found)
    assert not set("鑫垚犇淼") & set(found) and not set("鑫垚犇淼") & set(body)
