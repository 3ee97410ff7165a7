"""The tasks beat sends for what follows a match, run by a real Celery worker on the test
broker: ``fptrack.recheck_takedowns`` finds a page its site took down after the notice, and
``fptrack.discover_sites`` finds the pirate site a watched one links to, and
``fptrack.search_sites`` the one a search engine answers with, and ``fptrack.look_up_hosting``
who hosts the sites with matches through local RDAP services (on loopback addresses: the
worker's settings allow internal addresses, explicitly)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest
import redis
from bson import ObjectId

from crawler import tasks as crawl_tasks
from crawler.one_page import page_text
from matcher.evidence import takedowns
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.sites.site_config import SiteConfig
from matcher.store import now
from matcher.worker import tasks as worker_tasks
from matcher.worker.ingest import Ingest
from tests.e2e.test_worker import enqueue, worker
from tests.servers.rdap import RdapServices
from tests.servers.search_engine import SearchEngineServer
from tests.servers.takedown_site import ChangingSite, loopback_sites
from tests.support.e2e import app, sample
from tests.support.waits import eventually


@pytest.fixture
def sites() -> Iterator[tuple[ChangingSite, ChangingSite]]:
    with loopback_sites("watched", "pirate") as web:
        yield web["watched"], web["pirate"]


def test_the_worker_rechecks_takedowns_and_discovers_sites(
    engine: Engine,
    broker: redis.Redis,
    sites: tuple[ChangingSite, ChangingSite],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = replace(app.fptrack.settings, outbound_allow_private=True)
    monkeypatch.setattr(app.fptrack, "settings", settings)
    watched, pirate = sites
    text = sample("lighthouse.txt")
    engine.add_work(text, title="灯塔", source="lighthouse.txt")
    url = watched.put("/book/1.html", "第一章", text)
    read = page_text(watched.pages["/book/1.html"].body, "text/html; charset=gbk", url)
    Ingest(engine.store, enqueue).page(CrawledPage(url=url, site="watched", title="", text=read))
    pirate.put("/copy.html", "灯塔", text)
    watched.raw("/", f"<html><body><a href='/book/1.html'>第一章</a> 友情链接："
                     f"<a href='{pirate.url('/copy.html')}'>书友站</a></body></html>")  # fmt: skip
    engine.store.sites.save_site(
        SiteConfig.from_dict({"name": "watched", "start_urls": [watched.url("/")]})
    )
    with worker():
        eventually(
            lambda: not list(engine.store.page_marks.pending_pages()), 60, "the page's match"
        )
        [match] = engine.store.db.matches.find()
        sent = now() - timedelta(days=2)  # a notice sent two days ago: its first recheck due
        takedowns.open_cases(
            engine.store, "watched", [match], sent_at=sent, via="marked", to="",
            provider="loopback", days=(1.0, 3.0),
        )  # fmt: skip
        watched.remove("/book/1.html", status=410)
        crawl_tasks.recheck_takedowns.delay()
        crawl_tasks.discover_sites.delay()

        def removed() -> bool:
            return [c["state"] for c in engine.store.takedowns.cases()] == ["removed"]

        eventually(removed, 60, "the recheck")
        eventually(lambda: engine.store.discovery.candidates(), 60, "the discovery")
    [candidate] = engine.store.discovery.candidates()
    assert candidate["_id"] == pirate.netloc
    assert candidate["pirate"] and candidate["works"][0]["title"] == "灯塔"
    [case] = engine.store.takedowns.cases()
    assert case["checks"][0]["kind"] == "gone" and case["checks"][0]["status"] == 410


def test_the_worker_searches_for_new_works(
    engine: Engine,
    broker: redis.Redis,
    sites: tuple[ChangingSite, ChangingSite],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, pirate = sites
    text = sample("lighthouse.txt")
    engine.add_work(text, title="灯塔", source="lighthouse.txt")
    pirate.put("/copy.html", "灯塔", text)
    answer = [{"url": pirate.url("/copy.html"), "title": "灯塔 - 书友站"}]
    with SearchEngineServer(lambda query: answer) as search_engine:
        settings = replace(
            app.fptrack.settings, outbound_allow_private=True, search_url=search_engine.url("/")
        )
        monkeypatch.setattr(app.fptrack, "settings", settings)
        with worker():
            crawl_tasks.search_sites.delay()
            eventually(lambda: engine.store.discovery.candidates(), 60, "the search")
        asked = list(search_engine.asked)
    [candidate] = engine.store.discovery.candidates()
    assert candidate["_id"] == pirate.netloc
    assert candidate["pirate"] and candidate["works"][0]["title"] == "灯塔"
    assert {lead["kind"] for lead in candidate["leads"]} == {"search"}
    assert len(asked) == settings.search_queries_per_chapter  # its one chapter's, once each
    assert engine.store.works.works_to_search(10) == []


def test_the_worker_looks_up_who_hosts_the_sites_with_matches(
    engine: Engine, broker: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n, (name, url) in enumerate(
        {"cdn-pirate": "http://104.16.132.229/", "quiet": "http://220.181.38.148/"}.items(), 1
    ):
        engine.store.sites.save_site(SiteConfig.from_dict({"name": name, "start_urls": [url]}))
        if name == "cdn-pirate":  # the quiet site has no match: not looked up
            engine.store.matches.upsert_match(
                {"page_id": n, "work_id": ObjectId(), "site": name, "url": url}
            )
    with RdapServices() as services:
        settings = replace(
            app.fptrack.settings, outbound_allow_private=True, rdap_deadline=2.0,
            rdap_bootstrap_url=services.bootstrap_url,
        )  # fmt: skip
        monkeypatch.setattr(app.fptrack, "settings", settings)
        with worker():
            worker_tasks.look_up_hosting.delay()
            eventually(lambda: engine.store.takedowns.hosting("cdn-pirate"), 60, "the lookup")
    assert engine.store.takedowns.hosting("quiet") is None
    [network] = engine.store.takedowns.hosting("cdn-pirate")["networks"]
    assert network["abuse_email"] == "abuse@cloudflare.com"
    assert services.requests() == ["/rdap/ipv4.json", "/arin/registry/ip/104.16.132.229"]
