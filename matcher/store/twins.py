"""Works with the same text as an earlier one (``works``): twins (the very text: stored,
never indexed, their copies recorded under the earlier work) and near twins (editions,
indexed), found by content hash and by near-twin sketch (:mod:`matcher.matching.near_twins`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bson import ObjectId
from pymongo.database import Database

from matcher.store.common import checked_str, mongo_errors, object_id
from matcher.store.layout import REGISTRATION_ORDER
from matcher.store.works import INDEXED, NEAR_CANDIDATES, TWINS, _sketch_fields


class Twins:
    """The twins and near twins among the ``works``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def twin_of(self, work_id: ObjectId, content_hash: str) -> dict | None:
        """The earliest registered other work with the same text that is indexed itself
        (not a twin of another; a near twin is indexed): the work ``work_id`` duplicates,
        if any."""
        query = {
            "content_hash": checked_str(content_hash, "content_hash"),
            "_id": {"$ne": work_id},
            **INDEXED,
        }
        fields = {"title": 1, "source": 1, "seq": 1, "content_hash": 1}
        found = self.db.works.find(query, fields)
        return next(iter(found.sort(list(REGISTRATION_ORDER)).limit(1)), None)

    @mongo_errors
    def near_twin_candidates(self, work_id: ObjectId, keys: Sequence[int]) -> list[dict]:
        """The works registered before ``work_id``, indexed themselves (not twins of
        another; near twins are indexed), whose near-twin sketch starts with one of
        ``keys`` (:mod:`matcher.matching.near_twins`), earliest first, with their sketches; at most
        :data:`NEAR_CANDIDATES`. Only earlier works: two editions are never each other's
        near twin."""
        query = {
            "near_keys": {"$in": [int(k) for k in keys]},
            "_id": {"$ne": work_id},
            **INDEXED,
        }
        projection = {
            "key": 1, "title": 1, "source": 1, "seq": 1, "near_sketch": 1, "registered_at": 1
        }  # fmt: skip
        found = self.db.works.find(query, projection).sort(list(REGISTRATION_ORDER))
        me = self.db.works.find_one({"_id": work_id}, {"registered_at": 1})
        if me is None:
            return []
        mine = (me["registered_at"], me["_id"])
        return [w for w in found.limit(NEAR_CANDIDATES) if (w["registered_at"], w["_id"]) < mine]

    @mongo_errors
    def set_sketch(self, work_id: ObjectId, sketch: Sequence[int], *, key: str) -> None:
        """Store the near-twin sketch of the work ``work_id`` (unique ``key``)."""
        change = {"$set": _sketch_fields(sketch)}
        self.db.works.update_one({"key": checked_str(key, "key"), "_id": work_id}, change)

    @mongo_errors
    def set_same_text(
        self, work_id: ObjectId, twin: ObjectId | None, *, key: str, near: bool = False
    ) -> None:
        """Mark the work ``work_id`` (whose unique ``key`` is ``key``: the shard key) as
        having the same text as ``twin`` (None: as no other work), or nearly (``near``:
        ``near_twin`` is set, :mod:`matcher.matching.near_twins`)."""
        if twin is None:
            change: dict[str, Any] = {"$unset": {"same_text_as": "", "near_twin": ""}}
        elif near:
            change = {"$set": {"same_text_as": twin, "near_twin": True}}
        else:
            change = {"$set": {"same_text_as": twin}, "$unset": {"near_twin": ""}}
        self.db.works.update_one({"key": checked_str(key, "key"), "_id": work_id}, change)

    @mongo_errors
    def twins(self, work_id: ObjectId) -> list[dict]:
        """The works marked as having the same (or nearly the same) text as ``work_id``,
        earliest first, with their sketches."""
        projection = {
            "key": 1, "title": 1, "source": 1, "seq": 1, "content_hash": 1, "near_twin": 1,
            "near_sketch": 1,
        }  # fmt: skip
        found = self.db.works.find({"same_text_as": work_id}, projection)
        return list(found.sort(list(REGISTRATION_ORDER)))

    @mongo_errors
    def twin_ids(self) -> set[ObjectId]:
        """Every work that has the same text as an earlier one (and is not indexed; a near
        twin is indexed, and not one of them)."""
        return {d["_id"] for d in self.db.works.find(TWINS, {"_id": 1})}

    @mongo_errors
    def twin_pairs(self) -> list[tuple[dict, dict]]:
        """Every work with the same (or, ``near_twin``, nearly the same) text as an earlier
        one, with that work, earliest first (:meth:`matcher.matching.registry.Registry.add`)."""
        fields = {"title": 1, "source": 1, "seq": 1, "same_text_as": 1, "near_twin": 1}
        found = self.db.works.find({"same_text_as": {"$ne": None}}, fields)
        twins = list(found.sort(list(REGISTRATION_ORDER)))
        ids = list({t["same_text_as"] for t in twins})
        firsts = {d["_id"]: d for d in self.db.works.find({"_id": {"$in": ids}}, fields)}
        return [(t, firsts[t["same_text_as"]]) for t in twins if t["same_text_as"] in firsts]

    @mongo_errors
    def same_text_note(self, work_id: Any) -> str:
        """ "same text as work ID (TITLE) ..." for a twin (its copies recorded under that
        work), "nearly the same text ..." for a near twin (an edition, indexed), else ""."""
        fields = {"same_text_as": 1, "near_twin": 1}
        work = self.db.works.find_one({"_id": object_id(str(work_id), "work id")}, fields)
        first = work and work.get("same_text_as")
        if not first:
            return ""
        other = self.db.works.find_one({"_id": first}, {"title": 1}) or {}
        if work.get("near_twin"):
            return (
                f"nearly the same text as work {first} ({other.get('title', '')!r}):"
                " an edition of it, indexed; a copy is attributed to the edition that"
                " explains it best, or names both as a tie"
            )
        return (
            f"same text as work {first} ({other.get('title', '')!r}):"
            " its copies are recorded under that work"
        )
