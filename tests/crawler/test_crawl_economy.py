"""One page, one record, and a crawl budget spent on pages (:mod:`crawler.dust`): real
crawls of a pirate-style fixture site on 127.0.0.1 into the test MongoDB server."""

from __future__ import annotations

from typing import Any

from crawler.run import crawl_in_process
from matcher.sites.site_config import SiteConfig
from matcher.store import Store
from matcher.worker.ingest import Ingest
from tests.servers.fixture_site import FixtureSite, page

LINES = [
    "那天夜里雨下得很大，渡口的灯笼被风吹得左右摇晃，船夫把缆绳又紧了一圈。",
    "她提着一只竹篮走下石阶，篮里是给弟弟带的干粮和一封还没有拆开的家书。",
    "远处的钟声响了三下，镇上的狗跟着叫起来，河面上的雾气越来越浓。",
    "掌柜的把算盘往柜台上一放，说今年的米价又涨了，怕是撑不到开春。",
]
CHAPTERS = 12


def link(n: int, source: int) -> str:
    """Chapter ``n``'s link on page ``source`` (0: the home page; -1: without a cache-buster),
    with a cache-buster on every other chapter, its value depending on the page."""
    buster = source >= 0 and n % 2
    return f"/book/{n}.html" + (f"?t={1000 + 7 * n + 13 * source}" if buster else "")


def chapter(n: int) -> tuple[int, dict[str, str], bytes]:
    text = "".join(f"<p>{LINES[(n + i) % len(LINES)]}第{n}章。</p>" for i in range(3))
    nav = f'<a href="{link(n + 1, n)}">下一章</a>' if n < CHAPTERS else ""
    nav += f'<a href="{link(n - 1, n)}">上一章</a>' if n > 1 else ""
    return page(
        f"<html><head><title>第{n}章</title></head><body><h1>第{n}章</h1>"
        f"<div id='content'>{text}</div>{nav}"
        f'<a href="/user/addmark.php?bid=1&cid={n}">加入书签</a>'
        '<a href="/index.html">首页</a></body></html>'
    )


def home() -> tuple[int, dict[str, str], bytes]:
    links = "".join(f'<li><a href="{link(n, 0)}">第{n}章</a></li>' for n in range(1, CHAPTERS + 1))
    plain = "".join(f'<li><a href="{link(n, -1)}">{n}</a></li>' for n in range(1, 4))
    return page(
        "<html><head><title>笔趣阁</title></head><body>"
        f"<div id='intro'><p>{LINES[0]}{LINES[1]}</p></div>"
        f'<ul>{links}</ul><ol>{plain}</ol><a href="/print/3.html">打印</a>'
        '<a href="/index.html">首页</a></body></html>'
    )


def printed() -> tuple[int, dict[str, str], bytes]:
    status, headers, body = chapter(3)
    head = b'<link rel="canonical" href="/book/3.html">'
    return status, headers, body.replace(b"<head>", b"<head>" + head)


def pirate_site() -> FixtureSite:
    pages: dict[str, Any] = {"/": home(), "/index.html": home(), "/print/3.html": printed()}
    for n in range(1, CHAPTERS + 1):
        pages[f"/book/{n}.html"] = chapter(n)
    site = FixtureSite(pages)
    site.generated = {"/book/": lambda path: chapter(int(path.split("/")[2].split(".")[0]))}
    return site


def crawl(site: FixtureSite, store: Store, **fields: Any) -> dict[str, Any]:
    config = SiteConfig.from_dict(
        {"name": "biquge", "start_urls": [site.url("/")], "obey_robots": False, **fields}
    )
    settings = {
        "FPTRACK_INGEST": Ingest(store, lambda page_id: None),
        "AUTOTHROTTLE_ENABLED": False,
        "CONCURRENT_REQUESTS": 1,
        "DOWNLOAD_TIMEOUT": 5,
        "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 1,  # one page at a time: the crawl's order is fixed
        "LOG_LEVEL": "WARNING",
    }
    stats = crawl_in_process([config], settings, timeout=60)["biquge"]
    assert stats["finish_reason"] in ("finished", "closespider_itemcount")
    return stats


def requested(site: FixtureSite, since: int = 0) -> list[str]:
    return site.requested()[since:]


def test_aliases_rules_and_dead_links_on_a_pirate_site(store: Store) -> None:
    with pirate_site() as site:
        stats = crawl(site, store)
        paths = requested(site)
        first = len(paths)

        docs = list(store.db.pages.find({}, {"url": 1, "aliases": 1}))
        paths_stored = sorted(d["url"].split("/", 3)[3].split("?")[0] for d in docs)
        assert paths_stored == sorted(
            [""] + [f"book/{n}.html" for n in range(1, CHAPTERS + 1)]
        )  # one record per page: no /index.html, no /print/3.html, each chapter once
        by_url = {d["url"]: d for d in docs}
        assert site.url("/index.html") in by_url[site.url("/")]["aliases"]
        assert site.url("/print/3.html") in by_url[site.url("/book/3.html")]["aliases"]
        assert store.pages.page_by_url(site.url("/index.html"))["url"] == site.url("/")
        for d in docs:  # a page first stored under a cache-buster knows its bare URL
            if "?t=" in d["url"]:
                assert d["url"].split("?")[0] in d["aliases"]
        rules = store.sites.site_rules("biquge")
        assert [(r["pattern"], r["param"]) for r in rules["params"]] == [("/book/*.html", "t")]
        assert paths.count("/index.html") == 0
        dead = sum(p.startswith("/user/addmark.php") for p in paths)
        assert dead == 3  # FPTRACK_DEAD_THRESHOLD
        assert stats["fptrack/skipped/dead_pattern"] == CHAPTERS - dead
        assert rules["dead"] == [{"pattern": "/user/addmark.php", "misses": dead}]
        assert stats["fptrack/skipped/alias"] >= 1
        assert stats["fptrack/rules/learnt"] == 1
        assert stats["fptrack/stored_pages"] == CHAPTERS + 1
        busted = [p for p in paths if "?t=" in p]
        # the rule's support: 3 instances, from at most 3 fetches (one fetch of a path may
        # be compared with two earlier ones of it)
        support = stats["fptrack/aliases/fetched"]
        assert 1 <= support <= 3
        # Every request is a page stored, the print view (an alias by its canonical link), a
        # dead link, or one of the rule's support; cache-busters fetched: at most the odd
        # chapters first reached through one, and the rule's support.
        assert len(paths) == (CHAPTERS + 1) + 1 + dead + support
        assert len(busted) <= CHAPTERS // 2 + 3

        again = crawl(site, store)
        later = requested(site, first)
        assert not [p for p in later if "?t=" in p]  # the stored rule applies from the start
        assert sum(p.startswith("/user/addmark.php") for p in later) == 1  # one probe
        assert again["fptrack/skipped/dead_pattern"] == CHAPTERS - 1
        assert store.count("pages") == CHAPTERS + 1
        assert again.get("fptrack/ingested/new", 0) == 0


def test_operator_rules_apply_and_a_deleted_rule_is_not_learnt_again(store: Store) -> None:
    assert store.sites.add_site_rule("biquge", "/book/*.html", "t")
    assert not store.sites.add_site_rule("biquge", "/book/*.html", "t")
    with pirate_site() as site:
        crawl(site, store)
        assert not [p for p in requested(site) if "?t=" in p]
        assert store.sites.delete_site_rule("biquge", "/book/*.html", "t")
        seen = len(requested(site))
        stats = crawl(site, store)
        assert [p for p in requested(site, seen) if "?t=" in p]  # fetched as written again
    assert "fptrack/rules/learnt" not in stats
    rules = store.sites.site_rules("biquge")
    assert rules["params"] == []
    assert rules["rejected"] == [{"pattern": "/book/*.html", "param": "t"}]
    # the operator says the parameter matters: pages first reached with it are their own
    assert store.db.pages.count_documents({"url": {"$regex": "[?]t="}}) >= 1


def test_max_pages_counts_distinct_pages_not_requests(store: Store) -> None:
    with pirate_site() as site:
        stats = crawl(site, store, max_pages=CHAPTERS + 1)
        assert stats["finish_reason"] in ("finished", "closespider_itemcount")
        assert store.count("pages") == CHAPTERS + 1  # every page, despite aliases and 404s
        assert stats["fptrack/stored_pages"] == CHAPTERS + 1
