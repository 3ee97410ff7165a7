"""The schema shards: every collection has a shard key, every unique index starts with it,
ids need no global counter, and the tallies take their writes in stripes.

MongoDB enforces a unique index of a sharded collection only when the collection's shard
key is ranged and a prefix of the index; the first test reads that off the index
definitions. The others run on the test MongoDB server.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest
from pymongo.database import Database

from matcher.pages import CrawledPage
from matcher.store import INDEXES, SHARD_KEYS, Store, ids, shard_commands, tallies
from matcher.store.pages import SEQ_BLOCK

ROOT = Path(__file__).resolve().parents[2]


def page(url: str, text: str = "正文") -> CrawledPage:
    return CrawledPage(url=url, site="pirate", title="", text=text)


def test_every_unique_index_starts_with_its_collections_shard_key() -> None:
    assert set(SHARD_KEYS) == set(INDEXES)
    checked = 0
    for name, models in INDEXES.items():
        shard_fields = list(SHARD_KEYS[name])
        for model in models:
            if not model.document.get("unique"):
                continue
            fields = list(model.document["key"])
            assert fields[: len(shard_fields)] == shard_fields, (name, model.document["name"])
            assert "hashed" not in SHARD_KEYS[name].values(), name  # ranged keys only
            checked += 1
    assert checked >= 8  # works, work_segments, fingerprints, matches, sites, users, ...


def test_the_deploy_commands_are_the_shard_keys() -> None:
    written = (ROOT / "deploy" / "mongodb-shards.js").read_text(encoding="utf-8")
    assert written == shard_commands("fptrack")
    for name in SHARD_KEYS:
        assert f'sh.shardCollection("fptrack.{name}", ' in written, name


def test_a_database_in_use_has_an_index_for_every_shard_key() -> None:
    """MongoDB shards a collection holding documents only on an existing index that
    supports the key: ``ensure_indexes`` makes one for every ranged key (or it is ``_id``),
    and the commands create every hashed one before sharding its collection."""
    commands = shard_commands("fptrack").splitlines()
    for name, key in SHARD_KEYS.items():
        fields = list(key)
        shard = commands.index(f'sh.shardCollection("fptrack.{name}", {json.dumps(key)});')
        if "hashed" in key.values():
            create = f'db.getSiblingDB("fptrack").getCollection("{name}").createIndex('
            assert commands[shard - 1] == f"{create}{json.dumps(key)});", name
            continue
        prefixes = [list(m.document["key"])[: len(fields)] for m in INDEXES[name]]
        assert fields == ["_id"] or fields in prefixes, name


def test_a_pages_id_is_derived_from_its_url(store: Store) -> None:
    doc, state = store.pages.store_crawled_page(page("http://pirate.test/1.html"), "h1")
    again, state_again = store.pages.store_crawled_page(page("http://pirate.test/1.html"), "h1")
    assert (state, state_again) == ("new", "unchanged")
    assert doc["_id"] == again["_id"] == ids.page_id("http://pirate.test/1.html")
    assert store.pages.get_page(str(doc["_id"]))["url"] == "http://pirate.test/1.html"
    assert store.count("pages") == 1


def test_urls_whose_ids_collide_take_the_next_slots(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ids, "page_id", lambda url: 2**63 - 2)  # every URL on one slot
    urls = [f"http://pirate.test/{i}.html" for i in range(ids.PROBES)]
    stored = [store.pages.store_crawled_page(page(u, u), "h")[0] for u in urls]
    assert [d["_id"] for d in stored] == [2**63 - 2, 2**63 - 1, 0, 1]  # wraps around
    for url, doc in zip(urls, stored, strict=True):
        assert store.pages.page_by_url(url)["_id"] == doc["_id"]
        assert store.pages.store_crawled_page(page(url, url), "h")[1] == "unchanged"
    assert set(store.pages.pages_by_url(urls)) == set(urls)
    with pytest.raises(Exception, match="every id slot"):
        store.pages.store_crawled_page(page("http://pirate.test/one-too-many"), "h")


def test_concurrent_writers_of_one_url_store_it_once(mongo_db: Database) -> None:
    Store(mongo_db).ensure_indexes()
    results: list[str] = []

    def write(n: int) -> None:
        results.append(
            Store(mongo_db).pages.store_crawled_page(page("http://pirate.test/x"), "h")[1]
        )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("new") == 1 and len(results) == 8
    assert mongo_db.pages.count_documents({}) == 1


def test_seqs_come_from_counter_stripes_and_never_repeat(store: Store) -> None:
    """Each process takes page seqs in blocks from a stripe of its own: one counter command
    per block; two processes on one stripe still never hand out the same seq."""
    other = Store(store.db)  # another process's store
    store.pages.seq_stripe = other.pages.seq_stripe = 5  # both on one stripe
    docs = [
        (store if i % 3 else other).pages.store_crawled_page(page(f"http://p.test/{i}"), "h")[0]
        for i in range(200)
    ]
    seqs = [d["seq"] for d in docs]
    assert len(set(seqs)) == 200 and all(0 < s <= ids.MAX_SEQ for s in seqs)
    assert {ids.stripe_of(s) for s in seqs} == {store.pages.seq_stripe}
    [counter] = store.db.counters.find({})
    blocks = math.ceil(133 / SEQ_BLOCK) + math.ceil(67 / SEQ_BLOCK)  # each store's pages
    assert counter["n"] == blocks * SEQ_BLOCK


def test_tallies_are_written_in_stripes_and_read_as_one(store: Store) -> None:
    for i in range(60):
        store.pages.store_crawled_page(page(f"http://p.test/{i}"), "h")
    stripes = list(store.db[tallies.COLLECTION].find({"base": "total"}))
    assert len(stripes) > 1
    assert tallies.total(store.db)["pages"] == 60
    [site] = tallies.merge(store.db[tallies.COLLECTION].find({"scope": "site"}))
    assert site["_id"] == "site|pirate" and site["pages"] == 60


def test_a_stripe_may_go_negative_and_the_sum_stays_right(store: Store) -> None:
    up, down = tallies.Changes(), tallies.Changes()
    up.add("site|a", "infringing", 2, scope="site", key="a", label="a")
    down.add("site|a", "infringing", -1, scope="site", key="a", label="a")
    up.apply(store.db, stripe=0)
    down.apply(store.db, stripe=1)
    assert [d["infringing"] for d in store.db[tallies.COLLECTION].find({}).sort("_id", 1)] == [
        2,
        -1,
    ]
    [top] = tallies.top(store.db, "site")
    assert top["key"] == "a" and top["infringing"] == 1
