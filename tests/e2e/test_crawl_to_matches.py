"""End to end: a real Scrapy crawl of the sample site served on 127.0.0.1 feeds a real
Celery worker through the real Redis broker; the pages become match records. Crawling again
stores no duplicate and enqueues nothing for unchanged pages."""

from __future__ import annotations

from urllib.parse import urlsplit

import redis
from celery.contrib.testing.worker import start_worker

from admin.scan import serve_directory, site_config
from crawler.pipelines import PROCESS_PAGE_TASK, PROCESS_PAGES_TASK, CelerySender
from crawler.run import crawl_in_process
from matcher.matching.engine import Engine
from matcher.worker.ingest import Ingest
from tests.support.e2e import ROOT, app
from tests.support.waits import eventually

WORKS = ROOT / "samples" / "works"
SITE = ROOT / "samples" / "site"
NO_THROTTLE = {"AUTOTHROTTLE_ENABLED": False, "LOG_LEVEL": "WARNING"}


def test_crawl_feeds_the_worker(engine: Engine, broker: redis.Redis) -> None:
    works = {
        p.name: engine.add_work(p.read_text(encoding="utf-8"), title=p.stem, source=p.name)
        for p in sorted(WORKS.glob("*.txt"))
    }
    sent: list[str] = []

    def enqueue(page_id: str) -> None:
        sent.append(page_id)
        app.send_task("fptrack.process_page", args=[page_id])

    with serve_directory(SITE) as base:
        site = site_config(base + "index.html", 1, 500)
        ingest = Ingest(engine.store, enqueue)
        stats = crawl_in_process([site], {"FPTRACK_INGEST": ingest, **NO_THROTTLE})[site.name]
        assert stats["fptrack/pages"] == engine.store.count("pages") == len(sent)
        assert broker.llen("fptrack") == len(sent)
        assert len(list(engine.store.page_marks.pending_pages())) == len(sent)  # none processed yet
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
            eventually(
                lambda: not list(engine.store.page_marks.pending_pages()), 120, "the crawled pages"
            )
        matches = {
            (urlsplit(m["url"]).path, str(m["work_id"])) for m in engine.store.db.matches.find()
        }
        assert ("/book/1021/1.html", works["lighthouse.txt"]) in matches
        assert ("/tw/book/1023/1.html", works["tea-history.txt"]) in matches
        assert ("/news/5501.html", works["tea-brewing.txt"]) in matches
        assert len(matches) == 9
        assert all(m["site"] == site.name for m in engine.store.db.matches.find())

        # a second crawl of the unchanged site stores no duplicate and enqueues nothing
        sent.clear()
        crawl_in_process([site], {"FPTRACK_INGEST": ingest, **NO_THROTTLE})
        assert sent == [] and broker.llen("fptrack") == 0
        assert engine.store.db.matches.count_documents({}) == 9
        assert engine.store.count("pages") == stats["fptrack/pages"]


def test_the_crawl_s_pages_go_to_the_worker_in_batches(engine: Engine, broker: redis.Redis) -> None:
    """The production sender (:class:`crawler.pipelines.CelerySender`): pages stored together
    go as one ``process_pages`` task, which a real worker matches into the records each
    page's own task would give."""
    works = {
        p.name: engine.add_work(p.read_text(encoding="utf-8"), title=p.stem, source=p.name)
        for p in sorted(WORKS.glob("*.txt"))
    }
    sent: list[tuple[str, list]] = []

    class Recording:
        def send_task(self, name: str, args: list) -> None:
            sent.append((name, args))
            app.send_task(name, args=args)

    with serve_directory(SITE) as base:
        site = site_config(base + "index.html", 1, 500)
        sender = CelerySender(Recording(), None)
        ingest = Ingest(engine.store, sender)
        stats = crawl_in_process([site], {"FPTRACK_INGEST": ingest, **NO_THROTTLE})[site.name]
    pages = [[args[0]] if name == PROCESS_PAGE_TASK else args[0] for name, args in sent]
    assert sorted(p for batch in pages for p in batch) == sorted(
        str(d["_id"]) for d in engine.store.db.pages.find()
    )  # every page once, the last sent as the crawl closed
    assert stats["fptrack/pages"] == engine.store.count("pages") > len(sent)
    assert any(name == PROCESS_PAGES_TASK for name, _ in sent)
    with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
        eventually(
            lambda: not list(engine.store.page_marks.pending_pages()), 120, "the crawled pages"
        )
    matches = {(urlsplit(m["url"]).path, str(m["work_id"])) for m in engine.store.db.matches.find()}
    assert ("/book/1021/1.html", works["lighthouse.txt"]) in matches
    assert ("/tw/book/1023/1.html", works["tea-history.txt"]) in matches
    assert len(matches) == 9


def test_a_download_in_parts_is_one_task_and_one_record_per_work(
    engine: Engine, broker: redis.Redis, tmp_path
) -> None:
    """A ZIP of the four sample novels' chapters, read in parts of one chapter each: the
    crawl sends one task (the first part's), the worker matches every part with it and
    records one match per work on the download's URL."""
    from tests.sites.downloads import book_site

    names = ["lighthouse.txt", "river-town.txt", "tea-history.txt", "star-voyage.txt"]
    texts = [(WORKS / name).read_text(encoding="utf-8") for name in names]
    for name, text in zip(names, texts, strict=True):
        engine.add_work(text, title=name, source=name)
    part_chars = book_site(tmp_path, texts)
    sent: list[str] = []

    def enqueue(page_id: str) -> None:
        sent.append(page_id)
        app.send_task("fptrack.process_page", args=[page_id])

    overrides = {"FPTRACK_DOWNLOAD_PART_CHARS": part_chars, **NO_THROTTLE}
    with serve_directory(tmp_path) as base:
        site = site_config(base + "index.html", 1, 50)
        ingest = Ingest(engine.store, enqueue)
        crawl_in_process([site], {"FPTRACK_INGEST": ingest, **overrides})
        download = base + "down/book.zip"
        first = engine.store.pages.page_by_url(download)
        assert first is not None and first["parts"] == 4 and engine.store.count("pages") == 4
        assert sent == [str(first["_id"])]
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
            eventually(
                lambda: not list(engine.store.page_marks.pending_pages()), 120, "the download"
            )
    found = list(engine.store.db.matches.find())
    assert {m["work_source"]: m["parts"] for m in found} == {
        name: [n] for n, name in enumerate(names, 1)
    }
    assert {m["url"] for m in found} == {download}
