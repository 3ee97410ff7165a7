"""End to end: a real crawl of the sample site on 127.0.0.1 feeds a real ``fptrack worker``
process; each new match is POSTed, signed, to a webhook receiver on 127.0.0.1 (which fails
its first request: the worker retries with backoff), once, and only to the rule whose site
it is."""

from __future__ import annotations

import pytest
import redis

from admin.scan import serve_directory, site_config
from crawler.run import crawl_in_process
from matcher.alerts.rules import AlertRule
from matcher.matching.engine import Engine
from matcher.store.alerts import AlertStore
from matcher.worker.ingest import Ingest
from tests.e2e.test_worker import worker_processes
from tests.servers.alerts import webhook_receiver
from tests.support.e2e import ROOT, app
from tests.support.waits import eventually

WORKS = ROOT / "samples" / "works"
SITE = ROOT / "samples" / "site"
NO_THROTTLE = {"AUTOTHROTTLE_ENABLED": False, "LOG_LEVEL": "WARNING"}
SECRET = "e2e-secret"


def test_new_matches_reach_the_webhook_through_a_worker(
    engine: Engine, broker: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FPTRACK_ALERT_BACKOFF", "0.5")  # read by the worker process
    monkeypatch.setenv("FPTRACK_ALERT_ALLOW_PRIVATE", "true")  # the receiver is on 127.0.0.1
    for p in sorted(WORKS.glob("*.txt")):
        engine.add_work(p.read_text(encoding="utf-8"), title=p.stem, source=p.name)
    store = AlertStore(engine.store)
    with serve_directory(SITE) as base, webhook_receiver(SECRET, fail_first=1) as receiver:
        site = site_config(base + "index.html", 1, 500)
        for name, target in (("ours", site.name), ("elsewhere", "another-site")):
            rule = {"name": name, "scope": "site", "target": target, "url": receiver.url,
                    "secret": SECRET}  # fmt: skip
            store.save_rule(AlertRule.from_dict(rule))
        ingest = Ingest(
            engine.store, lambda page_id: app.send_task("fptrack.process_page", [page_id])
        )
        crawl_in_process([site], {"FPTRACK_INGEST": ingest, **NO_THROTTLE})
        with worker_processes(1):
            eventually(
                lambda: not list(engine.store.page_marks.pending_pages()), 120, "the crawled pages"
            )
            matches = {str(m["_id"]) for m in engine.store.db.matches.find()}
            assert len(matches) == 9

            def all_delivered() -> bool:  # received, and recorded so by the worker
                entries = store.entries()
                return len(receiver.delivered()) >= len(matches) and all(
                    e["state"] == "delivered" for e in entries
                )

            eventually(all_delivered, 60, "every new match's webhook")
        delivered = [m["id"] for r in receiver.delivered() for m in r.data["matches"]]
    assert sorted(delivered) == sorted(matches)  # each once
    assert all(r.signed and r.data["rule"]["name"] == "ours" for r in receiver.requests)
    assert len(receiver.requests) == len(matches) + 1  # the one failure, retried
    entries = store.entries()
    assert {e["state"] for e in entries} == {"delivered"} and len(entries) == len(matches)
    log = store.recent_log()
    assert sorted((e["attempt"], e["ok"]) for e in log)[:2] == [(1, False), (1, True)]
    assert any(e["attempt"] == 2 and e["ok"] for e in log)
