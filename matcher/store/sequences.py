"""Integer ids of works and pages: the ``counters`` collection, and the upsert that gives a
new document its ``seq`` (from which the Redis indexes' owner ids are made, :mod:`matcher.ids`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pymongo import ReturnDocument
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from matcher import ids
from matcher.errors import StoreUnavailable
from matcher.keys import MAX_WORK_SEQ
from matcher.store.common import (
    StoreError,
    checked_kind,
    mongo_errors,
    now,
)


class Sequences:
    """The ``counters`` collection, and upserts that number what they create."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def next_seq(self, kind: str, stripe: int) -> int:
        """A new integer id for a work or page, from counter stripe ``stripe``
        (:mod:`matcher.ids`: an atomic ``$inc`` on one of the ``counters`` documents)."""
        limit = MAX_WORK_SEQ if checked_kind(kind) == "work" else ids.MAX_SEQ
        for _ in range(5):
            try:
                doc = self.db.counters.find_one_and_update(
                    {"_id": f"{kind}|{int(stripe)}"},
                    {"$inc": {"n": 1}},
                    upsert=True,
                    return_document=ReturnDocument.AFTER,
                )
            except DuplicateKeyError:  # two first upserts of one stripe raced: again
                continue
            if doc is None:  # the same race, as some servers report it
                continue
            try:
                return ids.seq_of(stripe=stripe, n=int(doc["n"]), limit=limit)
            except ids.SeqExhausted as exc:
                raise StoreError(f"no {kind} ids left: {exc}") from exc
        raise StoreUnavailable(f"counter {kind}|{stripe} could not be incremented")

    def upsert(
        self,
        collection: str,
        kind: str,
        key: dict[str, Any],
        fields: dict[str, Any],
        on_insert: dict[str, Any] | None = None,
        *,
        stripe: int,
        existing: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Upsert by ``key``; a new document gets ``first_seen``, ``on_insert`` and a ``seq``
        from counter stripe ``stripe``. ``existing``: the stored document, when the caller
        already read it (else it is read here)."""
        coll = self.db[collection]
        if existing is None:
            existing = coll.find_one(key, {"_id": 1, "seq": 1})
        stamp = fields.pop("_stamp", now())
        if existing is not None:
            doc = coll.find_one_and_update(
                key, {"$set": fields}, return_document=ReturnDocument.AFTER
            )
            return doc, False
        seq = self.next_seq(kind, stripe)
        insert = {"seq": seq, "first_seen": stamp, **(on_insert or {})}
        for _ in range(3):
            try:
                doc = coll.find_one_and_update(
                    key,
                    {"$set": fields, "$setOnInsert": insert},
                    upsert=True,
                    return_document=ReturnDocument.AFTER,
                )
            except DuplicateKeyError:  # a concurrent writer inserted the same key first
                doc = None
            if doc is None:  # (some servers answer a lost upsert race with no document)
                doc = coll.find_one_and_update(
                    key, {"$set": fields}, return_document=ReturnDocument.AFTER
                )
            if doc is not None:
                return doc, doc["seq"] == seq
        # The key's unique field is held by a document that does not match ``key`` (a
        # page's id slot taken by another URL): the caller looks again.
        raise DuplicateKeyError(f"{collection}: {sorted(key)} taken by another document")

    @mongo_errors
    def by_seq(
        self, collection: str, seqs: Iterable[int], projection: dict[str, int] | None
    ) -> dict[int, dict]:
        """Documents of ``collection`` by their ``seq`` (the projection always keeps it)."""
        wanted = [int(s) for s in seqs]
        projection = None if projection is None else {**projection, "seq": 1}
        found = self.db[collection].find({"seq": {"$in": wanted}}, projection)
        return {d["seq"]: d for d in found}

    @mongo_errors
    def reset(self, kind: str) -> None:
        """Start the ``seq`` counters of ``kind`` again (only once no document of that kind
        is left: its ids would be handed out again)."""
        names = [f"{checked_kind(kind)}|{stripe}" for stripe in range(ids.STRIPES)]
        self.db.counters.delete_many({"_id": {"$in": names}})
