"""The dashboard tallies follow every write of works, pages and matches, and recount agrees."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from matcher.pages import CrawledPage
from matcher.store import Store, tallies
from tests.servers.outage import mongo_uri, own_mongodb

STORE_BACKENDS = ("server", "memory")
"""The store's own tests run on the MongoDB-wire server and on the in-memory store."""

DAY = datetime(2026, 11, 2, 8, 30, tzinfo=UTC)


def _work(store: Store, key: str) -> Any:
    doc, _ = store.works.upsert_work(
        key, title=f"作品{key}", content_hash=key, length=100, segments=1
    )
    return doc


def _page(store: Store, url: str, site: str = "pirate") -> Any:
    page = CrawledPage(url=url, site=site, title="", text="页面" * 50, fetched_at=DAY)
    doc, _ = store.pages.store_crawled_page(page, url)
    return doc


def _match(store: Store, page: Any, work: Any, status: str = "new") -> Any:
    record = {
        "page_id": page["_id"],
        "work_id": work["_id"],
        "work_title": work["title"],
        "site": page["site"],
        "url": page["url"],
        "score": 0.9,
        "last_seen": DAY,
    }
    return store.matches.upsert_match(record, status)


def _snapshot(store: Store) -> dict[str, dict]:
    return tallies.snapshot(store.db)


def _figures(store: Store) -> dict[str, Any]:
    """The figures of every tally, without zero counts (recount writes none)."""
    out = {}
    for doc_id, doc in _snapshot(store).items():
        active = {k: v for k, v in doc.get("active", {}).items() if v}
        plain = {k: v for k, v in doc.items() if isinstance(v, int) and v and k != "_id"}
        days = {k: v for k, v in doc.get("days", {}).items() if v}
        out[doc_id] = (active, plain, days)
    return {k: v for k, v in out.items() if v != ({}, {}, {})}


def test_counts_follow_works_pages_matches_and_reviews(store: Store) -> None:
    w1, w2 = _work(store, "a"), _work(store, "b")
    _work(store, "a")  # registering again updates: no new work
    p1, p2 = _page(store, "http://x/1"), _page(store, "http://x/2", site="other")
    _page(store, "http://x/1")  # fetched again: a page fetch, not a new page
    m1 = _match(store, p1, w1)
    _match(store, p1, w1)  # the same match again: counted once
    _match(store, p2, w1)
    _match(store, p1, w2, status="authorised")

    t = _snapshot(store)
    assert t["total"]["works"] == 2 and t["total"]["pages"] == 2
    assert t["day|2026-11-02"]["pages"] == 3
    assert tallies.counts(t["total"]) == {
        "new": 2,
        "confirmed": 0,
        "false_positive": 0,
        "authorised": 1,
        "takedown_sent": 0,
    }
    assert t["total"]["infringing"] == 2 and t["total"]["matches_seen"] == 3
    assert t["site|pirate"]["infringing"] == 1 and t["site|other"]["infringing"] == 1
    assert t[f"work|{w1['_id']}"]["infringing"] == 2
    assert t[f"work|{w1['_id']}"]["label"] == "作品a"
    assert t["day|2026-11-02"]["matches"] == 3
    assert t["site|pirate"]["days"] == {"2026-11-02": 2}

    assert store.matches.set_status(str(m1["_id"]), "false_positive", "no", "rev")
    t = _snapshot(store)
    assert tallies.counts(t["total"])["new"] == 1
    assert tallies.counts(t["total"])["false_positive"] == 1
    assert t["total"]["infringing"] == 1 and t["site|pirate"]["infringing"] == 0
    assert [d["key"] for d in tallies.top(store.db, "site")] == ["other"]

    # The page changes and no longer copies w2: its match leaves the active set.
    assert store.matches.deactivate_matches("page_id", p1["_id"], [w1["_id"]]) == 1
    assert tallies.counts(_snapshot(store)["total"])["authorised"] == 0
    # It copies w2 again: back in the active set, not a new match.
    _match(store, p1, w2)
    t = _snapshot(store)
    assert tallies.counts(t["total"])["authorised"] == 1 and t["total"]["matches_seen"] == 3

    # Removing a work archives its matches: they leave the active set, reviews and all.
    store.works.delete_work(str(w1["_id"]))
    t = _snapshot(store)
    assert t["total"]["works"] == 1
    assert tallies.counts(t["total"])["new"] == 0
    assert tallies.counts(t["total"])["false_positive"] == 0
    assert t[f"work|{w1['_id']}"]["infringing"] == 0
    assert (
        store.matches.match(match_id=str(m1["_id"]))["status"] == "false_positive"
    )  # kept, archived
    # The work registered again takes them back; matched again, they count again.
    again = _work(store, w1["key"])
    assert store.archived_matches.restore_archived(again) == 2
    _match(store, p1, again)
    t = _snapshot(store)
    assert tallies.counts(t["total"])["false_positive"] == 1 and t["total"]["matches_seen"] == 3
    assert t[f"work|{again['_id']}"]["active"]["false_positive"] == 1


def test_recount_rebuilds_what_the_writes_kept(store: Store) -> None:
    works = [_work(store, k) for k in "abc"]
    pages = [_page(store, f"http://x/{i}", site=f"s{i % 2}") for i in range(5)]
    for i, page in enumerate(pages):
        for work in works[: i % 3 + 1]:
            _match(store, page, work)
    store.matches.set_status(str(next(store.matches.active_matches())["_id"]), "confirmed")
    store.matches.deactivate_matches("page_id", pages[4]["_id"], [])
    kept = _figures(store)
    # pages were fetched once each here, so the day's page count is rebuilt exactly
    tallies.recount(store.db)
    assert _figures(store) == kept


def _matches_tallied(store: Store) -> int:
    return _snapshot(store).get("total", {}).get("matches_seen", 0)


def test_a_worker_s_tallies_are_gathered_and_sent_together(store: Store) -> None:
    works = [_work(store, k) for k in "abc"]
    pages = [_page(store, f"http://x/{i}", site=f"s{i % 2}") for i in range(4)]
    store.tallies.gather(60)  # no send of its own during the test
    for i, page in enumerate(pages):
        for work in works[: i % 3 + 1]:
            _match(store, page, work)
    store.matches.deactivate_matches("page_id", pages[3]["_id"], [works[0]["_id"]])
    assert _matches_tallied(store) == 0  # gathered, not sent yet
    assert store.tallies.flush() and _matches_tallied(store) == 7
    sent = _figures(store)
    tallies.recount(store.db)
    assert _figures(store) == sent


def test_tallies_the_store_refused_are_sent_when_it_is_back(tmp_path: Path) -> None:
    server = own_mongodb(tmp_path / "mongodb")
    server.start()
    try:
        store = Store.connect(mongo_uri(server) + "/?serverSelectionTimeoutMS=500", "tallies")
        work, page = _work(store, "a"), _page(store, "http://x/1")
        store.tallies.gather(60)
        _match(store, page, work)
        server.stop()
        assert not store.tallies.flush()  # the server is down: kept
        server.start()
        assert store.tallies.flush() and _matches_tallied(store) == 1
        assert store.tallies.flush() and _matches_tallied(store) == 1  # sent once
        store.client.close()
    finally:
        server.stop()
