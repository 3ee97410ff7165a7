"""The embedded scan's in-memory store answers filters on indexed fields from its
:class:`matcher.store.memory.FieldIndex`: the same documents, in the same order, as plain
mongomock, through random inserts, updates, upserts, replacements, deletions and unique-key
refusals."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import mongomock
import pytest
from bson import ObjectId
from pymongo import ASCENDING, IndexModel
from pymongo.errors import DuplicateKeyError

from matcher.store.memory import LinearCursor, memory_client

INDEXES = [
    IndexModel([("a", ASCENDING), ("b", ASCENDING)], unique=True),
    IndexModel([("tags", ASCENDING)]),
    IndexModel([("c", ASCENDING), ("a", ASCENDING)]),
]
WHEN = datetime(2026, 11, 29, tzinfo=UTC)


def value(rng: random.Random) -> Any:
    return rng.choice([rng.randrange(4), f"s{rng.randrange(4)}", WHEN, None, [rng.randrange(3)]])


def document(rng: random.Random) -> dict[str, Any]:
    doc: dict[str, Any] = {"a": rng.randrange(5), "b": rng.randrange(3)}
    if rng.random() < 0.7:
        doc["tags"] = [f"t{rng.randrange(4)}" for _ in range(rng.randrange(3))]
    if rng.random() < 0.8:
        doc["c"] = value(rng)
    if rng.random() < 0.3:
        doc["_id"] = rng.randrange(20)
    return doc


def spec(rng: random.Random) -> dict[str, Any]:
    return rng.choice(
        [
            {"a": rng.randrange(5)},
            {"a": {"$in": [rng.randrange(5), rng.randrange(5)]}},
            {"tags": f"t{rng.randrange(4)}"},
            {"tags": {"$in": [f"t{rng.randrange(4)}"]}, "b": rng.randrange(3)},
            {"c": rng.choice([rng.randrange(4), f"s{rng.randrange(4)}"])},
            {"c": rng.randrange(3), "a": {"$gte": 1}},
            {"_id": rng.randrange(20)},
            {},
        ]
    )


def change(rng: random.Random) -> dict[str, Any]:
    return rng.choice(
        [
            {"$set": {"c": value(rng)}},
            {"$set": {"a": rng.randrange(5)}},
            {"$unset": {"tags": ""}},
            {"$addToSet": {"tags": f"t{rng.randrange(4)}"}},
            {"$inc": {"b": 1}},
        ]
    )


def step(rng: random.Random, coll: Any, seed: int) -> Any:
    """One random write (the same one for the same ``seed``); what it answered."""
    r = random.Random(seed)
    kind = r.choice(["insert", "update", "update_many", "upsert", "replace", "delete", "fam"])
    try:
        if kind == "insert":
            return ("ok", same(coll.insert_one(document(r)).inserted_id))
        if kind == "update":
            return ("ok", coll.update_one(spec(r), change(r)).modified_count)
        if kind == "update_many":
            return ("ok", coll.update_many(spec(r), change(r)).modified_count)
        if kind == "upsert":
            done = coll.update_one({"a": r.randrange(5), "b": r.randrange(3)}, change(r), True)
            return ("ok", done.matched_count)
        if kind == "replace":
            new = {k: v for k, v in document(r).items() if k != "_id"}
            return ("ok", coll.replace_one(spec(r), new).matched_count)
        if kind == "delete":
            return ("ok", coll.delete_many(spec(r)).deleted_count)
        return ("ok", coll.find_one_and_update(spec(r), change(r)) is not None)
    except DuplicateKeyError:
        return ("duplicate",)


def same(value: Any) -> Any:
    """``value`` with the ObjectIds each store makes for itself left out."""
    if isinstance(value, ObjectId):
        return "ObjectId"
    if isinstance(value, dict):
        return {k: same(v) for k, v in value.items()}
    return value


def found(coll: Any, query: dict[str, Any]) -> list[Any]:
    return [same(doc) for doc in coll.find(query)]


@pytest.mark.parametrize("seed", range(6))
def test_indexed_lookups_answer_as_plain_mongomock(seed: int) -> None:
    rng = random.Random(seed)
    fast = memory_client()["t"]["docs"]
    plain = mongomock.MongoClient(tz_aware=True)["t"]["docs"]
    for coll in (fast, plain):
        coll.create_indexes(INDEXES)
    for n in range(400):
        assert step(rng, fast, seed * 1000 + n) == step(rng, plain, seed * 1000 + n)
        query = spec(rng)
        assert found(fast, query) == found(plain, query), query
    assert found(fast, {}) == found(plain, {})
    fast.drop()
    fast.create_indexes(INDEXES)
    fast.insert_one({"a": 1, "b": 1, "tags": ["t1"]})
    assert [d["a"] for d in fast.find({"tags": "t1"})] == [1]


def test_cursors_step_through_what_plain_mongomock_returns() -> None:
    fast = memory_client()["t"]["docs"]
    plain = mongomock.MongoClient(tz_aware=True)["t"]["docs"]
    for coll in (fast, plain):
        coll.insert_many([{"_id": i, "n": i % 7, "i": i} for i in range(60)])
    queries = [
        lambda c: c.find({}),
        lambda c: c.find({"n": {"$gt": 2}}, {"i": 1}).sort("i", -1),
        lambda c: c.find({}).sort([("n", 1), ("i", -1)]).skip(5).limit(12),
        lambda c: c.find({}).skip(58).limit(10),
        lambda c: c.find({}).limit(-3),
        lambda c: c.aggregate([{"$group": {"_id": "$n", "c": {"$sum": 1}}}]),
    ]
    for query in queries:
        assert list(query(fast)) == list(query(plain))
    cursor = fast.find({}).sort("i", 1)
    assert type(cursor) is LinearCursor
    assert next(cursor)["i"] == 0 and cursor.next()["i"] == 1
    assert type(plain.find({})) is not LinearCursor  # mongomock's own class is left as it is


def test_a_page_is_looked_up_by_its_url_or_an_alias_in_one_read() -> None:
    """Storing a page looks for it, under its URL or as another page's alias, in one read
    (by the ids of its names), on the embedded scan's store as on a server: a URL that is
    another's alias is that page."""
    from matcher.pages import CrawledPage
    from matcher.store import Store

    store = Store(memory_client()["fptrack"])
    store.ensure_indexes()
    pages = store.db.pages
    asked: list[Any] = []
    find = pages.find
    pages.find = lambda query, *a, **k: asked.append(query) or find(query, *a, **k)  # type: ignore[method-assign]

    def crawled(url: str) -> CrawledPage:
        return CrawledPage(url=url, site="pirate", title="", text="第一章的正文")

    store.pages.store_crawled_page(crawled("http://p/1.html"), "h1")
    asked.clear()
    store.pages.store_crawled_page(crawled("http://p/2.html"), "h2")
    assert len(asked) == 1 and "names" in asked[0]  # one read for a page stored nowhere
    assert store.pages.add_page_alias("http://p/1.html", "http://p/1.html?t=9")
    asked.clear()
    doc, _ = store.pages.store_crawled_page(crawled("http://p/1.html?t=9"), "h1")
    assert doc["url"] == "http://p/1.html" and len(asked) == 1
    assert store.pages.page_by_url("http://p/1.html?t=9")["_id"] == doc["_id"]
