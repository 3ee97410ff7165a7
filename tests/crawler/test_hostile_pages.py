"""Pages built to hide their text from a crawler, crawled for real on 127.0.0.1: a browser
shows all of their text, and so does fptrack (every page stored with its chapter)."""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.settings import Settings

from crawler.encoding import decode_body, looks_like_html, sniff_html
from crawler.extract import MAX_NESTING, extract, flatten_deep, parse_html
from crawler.meta_refresh import HEAD_BYTES, HeadMetaRefreshMiddleware
from crawler.run import crawl_in_process
from matcher.sites.site_config import SiteConfig
from tests.servers.fixture_site import FixtureSite, page
from tests.support.crawl import RecordingIngest
from tests.support.waits import eventually

CHAPTER = (
    "雨夜渡口，老船夫把灯挂在桅杆上，等待最后一位客人。江面上的雾越来越浓，"
    "远处传来几声犬吠，他裹紧了蓑衣，心想今晚大概不会有人来了。"
) * 6


def chapter_html(body: str = CHAPTER) -> str:
    return f"<html><head><title>第一章</title></head><body><div id='c'>{body}</div></body></html>"


class Trickle:
    """Pages sending a byte a second for ``seconds`` (no ``Content-Length``: the page ends
    when the connection closes), and the paths of those whose client hung up before the
    end (:attr:`hung_up`): the server's write failed, and it closed the page's stream."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.hung_up: list[str] = []

    def page(self, path: str) -> tuple[int, dict[str, str], Any]:
        def body() -> Any:
            import time

            try:
                for _ in range(self.seconds):
                    time.sleep(1)  # the server's pace
                    yield b" "
            except GeneratorExit:
                self.hung_up.append(path)
                raise

        return 200, {"Content-Type": "text/html"}, body


HUNG_UP_GUARD_S = 15.0
"""A hang guard for a trickling page's server to see the crawl's hang-up (a write or two
after it), not a speed figure."""


def slow_ones_hung_up(site: FixtureSite, slow: Trickle) -> None:
    """Every slow page the crawl asked for was cut off by the crawl hanging up on it, not
    ended by its server."""
    asked = sorted(p for p in site.requested() if p.startswith("/slow/"))
    assert asked, "no slow page was asked for"
    eventually(lambda: sorted(slow.hung_up) == asked, HUNG_UP_GUARD_S, "the crawl to hang up")


def hostile_pages() -> dict[str, Any]:
    with_nul = chapter_html(f"<!-- \x00 -->{CHAPTER}").encode("utf-8")
    noisy = "".join(f"{ch}\x01\x02" if i % 2 else ch for i, ch in enumerate(CHAPTER))
    with_controls = chapter_html(noisy).encode("gb18030")
    depth = 2100
    deep = "<html><body>" + "<div>" * depth + CHAPTER + "</div>" * depth + "</body></html>"
    links = "".join(
        f'<a href="{p}">{n}</a> '
        for n, p in (("一", "/nul.html"), ("二", "/controls.html"), ("三", "/deep.html"),
                     ("四", "/untyped.html"))
    )  # fmt: skip
    return {
        "/": page(f"<html><body>{links}</body></html>"),
        "/nul.html": (200, {"Content-Type": "text/html; charset=utf-8"}, with_nul),
        "/controls.html": (200, {"Content-Type": "text/html; charset=gbk"}, with_controls),
        "/deep.html": page(deep),
        "/untyped.html": (200, {}, f"<div>{CHAPTER}</div>".encode()),
    }


def test_every_hostile_page_is_stored_with_its_text(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    with FixtureSite(hostile_pages()) as site:
        config = SiteConfig.from_dict({"name": "hostile", "start_urls": [site.url("/")]})
        stats = crawl_in_process([config], test_overrides, timeout=60)["hostile"]
        pages = ingest.by_url()
        for path in ("/nul.html", "/controls.html", "/deep.html", "/untyped.html"):
            text = pages[site.url(path)]["text"]
            assert CHAPTER[:40] in text and CHAPTER[-40:] in text, path
    assert stats["fptrack/pages"] == 4
    assert not stats.get("fptrack/undecodable") and not stats.get("fptrack/non_html")


def test_sniffing_and_sanitising_decide_as_a_browser() -> None:
    assert sniff_html(b"  <div>x</div>") and sniff_html(b"<!DOCTYPE html>") and sniff_html(b"<p>")
    assert not sniff_html(b"<bad>") and not sniff_html(b"\x89PNG\r\n") and not sniff_html(b"{}")
    assert looks_like_html(b"\x00\x00<html><body>x") and not looks_like_html(b"%PDF-1.4\x00")
    text, encoding = decode_body("<p>\x00雨\x01夜\x7f</p>".encode("gbk"), "text/html")
    assert (text, encoding) == ("<p>雨夜</p>", "gb18030")


def test_deep_nesting_is_flattened_in_one_pass() -> None:
    depth = 5 * MAX_NESTING
    html = "<div>" * depth + "<b>正文</b>" + "</div>" * depth + "<p>尾声</p>"
    flat = flatten_deep(html)
    assert flat.count("<div>") == flat.count("</div>") == MAX_NESTING
    assert "正文" in extract(flat, "http://x/", page=parse_html(html)).text
    shallow = "<div>" * 10 + "正文" + "</div>" * 10
    assert flatten_deep(shallow) == shallow


def test_other_ports_of_the_host_are_never_crawled(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    with FixtureSite({"/": page(chapter_html())}) as internal:
        inner = internal.url("/")  # another service on the same host
        pages = {
            "/": page(chapter_html(f'{CHAPTER}<a href="{inner}">内部</a>')),
            "/jump": (302, {"Location": inner}, b""),
        }
        with FixtureSite(pages, redirects={"/go": (302, inner)}) as site:
            outer = SiteConfig.from_dict({"name": "outer", "start_urls": [site.url("/")]})
            body = f'<a href="{inner}">一</a><a href="/go">二</a>{CHAPTER}'
            site.pages["/"] = page(chapter_html(body))
            stats = crawl_in_process([outer], test_overrides, timeout=60)["outer"]
            assert internal.requested() == []
            assert sorted(ingest.by_url()) == [site.url("/")]
    assert stats["fptrack/other_port"] >= 1


def test_links_per_page_and_the_frontier_are_bounded(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    """A page with thousands of links and pages generating links without end: the crawl
    takes the first links of a page, asks for a bounded number of URLs, and finishes."""
    hub = "".join(f'<a href="/hub/{n}.html">{n}</a>' for n in range(3000))
    pages = {"/": page(chapter_html(CHAPTER + hub))}
    for n in range(3000):
        more = "".join(f'<a href="/gen/{n}-{k}.html">下</a>' for k in range(3))
        pages[f"/hub/{n}.html"] = page(chapter_html(CHAPTER + more))
    overrides = {
        **test_overrides,
        "FPTRACK_MAX_LINKS_PER_PAGE": 40,
        "FPTRACK_MAX_REQUESTS": 60,
        "FPTRACK_MAX_DEPTH": 5,
    }
    with FixtureSite(pages) as site:
        config = SiteConfig.from_dict({"name": "flood", "start_urls": [site.url("/")]})
        stats = crawl_in_process([config], overrides, timeout=120)["flood"]
        requested = [p for p in site.requested() if p != "/robots.txt"]
    assert len(requested) == len(set(requested)) <= 60
    hubs = [p for p in requested if p.startswith("/hub/")]
    assert hubs and max(int(p[5:-5]) for p in hubs) < 40  # the first 40 links of the page
    assert stats["fptrack/links_capped"] >= 1 and stats["fptrack/requests_capped"] >= 1
    assert stats["finish_reason"] == "finished"


def test_a_slow_site_cannot_hold_a_crawl_past_its_deadline(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    """The crawl ends by its deadline (``closespider_timeout``, not the test's own stop,
    ``shutdown``), hanging up on the pages still trickling (120 s each)."""
    from matcher.sites.crawl_runs import problems

    slow = Trickle(120)
    links = "".join(f'<a href="/slow/{n}.html">{n}</a>' for n in range(4))
    pages: dict[str, Any] = {"/": page(chapter_html(CHAPTER + links))}
    for n in range(4):
        pages[f"/slow/{n}.html"] = slow.page(f"/slow/{n}.html")
    with FixtureSite(pages) as site:
        config = SiteConfig.from_dict(
            {"name": "slow", "start_urls": [site.url("/")], "deadline": 3}
        )
        stats = crawl_in_process([config], test_overrides, timeout=60)["slow"]
        slow_ones_hung_up(site, slow)
    assert stats["finish_reason"] == "closespider_timeout"
    assert list(ingest.by_url()) == [site.url("/")]
    assert "the crawl reached its deadline" in " ".join(problems(stats))


def test_timeouts_and_deadlines_are_problems_of_the_crawl() -> None:
    from matcher.sites.crawl_runs import problems

    stats = {
        "response_received_count": 3,
        "fptrack/pages": 2,
        "fptrack/errors/TimeoutError": 2,
        "fptrack/errors/TCPTimedOutError": 1,
        "finish_reason": "closespider_timeout",
    }
    assert problems(stats) == [
        "3 request(s) timed out",
        "the crawl reached its deadline: pages not reached were not crawled",
    ]
    assert problems({"response_received_count": 1, "fptrack/pages": 1}) == []


def test_pages_over_the_extraction_time_are_read_the_quick_way_and_kept(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    """With a time limit no reader can meet, every page is still stored with its text."""
    overrides = {**test_overrides, "FPTRACK_EXTRACT_SECONDS": 0.001}
    with FixtureSite(hostile_pages()) as site:
        config = SiteConfig.from_dict({"name": "hurried", "start_urls": [site.url("/")]})
        stats = crawl_in_process([config], overrides, timeout=60)["hurried"]
        pages = ingest.by_url()
        for path in ("/nul.html", "/controls.html", "/deep.html", "/untyped.html"):
            assert CHAPTER[:40] in pages[site.url(path)]["text"], path
    assert stats["fptrack/pages"] == 4
    # a warm reader may answer a small page within even this limit
    assert 1 <= stats["fptrack/extract_timeout"] <= stats["response_received_count"] - 1


def test_a_page_with_more_links_than_the_cap_gives_the_first_and_counts_the_others(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    """Issue 23: of a page with 2,000 new links, the first 100 are followed, 1,900 counted."""
    from matcher.sites.crawl_runs import not_crawled
    from tests.servers.hostile_site import FLOOD_PREFIX, link_flood

    overrides = {**test_overrides, "FPTRACK_MAX_LINKS_PER_PAGE": 100}
    with FixtureSite(generated={FLOOD_PREFIX: link_flood(2000)}) as site:
        start = site.url(FLOOD_PREFIX + "0")
        config = SiteConfig.from_dict({"name": "many", "start_urls": [start], "max_depth": 1})
        stats = crawl_in_process([config], overrides, timeout=120)["many"]
        requested = [p for p in site.requested() if p != "/robots.txt"]
    assert requested[0] == FLOOD_PREFIX + "0"
    assert sorted(requested[1:]) == sorted(f"{FLOOD_PREFIX}{n}" for n in range(1, 101))
    assert stats["fptrack/links_capped"] == 1900
    assert not_crawled(stats)["links_capped"] == 1900
    assert stats["finish_reason"] == "finished"


def test_a_site_generating_links_forever_is_held_at_the_pending_cap(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    """Every page brings 50 new links; the queue never holds more than 20 requests, the
    links dropped for it are counted, and the crawl ends at its page budget."""
    from matcher.sites.crawl_runs import not_crawled
    from tests.servers.hostile_site import FLOOD_PREFIX, link_flood

    overrides = {**test_overrides, "FPTRACK_MAX_PENDING": 20, "CONCURRENT_REQUESTS": 2}
    with FixtureSite(generated={FLOOD_PREFIX: link_flood(50)}) as site:
        start = site.url(FLOOD_PREFIX + "0")
        config = SiteConfig.from_dict(
            {"name": "endless", "start_urls": [start], "max_depth": 1000, "max_pages": 60}
        )
        stats = crawl_in_process([config], overrides, timeout=120)["endless"]
        requested = [p for p in site.requested() if p != "/robots.txt"]
    enqueued = stats["scheduler/enqueued/memory"]
    assert enqueued <= len(requested) + 20  # never more than 20 waiting
    read = stats["fptrack/thin"]  # flood pages whose links were taken
    assert read >= 50 and enqueued - 1 + stats["fptrack/pending_capped"] == 50 * read
    assert not_crawled(stats)["pending_capped"] == stats["fptrack/pending_capped"]
    assert not stats.get("fptrack/requests_capped") and not stats.get("fptrack/links_capped")
    assert stats["finish_reason"] == "closespider_pagecount"


def test_the_bytes_a_crawl_holds_in_responses_are_bounded(test_overrides: dict[str, Any]) -> None:
    """Pages slow to read (2,000 paragraphs, about 40 kB each) downloaded much faster than
    they are read: with ``FPTRACK_MAX_BYTES_IN_FLIGHT`` at 2.5 pages, the crawl never holds
    more than that in bodies (downloads wait, and all are fetched); without a bound it holds
    several times more, waiting for the readers."""
    from matcher.sites.crawl_runs import IN_FLIGHT_MAX, IN_FLIGHT_WAITED

    slow = "<div><p>·</p></div>" * 2000
    links = "".join(f'<a href="/p/{n}.html">{n}</a>' for n in range(1, 9))
    pages = {"/": page('<html><body><a href="/p/0.html">0</a></body></html>')}
    pages["/p/0.html"] = page(chapter_html(CHAPTER + links + slow))  # its size is learnt
    for n in range(1, 9):
        pages[f"/p/{n}.html"] = page(chapter_html(f"{CHAPTER}{n}{slow}"))
    size = len(pages["/p/1.html"][2])
    held = {}
    with FixtureSite(pages) as site:
        config = SiteConfig.from_dict({"name": "heavy", "start_urls": [site.url("/")]})
        for budget in (size * 5 // 2, 0):
            overrides = {**test_overrides, "FPTRACK_MAX_BYTES_IN_FLIGHT": budget}
            stats = crawl_in_process([config], overrides, timeout=120)["heavy"]
            assert stats["fptrack/pages"] == 9 and stats["finish_reason"] == "finished"
            held[budget] = stats[IN_FLIGHT_MAX]
            assert bool(stats.get(IN_FLIGHT_WAITED)) == bool(budget)
    bounded, free = held[size * 5 // 2], held[0]
    assert size <= bounded <= size * 5 // 2 + len(pages["/p/0.html"][2])
    assert free >= 2 * bounded


def test_a_waiting_request_is_kept_packed_and_comes_back_whole() -> None:
    """The crawl's memory queue (:class:`crawler.packed_queue.PackedLifoQueue`): last in
    first out, each request back with its callbacks, meta, headers and priority; one that
    cannot be packed kept as it is; and a waiting request costs under a third of what it
    costs in Scrapy's own memory queue (measured: the request, its Referer, its cached
    fingerprint, its entry in the duplicates filter)."""
    import tracemalloc

    from scrapy.dupefilters import RFPDupeFilter
    from scrapy.squeues import LifoMemoryQueue
    from scrapy.utils.test import get_crawler

    from crawler.packed_queue import PackedLifoQueue
    from crawler.spiders.site import SiteSpider

    crawler = get_crawler(SiteSpider, settings_dict={"FPTRACK_MAX_DEPTH": 3})
    spider = SiteSpider.from_crawler(crawler, site={"name": "q", "start_urls": ["http://h/"]})
    crawler.spider = spider
    seen = RFPDupeFilter.from_crawler(crawler)

    def request(n: int) -> Request:
        made = Request(
            f"http://h/flood/{n}", spider.parse, errback=spider.on_error,
            meta={"fptrack_depth": 2, "handle_httpstatus_list": [304]}, priority=-n % 3,
            headers={"If-None-Match": f'"{n}"'},
        )  # fmt: skip
        made.headers["Referer"] = "http://h/flood/0"
        seen.request_seen(made)
        return made

    queue = PackedLifoQueue.from_crawler(crawler, "q/0")
    for n in range(3):
        queue.push(request(n))
    odd = Request("http://h/odd", lambda r: None)  # a callback no method of the spider
    queue.push(odd)
    assert len(queue) == 4 and queue.pop() is odd
    back = queue.pop()
    assert back is not None and back.url == "http://h/flood/2" and back.priority == -2 % 3
    assert (back.callback, back.errback) == (spider.parse, spider.on_error)
    assert back.meta == {"fptrack_depth": 2, "handle_httpstatus_list": [304]}
    assert (
        back.headers["If-None-Match"] == b'"2"' and back.headers["Referer"] == b"http://h/flood/0"
    )
    assert [queue.pop().url, queue.pop().url, queue.pop()] == [
        "http://h/flood/1",
        "http://h/flood/0",
        None,
    ]

    cost = {}
    for kind in (PackedLifoQueue, LifoMemoryQueue):
        waiting = kind.from_crawler(crawler, "q/1")
        tracemalloc.start()
        for n in range(1_000):
            waiting.push(request(n))
        cost[kind] = tracemalloc.get_traced_memory()[0] / 1_000
        tracemalloc.stop()
        waiting.close()
    assert cost[PackedLifoQueue] * 3 < cost[LifoMemoryQueue], cost  # 516 B against 2,214


def test_a_deadline_holds_against_slow_downloads_and_huge_pages(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    """Pages trickling a byte a second (40 s each, under their download timeout of 60 s)
    and pages of 200,000 new links each: the crawl ends by its deadline
    (``closespider_timeout``), hanging up on the slow pages before their end (so before
    their download timeout); what it did not finish counts as ``deadline``, not as the
    site's timeouts."""
    from tests.servers.hostile_site import FLOOD_PREFIX, link_flood

    slow = Trickle(40)
    links = "".join(f'<a href="/slow/{n}.html">{n}</a>' for n in range(4))
    pages: dict[str, Any] = {
        "/": page(chapter_html(CHAPTER + links + f'<a href="{FLOOD_PREFIX}0">flood</a>'))
    }
    for n in range(4):
        pages[f"/slow/{n}.html"] = slow.page(f"/slow/{n}.html")
    overrides = {**test_overrides, "DOWNLOAD_TIMEOUT": 60}
    with FixtureSite(pages, generated={FLOOD_PREFIX: link_flood()}) as site:
        config = SiteConfig.from_dict(
            {"name": "late", "start_urls": [site.url("/")], "deadline": 8}
        )
        stats = crawl_in_process([config], overrides, timeout=120)["late"]
        slow_ones_hung_up(site, slow)
    assert stats["finish_reason"] == "closespider_timeout"
    assert stats["fptrack/not_crawled/deadline"] >= 4  # the slow pages at least
    assert not any(k.startswith("fptrack/errors/") for k in stats), stats
    assert not any(url.startswith(site.url("/slow/")) for url in ingest.by_url())


def refresh_to(path: str, padding: int = 0) -> bytes:
    head = f'<html><head><meta http-equiv="refresh" content="0; url={path}"></head>'
    return (head + "<body>" + "<p>　</p>" * padding + "</body></html>").encode("gbk")


def test_meta_refresh_is_followed_on_small_and_big_pages(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    gbk = {"Content-Type": "text/html; charset=gbk"}
    pages = {
        "/": page('<html><body><a href="/moved.html">1</a><a href="/big.html">2</a></body></html>'),
        "/moved.html": (200, gbk, refresh_to("/new.html")),
        "/big.html": (200, gbk, refresh_to("/new2.html", padding=20_000)),
        "/new.html": page(chapter_html()),
        "/new2.html": page(chapter_html(CHAPTER[::-1])),
    }
    with FixtureSite(pages) as site:
        config = SiteConfig.from_dict({"name": "refresh", "start_urls": [site.url("/")]})
        crawl_in_process([config], test_overrides, timeout=60)
        stored = ingest.by_url()
        assert set(stored) == {site.url("/new.html"), site.url("/new2.html")}


def test_a_big_page_without_refresh_is_not_decoded_by_the_refresh_check() -> None:
    big = chapter_html(CHAPTER * 200).encode("utf-8")
    request = Request("http://127.0.0.1/big.html")
    response = HtmlResponse(request.url, body=big, encoding="utf-8", request=request)
    middleware = HeadMetaRefreshMiddleware(Settings())
    assert len(big) > HEAD_BYTES
    assert middleware.process_response(request, response) is response
    assert response._cached_ubody is None  # Scrapy's own check would have decoded it all
