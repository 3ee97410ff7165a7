"""End to end: a real Scrapy crawl of the sample site served on 127.0.0.1 feeds a real
Celery worker through the real Redis broker; the pages become match records. Crawling again
stores no duplicate and enqueues nothing for unchanged pages."""

from __future__ import annotations

from urllib.parse import urlsplit

import redis
from celery.contrib.testing.worker import start_worker

from admin.scan import serve_directory, site_config
from crawler.run import crawl_in_process
from matcher.engine import Engine
from matcher.ingest import Ingest
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
        assert len(list(engine.store.pending_pages())) == len(sent)  # none processed yet
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
            eventually(lambda: not list(engine.store.pending_pages()), 120, "the crawled pages")
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
