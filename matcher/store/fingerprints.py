"""Stored fingerprints: a work's in ``fingerprints``, one document per segment holding every
method's value; a page's on its own document (:data:`PAGE_FIELD`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import bson
from bson import Binary, ObjectId
from pymongo import ASCENDING, UpdateOne
from pymongo.database import Database

from matcher.store.common import (
    KINDS,
    StoreError,
    checked_kind,
    mongo_errors,
    now,
    write_fresh,
)
from matcher.store.field_names import INDEX_KEYS


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


PAGE_FIELD = "fingerprints"
"""The field of a page's own document holding its fingerprints (``{method: {"version",
"params", "value"}}``), written with its processed mark
(:meth:`matcher.store.page_marks.PageMarks.mark_processed`): one write where two were."""


PAGE_DOCUMENT_BYTES = 15 * 1024 * 1024
"""At most this much of a page's document is its text and fingerprints: MongoDB refuses a
document over 16 MiB, and the page's other fields take the rest."""
READ_BACK = frozenset({"anchors", INDEX_KEYS, "simhash"})
"""The methods of a page's stored fingerprints that are read back (a part of a split
chapter, the works-to-pages lookup, the index rebuild); the others are kept for the
record when they fit."""
_BYTES_PER_CHAR_BOUND = 16
"""More than a page's text and fingerprints take per character (UTF-8 text at most 3 bytes,
fingerprints about 11 on Chinese text, 6 on mixed): a text under ``PAGE_DOCUMENT_BYTES /
this`` characters fits without being measured. (On Chinese text all of them fit up to about
1.1 million characters, those read back up to about 1.5 million.)"""


def fitted_page_fingerprints(
    text: str, fingerprints: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """``fingerprints`` as a page's document holds them beside ``text``: all of them, or
    the :data:`READ_BACK` ones when all would make it larger than
    :data:`PAGE_DOCUMENT_BYTES`; a :class:`StoreError` saying so when even those would.

    >>> small = {"anchors": {"version": 1, "value": b"a"}, "pinyin": {"version": 1, "value": b"p"}}
    >>> fitted_page_fingerprints("正文", small) == small
    True
    """
    if len(text) * _BYTES_PER_CHAR_BOUND <= PAGE_DOCUMENT_BYTES:
        return fingerprints
    size = len(text.encode("utf-8", "surrogatepass"))
    if size + len(bson.encode({PAGE_FIELD: _methods(fingerprints)})) <= PAGE_DOCUMENT_BYTES:
        return fingerprints
    kept = {method: fp for method, fp in fingerprints.items() if method in READ_BACK}
    size += len(bson.encode({PAGE_FIELD: _methods(kept)}))
    if size > PAGE_DOCUMENT_BYTES:
        raise StoreError(
            f"{len(text):,} characters: its text and fingerprints take {size / 2**20:.1f} MiB,"
            f" more than a stored page holds ({PAGE_DOCUMENT_BYTES / 2**20:.0f} MiB)"
        )
    return kept


def stored_methods(fingerprints: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The stored form of an owner's fingerprints (a work segment's ``methods``, a page's
    :data:`PAGE_FIELD`)."""
    return _methods(fingerprints)


def page_fingerprint(doc: dict, method: str) -> dict | None:
    """The method ``method`` of a page document's fingerprints, flattened as
    :meth:`Fingerprints.load_fingerprints` answers (None: it has none).

    >>> doc = {"_id": 7, "seq": 3, "fingerprints": {"m": {"version": 1, "value": 2}}}
    >>> page_fingerprint(doc, "m")
    {'owner_id': 7, 'seq': 3, 'segment': 0, 'version': 1, 'value': 2}
    >>> page_fingerprint({"_id": 7, "seq": 3}, "m") is None
    True
    """
    fp = (doc.get(PAGE_FIELD) or {}).get(method)
    if fp is None:
        return None
    return {"owner_id": doc["_id"], "seq": doc.get("seq"), "segment": 0, **fp}


class Fingerprints:
    """Stored fingerprints: work segments' in the ``fingerprints`` collection, pages' on
    their own documents (:data:`PAGE_FIELD`); ``kind`` says which."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def _page_projection(self, method: str) -> dict[str, int]:
        return {"seq": 1, f"{PAGE_FIELD}.{method_name(method)}": 1}

    def _pages(self, query: dict[str, Any], method: str) -> Iterator[dict]:
        for doc in self.db.pages.find(query, self._page_projection(method)):
            fp = page_fingerprint(doc, method)
            if fp is not None:
                yield fp

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
    def save_fingerprints_many(
        self,
        kind: str,
        owner_id: ObjectId,
        items: Iterable[tuple[int, int, dict[str, dict[str, Any]]]],
        *,
        fresh: bool = False,
    ) -> None:
        """Store an owner's fingerprints, ``(seq, segment, {method: {"version", "params",
        "value"}})`` per page or work segment, in one unordered bulk write (inserts when
        ``fresh``: the owner was just created, :func:`~matcher.store.common.write_fresh`).

        One document per work segment holds every method (``methods.<method>``), replaced
        as a whole, so a re-fingerprinted owner never mixes old and new values; ``bytes``
        values are stored as BSON binary. ``seq`` is the id the Redis indexes use (a work
        segment's owner id, :mod:`matcher.keys`). A page's are written with its processed
        mark instead (:data:`PAGE_FIELD`): a :class:`StoreError` here.
        """
        if checked_kind(kind) == "page":
            raise StoreError("a page's fingerprints are stored with its processed mark")
        keyed = []
        for seq, segment, fingerprints in items:
            key = {"owner_kind": kind, "owner_id": owner_id, "segment": int(segment)}
            fields = {"seq": int(seq), "methods": _methods(fingerprints), "updated_at": now()}
            keyed.append((key, fields))
        if fresh:
            write_fresh(self.db.fingerprints, keyed)
        elif keyed:
            ops = [UpdateOne(key, {"$set": fields}, upsert=True) for key, fields in keyed]
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
        if checked_kind(kind) == "page":
            found = self._pages({"_id": {"$in": list(owner_ids)}}, method)
            return {fp["owner_id"]: fp for fp in found}
        query = {
            "owner_kind": kind,
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
        query = {"seq": {"$in": [int(s) for s in seqs]}}
        if checked_kind(kind) == "page":
            return list(self._pages(query, method))
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{method_name(method)}": 1}
        found = (
            self._flatten(d, method)
            for d in self.db.fingerprints.find({"owner_kind": kind, **query}, projection)
        )
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
        if checked_kind(kind) == "page":
            field = f"{PAGE_FIELD}.{method_name(method)}"
            cursor = self.db.pages.find({field: {"$exists": True}}, self._page_projection(method))
            for doc in cursor.sort("seq", ASCENDING):
                fp = page_fingerprint(doc, method)
                if fp is not None:
                    yield fp
            return
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{method_name(method)}": 1}
        cursor = self.db.fingerprints.find({"owner_kind": kind}, projection)
        for doc in cursor.sort("seq", ASCENDING):
            fp = self._flatten(doc, method)
            if fp is not None:
                yield fp

    @mongo_errors
    def delete_owner(self, kind: str, owner_id: ObjectId, from_segment: int | None = None) -> None:
        """Delete a work's fingerprints: all of them, or those of its segments from
        ``from_segment`` on (a page's go with its document)."""
        query: dict[str, Any] = {"owner_kind": checked_kind(kind), "owner_id": owner_id}
        if from_segment is not None:
            query["segment"] = {"$gte": int(from_segment)}
        self.db.fingerprints.delete_many(query)

    @mongo_errors
    def fingerprint_counts(self) -> dict[str, int]:
        """Owners with stored index keys, per kind: what ``fptrack index rebuild`` indexes."""
        return {kind: self.count_with(kind, INDEX_KEYS) for kind in KINDS}

    @mongo_errors
    def count_with(self, kind: str, method: str, query: dict[str, Any] | None = None) -> int:
        """Owners of ``kind`` (pages, or work segments) with a stored ``method`` that also
        meet ``query`` (on the work segments' documents, or the pages')."""
        if checked_kind(kind) == "page":
            field = f"{PAGE_FIELD}.{method_name(method)}"
            return self.db.pages.count_documents({field: {"$exists": True}, **(query or {})})
        field = f"methods.{method_name(method)}"
        return self.db.fingerprints.count_documents(
            {"owner_kind": kind, field: {"$exists": True}, **(query or {})}
        )

    @mongo_errors
    def any_fingerprints(self) -> bool:
        """Whether any owner, work segment or page, has stored fingerprints."""
        if self.db.fingerprints.find_one({}, {"_id": 1}) is not None:
            return True
        return self.db.pages.find_one({PAGE_FIELD: {"$exists": True}}, {"_id": 1}) is not None

    @mongo_errors
    def earlier_page_fingerprints(self) -> bool:
        """Whether pages' fingerprints are kept here, as the earlier layout kept them
        (``fptrack migrate`` moves them onto the pages)."""
        return self.db.fingerprints.find_one({"owner_kind": "page"}, {"_id": 1}) is not None

    @mongo_errors
    def delete_kind(self, kind: str) -> int:
        """Delete the fingerprints of every owner of ``kind``; how many there were (a page's
        go with its document; those an earlier layout kept here go too)."""
        return self.db.fingerprints.delete_many({"owner_kind": checked_kind(kind)}).deleted_count
