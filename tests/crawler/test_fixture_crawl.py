"""Real Scrapy crawls of a fixture site on 127.0.0.1, in process, on the shared reactor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pymongo.database import Database

from crawler.run import crawl_in_process
from crawler.settings import USER_AGENT
from matcher.sites.site_config import SiteConfig
from matcher.store import Store
from matcher.worker.ingest import Ingest
from tests.servers.fixture_site import FixtureSite, Resource, page
from tests.servers.net import free_port
from tests.support.crawl import RecordingIngest

TEXTS = {
    "/gbk.html": "青溪镇的河埠头在清晨最热闹，洗衣的妇人们一边捶打衣裳一边说着家长里短。",
    "/big5.html": "燈塔守護人每晚爬上一百二十級臺階，擦亮透鏡，點燃那盞照亮海面的燈。",
    "/mismatch-gbk.html": "茶馆里的说书人一拍醒木，满堂的茶客立刻安静下来，等着听下回分解。",
    "/mismatch-big5.html": "碼頭上的搬運工扛著麻袋來回奔走，汗水順著脊背流進了褲腰。",
    "/broken.html": "渔船在黎明前出海，船头挂着一盏小小的马灯，在雾里一明一暗。",
    "/moved.html": "搬家那天下着小雨，父亲把旧书一捆一捆地搬上板车，生怕淋湿了一本。",
    "/temp.html": "临时住处是一间朝北的小屋，冬天阳光照不进来，墙角总是潮乎乎的。",
    "/private/secret.html": "这一页只在不遵守机器人协议的时候才会被抓取到，用来检验设置是否生效。",
    "/book/1/1.html": "第一页：舅舅住在城南一条窄窄的巷子里，门口种着一棵老槐树。",
    "/book/1/1_2.html": "第二页：他开门看见我，愣了好一会儿，才把我让进那间堆满账本的屋子。",
    "/book/1/2.html": "第二章：第二天一早，舅舅带我去码头，说那里总缺几个肯出力气的年轻人。",
    "/deep/1.html": "第一层：沿着河堤一直往东走，就可以看到一座废弃多年的水车。",
    "/deep/2.html": "第二层：水车旁边有一间小小的磨坊，磨盘上落满了厚厚的灰。",
    "/deep/3.html": "第三层：磨坊后面是一片茂密的竹林，风一吹就沙沙作响。",
    "/deep/4.html": "第四层：竹林尽头是一条小路，这一层已经超出了抓取深度。",
    "/skip/excluded.html": "这一页的地址被排除规则挡住了，永远不应该被请求。",
}


def html(path: str, links: list[tuple[str, str]] = (), meta: str = "utf-8") -> str:  # type: ignore[assignment]
    anchors = " ".join(f'<a href="{href}">{label}</a>' for label, href in links)
    return (
        f'<html><head><meta charset="{meta}"><title>{path}</title></head><body>'
        '<div class="nav"><a href="/">Home</a></div>'
        f'<div id="content"><p>{TEXTS[path]}</p></div><div class="links">{anchors}</div>'
        "</body></html>"
    )


def novel_site(offsite: FixtureSite) -> FixtureSite:
    """The fixture site: every case the crawler must survive, linked from its index."""
    index_links = [
        ("GBK", "/gbk.html"),
        ("Big5", "/big5.html"),
        ("错配一", "/mismatch-gbk.html"),
        ("错配二", "/mismatch-big5.html"),
        ("坏页", "/broken.html"),
        ("旧址", "/old-301"),
        ("暂住", "/old-302"),
        ("秘密", "/private/secret.html"),
        ("丢失", "/missing.html"),
        ("巨大", "/huge.html"),
        ("流式", "/stream.html"),
        ("附件", "/attachment/42"),
        ("图片", "/logo.png"),
        ("伪装", "/binary.html"),
        ("第一章", "/book/1/1.html"),
        ("第一章第二页", "/book/1/1_2.html"),
        ("深处", "/deep/1.html"),
        ("排除", "/skip/excluded.html"),
        ("外站", offsite.url("/", host="localhost")),
        ("转外站", "/away"),
    ]
    index = "".join(f'<li><a href="{href}">{label}</a></li>' for label, href in index_links)
    huge = b"<html><body><p>" + b"x" * (20 * 1024 * 1024) + b"</p></body></html>"

    def stream() -> Iterator[bytes]:
        yield b"<html><body><p>"
        for _ in range(12 * 16):  # 12 MiB in 64 KiB chunks, no Content-Length
            yield b"y" * 65536

    gbk_page = html("/gbk.html", meta="gbk").encode("gbk")
    pages: dict[str, Resource] = {
        "/robots.txt": (
            200,
            {"Content-Type": "text/plain"},
            b"User-agent: *\nDisallow: /private/\n",
        ),
        "/": page(f"<html><head><title>目录</title></head><body><ul>{index}</ul></body></html>"),
        "/gbk.html": (200, {"Content-Type": "text/html; charset=gbk"}, gbk_page),
        "/big5.html": page(html("/big5.html", meta="big5"), "big5"),
        "/mismatch-gbk.html": page(html("/mismatch-gbk.html", meta="gbk"), "gbk", "utf-8"),
        "/mismatch-big5.html": page(html("/mismatch-big5.html", meta="big5"), "big5", "gbk"),
        "/broken.html": page(
            f"<html><body><div id=content><p>{TEXTS['/broken.html']}<div><span></p></td>"
            "</table><a href='/gbk.html'>GBK"
        ),
        "/moved.html": page(html("/moved.html")),
        "/temp.html": page(html("/temp.html")),
        "/private/secret.html": page(html("/private/secret.html")),
        "/huge.html": (200, {"Content-Type": "text/html"}, huge),
        "/stream.html": (200, {"Content-Type": "text/html"}, stream),
        "/attachment/42": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n\x00\x00"),
        "/logo.png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n\x00\x00"),
        "/binary.html": (200, {"Content-Type": "text/html"}, b"\x00\x01\x02\xff\xfe\x89PNG"),
        "/book/1/1.html": page(
            html("/book/1/1.html", [("下一页", "1_2.html"), ("下一章", "2.html")])
        ),
        "/book/1/1_2.html": page(
            html("/book/1/1_2.html", [("上一页", "1.html"), ("下一章", "2.html")])
        ),
        "/book/1/2.html": page(html("/book/1/2.html", [("上一章", "1.html")])),
        "/skip/excluded.html": page(html("/skip/excluded.html")),
    }
    for n in range(1, 5):
        pages[f"/deep/{n}.html"] = page(html(f"/deep/{n}.html", [("更深", f"/deep/{n + 1}.html")]))
    redirects = {
        "/old-301": (301, "/moved.html"),
        "/old-302": (302, "/temp.html"),
        "/away": (302, offsite.url("/landing", host="localhost")),
    }
    return FixtureSite(pages, redirects)


@pytest.fixture(scope="module")
def sites() -> Iterator[tuple[FixtureSite, FixtureSite]]:
    offsite = FixtureSite({"/": page("<p>另一个站点</p>"), "/landing": page("<p>落地页</p>")})
    with offsite, novel_site(offsite) as site:
        yield site, offsite


def config(site: FixtureSite, name: str = "novels", **fields: Any) -> SiteConfig:
    return SiteConfig.from_dict(
        {"name": name, "start_urls": [site.url("/")], "exclude": [r"/skip/"], **fields}
    )


def test_crawl_of_the_fixture_site(
    sites: tuple[FixtureSite, FixtureSite],
    ingest: RecordingIngest,
    test_overrides: dict[str, Any],
) -> None:
    site, offsite = sites
    dead = SiteConfig.from_dict(
        {"name": "dead", "start_urls": [f"http://127.0.0.1:{free_port()}/"]}
    )
    stats = crawl_in_process([config(site, max_depth=3), dead], test_overrides, timeout=60)

    pages = ingest.by_url()
    expected = [
        "/gbk.html",
        "/big5.html",
        "/mismatch-gbk.html",
        "/mismatch-big5.html",
        "/broken.html",
        "/moved.html",
        "/temp.html",
        "/book/1/1.html",
        "/book/1/1_2.html",
        "/book/1/2.html",
        "/deep/1.html",
        "/deep/2.html",
        "/deep/3.html",
    ]
    assert sorted(pages) == sorted(site.url(p) for p in expected)
    # the ingest is not thread_safe: its pages were stored in the reactor thread, those that
    # waited together in one batch (crawler.ingest_lanes.ReactorBatches)
    assert any(len(batch) > 1 for batch in ingest.batches), ingest.batches
    for path in expected:
        assert TEXTS[path] in pages[site.url(path)]["text"], path
    assert {p["site"] for p in pages.values()} == {"novels"}
    encodings = {path: pages[site.url(path)]["encoding"] for path in expected[:4]}
    assert encodings == {
        "/gbk.html": "gb18030",
        "/big5.html": "big5hkscs",
        "/mismatch-gbk.html": "gb18030",
        "/mismatch-big5.html": "big5hkscs",
    }
    first, second = pages[site.url("/book/1/1.html")], pages[site.url("/book/1/1_2.html")]
    assert first["next_url"] == second["url"] and second["prev_url"] == first["url"]
    assert TEXTS["/book/1/1_2.html"] not in first["text"]
    assert (pages[site.url("/book/1/2.html")]["next_url"], first["prev_url"]) == ("", "")

    requested = site.requested()
    for never in ("/private/secret.html", "/logo.png", "/skip/excluded.html", "/deep/4.html"):
        assert never not in requested
    assert "/robots.txt" in requested and "/deep/3.html" in requested
    assert offsite.requested() == []  # neither the link nor the redirect left the site
    agents = {headers.get("User-Agent") for _, headers in site.requests}
    assert agents == {USER_AGENT}

    s = stats["novels"]
    assert s["finish_reason"] == "finished"
    assert s["fptrack/pages"] == len(expected)
    assert s["fptrack/ingested/new"] == len(expected)
    assert s["fptrack/paged"] == 2
    assert s["fptrack/too_large"] == 2
    assert s["fptrack/non_html"] == 1
    assert s["fptrack/undecodable"] == 1
    assert s["fptrack/http_status/404"] == 1
    assert s["robotstxt/forbidden"] == 1
    assert s["fptrack/ignored"] == 1  # the request robots.txt forbids
    assert s["offsite/filtered"] == 2  # the offsite link and the offsite redirect
    assert not any(k.startswith("fptrack/errors/") for k in s)
    assert isinstance(s["start_time"], str)  # JSON values only

    d = stats["dead"]
    assert d["finish_reason"] == "finished"
    assert d["fptrack/errors/DownloadConnectionRefusedError"] == 1
    assert d.get("fptrack/pages", 0) == 0


def test_without_robots_and_with_include_patterns(
    sites: tuple[FixtureSite, FixtureSite],
    ingest: RecordingIngest,
    test_overrides: dict[str, Any],
) -> None:
    site, _ = sites
    stats = crawl_in_process(
        [config(site, obey_robots=False, include=[r"/private/", r"/old-30"])], test_overrides
    )
    assert sorted(ingest.by_url()) == sorted(
        site.url(p) for p in ("/private/secret.html", "/moved.html", "/temp.html")
    )
    assert (
        TEXTS["/private/secret.html"] in ingest.by_url()[site.url("/private/secret.html")]["text"]
    )
    assert "robotstxt/forbidden" not in stats["novels"]


def test_max_pages_closes_the_crawl(
    sites: tuple[FixtureSite, FixtureSite],
    ingest: RecordingIngest,
    test_overrides: dict[str, Any],
) -> None:
    site, _ = sites
    stats = crawl_in_process(
        [config(site, include=[r"/deep/"], max_pages=3, max_depth=10)],
        {**test_overrides, "CONCURRENT_REQUESTS": 1},
    )
    s = stats["novels"]
    assert s["finish_reason"] == "closespider_itemcount"  # max_pages counts stored pages
    assert len(ingest.calls) == 3 == s["fptrack/stored_pages"]
    # robots.txt, the 3 pages stored and the one in flight when the crawl closed
    assert s["response_received_count"] <= 5


def test_real_ingest_into_the_store(
    sites: tuple[FixtureSite, FixtureSite], test_overrides: dict[str, Any], mongo_db: Database
) -> None:
    site, _ = sites
    store = Store(mongo_db)
    store.ensure_indexes()
    enqueued: list[str] = []
    overrides = {**test_overrides, "FPTRACK_INGEST": Ingest(store, enqueue=enqueued.append)}
    books = config(site, include=[r"/book/"])
    first = crawl_in_process([books], overrides)["novels"]
    assert first["fptrack/ingested/new"] == 3
    assert store.count("pages") == 3
    chapter = store.pages.page_by_url(site.url("/book/1/1.html"))
    assert chapter is not None and chapter["next_url"] == site.url("/book/1/1_2.html")
    assert TEXTS["/book/1/1.html"] in chapter["text"]
    second = store.pages.page_by_url(site.url("/book/1/1_2.html"))
    assert second is not None and second["prev_url"] == chapter["url"]
    assert TEXTS["/book/1/1_2.html"] in second["text"]
    assert sorted(enqueued) == sorted(str(d["_id"]) for d in store.db.pages.find())

    again = crawl_in_process([books], overrides)["novels"]  # the same pages, unchanged
    assert again["fptrack/ingested/unchanged"] == 3
    assert store.count("pages") == 3


def start_site(offsite: FixtureSite) -> FixtureSite:
    """A site whose start URLs fail in every way a typo or a moved site makes them fail."""
    pages: dict[str, Resource] = {
        "/robots.txt": (
            200,
            {"Content-Type": "text/plain"},
            b"User-agent: *\nDisallow: /ev/nul.html\nDisallow: /closed/\n",
        ),
        "/": page(
            html("/book/1/1.html", [("禁", "/ev/nul.html"), ("深", "/deep/1.html")]),
        ),
        "/ev/nul.html": page(html("/deep/2.html")),
        "/closed/index.html": page(html("/deep/3.html")),
        "/deep/1.html": page(html("/deep/1.html", [("更深", "/deep/2.html")])),
        "/gone": (410, {"Content-Type": "text/html"}, b"<h1>Gone</h1>"),
        "/broken": (503, {"Content-Type": "text/html"}, b"<h1>Unavailable</h1>"),
        "/picture": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n\x00\x00"),
    }
    redirects = {"/moved": (302, offsite.url("/landing", host="localhost"))}
    return FixtureSite(pages, redirects)


@pytest.fixture(scope="module")
def failing() -> Iterator[FixtureSite]:
    offsite = FixtureSite({"/landing": page("<p>落地页，另一个站点的页面内容在这里</p>")})
    with offsite, start_site(offsite) as site:
        yield site


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/nosuch/", "answered 404 Not Found"),
        ("/gone", "answered 410 Gone"),
        ("/broken", "answered 503 Service Unavailable"),
        ("/ev/nul.html", "robots.txt forbids fptrack to crawl it"),
        ("/moved", "redirected off the site, to http://localhost:"),
        ("/picture", "not a page (Content-Type image/png)"),
    ],
)
def test_a_start_url_without_a_page_fails_the_crawl(
    failing: FixtureSite, test_overrides: dict[str, Any], path: str, reason: str
) -> None:
    from crawler.run import crawl_problem
    from matcher.sites import crawl_runs

    site = SiteConfig.from_dict({"name": "typo", "start_urls": [failing.url(path)], "max_depth": 0})
    stats = crawl_in_process([site], {**test_overrides, "RETRY_TIMES": 0}, timeout=60)["typo"]
    expected = f"start URL {failing.url(path)}: {reason}"
    assert stats["fptrack/start_failed"] == 1
    assert stats["fptrack/start_error"].startswith(expected)
    assert (crawl_problem(stats) or "").startswith(expected)
    assert crawl_runs.problems(stats)[0].startswith(expected)


def test_pages_not_crawled_are_counted_by_reason(
    failing: FixtureSite, test_overrides: dict[str, Any], ingest: RecordingIngest
) -> None:
    from crawler.run import crawl_problem
    from matcher.sites import crawl_runs

    site = SiteConfig.from_dict({"name": "ok", "start_urls": [failing.url("/")], "max_depth": 1})
    stats = crawl_in_process([site], test_overrides, timeout=60)["ok"]
    assert crawl_problem(stats) is None and crawl_runs.problems(stats) == []
    assert "fptrack/start_failed" not in stats
    assert sorted(ingest.by_url()) == [failing.url("/"), failing.url("/deep/1.html")]
    # the single page robots.txt forbids, and the link one level too deep: named
    assert crawl_runs.not_crawled(stats) == {"depth": 1, "robots": 1}
    assert crawl_runs.not_crawled_urls(stats) == {
        "depth": {"urls": [{"url": failing.url("/deep/2.html"), "why": "beyond max_depth 1"}],
                  "more": 0},
        "robots": {"urls": [{"url": failing.url("/ev/nul.html"),
                             "why": "robots.txt forbids fptrack to crawl it"}], "more": 0},
    }  # fmt: skip


def test_the_pages_not_crawled_are_named_up_to_a_number_per_reason(
    test_overrides: dict[str, Any],
) -> None:
    """Seven pages robots.txt forbids and three that answer 404, with
    ``FPTRACK_NAMED_PER_REASON`` 2: two of each named with the reason, the others counted."""
    from matcher.sites import crawl_runs

    forbidden = [f"/private/{n}.html" for n in range(7)]
    missing = [f"/gone/{n}.html" for n in range(3)]
    links = "".join(f'<a href="{path}">{path}</a>' for path in forbidden + missing)
    pages = {
        "/robots.txt": (
            200,
            {"Content-Type": "text/plain"},
            b"User-agent: *\nDisallow: /private/\n",
        ),
        "/": page(f"<html><body><p>{TEXTS['/gbk.html']}</p>{links}</body></html>"),
    }
    with FixtureSite(pages) as site:
        config = SiteConfig.from_dict({"name": "named", "start_urls": [site.url("/")]})
        overrides = {**test_overrides, "FPTRACK_NAMED_PER_REASON": 2, "RETRY_TIMES": 0}
        stats = crawl_in_process([config], overrides, timeout=60)["named"]
        asked = site.requested()
    named = crawl_runs.not_crawled_urls(stats)
    assert set(named) == {"robots", "http_404"}
    assert named["robots"]["more"] == 5 and named["http_404"]["more"] == 1
    assert [p["why"] for p in named["robots"]["urls"]] == [
        "robots.txt forbids fptrack to crawl it"
    ] * 2
    assert {p["url"] for p in named["robots"]["urls"]} < {site.url(p) for p in forbidden}
    assert [p["why"] for p in named["http_404"]["urls"]] == ["answered 404 Not Found"] * 2
    assert {p["url"] for p in named["http_404"]["urls"]} < {site.url(p) for p in missing}
    assert not any(path.startswith("/private/") for path in asked)
    assert crawl_runs.named_lines({"robots": named["robots"]})[-1] == "robots: 5 more"


def test_requests_left_at_max_pages_are_counted_as_budget(
    test_overrides: dict[str, Any],
) -> None:
    from matcher.sites import crawl_runs

    text = "这是一段足够长的正文内容，用来让页面被存储下来。" * 3
    links = "".join(f'<a href="/p/{n}.html">{n}</a>' for n in range(30))
    pages = {"/": page(f"<html><body><p>{text}</p>{links}</body></html>")}
    pages |= {f"/p/{n}.html": page(f"<p>{text}{n}</p>") for n in range(30)}
    with FixtureSite(pages) as site:
        config = SiteConfig.from_dict({"name": "b", "start_urls": [site.url("/")], "max_pages": 3})
        # no cap on responses (max_pages x 4): on a loaded machine 12 responses can come in
        # before the readers have handed 3 pages to the store, and that cap would end it first
        overrides = {**test_overrides, "CONCURRENT_REQUESTS": 1, "FPTRACK_REQUESTS_PER_PAGE": 0}
        stats = crawl_in_process([config], overrides, timeout=60)["b"]
        fetched = len([p for p in site.requested() if p.startswith("/p/")])
    assert stats["finish_reason"] == "closespider_itemcount"  # max_pages counts stored pages
    assert stats["fptrack/stored_pages"] >= 3
    assert crawl_runs.not_crawled(stats) == {"budget": 30 - fetched}
