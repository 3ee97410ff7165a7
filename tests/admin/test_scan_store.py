"""The embedded scan's in-memory store (mongomock, :func:`admin.scan.scan_mongo_client`)
behaves like the MongoDB server for what the scan does.

The same sequence of store operations (the ones behind ingest, matching, review, the
dashboard and the admin's lists) runs on both and must give the same transcript, ids and
times aside; and the whole scan of the sample gives the same results on either store.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import mongomock
import pymongo.errors
import pytest
from bson import ObjectId
from pymongo import InsertOne, UpdateOne
from pymongo.database import Database
from pymongo.errors import BulkWriteError

from admin import scan
from matcher.pages import CrawledPage
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from matcher.store import Store, page_key, tallies
from matcher.store.memory import memory_client
from matcher.store.pages import Sending

ROOT = Path(__file__).resolve().parents[2]


class Transcript:
    """What each step returned, with ObjectIds numbered in order and times reduced to
    whether they are aware and at millisecond precision."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, Any]] = []
        self._ids: dict[ObjectId, str] = {}

    def plain(self, value: Any) -> Any:
        if isinstance(value, ObjectId):
            return self._ids.setdefault(value, f"id{len(self._ids)}")
        if isinstance(value, datetime):
            return ("time", value.tzinfo is not None, value.microsecond % 1000 == 0)
        if isinstance(value, dict):
            return {k: self.plain(v) for k, v in sorted(value.items())}
        if isinstance(value, list | tuple):
            return [self.plain(v) for v in value]
        return value

    def step(self, name: str, run: Callable[[], Any]) -> Any:
        try:
            value = run()
        except pymongo.errors.DuplicateKeyError:
            self.steps.append((name, "DuplicateKeyError"))
            return None
        self.steps.append((name, self.plain(value)))
        return value


def exercise(store: Store) -> list[tuple[str, Any]]:
    """The scan's store operations, in the order a scan and a review would run them."""
    t = Transcript()
    store.pages.seq_stripe = 1  # (chosen at random per process)
    t.step("ensure indexes", store.ensure_indexes)
    t.step("again", store.ensure_indexes)
    t.step("index names", lambda: sorted(store.db.pages.index_information()))

    def work_of(key: str, title: str) -> tuple[dict, bool]:
        return store.works.upsert_work(key, title=title, content_hash=key, length=2, segments=1)

    work, _ = t.step("work", lambda: work_of("a.txt", "甲"))
    t.step("same work", lambda: work_of("a.txt", "甲")[1])
    t.step("other work", lambda: work_of("b.txt", "乙")[0]["seq"])
    segment = {"index": 0, "start": 0, "end": 2, "title": "", "text": "正文"}
    t.step("segment", lambda: store.works.save_work_segment(work["_id"], segment))
    t.step("work text", lambda: store.works.work_text(work["_id"]))
    more = [{**segment, "index": i, "start": 2 * i, "end": 2 * i + 2} for i in (1, 2)]
    t.step("segments", lambda: store.works.save_work_segments(work["_id"], [*more, more[0]]))
    t.step("longer text", lambda: store.works.work_text(work["_id"]))
    fps = [(4096 + i, i, {"anchors": {"version": 1, "value": bytes([i])}}) for i in (0, 1, 2)]
    t.step(
        "fingerprints", lambda: store.fingerprints.save_fingerprints_many("work", work["_id"], fps)
    )
    t.step("again", lambda: store.fingerprints.save_fingerprints_many("work", work["_id"], fps[1:]))
    t.step(
        "by seq",
        lambda: sorted(
            (f["seq"], bytes(f["value"]))
            for f in store.fingerprints.fingerprints_by_seq("work", [4097, 4098, 1], "anchors")
        ),
    )
    t.step(
        "by work",
        lambda: sorted(
            (f["seq"], bytes(f["value"]))
            for f in store.fingerprints.work_fingerprints(
                [(work["_id"], 2), (work["_id"], 5)], "anchors"
            )
        ),
    )
    url = "http://127.0.0.1:1/book/1.html"

    def crawled(text: str, digest: str, **links: str) -> tuple[dict, str]:
        page = CrawledPage(url=url, site="s", title="", text=text, **links)
        return store.pages.store_crawled_page(page, digest)

    page, _ = t.step("page", lambda: crawled("一", "p1"))
    t.step("unchanged", lambda: crawled("一", "p1")[1])
    t.step("processed", lambda: store.page_marks.mark_processed(page["_id"], "p1"))
    t.step("changed", lambda: crawled("二", "p2")[1])
    t.step("links", lambda: crawled("二", "p2", next_url=url + "?page=2")[1])
    t.step(
        "linking", lambda: [d["url"] for d in store.page_links.pages_linking_to(url + "?page=2")]
    )
    t.step("stale mark", lambda: store.page_marks.mark_processed(page["_id"], "p1"))
    t.step("pending", lambda: [page_key(i) for i in store.page_marks.pending_pages()])
    book = [f"http://127.0.0.1:1/book/2_{n}.html" for n in range(3)]
    batch = [
        (CrawledPage(url=u, site="s", title="", text=f"页{n}", next_url=book[(n + 1) % 3]), f"b{n}")
        for n, u in enumerate(book)
    ]
    sending = Sending(datetime(2026, 1, 1, tzinfo=UTC), timedelta(hours=1))
    stored = t.step(
        "batch",
        lambda: [
            (d["url"], state, send)
            for d, state, send in store.pages.store_pages_to_send(batch, sending)
        ],
    )
    keys = [page_key(i) for i in store.page_marks.pending_pages()]
    t.step(
        "around",
        lambda: {
            doc["url"]: (sorted(known), sorted(d["url"] for d in linkers))
            for doc, (known, linkers) in store.page_links.pages_and_around([*keys, 9999]).values()
        },
    )
    store.page_marks.gather_marks()
    for n, (url_n, _, _) in enumerate(stored or []):
        doc = store.pages.page_by_url(url_n)
        t.step(
            "gathered mark", lambda d=doc, n=n: store.page_marks.mark_processed(d["_id"], f"b{n}")
        )
    t.step("pending before the marks go", lambda: len(list(store.page_marks.pending_pages())))
    t.step("marks", store.page_marks.send_marks)
    t.step("pending after", lambda: [page_key(i) for i in store.page_marks.pending_pages()])
    t.step("bulk", lambda: bulk_answers(store.db))
    record = {
        "page_id": page["_id"],
        "work_id": work["_id"],
        "url": url,
        "site": "s",
        "score": 0.9,
        "containment": 0.9,
    }
    match = t.step("match", lambda: store.matches.upsert_match(record))
    t.step(
        "review", lambda: store.matches.set_status(str(match["_id"]), "confirmed", "seen", "alice")
    )
    t.step("match again", lambda: store.matches.upsert_match({**record, "score": 0.95}))
    t.step("deactivate", lambda: store.matches.deactivate_matches("page_id", page["_id"], []))
    t.step(
        "matches of page",
        lambda: store.matches.matches_for("page_id", str(page["_id"]), active_only=False),
    )
    t.step("list", lambda: store.matches.list_matches(limit=10, site="s"))
    t.step("user", lambda: store.db.users.insert_one({"username": "alice"}).acknowledged)
    t.step("same user", lambda: store.db.users.insert_one({"username": "alice"}))
    for run_id, when in (("r1", 1), ("r2", 2)):
        started = datetime.fromtimestamp(when, UTC)
        t.step("crawl", lambda r=run_id, s=started: store.crawls.record_crawl(r, "s", started_at=s))
    t.step(
        "latest crawls", lambda: {k: v["run_id"] for k, v in store.crawls.latest_crawls().items()}
    )
    t.step(
        "site", lambda: store.sites.save_site(SiteConfig(name="s", start_urls=("http://x/",)))[1]
    )
    t.step("titles", lambda: [w["title"] for w in store.db.works.find({"title": {"$regex": "甲"}})])
    t.step(
        "tallies", lambda: tallies.counts(store.db[tallies.COLLECTION].find_one({"_id": "total"}))
    )
    t.step("recount", lambda: tallies.recount(store.db))
    t.step("fingerprints", store.fingerprints.fingerprint_counts)
    return t.steps


def bulk_answers(db: Database) -> Any:
    """A bulk write's answers: its counts and upserted ids, and the refused requests of an
    unordered one (a duplicate key), as pymongo reports them."""
    db.scratch.create_index("u", unique=True, sparse=True)
    done = db.scratch.bulk_write(
        [
            UpdateOne({"_id": 1}, {"$set": {"u": 1}}, upsert=True),
            InsertOne({"_id": 2, "u": 2}),
            UpdateOne({"_id": 1}, {"$set": {"u": 3}}),
        ]
    )
    answers: list[Any] = [
        done.upserted_ids,
        done.matched_count,
        done.modified_count,
        done.inserted_count,
    ]
    try:
        db.scratch.bulk_write(
            [InsertOne({"_id": 4, "u": 3}), UpdateOne({"_id": 5}, {"$set": {"v": 1}}, upsert=True)],
            ordered=False,
        )
    except BulkWriteError as exc:
        details = exc.details
        answers.append([(e["index"], e["code"]) for e in details["writeErrors"]])
        answers.append([u["index"] for u in details["upserted"]])
        answers.append((details["nInserted"], details["nUpserted"], details["nMatched"]))
    return answers


def test_the_scan_store_answers_like_the_server(mongo_db: Database) -> None:
    database = scan.scan_mongo_client()["fptrack"]
    memory = exercise(Store(database))
    server = exercise(Store(mongo_db))
    assert [name for name, _ in memory] == [name for name, _ in server]
    for (name, got), (_, expected) in zip(memory, server, strict=True):
        assert got == expected, name
    steps = dict(memory)
    book = "http://127.0.0.1:1/book/2_"
    assert steps["around"][f"{book}0.html"] == [[f"{book}1.html"], [f"{book}2.html"]]
    assert steps["pending before the marks go"] == 4  # gathered marks wait for send_marks
    assert len(steps["pending after"]) == 1
    assert steps["bulk"][4:] == [[[0, 11000]], [1], [0, 1, 0]]


def test_the_same_scan_on_either_store(mongo_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    works, site = ROOT / "samples" / "works", ROOT / "samples" / "site"

    def run(settings: Settings) -> dict[str, Any]:
        with scan.serve_directory(site) as base:
            result, _ = scan.run_scan(
                works,
                [base + "index.html"],
                settings=settings,
                crawl_overrides={"LOG_LEVEL": "WARNING"},
            )
        data = result.to_json()
        for m in data["matches"]:
            m["url"] = m["url"].split("/", 3)[3]  # each run serves the site on its own port
        data["crawl"] = list(data["crawl"].values())
        return data

    in_memory = run(Settings(redis_prefix="fptrack-test-scan-a"))
    monkeypatch.setattr(scan, "scan_mongo_client", lambda: mongo_db.client)
    on_server = run(Settings(redis_prefix="fptrack-test-scan-b", mongo_db=mongo_db.name))
    assert on_server["pages"] == in_memory["pages"] >= 15
    assert len(in_memory["matches"]) == 9
    assert on_server == in_memory


@pytest.mark.parametrize(
    "spec",
    [
        {"_id": 2},
        {"_id": 2, "url": "u2"},
        {"_id": 2, "url": "other"},
        {"_id": {"$in": [3, 1, 99, 3]}},
        {"_id": {"$in": []}},
        {"_id": "2"},
        {"_id": {"$gt": 1}},
        {"_id": True},
        {"url": "u1"},
        {},
    ],
    ids=str,
)
def test_lookups_by_id_find_what_the_scan_would(spec: dict) -> None:
    plain = mongomock.MongoClient(tz_aware=True)["fptrack"]
    fast = memory_client()["fptrack"]
    for db in (plain, fast):
        db.pages.insert_many([{"_id": i, "url": f"u{i}"} for i in (1, 2, 3)])
        db.pages.insert_one({"_id": "2", "url": "text id"})
    assert sorted(map(str, fast.pages.find(spec))) == sorted(map(str, plain.pages.find(spec)))
    assert fast.pages.count_documents(spec) == plain.pages.count_documents(spec)
