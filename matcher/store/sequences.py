"""Integer ids of works and pages: the ``counters`` collection, and the upsert that gives a
new document its ``seq`` (from which the Redis indexes' owner ids are made,
:mod:`matcher.store.ids`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from pymongo import ReturnDocument
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from matcher.errors import StoreUnavailable
from matcher.keys import MAX_WORK_SEQ
from matcher.store import ids
from matcher.store.common import (
    StoreError,
    checked_kind,
    mongo_errors,
    now,
)


class Unread:
    """The caller of :meth:`Sequences.upsert` did not read the document first."""


UNREAD = Unread()


class Sequences:
    """The ``counters`` collection, and upserts that number what they create."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._reserved: dict[tuple[str, int], list[int]] = {}
        self._lock = threading.Lock()

    @mongo_errors
    def next_seq(self, kind: str, stripe: int, block: int = 1) -> int:
        """A new integer id for a work or page, from counter stripe ``stripe``
        (:mod:`matcher.store.ids`: an atomic ``$inc`` on one of the ``counters`` documents).

        With ``block`` > 1, that many are taken at once and the rest handed out by later
        calls of this object: one command per ``block`` ids (those not handed out when the
        process ends are never used: gaps are harmless)."""
        kind = checked_kind(kind)
        with self._lock:
            left = self._reserved.get((kind, stripe))
            if left:
                return left.pop()
        limit = MAX_WORK_SEQ if kind == "work" else ids.MAX_SEQ
        for _ in range(5):
            try:
                doc = self.db.counters.find_one_and_update(
                    {"_id": f"{kind}|{int(stripe)}"},
                    {"$inc": {"n": int(block)}},
                    upsert=True,
                    return_document=ReturnDocument.AFTER,
                )
            except DuplicateKeyError:  # two first upserts of one stripe raced: again
                continue
            if doc is None:  # the same race, as some servers report it
                continue
            last = int(doc["n"])
            try:
                seqs = [
                    ids.seq_of(stripe=stripe, n=n, limit=limit)
                    for n in range(last, last - int(block), -1)
                ]
            except ids.SeqExhausted as exc:
                raise StoreError(f"no {kind} ids left: {exc}") from exc
            first = seqs.pop()
            if seqs:
                with self._lock:
                    self._reserved.setdefault((kind, stripe), []).extend(seqs)
            return first
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
        block: int = 1,
        existing: dict[str, Any] | Unread | None = UNREAD,
    ) -> tuple[dict[str, Any], bool]:
        """Upsert by ``key``; a new document gets ``first_seen``, ``on_insert`` and a ``seq``
        from counter stripe ``stripe`` (taken ``block`` at a time, :meth:`next_seq`).
        ``existing``: the whole stored document (None: there was none) when the caller
        already read it, else it is read here. Returns the document as written (made from
        ``existing`` and what was written) and whether it was created.

        Plain updates, never ``findAndModify``: a server may answer that by reading the
        whole collection (SecantusDB does, at about 15 ms per 1,000 documents), while an
        update by ``_id`` costs a millisecond.
        """
        coll = self.db[collection]
        if isinstance(existing, Unread):
            existing = coll.find_one(key)
        stamp = fields.pop("_stamp", now())
        if existing is not None and coll.update_one(key, {"$set": fields}).matched_count:
            return {**existing, **fields}, False
        seq = self.next_seq(kind, stripe, block)
        insert = {"seq": seq, "first_seen": stamp, **(on_insert or {})}
        for _ in range(3):
            try:
                done = coll.update_one(key, {"$set": fields, "$setOnInsert": insert}, upsert=True)
            except DuplicateKeyError:  # a concurrent writer inserted the same key first
                continue
            if done.upserted_id is not None:
                return {**key, **insert, **fields, "_id": done.upserted_id}, True
            found = coll.find_one(key)  # a concurrent writer inserted it first
            if found is not None:
                return found, False
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
        with self._lock:
            for key in [k for k in self._reserved if k[0] == kind]:
                del self._reserved[key]
