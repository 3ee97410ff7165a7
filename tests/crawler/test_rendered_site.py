"""Sites that load their chapter text by script, crawled for real on 127.0.0.1: without
``render`` and with automatic render off the text is not there; with it, Chromium runs the
pages' scripts and every part of the chapter is stored with its text and its script-built
下一页 / 上一页 links. (Automatic render: tests/crawler/test_auto_render.py.)"""

from __future__ import annotations

from typing import Any

from crawler.run import crawl_in_process
from matcher.evidence.archive import RENDERED_FIELD, Exchange, warc_bytes
from matcher.sites.site_config import SiteConfig
from tests.servers.fixture_site import FixtureSite, page
from tests.sites.script_site import ENDPOINTS, PARTS, chromium, halves, script_pages
from tests.support.crawl import RecordingIngest


def crawl(site: FixtureSite, overrides: dict[str, Any], **fields: Any) -> dict[str, Any]:
    config = SiteConfig.from_dict({"name": "script", "start_urls": [site.url("/")], **fields})
    return crawl_in_process([config], overrides, timeout=120)["script"]


def test_without_render_the_chapter_text_is_not_found_and_no_browser_starts(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    """The same site twice in one crawl, automatic render off, ``plain`` without render and
    ``script`` with it: only the latter's requests go through a browser."""
    first, second = halves()
    overrides = {**test_overrides, "FPTRACK_CHROMIUM": chromium(), "FPTRACK_AUTO_RENDER": False}
    with FixtureSite(script_pages()) as plain, FixtureSite(script_pages()) as rendered:
        sites = [
            SiteConfig.from_dict({"name": "plain", "start_urls": [plain.url("/")]}),
            SiteConfig.from_dict(
                {"name": "script", "start_urls": [rendered.url("/")], "render": True}
            ),
        ]
        stats = crawl_in_process(sites, overrides, timeout=120)
        fetched = plain.requested()
        stored = squeezed(" ".join(c["text"] for c in ingest.calls if c["site"] == "plain"))
    assert PARTS[0] in fetched  # the shell was crawled...
    assert PARTS[1] not in fetched and not set(ENDPOINTS) & set(fetched)  # ...its script not run
    assert squeezed(first)[10:40] not in stored and squeezed(second)[:30] not in stored
    assert not [key for key in stats["plain"] if key.startswith("playwright/")]  # no browser
    assert stats["script"]["playwright/browser_count"] == 1 and stats["script"]["fptrack/pages"]


def test_with_render_every_part_is_stored_with_its_text_and_links(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    first, second = halves()
    with FixtureSite(script_pages()) as site:
        stats = crawl(site, {**test_overrides, "FPTRACK_CHROMIUM": chromium()}, render=True)
        fetched = site.requested()
        pages = ingest.by_url()
        one, two = pages[site.url(PARTS[0])], pages[site.url(PARTS[1])]
        assert one["next_url"] == site.url(PARTS[1]) and two["prev_url"] == site.url(PARTS[0])
    assert set(ENDPOINTS) <= set(fetched)  # Chromium ran the scripts
    for part, text in ((one, first), (two, second)):
        assert squeezed(text) in squeezed(part["text"])  # the whole part, line breaks aside
    assert fetched.count("/robots.txt") == 1  # robots.txt read once, by Scrapy itself
    assert stats["fptrack/pages"] == 2 and stats["playwright/browser_count"] == 1
    exchange: Exchange = Exchange(**one["exchange"])
    paragraph = max(first.splitlines(), key=len)
    assert exchange.rendered and exchange.status == 200 and paragraph.encode() in exchange.body
    assert dict(exchange.response_headers)["Content-Type"].startswith("text/html")
    assert RENDERED_FIELD.encode() in _gunzip(warc_bytes(exchange))


def test_a_render_site_without_its_browser_is_a_one_line_problem_of_the_crawl(
    ingest: RecordingIngest, test_overrides: dict[str, Any], tmp_path: Any
) -> None:
    from matcher.sites.crawl_runs import problems

    missing = str(tmp_path / "no-chromium")
    with FixtureSite(script_pages()) as site:
        stats = crawl(site, {**test_overrides, "FPTRACK_CHROMIUM": missing}, render=True)
        fetched = site.requested()
    assert fetched == [] and ingest.calls == []
    assert problems(stats) == [
        f"its pages cannot be rendered: no Chromium at {missing} (install Debian's chromium "
        "package, or set FPTRACK_CHROMIUM)"
    ]


def test_a_rendered_page_retried_goes_back_through_the_shared_frontier(
    ingest: RecordingIngest, test_overrides: dict[str, Any], redis_client: Any
) -> None:
    """Requests on a Redis frontier are JSON: a rendered page that answers 503 is retried
    (Scrapy's RETRY_TIMES, 2) through it like any page, its render marks left out."""
    from crawler.lease import RedisFrontiers

    pages = script_pages()
    pages["/"] = page('<html><body><a href="/book/1.html">一</a> <a href="/busy.html">二</a>')
    pages["/busy.html"] = (503, {"Content-Type": "text/html"}, b"<p>busy</p>")
    frontiers = RedisFrontiers(redis_client, "fptrack-render-test", lease_seconds=30)
    with FixtureSite(pages) as site:
        config = SiteConfig.from_dict(
            {"name": "script", "start_urls": [site.url("/")], "render": True}
        )
        overrides = {**test_overrides, "FPTRACK_CHROMIUM": chromium()}
        stats = crawl_in_process([config], overrides, timeout=120, frontiers=frontiers)
        fetched = site.requested()
        stored = set(ingest.by_url())
    assert fetched.count("/busy.html") == 3 and stats["script"]["retry/count"] == 2
    assert stored == {site.url(path) for path in PARTS}


def squeezed(text: str) -> str:
    return "".join(text.split())


def _gunzip(data: bytes) -> bytes:
    import gzip

    return gzip.decompress(data)


def test_a_rendered_page_cannot_reach_other_ports_or_internal_addresses(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    """The chapter's script also asks another service of the host, by address and by
    ``localhost``, for a page and an image: the browser never sends those requests, and the
    chapter is rendered all the same."""
    first, _ = halves()
    with FixtureSite({"/secret": page("<p>内部服务</p>")}) as internal:
        probes = "".join(
            f'fetch("{url}").catch(() => null);'
            for url in (internal.url("/secret"), internal.url("/secret", host="localhost"))
        )
        image = f'<img src="{internal.url("/secret")}">'
        pages = script_pages()
        status, headers, body = pages[PARTS[0]]
        pages[PARTS[0]] = (
            status,
            headers,
            body.replace(b"<script>", f"{image}<script>{probes}".encode()),
        )
        with FixtureSite(pages) as site:
            crawl(site, {**test_overrides, "FPTRACK_CHROMIUM": chromium()}, render=True)
            text = ingest.by_url()[site.url(PARTS[0])]["text"]
        assert internal.requested() == []
    assert squeezed(first)[:40] in squeezed(text)
