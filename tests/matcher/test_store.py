"""The MongoDB store on the test server: unique keys, idempotent upserts, typed filters."""

from __future__ import annotations

import pymongo
import pytest
from bson import ObjectId

from matcher.errors import StoreUnavailable
from matcher.pages import CrawledPage
from matcher.store import INDEXES, Store, StoreError, ids, tallies
from matcher.store.common import now

STORE_BACKENDS = ("server", "memory")
"""The store's own tests run on the MongoDB-wire server and on the in-memory store."""


def add_work(store: Store, key: str = "works/a.txt", text: str = "正文") -> tuple[dict, bool]:
    doc, created = store.works.upsert_work(
        key, title="标题", content_hash=f"h:{text}", length=len(text), segments=1
    )
    store.works.save_work_segment(
        doc["_id"], {"index": 0, "start": 0, "end": len(text), "title": "", "text": text}
    )
    return doc, created


def add_page(store: Store, url: str = "http://a/1", text: str = "x", **fields: str) -> dict:
    return store.pages.store_crawled_page(
        CrawledPage(url=url, site=fields.pop("site", "a"), title="", text=text, **fields),
        "h:" + text,
    )[0]


def test_ensure_indexes_is_idempotent_and_declares_unique_keys(store: Store) -> None:
    store.ensure_indexes()
    for name, models in INDEXES.items():
        info = store.db[name].index_information()
        for model in models:
            assert model.document["name"] in info
    assert store.db.works.index_information()["key_unique"]["unique"]
    assert store.db.matches.index_information()["pair_unique"]["unique"]


def test_work_upsert_twice_updates_in_place(store: Store) -> None:
    first, created = add_work(store)
    again, created_again = add_work(store, text="新正文")
    assert created and not created_again
    assert again["_id"] == first["_id"] and again["seq"] == first["seq"]
    assert store.count("works") == 1
    assert store.works.work_text(first["_id"]) == "新正文"
    assert again["registered_at"] == first["registered_at"]


def test_work_text_is_kept_by_segments(store: Store) -> None:
    work, _ = store.works.upsert_work("k", title="t", content_hash="h", length=12, segments=3)
    for i, (start, end) in enumerate([(0, 4), (4, 8), (8, 12)]):
        overlap = "甲乙丙丁戊己庚辛壬癸子丑"[start : end + 2]
        segment = {"index": i, "start": start, "end": end, "title": f"第{i}章", "text": overlap}
        store.works.save_work_segment(work["_id"], segment)
    assert store.works.work_text(work["_id"]) == "甲乙丙丁戊己庚辛壬癸子丑"
    assert [s["title"] for s in store.works.work_segments(work["_id"], [2, 0])] == [
        "第0章",
        "第2章",
    ]
    store.works.drop_work_segments(work["_id"], from_index=1)
    assert store.works.work_text(work["_id"]) == "甲乙丙丁"


def test_sequences_are_distinct_per_kind(store: Store) -> None:
    works = [add_work(store, key=f"k{i}")[0] for i in range(5)]
    seqs = [w["seq"] for w in works]
    assert len(set(seqs)) == 5 and all(s >= ids.STRIPES for s in seqs)
    assert [ids.stripe_of(s) for s in seqs] == [ids.key_stripe(f"k{i}") for i in range(5)]
    page = add_page(store)
    stripe = store.pages.seq_stripe  # pages: the process's own stripe, whatever their ids
    assert page["seq"] == ids.seq_of(stripe=stripe, n=1)  # its own counter


def test_page_upsert_keeps_first_seen_and_moves_last_seen(store: Store) -> None:
    first = add_page(store, text="一")
    page = CrawledPage(url="http://a/1", site="a", title="", text="二")
    second, state = store.pages.store_crawled_page(page, "h:二")
    assert state == "changed"
    assert second["first_seen"] == first["first_seen"]
    assert second["last_seen"] >= first["last_seen"]
    assert second["content_hash"] == "h:二" and store.count("pages") == 1


def test_changed_links_make_a_page_changed_and_are_queryable(store: Store) -> None:
    first = add_page(store, "http://a/1", "一")
    store.page_marks.mark_processed(first["_id"], first["content_hash"])
    page = CrawledPage(url="http://a/1", site="a", title="", text="一")
    assert store.pages.store_crawled_page(page, "h:一")[1] == "unchanged"
    page.next_url = "http://a/1_2"
    doc, state = store.pages.store_crawled_page(page, "h:一")
    assert state == "changed" and doc["pending"]
    second = add_page(store, "http://a/1_2", "二", prev_url="http://a/1")
    assert [d["url"] for d in store.page_links.pages_linking_to("http://a/1_2")] == ["http://a/1"]
    found = store.pages.pages_by_url(["http://a/1", "http://a/1_2", "http://a/9"])
    assert sorted(found) == ["http://a/1", "http://a/1_2"]
    assert found["http://a/1_2"]["_id"] == second["_id"]


def test_match_upsert_is_idempotent_and_keeps_review_status(store: Store) -> None:
    work, _ = add_work(store)
    page = add_page(store)
    record = {"page_id": page["_id"], "work_id": work["_id"], "score": 0.9, "url": "http://a/1"}
    first = store.matches.upsert_match(record)
    assert first["status"] == "new" and first["active"]
    assert store.matches.set_status(str(first["_id"]), "confirmed")
    again = store.matches.upsert_match({**record, "score": 0.95, "status": "new"})
    assert again["_id"] == first["_id"] and again["status"] == "confirmed"
    assert again["score"] == 0.95 and again["first_seen"] == first["first_seen"]
    assert store.count("matches") == 1


def test_a_fresh_match_is_inserted_and_one_that_exists_after_all_is_updated(
    store: Store,
) -> None:
    work, _ = add_work(store)
    page = add_page(store)
    record = {"page_id": page["_id"], "work_id": work["_id"], "score": 0.9, "url": "http://a/1"}
    first = store.matches.upsert_match(record, fresh=True)
    assert first["status"] == "new" and first["alert"] == "pending" and first["active"]
    assert store.db.matches.find_one({"_id": first["_id"]}) == first
    assert store.matches.set_status(str(first["_id"]), "confirmed")
    # a task that died before the page's processed mark left the record: the next one's
    # insert is refused by the pair's unique index and the record is updated instead
    again = store.matches.upsert_match({**record, "score": 0.95}, fresh=True)
    assert again["_id"] == first["_id"] and again["status"] == "confirmed"
    assert again["score"] == 0.95 and store.count("matches") == 1
    counted = tallies.total(store.db)
    assert counted["matches_seen"] == 1
    assert counted["active"].get("confirmed") == 1 and not counted["active"].get("new")


def test_a_new_work_s_segments_are_inserted_and_those_there_after_all_updated(
    store: Store,
) -> None:
    work, _ = store.works.upsert_work("w.txt", title="t", content_hash="h", length=4, segments=2)
    segments = [
        {"index": i, "start": 2 * i, "end": 2 * i + 2, "title": f"第{i}章", "text": "正文"}
        for i in range(2)
    ]
    prints = [(10 + i, i, {"simhash": {"version": 1, "value": f"{i:016x}"}}) for i in range(2)]
    store.works.save_work_segments(work["_id"], segments[:1], fresh=True)
    store.fingerprints.save_fingerprints_many("work", work["_id"], prints[:1], fresh=True)
    # a registration that died half-way and ran again: the first segment is there already
    segments[0] = {**segments[0], "text": "新正文"}
    prints[0] = (10, 0, {"simhash": {"version": 1, "value": "f" * 16}})
    store.works.save_work_segments(work["_id"], segments, fresh=True)
    store.fingerprints.save_fingerprints_many("work", work["_id"], prints, fresh=True)
    kept = store.works.work_segments(work["_id"])
    assert [(s["index"], s["text"]) for s in kept] == [(0, "新正文"), (1, "正文")]
    assert store.count("work_segments") == 2 and store.count("fingerprints") == 2
    stored = store.fingerprints.owner_fingerprints("work", work["_id"], "simhash")
    assert sorted((fp["seq"], fp["value"]) for fp in stored) == [(10, "f" * 16), (11, f"{1:016x}")]


def test_deactivate_matches_that_no_longer_hold(store: Store) -> None:
    w1, _ = add_work(store, key="1")
    w2, _ = add_work(store, key="2")
    page = add_page(store)
    for w in (w1, w2):
        store.matches.upsert_match({"page_id": page["_id"], "work_id": w["_id"]})
    assert store.matches.deactivate_matches("page_id", page["_id"], [w1["_id"]]) == 1
    active = store.matches.matches_for("page_id", str(page["_id"]))
    assert [m["work_id"] for m in active] == [w1["_id"]]
    assert len(store.matches.matches_for("page_id", str(page["_id"]), active_only=False)) == 2


def test_delete_work_archives_its_matches_with_their_reviews(store: Store) -> None:
    work, _ = add_work(store)
    p1, p2 = add_page(store, "http://a/1", "x"), add_page(store, "http://a/2", "y")
    for p in (p1, p2):
        store.matches.upsert_match({"page_id": p["_id"], "work_id": work["_id"], "url": p["url"]})
    [taken] = store.matches.matches_for("page_id", str(p2["_id"]))
    assert store.matches.set_status(str(taken["_id"]), "takedown_sent", "notice 7", "bo")
    store.fingerprints.save_fingerprints(
        "work", work["_id"], work["seq"], {"m": {"version": 1, "value": b"x"}}
    )
    assert store.works.delete_work(str(work["_id"]))["_id"] == work["_id"]
    assert store.count("works") == 0 and store.count("fingerprints") == 0
    assert store.count("work_segments") == 0
    # Every match stays, archived: no longer active, listed apart, its review kept.
    assert store.count("matches") == 2 and store.matches.count(active_only=True) == 0
    archived = {m["url"]: m for m in store.matches.list_matches(archived=True)}
    assert sorted(archived) == ["http://a/1", "http://a/2"]
    kept = archived["http://a/2"]
    assert (kept["status"], kept["note"], kept["reviewed_by"]) == (
        "takedown_sent",
        "notice 7",
        "bo",
    )
    assert kept["archived"]["reason"] == "work removed"
    assert kept["archived"]["work_key"] == "works/a.txt" and not kept["active"]
    assert tallies.counts(tallies.total(store.db)) == {s: 0 for s in tallies.counts({})}


def test_a_work_registered_again_takes_back_its_archived_matches(store: Store) -> None:
    """By its key (the same file, another text) or by its text (another file): each record
    given back stays archived until its page is matched with the work again, then it is
    active again with its review; a page the new work has a record of keeps that one."""
    work, _ = add_work(store, "works/a.txt", "正文")
    pages = [add_page(store, f"http://a/{n}", str(n)) for n in range(3)]
    for p in pages:
        store.matches.upsert_match({"page_id": p["_id"], "work_id": work["_id"], "url": p["url"]})
    ids_ = {m["url"]: str(m["_id"]) for m in store.matches.matches_for("work_id", str(work["_id"]))}
    store.matches.set_status(ids_["http://a/0"], "confirmed", "chapter 1", "alice")
    store.works.delete_work(str(work["_id"]))

    again, _ = add_work(store, "works/renamed.txt", "正文")  # same text, another file
    store.matches.upsert_match(
        {"page_id": pages[2]["_id"], "work_id": again["_id"], "url": "http://a/2"}
    )
    assert store.archived_matches.restore_archived(again) == 2  # page 2 keeps the new record
    assert store.matches.count(work_id=str(again["_id"]), archived=True) == 2
    assert store.matches.count(work_id=str(again["_id"]), active_only=True) == 1
    old = store.matches.count(work_id=str(work["_id"]))
    assert old == 1  # page 2's archived record, under the work removed
    back = store.matches.upsert_match(
        {"page_id": pages[0]["_id"], "work_id": again["_id"], "url": "x"}
    )
    assert str(back["_id"]) == ids_["http://a/0"] and "archived" not in back
    record = store.matches.match(match_id=ids_["http://a/0"])
    assert (record["status"], record["note"], record["reviewed_by"]) == (
        "confirmed", "chapter 1", "alice",
    )  # fmt: skip
    assert record["active"] and "archived" not in record
    assert tallies.counts(tallies.total(store.db))["confirmed"] == 1
    # Nothing of another key or text is taken.
    other, _ = add_work(store, "works/other.txt", "别的")
    assert store.archived_matches.restore_archived(other) == 0


def test_fingerprints_upsert_per_method(store: Store) -> None:
    work, _ = add_work(store)
    fps = {"simhash": {"version": 1, "value": "00ff"}, "anchors": {"version": 1, "value": b"\0"}}
    store.fingerprints.save_fingerprints("work", work["_id"], work["seq"], fps)
    store.fingerprints.save_fingerprints("work", work["_id"], work["seq"], fps)
    assert store.count("fingerprints") == 1
    store.fingerprints.save_fingerprints(
        "work", work["_id"], work["seq"], {"simhash": fps["simhash"]}
    )
    assert store.fingerprints.load_fingerprints("work", [work["_id"]], "anchors") == {}
    store.fingerprints.save_fingerprints("work", work["_id"], work["seq"], fps)
    with pytest.raises(StoreError):
        store.fingerprints.load_fingerprints("work", [work["_id"]], "methods.$where")
    loaded = store.fingerprints.load_fingerprints("work", [work["_id"]], "anchors")[work["_id"]]
    assert bytes(loaded["value"]) == b"\0" and loaded["seq"] == work["seq"]
    assert [d["value"] for d in store.fingerprints.iter_fingerprints("work", "simhash")] == ["00ff"]
    store.fingerprints.save_fingerprints("work", work["_id"], work["seq"] + 1, fps, segment=1)
    assert [
        f["segment"] for f in store.fingerprints.owner_fingerprints("work", work["_id"], "anchors")
    ] == [
        0,
        1,
    ]


def test_a_pages_fingerprints_are_stored_with_its_processed_mark(store: Store) -> None:
    page = add_page(store)
    old = {"simhash": {"version": 1, "value": "00ff"}, "anchors": {"version": 1, "value": b"\0"}}
    with pytest.raises(StoreError):  # not on their own: only with the mark
        store.fingerprints.save_fingerprints("page", page["_id"], page["seq"], old)
    assert store.page_marks.mark_processed(page["_id"], "other text", fingerprints=old) is False
    assert store.fingerprints.load_fingerprints("page", [page["_id"]], "simhash") == {}
    assert store.page_marks.mark_processed(page["_id"], page["content_hash"], fingerprints=old)
    new = {"simhash": {"version": 1, "value": "ff00"}}
    assert store.page_marks.mark_processed(page["_id"], page["content_hash"], fingerprints=new)
    # replaced as a whole: no method of the old ones is left beside the new ones
    assert store.fingerprints.load_fingerprints("page", [page["_id"]], "anchors") == {}
    [fp] = store.fingerprints.fingerprints_by_seq("page", [page["seq"]], "simhash")
    assert fp == {
        "owner_id": page["_id"],
        "seq": page["seq"],
        "segment": 0,
        "version": 1,
        "params": {},
        "value": "ff00",
    }
    assert [d["value"] for d in store.fingerprints.iter_fingerprints("page", "simhash")] == ["ff00"]
    assert store.fingerprints.fingerprint_counts() == {"work": 0, "page": 0}  # no index keys
    assert store.count("fingerprints") == 0  # the pages' own documents hold them
    # a page read for the ingest comes without them; one read by id, with them
    assert "fingerprints" not in store.pages.page_by_url(page["url"])
    assert store.pages.get_page(str(page["_id"]))["fingerprints"]["simhash"]["value"] == "ff00"


@pytest.mark.parametrize("bad", [{"$ne": ""}, {"$gt": 0}, ["a"], 5, "not-an-id", "$where"])
def test_ids_from_outside_cannot_become_operators(store: Store, bad: object) -> None:
    add_work(store)
    with pytest.raises(StoreError):
        store.works.get_work(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [{"$ne": ""}, {"$regex": ".*"}, 3])
def test_urls_must_be_strings(store: Store, bad: object) -> None:
    add_page(store)
    with pytest.raises(StoreError):
        store.pages.page_by_url(bad)  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        store.page_links.pages_linking_to(bad)  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        add_page(store, bad)  # type: ignore[arg-type]


def test_dollar_strings_are_values_not_operators(store: Store) -> None:
    page = add_page(store, "$where", "{'$gt': 1}", next_url="$ne")
    assert store.pages.page_by_url("$where")["_id"] == page["_id"]
    assert store.page_links.pages_linking_to("$ne")[0]["_id"] == page["_id"]
    assert store.works.get_work(str(ObjectId())) is None


def test_unreachable_server_raises_retryable_error() -> None:
    client = pymongo.MongoClient("mongodb://127.0.0.1:1", serverSelectionTimeoutMS=200)
    store = Store(client["fptrack"])
    with pytest.raises(StoreUnavailable, match="MongoDB unavailable"):
        add_page(store)


def test_writes_wait_for_the_journal_unless_the_uri_says_otherwise() -> None:
    from matcher.store import mongo_client

    journaled = mongo_client("mongodb://127.0.0.1:1")
    chosen = mongo_client("mongodb://127.0.0.1:1/?w=1&journal=false")
    assert journaled.write_concern.document == {"j": True}
    assert chosen.write_concern.document == {"w": 1, "j": False}
    journaled.close()
    chosen.close()


def test_the_uri_s_own_timeouts_win_over_the_default() -> None:
    from matcher.store import mongo_client

    default = mongo_client("mongodb://127.0.0.1:1", timeout_ms=5000)
    chosen = mongo_client(
        "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300&connectTimeoutMS=200"
    )
    assert default.options.server_selection_timeout == 5.0
    assert default.options.pool_options.connect_timeout == 5.0
    assert chosen.options.server_selection_timeout == 0.3
    assert chosen.options.pool_options.connect_timeout == 0.2
    default.close()
    chosen.close()


def test_the_backend_is_chosen_by_the_uri() -> None:
    """``memory://`` opens a new in-memory store (the embedded scan's), sharing nothing with
    another; a ``mongodb://`` URI a pymongo client with the product's options."""
    from matcher.settings import Settings
    from matcher.store import MEMORY_URI
    from matcher.store.client import backend_of
    from matcher.store.memory import MemoryClient

    assert [backend_of(u) for u in ("memory://", "MEMORY://x", "mongodb://h", "")] == [
        "memory", "memory", "server", "server"
    ]  # fmt: skip
    one = Store.open(Settings(mongo_uri=MEMORY_URI, mongo_db="a"))
    other = Store.connect(MEMORY_URI, "a")
    assert isinstance(one.client, MemoryClient) and not one.thread_safe
    add_page(one)
    assert one.count("pages") == 1 and other.count("pages") == 0
    server = Store.connect("mongodb://127.0.0.1:1/?w=1", "a")
    assert isinstance(server.client, pymongo.MongoClient) and server.thread_safe
    assert server.client.write_concern.document == {"w": 1}
    server.close()


def test_the_search_budget_of_a_day_is_never_overspent(store: Store) -> None:
    taken = [store.discovery.take_search_query("2026-12-07", 3) for _ in range(5)]
    assert taken == [True, True, True, False, False]
    assert store.discovery.search_queries("2026-12-07") == 3
    assert store.discovery.take_search_query("2026-12-08", 3)  # a new day, a new budget
    assert store.discovery.search_queries("2026-12-09") == 0


def test_works_are_searched_for_once_newest_first(store: Store) -> None:
    first, _ = add_work(store, "works/a.txt", "甲")
    second, _ = add_work(store, "works/b.txt", "乙")
    assert [w["_id"] for w in store.works.works_to_search(10)] == [second["_id"], first["_id"]]
    [newest] = store.works.works_to_search(1)
    assert store.works.mark_searched(newest, now(), 1, 3)  # the whole text: done
    assert [w["_id"] for w in store.works.works_to_search(10)] == [first["_id"]]
    assert store.works.get_work(str(second["_id"]))["search_queries"] == 3


def test_only_text_never_searched_is_to_search_again(store: Store) -> None:
    work, _ = add_work(store, "works/a.txt", "甲乙丙丁")
    [found] = store.works.works_to_search(10)
    assert not store.works.mark_searched(found, now(), 2, 1)  # half of it: still to search
    assert store.works.mark_searched(found, now(), 1, 0) is False  # the end only grows
    [found] = store.works.works_to_search(10)
    assert found["searched_to"] == 2 and found["length"] == 4
    assert store.works.mark_searched(found, now(), 4, 1)
    assert store.works.works_to_search(10) == []
    add_work(store, "works/a.txt", "甲乙丙丁")  # registered again, the same text: nothing new
    assert store.works.works_to_search(10) == []
    add_work(store, "works/a.txt", "甲乙丙丁戊己")  # more chapters: the text after them
    [found] = store.works.works_to_search(10)
    assert (found["searched_to"], found["length"]) == (4, 6)
    segments = store.works.segments_after(work["_id"], 4, 10)
    assert [(s["start"], s["end"]) for s in segments] == [(0, 6)]
    assert store.works.segments_after(work["_id"], 6, 10) == []
    # a work searched for whole before the searched text was kept by its end
    old, _ = add_work(store, "works/old.txt", "子丑寅")
    store.db.works.update_one(
        {"_id": old["_id"]},
        {"$set": {"searched_at": now()}, "$unset": {"searched_to": "", "search_pending": ""}},
    )
    assert [w["_id"] for w in store.works.works_to_search(10)] == [work["_id"]]
    add_work(store, "works/old.txt", "子丑寅卯")
    [again] = [w for w in store.works.works_to_search(10) if w["_id"] == old["_id"]]
    assert again["searched_to"] == 3
