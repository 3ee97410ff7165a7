"""Pages stored in batches (:meth:`matcher.store.pages.Pages.store_pages_to_send`): the same
records, states and sends as one page at a time, in a few commands whatever the batch's
size; the odd pages (an alias URL, the same record twice, a page gone and back) included."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.database import Database

from matcher.matching.prepared import content_hash
from matcher.pages import CrawledPage
from matcher.store import Store
from matcher.store.pages import Sending
from tests.support.commands import Commands

STORE_BACKENDS = ("server", "memory")
"""The store's own tests run on the MongoDB-wire server and on the in-memory store."""

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SENDING = Sending(AT, timedelta(hours=1))
VOLATILE = {"first_seen", "last_seen", "seq", "_id"}


def crawled(n: int, text: str = "", **fields: Any) -> CrawledPage:
    """Chapter ``n``, fetched at :data:`AT` (a time BSON keeps whole: milliseconds)."""
    return CrawledPage(
        f"http://pirate.test/c/{n}.html", "pirate", f"第{n}章", text or f"第{n}章的正文",
        fetched_at=AT, **fields,
    )  # fmt: skip


def batch(pages: list[CrawledPage]) -> list[tuple[CrawledPage, str]]:
    return [(page, content_hash(page.text)) for page in pages]


def stable(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in VOLATILE}


def pages_tallied(db: Database) -> Counter[str]:
    """The ``pages`` counts of the dashboard tallies, their stripes (``id#n``) summed."""
    out: Counter[str] = Counter()
    for doc in db.tallies.find({"pages": {"$exists": True}}):
        out[doc["_id"].split("#")[0]] += doc["pages"]
    return out


def test_a_batch_stores_what_one_page_at_a_time_stores(store: Store, mongo_db: Database) -> None:
    first = [crawled(n) for n in range(6)]
    alone = [store.pages.store_page_to_send(page, digest, SENDING) for page, digest in batch(first)]
    again = [crawled(0), crawled(1, "新的正文"), crawled(2, next_url="http://pirate.test/c/3.html")]
    again += [crawled(n) for n in range(6, 9)]
    other = mongo_db.client[mongo_db.name + "_twin"]
    try:
        twin = Store(other)
        twin.ensure_indexes()
        for page, digest in batch(first):
            twin.pages.store_page_to_send(page, digest, SENDING)
        singly = [
            twin.pages.store_page_to_send(page, digest, SENDING) for page, digest in batch(again)
        ]
        batched = store.pages.store_pages_to_send(batch(again), SENDING)
        assert [(state, send) for _, state, send in batched] == [
            (state, send) for _, state, send in singly
        ]
        assert [s for _, s, _ in batched] == [
            "unchanged",
            "changed",
            "changed",
            "new",
            "new",
            "new",
        ]
        assert [stable(d) for d, _, _ in batched] == [stable(d) for d, _, _ in singly]
        for doc, _, _ in batched:  # the document answered is the document stored
            assert stable(store.db.pages.find_one({"_id": doc["_id"]})) == stable(doc)
        assert [stable(d) for d in store.db.pages.find({}, sort=[("url", 1)])] == [
            stable(d) for d in other.pages.find({}, sort=[("url", 1)])
        ]
        assert pages_tallied(store.db) == pages_tallied(other)
        assert pages_tallied(store.db)["total"] == 9  # pages stored for the first time
        seqs = [d["seq"] for d, _, _ in alone + batched[3:]]
        assert len(set(seqs)) == len(seqs)  # every new page its own seq
    finally:
        mongo_db.client.drop_database(other.name)


def test_a_batch_costs_a_few_commands_whatever_its_size(counted: tuple[Store, Commands]) -> None:
    store, commands = counted
    store.pages.store_pages_to_send(batch([crawled(n) for n in range(40)]), SENDING)
    new = list(commands.names)
    commands.names.clear()
    store.pages.store_pages_to_send(
        batch([crawled(n, f"改过的第{n}章") for n in range(40)]), SENDING
    )
    # the slots read, the aliases read (no URL at its slots), two blocks of 32 seqs, the
    # new pages' inserts (one bulk write, not upserts), the tallies' bulk write
    assert sorted(new) == sorted(
        ["find", "find", "findAndModify", "findAndModify", "insert", "update"]
    )
    # every URL at its slot: no aliases read, no seq taken, the pages' updates
    assert sorted(commands.names) == ["find", "update", "update"]


def test_the_odd_pages_of_a_batch(store: Store) -> None:
    home = CrawledPage(
        "http://pirate.test/", "pirate", "首页", "目录", fetched_at=AT,
        aliases=("http://pirate.test/index.html",),
    )  # fmt: skip
    store.pages.store_page_to_send(home, content_hash(home.text), SENDING)
    gone = crawled(1)
    doc, _, _ = store.pages.store_page_to_send(gone, content_hash(gone.text), SENDING)
    store.page_marks.mark_page_gone(gone.url, 404, AT)
    assert store.pages.get_page(doc["_id"])["gone"]
    under_alias = CrawledPage(
        "http://pirate.test/index.html", "pirate", "首页", "目录", fetched_at=AT
    )
    twice = [crawled(2), crawled(2, "又一次")]
    answers = store.pages.store_pages_to_send(batch([under_alias, gone, *twice]), SENDING)
    (home_doc, home_state, _), (back, _, _), (two, two_state, _), (again, again_state, _) = answers
    assert home_doc["url"] == "http://pirate.test/" and home_state == "unchanged"
    assert home_doc["aliases"] == ["http://pirate.test/index.html"]
    assert "gone" not in back and "gone" not in store.pages.get_page(back["_id"])
    assert two["_id"] == again["_id"] and (two_state, again_state) == ("new", "changed")
    assert (
        store.pages.get_page(two["_id"])["text"] == "又一次"
    )  # the later page wins, as one by one
    assert store.db.pages.count_documents({}) == 3


def test_a_stored_page_s_answer_is_the_page_as_the_server_keeps_it(store: Store) -> None:
    """A fetch time finer than a millisecond is stored as MongoDB keeps it, and the answer
    says so: the ingest's document is the stored one."""
    fine = datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)
    doc, _ = store.pages.store_crawled_page(replace(crawled(1), fetched_at=fine), "h1")
    [(batched, _, _)] = store.pages.store_pages_to_send(
        batch([replace(crawled(2), fetched_at=fine)]), SENDING
    )
    for answer in (doc, batched):
        stored = store.pages.page_by_url(answer["url"])
        assert stored is not None
        assert answer["fetched_at"] == stored["fetched_at"] == fine.replace(microsecond=123000)
