"""Stored fingerprints: one document per page, or per segment of a work, holding every
method's value (``fingerprints``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from bson import Binary, ObjectId
from pymongo import ASCENDING, UpdateOne
from pymongo.database import Database

from matcher.field_names import INDEX_KEYS
from matcher.store.common import (
    KINDS,
    StoreError,
    checked_kind,
    mongo_errors,
    now,
)


def method_name(name: str) -> str:
    """A fingerprint method's name fit for a field path; anything else is a :class:`StoreError`."""
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise StoreError(f"fingerprint method must be a plain name, got {name!r}")
    return name


def _methods(fingerprints: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The stored form of an owner's fingerprints: ``{method: {"version", "params",
    "value"}}``, ``bytes`` values as BSON binary."""
    methods = {}
    for method, fp in fingerprints.items():
        value = fp["value"]
        methods[method_name(method)] = {
            "version": int(fp["version"]),
            "params": fp.get("params", {}),
            "value": Binary(value) if isinstance(value, bytes) else value,
        }
    return methods


class Fingerprints:
    """The ``fingerprints`` collection."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def save_fingerprints(
        self,
        kind: str,
        owner_id: ObjectId,
        seq: int,
        fingerprints: dict[str, dict[str, Any]],
        segment: int = 0,
    ) -> None:
        """Store an owner's fingerprints (see :meth:`save_fingerprints_many`)."""
        self.save_fingerprints_many(kind, owner_id, [(seq, segment, fingerprints)])

    @mongo_errors
    def swap_fingerprints(
        self,
        kind: str,
        owner_id: ObjectId,
        seq: int,
        fingerprints: dict[str, dict[str, Any]],
        method: str,
        first: bool = False,
    ) -> dict | None:
        """Store a page's (or one-segment owner's) fingerprints as
        :meth:`save_fingerprints_many` does, and return the method ``method`` of those they
        replace (flattened as by :meth:`load_fingerprints`; None: there were none). With
        ``first`` (the owner was never matched, so none are expected) they are not read:
        None."""
        key = {"owner_kind": checked_kind(kind), "owner_id": owner_id, "segment": 0}
        fields = {"seq": int(seq), "methods": _methods(fingerprints), "updated_at": now()}
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{method_name(method)}": 1}
        # A read and a plain update, not one findAndModify (see
        # matcher.store.sequences.Sequences.upsert); the page's lock is held meanwhile.
        before = None if first else self.db.fingerprints.find_one(key, projection)
        self.db.fingerprints.update_one(key, {"$set": fields}, upsert=True)
        return None if before is None else self._flatten(before, method)

    @mongo_errors
    def save_fingerprints_many(
        self,
        kind: str,
        owner_id: ObjectId,
        items: Iterable[tuple[int, int, dict[str, dict[str, Any]]]],
    ) -> None:
        """Store an owner's fingerprints, ``(seq, segment, {method: {"version", "params",
        "value"}})`` per page or work segment, in one unordered bulk write.

        One document per page, or per segment of a work, holds every method
        (``methods.<method>``), replaced as a whole, so a re-fingerprinted owner never mixes
        old and new values; ``bytes`` values are stored as BSON binary. ``seq`` is the id the
        Redis indexes use (a work segment's owner id, :mod:`matcher.keys`).
        """
        kind = checked_kind(kind)
        ops = []
        for seq, segment, fingerprints in items:
            key = {"owner_kind": kind, "owner_id": owner_id, "segment": int(segment)}
            fields = {"seq": int(seq), "methods": _methods(fingerprints), "updated_at": now()}
            ops.append(UpdateOne(key, {"$set": fields}, upsert=True))
        if ops:
            self.db.fingerprints.bulk_write(ops, ordered=False)

    @staticmethod
    def _flatten(doc: dict, method: str) -> dict | None:
        fp = doc.get("methods", {}).get(method)
        if fp is None:
            return None
        segment = doc.get("segment", 0)
        return {"owner_id": doc["owner_id"], "seq": doc["seq"], "segment": segment, **fp}

    @mongo_errors
    def load_fingerprints(
        self, kind: str, owner_ids: Iterable[ObjectId], method: str
    ) -> dict[ObjectId, dict]:
        """Stored fingerprints of one method for several pages (or one-segment owners).

        Each value: ``{"owner_id", "seq", "segment", "version", "params", "value"}``.
        """
        query = {
            "owner_kind": checked_kind(kind),
            "owner_id": {"$in": list(owner_ids)},
            "segment": {"$in": [0, None]},
        }
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{method_name(method)}": 1}
        out = {}
        for doc in self.db.fingerprints.find(query, projection):
            fp = self._flatten(doc, method)
            if fp is not None:
                out[doc["owner_id"]] = fp
        return out

    @mongo_errors
    def owner_fingerprints(self, kind: str, owner_id: ObjectId, method: str) -> list[dict]:
        """One owner's stored fingerprints of one method, one per segment, in order."""
        query = {"owner_kind": checked_kind(kind), "owner_id": owner_id}
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{method_name(method)}": 1}
        found = self.db.fingerprints.find(query, projection).sort("segment", ASCENDING)
        return [fp for fp in (self._flatten(d, method) for d in found) if fp is not None]

    @mongo_errors
    def fingerprints_by_seq(self, kind: str, seqs: Iterable[int], method: str) -> list[dict]:
        """Stored fingerprints of one method for the pages (or work segments) of ``seqs``,
        the owner ids of the Redis indexes."""
        query = {"owner_kind": checked_kind(kind), "seq": {"$in": [int(s) for s in seqs]}}
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{method_name(method)}": 1}
        found = (self._flatten(d, method) for d in self.db.fingerprints.find(query, projection))
        return [fp for fp in found if fp is not None]

    @mongo_errors
    def work_fingerprints(
        self, segments: Iterable[tuple[ObjectId, int]], method: str
    ) -> list[dict]:
        """Stored fingerprints of one method for the work segments ``(work id, segment
        index)``: a query per work, on the shard key and the unique index (``owner_id``,
        then its segments), so no other segment is read and no other shard asked."""
        by_work: dict[ObjectId, set[int]] = {}
        for oid, index in segments:
            by_work.setdefault(oid, set()).add(int(index))
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{method_name(method)}": 1}
        out = []
        for oid, indexes in sorted(by_work.items()):
            query = {"owner_id": oid, "owner_kind": "work", "segment": {"$in": sorted(indexes)}}
            found = (self._flatten(d, method) for d in self.db.fingerprints.find(query, projection))
            out += [fp for fp in found if fp is not None]
        return out

    @mongo_errors
    def iter_fingerprints(self, kind: str, method: str) -> Iterator[dict]:
        """Every stored fingerprint of one method and owner kind, in ``seq`` order."""
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{method_name(method)}": 1}
        cursor = self.db.fingerprints.find({"owner_kind": checked_kind(kind)}, projection)
        for doc in cursor.sort("seq", ASCENDING):
            fp = self._flatten(doc, method)
            if fp is not None:
                yield fp

    @mongo_errors
    def delete_owner(self, kind: str, owner_id: ObjectId, from_segment: int | None = None) -> None:
        """Delete an owner's fingerprints: all of them, or those of its segments from
        ``from_segment`` on."""
        query: dict[str, Any] = {"owner_kind": checked_kind(kind), "owner_id": owner_id}
        if from_segment is not None:
            query["segment"] = {"$gte": int(from_segment)}
        self.db.fingerprints.delete_many(query)

    @mongo_errors
    def fingerprint_counts(self) -> dict[str, int]:
        """Owners with stored index keys, per kind: what ``fptrack index rebuild`` indexes."""
        field = f"methods.{INDEX_KEYS}"
        return {
            kind: self.db.fingerprints.count_documents(
                {"owner_kind": kind, field: {"$exists": True}}
            )
            for kind in KINDS
        }

    @mongo_errors
    def count(self, kind: str) -> int:
        """Stored fingerprint documents of owners of ``kind`` (pages, or work segments)."""
        return self.db.fingerprints.count_documents({"owner_kind": checked_kind(kind)})

    @mongo_errors
    def delete_kind(self, kind: str) -> int:
        """Delete the fingerprints of every owner of ``kind``; how many there were."""
        return self.db.fingerprints.delete_many({"owner_kind": checked_kind(kind)}).deleted_count
