"""What brings lost work back, as plain jobs on the real servers: the sweep that sends
``process_page`` again for pages whose task was lost, the page task that skips a page already
matched, and the closing of crawl runs whose processes died (their slot leases in the real
Redis). The same jobs under real workers and beat: ``tests/e2e/test_redelivery.py`` and
``tests/e2e/test_crawl_kill.py``."""

from __future__ import annotations

from datetime import timedelta

import redis

from matcher.keys import Keys
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.store import now
from matcher.worker import jobs
from matcher.worker.ingest import Ingest
from tests.matcher.conftest import page_of, sample

TASK = "fptrack.process_page"
PENDING_AFTER = timedelta(minutes=2)


def store_page(engine: Engine, url: str, text: str, site: str = "pirate", **kw: object) -> str:
    page = CrawledPage(url=url, site=site, title="", text=text, **kw)  # type: ignore[arg-type]
    return Ingest(engine.store, lambda page_id: None).page(page).page_id


def test_the_sweep_sends_again_only_the_pages_whose_task_was_lost(engine: Engine) -> None:
    store = engine.store
    past = now() - timedelta(minutes=10)
    lost = store_page(engine, "http://p/lost", "甲" * 80)  # sent 10 minutes ago, still pending
    engine.store.page_marks.mark_enqueued(
        lost, engine.store.pages.get_page(lost)["content_hash"], past
    )
    fresh = store_page(engine, "http://p/fresh", "乙" * 80)  # sent just now (Ingest)
    never = store_page(engine, "http://p/never", "丙" * 80, fetched_at=past)
    engine.store.db.pages.update_one({"_id": int(never)}, {"$unset": {"enqueued_at": ""}})
    failed = store_page(engine, "http://p/failed", "丁" * 80)  # failed for good since sent
    engine.store.page_marks.mark_enqueued(
        failed, engine.store.pages.get_page(failed)["content_hash"], past
    )
    store.failure_log.record_failure(TASK, failed, "UnusableText: no", 8)
    retried = store_page(engine, "http://p/retried", "戊" * 80)  # failed, then sent again
    engine.store.page_marks.mark_enqueued(
        retried, engine.store.pages.get_page(retried)["content_hash"], past
    )
    store.failure_log.record_failure(TASK, retried, "IndexUnavailable: down", 8)
    store.db.failures.update_one({"ref": retried}, {"$set": {"failed_at": past - PENDING_AFTER}})
    done = store_page(engine, "http://p/done", "己" * 80)  # matched
    engine.store.page_marks.mark_enqueued(
        done, engine.store.pages.get_page(done)["content_hash"], past
    )
    engine.store.page_marks.mark_processed(done, engine.store.pages.get_page(done)["content_hash"])

    sent: list[str] = []
    assert jobs.requeue_pending(store, sent.append, PENDING_AFTER) == {"pages": 3}
    assert sorted(sent) == sorted([lost, never, retried])
    # marked as sent now: not sent again before PENDING_AFTER
    assert jobs.requeue_pending(store, sent.append, PENDING_AFTER) == {"pages": 0}
    assert fresh not in sent and failed not in sent and done not in sent
    assert len(sent) == 3


def test_the_sweep_sends_at_most_its_batch(engine: Engine) -> None:
    store = engine.store
    past = now() - timedelta(minutes=10)
    for n in range(5):
        page_id = store_page(engine, f"http://p/{n}", f"{n}" * 80)
        engine.store.page_marks.mark_enqueued(
            page_id, engine.store.pages.get_page(page_id)["content_hash"], past
        )
    sent: list[str] = []
    assert jobs.requeue_pending(store, sent.append, PENDING_AFTER, limit=3) == {"pages": 3}
    assert jobs.requeue_pending(store, sent.append, PENDING_AFTER, limit=3) == {"pages": 2}
    assert len(set(sent)) == 5


def test_a_page_task_sent_again_skips_a_page_matched_meanwhile(
    engine: Engine, works: dict[str, str]
) -> None:
    page_id = store_page(engine, "http://p/copy", page_of(sample("lighthouse.txt")))
    assert jobs.process_page(engine, page_id, if_pending=True)["matches"] == 1
    again = jobs.process_page(engine, page_id, if_pending=True)
    assert again["skipped"] == "matched" and again["matches"] == 0
    assert jobs.process_page(engine, page_id)["matches"] == 1  # a plain task matches again
    assert engine.store.matches.count() == 1


def test_runs_whose_processes_died_are_closed_interrupted_with_their_pages(
    engine: Engine, redis_client: redis.Redis
) -> None:
    store, keys = engine.store, Keys("fptrack-test")
    start = now() - timedelta(minutes=5)
    alive, dead, gone = "a1" * 16, "b2" * 16, "c3" * 16
    for run_id, token, slot in (("run-1", alive, 0), ("run-1", dead, 1), ("run-2", gone, 0)):
        site = "pirate" if run_id == "run-1" else "other"
        store.crawls.record_crawl_process(
            run_id, site, token, run_started_at=start, started_at=start, outcome="running",
            slot=slot,
        )  # fmt: skip
    redis_client.set(keys.crawl("pirate").slot_lock(0), alive, ex=60)  # a live lease
    redis_client.set(keys.crawl("pirate").slot_lock(1), "d4" * 16, ex=60)  # someone else's
    for n in range(4):  # what run-2's dead process stored before it died
        store_page(engine, f"http://other/{n}", f"{n}" * 80, site="other")
    store_page(engine, "http://pirate/1", "甲" * 80)

    redis_client.hset(keys.crawl("other").run, "id", "run-2")  # run-2's frontier is kept
    anew: list[str] = []
    assert jobs.close_lost_crawls(store, redis_client, keys, anew.append) == ["run-2"]
    assert anew == []  # its frontier is there: crawls:resume resumes it
    one, two = (store.crawls.run(r) for r in ("run-1", "run-2"))
    assert one["outcome"] == "running"  # its other process still holds its lease
    assert one["processes"][dead]["outcome"] == "lost" and one["lost"] == 1
    assert one["processes"][alive]["outcome"] == "running"
    assert two["outcome"] == "interrupted" and two["processes"][gone]["outcome"] == "lost"
    assert two["stats"]["fptrack/pages"] == 4 and two["finished_at"] is not None
    assert jobs.close_lost_crawls(store, redis_client, keys) == []  # nothing more to close

    redis_client.delete(keys.crawl("pirate").slot_lock(0))  # the last one dies
    assert jobs.close_lost_crawls(store, redis_client, keys, anew.append) == ["run-1"]
    assert anew == ["pirate"]  # and Redis had lost its frontier: crawled anew
    one = store.crawls.run("run-1")
    assert one["outcome"] == "interrupted" and one["lost"] == 2
    assert one["stats"]["fptrack/pages"] == 1
