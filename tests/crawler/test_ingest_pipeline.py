"""IngestPipeline: the given ingest or the production one, outages and refusals counted."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from typing import Any

import pymongo
import pytest
from pymongo.database import Database
from scrapy.exceptions import DropItem
from scrapy.utils.test import get_crawler

from crawler import reactor
from crawler.items import PageItem
from crawler.pipelines import (
    PROCESS_PAGE_TASK,
    PROCESS_PAGES_TASK,
    CelerySender,
    IngestPipeline,
    IngestUnavailable,
)
from crawler.settings import crawl_settings
from crawler.spiders.site import SiteSpider
from matcher.errors import StoreUnavailable, UnusableText
from matcher.pages import PageAlias
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from matcher.store import Store, tallies
from tests.support.crawl import RecordingIngest

SITE = SiteConfig(name="novels", start_urls=("http://novels.test/",))
TEXT = "那天夜里雨下得很大，渡口的灯笼被风吹得左右摇晃。"


def item(url: str = "http://novels.test/book/17/3.html", text: str = TEXT) -> PageItem:
    return PageItem(
        url=url,
        site="novels",
        title="第三章 雨夜渡口",
        text=text,
        status=200,
        encoding="gb18030",
        fetched_at=datetime(2024, 5, 12, 9, 30, tzinfo=UTC),
        next_url=url.replace(".html", "_2.html"),
    )


def pipeline_for(overrides: dict[str, Any]) -> IngestPipeline:
    """The pipeline of a crawl with ``overrides``; without lanes unless they name some, so
    that each store call is made, and done, in the test's own thread."""
    settings = crawl_settings(SITE, {"FPTRACK_INGEST_LANES": 0, **overrides})
    crawler = get_crawler(SiteSpider, settings.copy_to_dict())
    crawler.stats.open_spider()
    return IngestPipeline.from_crawler(crawler)


def test_given_ingest_is_used_as_is_not_a_copy(ingest: RecordingIngest) -> None:
    pipeline = pipeline_for({"FPTRACK_INGEST": ingest})
    assert pipeline.ingest is ingest  # Scrapy deep-copies settings; the ingest survives
    pipeline.open_spider()
    assert pipeline.process_item(item()) == item()
    pipeline.close_spider()
    [call] = ingest.calls
    assert call == {
        "url": "http://novels.test/book/17/3.html",
        "site": "novels",
        "title": "第三章 雨夜渡口",
        "text": TEXT,
        "status": 200,
        "encoding": "gb18030",
        "fetched_at": datetime(2024, 5, 12, 9, 30, tzinfo=UTC),
        "next_url": "http://novels.test/book/17/3_2.html",
        "prev_url": "",
        "exchange": None,
        "etag": "",
        "last_modified": "",
        "aliases": (),
        "parts": 0,
    }
    assert pipeline.stats.get_value("fptrack/ingested/new") == 1


def test_store_outage_and_refused_page_drop_the_item_only(ingest: RecordingIngest) -> None:
    ingest.fail_urls = {
        "http://novels.test/down.html": StoreUnavailable("MongoDB unavailable in upsert"),
        "http://novels.test/empty.html": UnusableText("no text left"),
    }
    pipeline = pipeline_for({"FPTRACK_INGEST": ingest})
    pipeline.open_spider()
    with pytest.raises(DropItem, match="store unavailable"):
        pipeline.process_item(item("http://novels.test/down.html"))
    with pytest.raises(DropItem, match="refused"):
        pipeline.process_item(item("http://novels.test/empty.html"))
    pipeline.process_item(item("http://novels.test/ok.html"))
    stats = pipeline.stats
    assert stats.get_value("fptrack/ingest_errors") == 1
    assert stats.get_value("fptrack/ingest_rejected") == 1
    assert stats.get_value("fptrack/ingested/new") == 1
    assert [c["url"] for c in ingest.calls] == ["http://novels.test/ok.html"]


def test_a_lane_s_pages_go_as_batches_between_marks_and_a_refused_one_alone(
    ingest: RecordingIngest,
) -> None:
    """What a lane hands the pipeline at once: the pages between two marks (an alias) in one
    batch; a batch the backend refuses is stored page by page, so that only the refused
    page is dropped; a lone page goes on its own."""
    ingest.fail_urls = {"http://novels.test/empty.html": UnusableText("no text left")}
    pipeline = pipeline_for({"FPTRACK_INGEST": ingest})
    pipeline.open_spider()
    urls = [f"http://novels.test/{n}.html" for n in ("a", "b", "empty", "c")]
    items = [item(urls[0]), item(urls[1]), PageAlias(urls[1], urls[1] + "?t=1")]
    items += [item(urls[2]), item(urls[3]), PageAlias(urls[3], urls[3] + "?t=2"), item(urls[1])]
    answers = pipeline._store_many(items)
    assert ingest.batches == [urls[:2], urls[2:]]
    assert [type(error).__name__ if error else None for _, error in answers] == [
        None, None, None, "UnusableText", None, None, None,
    ]  # fmt: skip
    assert [c["url"] for c in ingest.calls] == [urls[0], urls[1], urls[3], urls[1]]


def test_an_object_without_page_is_refused() -> None:
    with pytest.raises(TypeError, match="FPTRACK_INGEST"):
        pipeline_for({"FPTRACK_INGEST": object()})


class FakeCeleryApp:
    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[str, list[Any]]] = []
        self.fail = fail
        self.apps: list[Settings] = []

    def send_task(self, name: str, args: list[Any]) -> None:
        if self.fail:
            raise ConnectionError("broker unreachable")
        self.sent.append((name, args))


PRODUCTION = Settings(mongo_uri="mongodb://db.test:27017", mongo_db="fptrack_prod")


@pytest.fixture
def production(
    monkeypatch: pytest.MonkeyPatch, mongo_db: Database
) -> tuple[FakeCeleryApp, Store, list[Any]]:
    """The production wiring, with the test MongoDB server and a recording Celery app."""
    import matcher.worker.celery_app

    app = FakeCeleryApp()
    apps: list[Settings] = []

    def make_app(settings: Settings) -> FakeCeleryApp:
        apps.append(settings)
        return app

    monkeypatch.setattr(matcher.worker.celery_app, "make_app", make_app)
    # A client of its own: the pipeline closes the client of the store it opened.
    client = pymongo.MongoClient(os.environ["FPTRACK_MONGO_URI"], tz_aware=True)
    store = Store(client[mongo_db.name])
    connects: list[Any] = []

    def connect(uri: str, db_name: str, client: Any = None) -> Store:
        connects.append((uri, db_name))
        return store

    monkeypatch.setattr(Store, "connect", staticmethod(connect))
    app.apps = apps
    return app, store, connects


def test_production_ingest_stores_and_sends_tasks_by_name(
    production: tuple[FakeCeleryApp, Store, list[Any]], mongo_db: Database
) -> None:
    app, store, connects = production
    pipeline = pipeline_for({"FPTRACK_SETTINGS": PRODUCTION})
    assert pipeline.ingest is None and pipeline.settings is PRODUCTION
    pipeline.open_spider()
    assert connects == [("mongodb://db.test:27017", "fptrack_prod")]
    assert app.apps == [PRODUCTION]  # the crawl's settings, not the environment's
    pipeline.process_item(item())
    pipeline.ingest.flush()  # the task a page alone gets, sent now
    first = store.pages.page_by_url("http://novels.test/book/17/3.html")
    assert first is not None
    store.page_marks.mark_processed(str(first["_id"]), first["content_hash"])  # as the worker would
    pipeline.process_item(item())  # same text again: stored once, no second task
    pipeline.process_item(item(text=TEXT + "又下起了雨。"))
    pipeline.ingest.flush()
    doc = store.pages.page_by_url("http://novels.test/book/17/3.html")
    assert doc is not None and doc["encoding"] == "gb18030" and doc["text"].endswith("又下起了雨。")
    assert app.sent == [(PROCESS_PAGE_TASK, [str(doc["_id"])])] * 2
    assert pipeline.stats.get_value("fptrack/ingested/new") == 1
    assert pipeline.stats.get_value("fptrack/ingested/unchanged") == 1
    assert pipeline.stats.get_value("fptrack/ingested/changed") == 1
    pipeline.close_spider()
    assert pipeline.ingest is None
    # the crawl gathered its dashboard tallies (FPTRACK_TALLY_SECONDS): sent as it closed
    assert tallies.total(mongo_db)["pages"] == 1


def test_lanes_store_pages_at_once_and_each_page_s_alias_after_it(
    production: tuple[FakeCeleryApp, Store, list[Any]],
) -> None:
    """With lanes the store calls run in their threads and each item comes back when its
    call is done; an alias, given right after its page, is recorded on the stored page."""
    from scrapy.utils.defer import deferred_from_coro
    from twisted.internet.defer import DeferredList

    app, store, _ = production
    pipeline = pipeline_for({"FPTRACK_SETTINGS": PRODUCTION, "FPTRACK_INGEST_LANES": 3})
    pipeline.open_spider()
    urls = [f"http://novels.test/book/17/{n}.html" for n in range(12)]
    items: list[Any] = []
    for n, url in enumerate(urls):
        items += [item(url, text=f"{TEXT}第{n}回。"), PageAlias(url, url + "?t=1")]

    def store_all() -> Any:
        coroutines = [pipeline.process_item(i) for i in items]
        return DeferredList([deferred_from_coro(c) for c in coroutines], fireOnOneErrback=True)

    outcomes = reactor.run_in_reactor(store_all, timeout=60)
    assert [result for _, result in outcomes] == items  # every item back, in its place
    for url in urls:
        doc = store.pages.page_by_url(url)
        assert doc is not None and doc["aliases"] == [url + "?t=1"]
    assert pipeline.stats.get_value("fptrack/ingested/new") == len(urls)
    assert pipeline.stats.get_value("fptrack/aliases/recorded") == len(urls)
    assert pipeline.stats.get_value("fptrack/stored_pages") == len(urls)
    stored = {str(doc["_id"]) for url in urls if (doc := store.pages.page_by_url(url))}
    pipeline.close_spider()  # the tasks still waiting are sent
    sent = [ids for name, [ids] in app.sent if name == PROCESS_PAGES_TASK]
    sent += [[page_id] for name, [page_id] in app.sent if name == PROCESS_PAGE_TASK]
    assert len(app.sent) < len(urls)  # pages stored together go as one task
    assert sorted(p for ids in sent for p in ids) == sorted(stored)  # each page once


def test_broker_outage_keeps_the_page_pending(
    production: tuple[FakeCeleryApp, Store, list[Any]],
) -> None:
    app, store, _ = production
    app.fail = True
    pipeline = pipeline_for({"FPTRACK_SETTINGS": PRODUCTION})
    pipeline.open_spider()
    pipeline.process_item(item())
    pipeline.ingest.flush()
    assert pipeline.stats.get_value("fptrack/enqueue_errors") == 1
    assert len(list(store.page_marks.pending_pages())) == 1  # requeue_pending will send it later


def test_the_sender_sends_the_pages_stored_together_as_one_task() -> None:
    """Pages whose tasks wait together go as one ``process_pages`` (at most ``batch``), in
    the order stored; a page alone as ``process_page``; a failed send counts its pages."""
    from scrapy.statscollectors import MemoryStatsCollector

    app = FakeCeleryApp()
    stats = MemoryStatsCollector(get_crawler(SiteSpider))
    sender = CelerySender(app, stats, batch=3, linger=30)
    for n in range(5):
        sender(str(n))
    sender.flush()
    assert app.sent == [(PROCESS_PAGES_TASK, [["0", "1", "2"]]), (PROCESS_PAGES_TASK, [["3", "4"]])]
    sender("5")
    sender.flush()
    assert app.sent[-1] == (PROCESS_PAGE_TASK, ["5"])
    app.fail = True
    sender("6")
    sender("7")
    sender.flush()
    assert stats.get_value("fptrack/enqueue_errors") == 2


def test_missing_celery_app_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matcher.worker.celery_app", None)  # import fails
    pipeline = pipeline_for({"FPTRACK_SETTINGS": PRODUCTION})
    with pytest.raises(IngestUnavailable, match=r"matcher\.worker\.celery_app is not importable"):
        pipeline.open_spider()


def test_no_ingest_and_no_settings_is_a_clear_error() -> None:
    pipeline = pipeline_for({})
    with pytest.raises(IngestUnavailable, match="neither FPTRACK_INGEST nor FPTRACK_SETTINGS"):
        pipeline.open_spider()
