"""Registered works: their metadata (``works``), their text by segments (``work_segments``,
so a novel of millions of characters fits MongoDB's document size and evidence reads only
the segments it quotes), and the twins found among them."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING, UpdateOne
from pymongo.database import Database

from matcher.store import ids, tallies
from matcher.store.archived_matches import ArchivedMatches
from matcher.store.common import (
    MAX_LIST,
    StoreError,
    checked_date,
    checked_str,
    mongo_errors,
    now,
    object_id,
    write_fresh,
)
from matcher.store.field_names import LOOKUP_KEYS
from matcher.store.fingerprints import Fingerprints
from matcher.store.layout import REGISTRATION_ORDER
from matcher.store.sequences import Sequences

TWINS: dict[str, Any] = {"same_text_as": {"$ne": None}, "near_twin": {"$ne": True}}
"""The works that are twins of another (its very text): stored, never indexed
(:meth:`matcher.matching.registry.Registry.register`)."""
INDEXED: dict[str, Any] = {"$or": [{"same_text_as": None}, {"near_twin": True}]}
"""The works that are indexed: not twins of another (near twins are, as editions)."""
NEAR_CANDIDATES = 256
"""Works a new work is compared with, at most, when looking for the one it nearly repeats."""


def _sketch_fields(sketch: Sequence[int]) -> dict[str, list[int]]:
    """A work's near-twin sketch and the smallest of its hashes the store looks it up by."""
    values = [int(v) for v in sketch]
    return {"near_sketch": values, "near_keys": values[:LOOKUP_KEYS]}


_NEVER_SEARCHED: dict[str, Any] = {
    "search_pending": {"$exists": False},
    "searched_at": {"$exists": False},
}
"""Works registered before the search marks were kept by offset, never searched for."""


def _search_fields(before: dict[str, Any] | None, length: int) -> dict[str, Any]:
    """The search marks of a work registered with ``length`` characters, ``before`` its
    document stored before (None: new): to search for (``search_pending``) when its text is
    longer than the part searched (``searched_to``; a work searched for whole before the
    offset was kept, up to its length then)."""
    fields: dict[str, Any] = {}
    searched = 0
    if before is not None:
        searched = int(before.get("searched_to") or 0)
        if "searched_at" in before and "searched_to" not in before:
            searched = int(before.get("length") or 0)
            fields["searched_to"] = searched
    fields["search_pending"] = length > searched
    return fields


@dataclass(frozen=True)
class TextWindow:
    """Part of a long text, sliced with offsets into the whole text (``len`` is the whole
    text's up to the window's end), so code written for the whole text reads the window.

    >>> w = TextWindow(10, "abc")
    >>> w[9:12], w[11:], len(w)
    ('ab', 'bc', 13)
    """

    offset: int
    text: str

    def __len__(self) -> int:
        return self.offset + len(self.text)

    def __getitem__(self, key: slice) -> str:
        start = 0 if key.start is None else key.start
        stop = len(self) if key.stop is None else key.stop
        return self.text[max(0, start - self.offset) : max(0, stop - self.offset)]


class Works:
    """The ``works`` and ``work_segments`` collections; a work's fingerprints go with it
    when it is deleted, and its matches are archived
    (:meth:`~matcher.store.archived_matches.ArchivedMatches.archive_work`); the twins among
    them: :class:`~matcher.store.twins.Twins`."""

    def __init__(
        self,
        db: Database,
        sequences: Sequences,
        fingerprints: Fingerprints,
        archived_matches: ArchivedMatches,
        sender: tallies.Sender | None = None,
    ) -> None:
        self.db = db
        self.sequences = sequences
        self.fingerprints = fingerprints
        self.archived_matches = archived_matches
        self.tallies = sender or tallies.Sender(db)
        """Where the tallies of works registered go (the store's :class:`tallies.Sender`)."""

    def upsert_work(self, key: str, **fields: Any) -> tuple[dict[str, Any], bool]:
        """Store a work's metadata under its unique ``key``; returns ``(document, created)``
        (:meth:`register_work`, with its keyword arguments)."""
        doc, before = self.register_work(key, **fields)
        return doc, before is None

    @mongo_errors
    def register_work(
        self,
        key: str,
        *,
        title: str,
        content_hash: str,
        length: int,
        segments: int,
        author: str = "",
        source: str = "",
        owner: str = "",
        tags: Iterable[str] = (),
        sketch: Sequence[int] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Store a work's metadata under its unique ``key``; returns the document as written
        and the one stored before under that key (None: the work was created).

        Its text is stored by segments (:meth:`save_work_segment`); ``length`` is its number
        of characters and ``segments`` how many there are; ``sketch`` is its near-twin
        sketch (:mod:`matcher.matching.near_twins`).
        """
        stamp = now()
        fields = {
            "title": checked_str(title, "title"),
            "author": checked_str(author, "author"),
            "source": checked_str(source, "source"),
            "owner": checked_str(owner, "owner"),
            "tags": [checked_str(t, "tag") for t in tags],
            "content_hash": checked_str(content_hash, "content_hash"),
            "length": int(length),
            "segments": int(segments),
            "updated_at": stamp,
            "_stamp": stamp,
            **({} if sketch is None else _sketch_fields(sketch)),
        }
        key = checked_str(key, "key")
        before = self.db.works.find_one({"key": key})
        fields.update(_search_fields(before, int(length)))
        doc, created = self.sequences.upsert(
            "works",
            "work",
            {"key": key},
            fields,
            {"registered_at": stamp},
            stripe=ids.key_stripe(key),
            existing=before,
        )
        if created:
            changes = tallies.Changes()
            changes.work(1)
            self.tallies.add(changes)
            before = None
        elif before is None:  # registered meanwhile by another writer
            before = doc
        return doc, before

    def save_work_segment(self, work_id: ObjectId, segment: dict[str, Any]) -> None:
        """Store one segment of a work (see :meth:`save_work_segments`)."""
        self.save_work_segments(work_id, [segment])

    @mongo_errors
    def save_work_segments(
        self, work_id: ObjectId, segments: Iterable[dict[str, Any]], *, fresh: bool = False
    ) -> None:
        """Store segments of a work, one unordered bulk write: each with ``index``,
        ``start``, ``end`` (its place in the work's text), ``title`` and ``text`` (the
        segment and its overlap with the next); idempotent upserts, or inserts when
        ``fresh`` (the work was just created, :func:`~matcher.store.common.write_fresh`)."""
        keyed = []
        for segment in segments:
            fields = {
                "start": int(segment["start"]),
                "end": int(segment["end"]),
                "title": checked_str(segment["title"], "segment title"),
                "text": checked_str(segment["text"], "segment text"),
            }
            keyed.append(({"work_id": work_id, "index": int(segment["index"])}, fields))
        if fresh:
            write_fresh(self.db.work_segments, keyed)
        elif keyed:
            ops = [UpdateOne(key, {"$set": fields}, upsert=True) for key, fields in keyed]
            self.db.work_segments.bulk_write(ops, ordered=False)

    @mongo_errors
    def drop_work_segments(self, work_id: ObjectId, from_index: int = 0) -> None:
        """Delete a work's segments (and their fingerprints) from ``from_index`` on."""
        self.db.work_segments.delete_many({"work_id": work_id, "index": {"$gte": from_index}})
        self.fingerprints.delete_owner("work", work_id, from_segment=from_index)

    @mongo_errors
    def work_segments(
        self, work_id: ObjectId, indexes: Iterable[int] | None = None, text: bool = True
    ) -> list[dict]:
        """A work's segments in order (those of ``indexes`` only, when given)."""
        query: dict[str, Any] = {"work_id": work_id}
        if indexes is not None:
            query["index"] = {"$in": [int(i) for i in indexes]}
        projection = None if text else {"text": 0}
        return list(self.db.work_segments.find(query, projection).sort("index", ASCENDING))

    def work_text(self, work_id: str | ObjectId) -> str:
        """A work's whole text, joined from its segments."""
        segments = self.work_segments(object_id(work_id, "work id"))
        return "".join(s["text"][: s["end"] - s["start"]] for s in segments)

    @mongo_errors
    def work_window(self, work_id: str | ObjectId, spans: Iterable[Iterable[int]]) -> TextWindow:
        """The part of a work's text that the segments holding ``spans`` (``[start, end)``
        offsets into the whole text) cover, addressed by offsets into the whole text."""
        spans = [tuple(s) for s in spans]
        if not spans:
            return TextWindow(0, "")
        start, end = min(s[0] for s in spans), max(s[1] for s in spans)
        query = {
            "work_id": object_id(work_id, "work id"),
            "start": {"$lt": max(end, start + 1)},
            "end": {"$gt": start},
        }
        found = list(self.db.work_segments.find(query).sort("index", ASCENDING))
        if not found:
            return TextWindow(0, "")
        text = "".join(s["text"][: s["end"] - s["start"]] for s in found)
        return TextWindow(int(found[0]["start"]), text)

    @mongo_errors
    def get_work(self, work_id: str, projection: dict[str, int] | None = None) -> dict | None:
        return self.db.works.find_one({"_id": object_id(work_id, "work id")}, projection)

    def works_by_seq(
        self, seqs: Iterable[int], projection: dict[str, int] | None = None
    ) -> dict[int, dict]:
        return self.sequences.by_seq("works", seqs, projection)

    @mongo_errors
    def work_seqs(self, work_ids: Iterable[ObjectId]) -> dict[ObjectId, int]:
        """The ``seq`` of each of the works ``work_ids`` still registered."""
        query = {"_id": {"$in": [object_id(w, "work id") for w in work_ids]}}
        return {w["_id"]: int(w["seq"]) for w in self.db.works.find(query, {"seq": 1})}

    @mongo_errors
    def delete_work(self, work_id: str) -> dict | None:
        """Delete a work, its segments and fingerprints, and archive its matches, their
        reviews kept (:meth:`ArchivedMatches.archive_work
        <matcher.store.archived_matches.ArchivedMatches.archive_work>`); returns it."""
        oid = object_id(work_id, "work id")
        found = self.db.works.find_one({"_id": oid}, {"key": 1})  # its shard key
        if found is None:
            return None
        doc = self.db.works.find_one_and_delete({"key": found["key"], "_id": oid})
        if doc is not None:
            self.drop_work_segments(oid)
            self.fingerprints.delete_owner("work", oid)
            self.archived_matches.archive_work(doc)
            changes = tallies.Changes()
            changes.work(-1)
            self.tallies.add(changes)
        return doc

    @mongo_errors
    def works_registered_since(self, since: datetime | None) -> list[str]:
        query = {} if since is None else {"registered_at": {"$gt": checked_date(since)}}
        cursor = self.db.works.find(query, {"_id": 1}).sort("registered_at", ASCENDING)
        return [str(d["_id"]) for d in cursor]

    @mongo_errors
    def works_to_search(self, limit: int) -> list[dict]:
        """Works with text not searched for on the web yet (:mod:`matcher.sites.search`;
        twins, whose text is another work's, left out), newest first (last registered or
        registered again): their id, key, title, length and ``searched_to``, the end of the
        text searched (0: none)."""
        query = {
            "$and": [
                {"same_text_as": {"$in": [None, ""]}},
                {"$or": [{"search_pending": True}, _NEVER_SEARCHED]},
            ]
        }
        projection = {"key": 1, "title": 1, "length": 1, "searched_to": 1}
        cursor = self.db.works.find(query, projection).sort(
            [("updated_at", DESCENDING), ("_id", DESCENDING)]
        )
        return list(cursor.limit(min(int(limit), MAX_LIST)))

    @mongo_errors
    def mark_searched(self, work: dict, at: datetime, to: int, queries: int) -> bool:
        """Record that the text of ``work`` (as :meth:`works_to_search` gives it) up to the
        offset ``to`` was searched for with ``queries`` queries; whether all of it was (it
        is then no longer to search, until registered again with more text). Idempotent:
        the end searched only grows."""
        key = {"key": work["key"], "_id": work["_id"]}
        self.db.works.update_one(
            key,
            {
                "$set": {"searched_at": checked_date(at)},
                "$max": {"searched_to": int(to)},
                "$inc": {"search_queries": int(queries)},
            },
        )
        done = self.db.works.update_one(
            {**key, "length": {"$lte": int(to)}}, {"$set": {"search_pending": False}}
        )
        return bool(done.matched_count)

    @mongo_errors
    def segments_after(self, work_id: ObjectId, offset: int, limit: int) -> list[dict]:
        """At most ``limit`` segments of a work, in order, that end after ``offset`` in its
        text (the text not searched for yet, :mod:`matcher.sites.search`)."""
        query = {"work_id": work_id, "end": {"$gt": int(offset)}}
        cursor = self.db.work_segments.find(query).sort("index", ASCENDING)
        return list(cursor.limit(min(int(limit), MAX_LIST)))

    @mongo_errors
    def search_works(
        self, *, text: str = "", limit: int, keyset: bool = False, before: str | None = None
    ) -> list[dict]:
        """Works whose title or source contains ``text`` (a literal substring, never a
        pattern), newest first; all works when ``text`` is empty. ``keyset``: newest first
        by id, those before the work id ``before`` when given (pages that hold however many
        works are registered meanwhile)."""
        query: dict[str, Any] = {}
        if text:
            pattern = re.escape(checked_str(text, "search text"))
            query = {"$or": [{"title": {"$regex": pattern}}, {"source": {"$regex": pattern}}]}
        fields = {
            "title": 1, "author": 1, "source": 1, "registered_at": 1, "same_text_as": 1,
            "near_twin": 1,
        }  # fmt: skip
        if not keyset:
            cursor = self.db.works.find(query, fields).sort("registered_at", DESCENDING)
        else:
            if before is not None:
                query = {"$and": [query, {"_id": {"$lt": object_id(before, "work id")}}]}
            cursor = self.db.works.find(query, fields).sort("_id", DESCENDING)
        return list(cursor.limit(min(int(limit), MAX_LIST)))

    @mongo_errors
    def work_sources(self) -> dict[Any, str]:
        """Work id -> the work's source (file name)."""
        return {d["_id"]: d.get("source", "") for d in self.db.works.find({}, {"source": 1})}

    @mongo_errors
    def list_works(self, limit: int = MAX_LIST) -> list[dict]:
        """The registered works, newest first (registration time, then id: one order,
        whatever the server's sort does with ties)."""
        projection = {
            "title": 1, "author": 1, "source": 1, "registered_at": 1, "seq": 1, "same_text_as": 1,
            "near_twin": 1,
        }  # fmt: skip
        newest_first = [(field, DESCENDING) for field, _ in REGISTRATION_ORDER]
        cursor = self.db.works.find({}, projection).sort(newest_first)
        return list(cursor.limit(min(int(limit), MAX_LIST)))

    @mongo_errors
    def find_works(self, ref: str) -> list[dict]:
        """Works whose id, key, source or title is exactly ``ref``."""
        if not isinstance(ref, str):
            raise StoreError("a work reference must be a string")
        clauses: list[dict[str, Any]] = [{"key": ref}, {"source": ref}, {"title": ref}]
        with contextlib.suppress(StoreError):
            clauses.append({"_id": object_id(ref)})
        projection = {"title": 1, "source": 1, "seq": 1}
        return list(self.db.works.find({"$or": clauses}, projection))
