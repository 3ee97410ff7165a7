"""Archived match records (``matches``): a removed work's matches, and those a work
registered again let go, are archived (no longer active, their review kept, an ``archived``
field naming the work's key and text), and given back to a work registered again under the
same key or with the same text (see :mod:`matcher.store.matches`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bson import ObjectId
from pymongo import UpdateOne
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from matcher.store import tallies
from matcher.store.common import checked_str, mongo_errors, now, page_key
from matcher.store.matches import ARCHIVED_FIELDS, REGISTERED_AGAIN, WORK_REMOVED, match_key


class ArchivedMatches:
    """Archiving match records and giving them back (their tallies kept in step,
    :mod:`matcher.store.tallies`)."""

    def __init__(self, db: Database, sender: tallies.Sender | None = None) -> None:
        self.db = db
        self.tallies = sender or tallies.Sender(db)
        """Where the tallies of its writes go (the store's :class:`tallies.Sender`)."""

    @mongo_errors
    def archive_work(self, work: dict[str, Any], reason: str = WORK_REMOVED) -> int:
        """Archive every match of ``work`` (its ``works`` document: ``_id``, ``key``,
        ``content_hash``): no longer active, its review kept, findable by the work's key and
        text (:meth:`restore_archived`); how many."""
        return self._archive({"work_id": work["_id"]}, work, reason)

    @mongo_errors
    def archive_let_go(
        self, work: dict[str, Any], page_ids: Iterable[int | ObjectId], reason: str
    ) -> int:
        """Archive the matches of ``work`` on the pages ``page_ids`` that are no longer
        active and not archived yet (those its last matching let go); how many."""
        query = {
            "work_id": work["_id"],
            "page_id": {"$in": [page_key(p) for p in page_ids]},
            "active": False,
            "archived": {"$exists": False},
        }
        return self._archive(query, work, reason)

    def _archive(self, query: dict[str, Any], work: dict[str, Any], reason: str) -> int:
        """Archive the matches of ``query`` as matches of ``work``, in one bulk write;
        those that were active leave the tallies."""
        stamp = now()
        archived = {
            "at": stamp,
            "reason": checked_str(reason, "reason"),
            "work_key": checked_str(work["key"], "work key"),
            "work_hash": checked_str(work.get("content_hash", ""), "content hash"),
        }
        found = list(self.db.matches.find(query, ARCHIVED_FIELDS))
        if not found:
            return 0
        change = {"$set": {"active": False, "archived": archived, "last_checked": stamp}}
        self.db.matches.bulk_write([UpdateOne(match_key(m), change) for m in found], ordered=False)
        changes = tallies.Changes()
        for match in found:
            if match.get("active", True):
                changes.match(match, -1)
        self.tallies.add(changes)
        return len(found)

    @mongo_errors
    def restore_archived(self, work: dict[str, Any], into: dict[str, Any] | None = None) -> int:
        """Give ``work`` (a ``works`` document: ``_id``, ``key``, ``content_hash``) the
        archived matches of an earlier registration with its key or its text; how many.
        With ``into``, another work with ``work``'s very text that records its copies (the
        work it is a twin of, or the twin indexed in place of ``work`` removed), ``into``
        is given those of its text only.

        They stay archived (:data:`REGISTERED_AGAIN`) until their page is matched with the
        work again: then :meth:`~matcher.store.matches.Matches.upsert_match` makes each
        active, with its review. A page keeps one record per work: of two archived records
        of one page, the one of the same text, then the one archived last, is given; a page
        the work has a record of already keeps that one, and the others stay as they are."""
        key = checked_str(work["key"], "work key")
        digest = checked_str(work.get("content_hash", ""), "content hash")
        target = (into or work)["_id"]
        same: list[dict[str, Any]] = [{"archived.work_hash": digest}]
        if into is None:
            same.append({"archived.work_key": key})
        query = {"$or": same, "work_id": {"$ne": target}}
        found = list(self.db.matches.find(query, ARCHIVED_FIELDS))
        if not found:
            return 0
        taken = {m["page_id"] for m in self.db.matches.find({"work_id": target}, {"page_id": 1})}
        found.sort(key=lambda m: m["archived"]["at"], reverse=True)
        found.sort(key=lambda m: m["archived"].get("work_hash") != digest)
        change = {
            "$set": {
                "work_id": target,
                "archived.reason": REGISTERED_AGAIN,
                "archived.work_key": key,
                "archived.work_hash": digest,
            }
        }
        restored = 0
        for match in found:
            if match["page_id"] in taken:
                continue
            try:
                done = self.db.matches.update_one(match_key(match), change)
            except DuplicateKeyError:  # the work was matched on that page meanwhile
                continue
            taken.add(match["page_id"])
            restored += done.modified_count
        return restored
