"""``fptrack migrate`` converts a database of the earlier layout (ObjectId page ids, unique
``url`` and ``seq`` indexes, one counter per kind, one document per tally) on the test
MongoDB server, and running it again changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime

from bson import ObjectId

from admin.cli import main
from admin.context import Context
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.store import SHARD_KEYS, ids, page_key, tallies
from matcher.store.pages import AROUND, NAMES, around_ids

WHEN = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


def old_layout(db) -> dict[str, ObjectId]:
    """Three pages, one work, matches and fingerprints as the earlier layout wrote them."""
    db.pages.create_index("url", unique=True, name="url_unique")
    db.pages.create_index("seq", unique=True, name="seq_unique")
    work = ObjectId()
    db.works.insert_one({"_id": work, "key": "w", "seq": 1, "title": "灯塔", "source": "w.txt"})
    pages = {}
    for seq in (1, 2, 3):
        oid = ObjectId()
        url = f"http://pirate.test/{seq}.html"
        pages[url] = oid
        db.pages.insert_one(
            {"_id": oid, "url": url, "seq": seq, "site": "pirate", "text": "正文",
             "content_hash": "h", "fetched_at": WHEN, "first_seen": WHEN,
             "next_url": f"http://pirate.test/{seq + 1}.html" if seq < 3 else "",
             "prev_url": f"http://pirate.test/{seq - 1}.html" if seq > 1 else ""}
        )  # fmt: skip
        db.fingerprints.insert_one(
            {
                "owner_kind": "page",
                "owner_id": oid,
                "segment": 0,
                "seq": seq,
                "methods": {"simhash": {"version": 1, "value": f"{seq:016x}"}},
            }
        )
        db.matches.insert_one(
            {"page_id": oid, "work_id": work, "url": url, "site": "pirate", "status": "new",
             "active": True, "first_seen": WHEN, "work_title": "灯塔"}
        )  # fmt: skip
    db.counters.insert_many([{"_id": "page", "seq": 3}, {"_id": "work", "seq": 1}])
    db.tallies.insert_one({"_id": "total", "pages": 3, "works": 1})
    return pages


def test_migrate_converts_the_earlier_layout_once(ctx: Context, capsys) -> None:
    db = ctx.engine.store.db
    before = old_layout(db)
    engine = ctx.engine
    opened = Engine.open(engine.settings, store=engine.store, redis_client=engine.redis)
    assert "pages' fingerprints are stored in the earlier layout: run fptrack migrate" in (
        opened.problems
    )
    assert main(["migrate"], ctx) == 0
    out = capsys.readouterr().out
    opened = Engine.open(engine.settings, store=engine.store, redis_client=engine.redis)
    assert not opened.problems
    assert out.startswith("migrated: 3 page id(s) (3 match record(s), 3 fingerprint")
    assert "3 page fingerprint document(s) moved onto their pages" in out
    assert "3 page(s) given their links' ids, 3 their names' ids" in out

    for url, old in before.items():
        doc = ctx.engine.store.pages.page_by_url(url)
        assert doc["_id"] == ids.page_id(url) and doc["seq"] == int(url[-6])  # seq kept
        assert db.pages.count_documents({"_id": old}) == 0
        assert db.matches.find_one({"url": url})["page_id"] == doc["_id"]
        # its fingerprints on its own document now
        fp = ctx.engine.store.fingerprints.load_fingerprints("page", [doc["_id"]], "simhash")[
            doc["_id"]
        ]
        assert fp["value"] == f"{doc['seq']:016x}"
        # and the ids of the pages it links with, for the one read of a page and its linkers
        assert doc[AROUND] == around_ids(doc["_id"], doc["next_url"], doc["prev_url"])
        assert len(doc[AROUND]) == (2 if url[-6] in "13" else 3)
        assert doc[NAMES] == [ids.page_id(url)]  # and its URL's id, to be found by it
    assert db.fingerprints.count_documents({"owner_kind": "page"}) == 0
    info = db.pages.index_information()
    assert "url_unique" not in info and "seq_unique" not in info
    for name in SHARD_KEYS:
        for index in db[name].index_information().values():
            if index.get("unique"):
                assert [k for k, _ in index["key"]][: len(SHARD_KEYS[name])] == list(
                    SHARD_KEYS[name]
                )
    assert db.counters.find_one({"_id": "page"}) is None
    assert tallies.total(db)["pages"] == 3 and tallies.total(db)["infringing"] == 3

    # a new page gets a seq above every old one, from its own stripe
    new, state = ctx.engine.store.pages.store_crawled_page(
        CrawledPage(url="http://pirate.test/4.html", site="pirate", title="", text="新"), "h4"
    )
    assert (
        state == "new" and new["seq"] > 3 and ids.stripe_of(new["seq"]) == ids.stripe_of(new["_id"])
    )
    assert ctx.engine.store.pages.get_page(str(new["_id"]))["url"] == "http://pirate.test/4.html"
    assert page_key(str(new["_id"])) == new["_id"]

    assert main(["migrate"], ctx) == 0
    again = capsys.readouterr().out
    assert again.startswith("migrated: 0 page id(s) (0 match record(s)")
    assert "0 page fingerprint document(s) moved" in again
    assert "0 page(s) given their links' ids, 0 their names' ids" in again
    assert db.pages.count_documents({}) == 4


def test_shard_commands_name_the_database(ctx: Context, capsys) -> None:
    assert main(["migrate", "--shard-commands"], ctx) == 0
    out = capsys.readouterr().out
    name = ctx.settings.mongo_db
    assert f'sh.enableSharding("{name}");' in out
    assert f'sh.shardCollection("{name}.pages", {{"_id": 1}});' in out


def test_a_sharded_database_is_migrated_only_when_no_shard_key_moves(ctx: Context, capsys) -> None:
    """Moving pages rewrites the shard keys of matches and fingerprints, which a sharded
    MongoDB refuses: with those collections listed as sharded in ``config.collections`` (as
    a mongos lists them), migrate changes nothing and says what to do, in one line; once
    migrated, the database may be sharded and migrated again."""
    db = ctx.engine.store.db
    before = old_layout(db)
    config = db.client["config"]["collections"]
    listed = {f"{db.name}.{name}": key for name, key in SHARD_KEYS.items()}
    config.insert_one({"_id": f"{db.name}.matches", "key": SHARD_KEYS["matches"]})
    try:
        assert main(["migrate"], ctx) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "rewrites shard keys of matches, which a sharded MongoDB refuses" in err
        assert "run fptrack migrate before sharding" in err
        assert db.pages.count_documents({"_id": {"$in": list(before.values())}}) == 3
        assert "url_unique" in db.pages.index_information()  # nothing changed

        config.delete_many({"_id": {"$in": list(listed)}})
        assert main(["migrate"], ctx) == 0  # not sharded (yet): migrated
        config.insert_many([{"_id": ns, "key": key} for ns, key in listed.items()])  # sharded
        assert main(["migrate"], ctx) == 0
        assert "migrated: 0 page id(s)" in capsys.readouterr().out
    finally:
        config.delete_many({"_id": {"$in": list(listed)}})
