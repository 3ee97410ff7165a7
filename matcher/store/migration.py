"""``fptrack migrate``: bring a database of the earlier layout to the shardable one.

The earlier layout gave pages ObjectId ``_id`` s with unique ``url`` and ``seq`` indexes,
took every ``seq`` from one counter document per kind, and kept one tally document per
figure. The shardable layout (:data:`matcher.store.SHARD_KEYS`, :mod:`matcher.store.ids`):

1. indexes: the unique indexes that do not start with their collection's shard key are
   dropped and the current ones created (:meth:`Store.ensure_indexes`);
2. pages: each page with an ObjectId ``_id`` is copied under the id derived from its URL,
   its match records and fingerprints are pointed at the new id, then the old document is
   deleted. A page keeps its ``seq``, so the Redis indexes stay valid as they are;
3. page fingerprints: those the earlier layout kept in ``fingerprints`` are set on their
   pages' own documents (:data:`matcher.store.fingerprints.PAGE_FIELD`, unless a worker
   stored newer ones there since), then deleted from ``fingerprints``;
4. page links and names: each page without the field naming the pages it links with
   (:data:`matcher.store.pages.AROUND`) gets it from its stored links, and each without the
   one naming its URL and aliases (:data:`~matcher.store.pages.NAMES`) gets that;
5. counters: every stripe of each kind starts above the highest ``seq`` handed out, and
   the single counter documents are deleted;
6. tallies: rebuilt from the data, in stripes (:func:`matcher.store.tallies.recount`).

Each step can run again: a migration stopped half-way (a crash, an outage) is finished by
running it again, and running it on a migrated database changes nothing.

Step 2 changes the shard keys of ``matches`` (``page_id``) and ``fingerprints``
(``owner_id``), which MongoDB cannot do with a multi-document update on a sharded
collection: with pages still to move and either collection sharded
(:func:`sharded_collections`), nothing is changed and :class:`StoreError` says to migrate
before sharding. Every other step writes by full shard key, so a migrated database that
is sharded since may be migrated again.
"""

from __future__ import annotations

from dataclasses import dataclass

from bson import ObjectId
from pymongo import UpdateOne
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError, OperationFailure

from matcher.store import KINDS, Store, StoreError, ids, mongo_errors, tallies
from matcher.store.fingerprints import PAGE_FIELD

BATCH = 500
REKEYED = ("matches", "fingerprints")
"""The collections whose shard-key values moving a page rewrites."""
LEGACY_PAGES = {"_id": {"$type": "objectId"}}
NAMESPACE_NOT_FOUND = 26


@dataclass
class Migrated:
    """What one run changed."""

    pages: int = 0
    matches: int = 0
    fingerprints: int = 0
    page_fingerprints: int = 0
    around: int = 0
    names: int = 0
    counters: int = 0
    tallies: int = 0


@mongo_errors
def migrate(store: Store) -> Migrated:
    """Run every step (see the module docstring); returns what changed."""
    done = Migrated()
    if store.db.pages.find_one(LEGACY_PAGES, {"_id": 1}) is not None:
        sharded = sorted(sharded_collections(store.db, REKEYED))
        if sharded:
            raise StoreError(
                f"database {store.db.name!r} has pages of the earlier layout, and moving them"
                f" rewrites shard keys of {', '.join(sharded)}, which a sharded MongoDB refuses:"
                " run fptrack migrate before sharding (deploy/SCALING.md)"
            )
    store.ensure_indexes()
    while True:
        batch = list(store.db.pages.find(LEGACY_PAGES).limit(BATCH))
        if not batch:
            break
        for doc in batch:
            _move_page(store, doc, done)
    done.page_fingerprints = _page_fingerprints_onto_pages(store)
    done.around = _around_onto_pages(store)
    done.names = _names_onto_pages(store)
    done.counters = _stripe_counters(store)
    done.tallies = tallies.recount(store.db)
    return done


def sharded_collections(db: Database, names: tuple[str, ...]) -> set[str]:
    """Which of the collections ``names`` of ``db`` are sharded.

    A sharded cluster lists its sharded collections in ``config.collections`` (read
    through a mongos; MongoDB 8.0 also lists there, ``unsplittable``, collections it tracks
    unsharded); a replica set or a standalone server has no such collection. A user who
    may not read the config database is answered by ``collStats``' ``sharded`` flag (a
    mongos sets it).
    """
    namespaces = {f"{db.name}.{name}": name for name in names}
    try:
        found = db.client["config"]["collections"].find(
            {"_id": {"$in": list(namespaces)}, "unsplittable": {"$ne": True}}, {"_id": 1}
        )
        return {namespaces[d["_id"]] for d in found}
    except OperationFailure:  # not authorised on the config database
        pass
    sharded = set()
    for name in names:
        try:
            if db.command("collStats", name).get("sharded"):
                sharded.add(name)
        except OperationFailure as exc:
            if exc.code != NAMESPACE_NOT_FOUND:
                raise StoreError(f"cannot tell whether {name} is sharded: {exc}") from exc
    return sharded


def _move_page(store: Store, doc: dict, done: Migrated) -> None:
    old: ObjectId = doc["_id"]
    url = doc.get("url")
    if not isinstance(url, str):
        raise StoreError(f"page {old} has no URL: cannot derive its id")
    existing, slot = store.pages.page_slot(url, {"_id": 1})
    if existing is None:
        try:
            store.db.pages.insert_one({**doc, "_id": slot})
        except DuplicateKeyError:  # another process moved it meanwhile
            existing, slot = store.pages.page_slot(url, {"_id": 1})
    new = slot
    done.matches += store.db.matches.update_many(
        {"page_id": old}, {"$set": {"page_id": new}}
    ).modified_count
    done.fingerprints += store.db.fingerprints.update_many(
        {"owner_kind": "page", "owner_id": old}, {"$set": {"owner_id": new}}
    ).modified_count
    store.db.pages.delete_one({"_id": old})
    done.pages += 1


def _around_onto_pages(store: Store) -> int:
    """Step 4: :data:`~matcher.store.pages.AROUND` set on each page without it; how many
    were set. A page whose links a crawl changes meanwhile gets the field from that write,
    or from the next run of the migration."""
    done = 0
    while batch := store.page_links.pages_without_around(BATCH):
        changed = store.page_links.set_around(batch)
        if not changed:  # every page of the batch was rewritten meanwhile
            break
        done += changed
    return done


def _names_onto_pages(store: Store) -> int:
    """Step 4, names: :data:`~matcher.store.pages.NAMES` added to each page without it."""
    done = 0
    while batch := store.page_links.pages_without_names(BATCH):
        changed = store.page_links.set_names(batch)
        if not changed:  # every page of the batch was given them meanwhile
            break
        done += changed
    return done


def _page_fingerprints_onto_pages(store: Store) -> int:
    """Step 3: each page's fingerprints document of the earlier layout onto the page; how
    many were moved. Written by page id (the pages' shard key) and deleted by owner id
    (the fingerprints'), so a sharded database is migrated too."""
    moved = 0
    legacy = {"owner_kind": "page"}
    while True:
        batch = list(store.db.fingerprints.find(legacy, {"owner_id": 1, "methods": 1}).limit(BATCH))
        if not batch:
            return moved
        store.db.pages.bulk_write(
            [
                UpdateOne(
                    {"_id": d["owner_id"], PAGE_FIELD: {"$exists": False}},
                    {"$set": {PAGE_FIELD: d.get("methods") or {}}},
                )
                for d in batch
            ],
            ordered=False,
        )
        owners = [d["owner_id"] for d in batch]
        store.db.fingerprints.delete_many({**legacy, "owner_id": {"$in": owners}})
        moved += len(batch)


def _stripe_counters(store: Store) -> int:
    """Start every counter stripe above the single counters' ``seq`` (and above any seq in
    use); returns the stripe documents raised."""
    raised = 0
    for kind in KINDS:
        collection = "works" if kind == "work" else "pages"
        highest = 0
        single = store.db.counters.find_one({"_id": kind})
        if single is not None:
            highest = int(single.get("seq", 0))
        top = store.db[collection].find_one({}, {"seq": 1}, sort=[("seq", -1)])
        if top is not None:
            highest = max(highest, int(top.get("seq", 0)))
        if highest == 0:
            continue
        start = ids.first_n_after(highest)
        for stripe in range(ids.STRIPES):
            result = store.db.counters.update_one(
                {"_id": f"{kind}|{stripe}"}, {"$max": {"n": start}}, upsert=True
            )
            raised += int(bool(result.modified_count or result.upserted_id))
        store.db.counters.delete_one({"_id": kind})
    return raised
