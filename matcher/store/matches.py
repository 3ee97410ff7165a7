"""Match records: one per (page, work), upserted as pages are matched, reviewed by
operators, and queried by typed filters only (:meth:`Matches.match_filter`).

A record is *active* while its page is found to copy its work. It is *archived* (an
``archived`` field: when, why, and the work's key and content hash) when its work is
removed, or when its work was registered again and its page no longer matches the work's
text: it then counts as no copy (``active: False``), keeps its review (``status``, ``note``,
``reviewed_by``, ``reviewed_at``), its evidence and its first sighting, and is listed apart
(``fptrack matches list --archived``). A work registered again under the same key, or with
the same text, takes back the archived records of the earlier one
(:meth:`~matcher.store.archived_matches.ArchivedMatches.restore_archived`); each becomes
active again, its review unchanged, when its page is matched with the work again
(:meth:`Matches.upsert_match` clears ``archived``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from matcher.store import tallies
from matcher.store.common import (
    MAX_LIST,
    StoreError,
    checked_date,
    checked_str,
    mongo_errors,
    now,
    object_id,
    page_key,
    site_name,
    status_name,
)
from matcher.store.statuses import STATUSES

WORK_REMOVED = "work removed"
"""Why a removed work's matches are archived."""
REGISTERED_AGAIN = (
    "given to a work registered with its key or text; its page not matched with it yet"
)
"""Why an archived match given to a work registered again (or to a twin indexed in its
place) is still archived."""
NO_LONGER_MATCHES = "its page no longer matches the work's text"
"""Why a match of a work registered again with another text is archived."""
ARCHIVED_FIELDS = {
    "page_id": 1, "work_id": 1, "site": 1, "status": 1, "work_title": 1, "first_seen": 1,
    "active": 1, "archived": 1,
}  # fmt: skip
"""What archiving and restoring read of a match (its tallies' fields and its shard key)."""


def match_key(match: dict[str, Any]) -> dict[str, Any]:
    """The filter of one match record: its shard key (``page_id``) and ``_id``."""
    return {"page_id": match["page_id"], "_id": match["_id"]}


class Matches:
    """The ``matches`` collection (its tallies kept in step, :mod:`matcher.store.tallies`)."""

    def __init__(self, db: Database, sender: tallies.Sender | None = None) -> None:
        self.db = db
        self.tallies = sender or tallies.Sender(db)
        """Where the tallies of its writes go (the store's :class:`tallies.Sender`)."""

    @mongo_errors
    def upsert_match(
        self, record: dict[str, Any], initial_status: str = "new", fresh: bool = False
    ) -> dict:
        """Insert or update the match of ``(page_id, work_id)``; a reviewer's status stays,
        and an archived record (the work's earlier registration's) is active again.

        ``initial_status`` is the status of a new record (``authorised`` for licensed sites).
        The record's ``archive`` (the page's evidence when it was matched) is written when
        the match is created: the first exchange found to copy the work is kept when the
        page changes later. A new ``new`` match is created with ``alert: "pending"``, in the
        same write, until the alert rules have taken it (:mod:`matcher.worker.alert_delivery`):
        an alert is neither lost nor sent twice, whatever fails in between.

        ``fresh``: the page was never matched, so the record is most likely new; it is
        inserted (one write, the pair's unique index refusing a record that exists after
        all, which is then updated as any other).
        """
        if initial_status not in STATUSES:
            raise StoreError(f"unknown status {initial_status!r}")
        key = {
            "page_id": page_key(record["page_id"]),
            "work_id": object_id(record["work_id"], "work id"),
        }
        stamp = record.get("last_seen") or now()
        fields = {
            k: v for k, v in record.items() if k not in ("page_id", "work_id", "status", "archive")
        }
        fields.update(last_seen=stamp, active=True)
        first = {"status": initial_status, "first_seen": stamp}
        if record.get("archive"):  # the exchange it was first found in, kept ever after
            first["archive"] = dict(record["archive"])
        if initial_status == "new":
            first["alert"] = "pending"
        doc = self._inserted({**key, **first, **fields}) if fresh else None
        before = None
        if doc is None:
            doc, before = self._upserted(key, fields, first)
        if before is None or not before.get("active", True):
            changes = tallies.Changes()
            changes.match(doc, 1, created=before is None)
            self.tallies.add(changes)
        return doc

    def _inserted(self, doc: dict[str, Any]) -> dict | None:
        """``doc`` inserted; None when the pair's unique index holds a record already."""
        try:
            self.db.matches.insert_one(doc)
        except DuplicateKeyError:
            return None
        return doc

    def _upserted(
        self, key: dict[str, Any], fields: dict[str, Any], first: dict[str, Any]
    ) -> tuple[dict, dict | None]:
        """The record of ``key`` with ``fields`` set (``first`` too when it is new), and
        the record before (None: it is new).

        A read and a plain update, not one findAndModify: a server may answer that by
        reading the whole collection (see matcher.store.sequences.Sequences.upsert). The
        page's matching lock keeps other writers of its records out in between."""
        before = self.db.matches.find_one(key)
        change = {"$set": fields, "$setOnInsert": first, "$unset": {"archived": ""}}
        done = self.db.matches.update_one(key, change, upsert=True)
        if before is None and done.upserted_id is None:  # written meanwhile after all
            before = self.db.matches.find_one(key)
        if before is None:
            return {**key, **first, **fields, "_id": done.upserted_id}, None
        after = {**before, **fields}
        after.pop("archived", None)
        return after, before

    @mongo_errors
    def deactivate_matches(
        self, field: str, owner_id: ObjectId, keep: Iterable[ObjectId], via: str | None = None
    ) -> int:
        """Mark matches of a re-processed page (or work) that no longer hold as inactive
        (only those found ``via`` one way, ``"page"`` or ``"split"``, when given)."""
        if field not in ("page_id", "work_id"):
            raise StoreError(f"cannot deactivate matches by {field!r}")
        other = "work_id" if field == "page_id" else "page_id"
        query: dict[str, Any] = {field: owner_id, other: {"$nin": list(keep)}, "active": True}
        if via is not None:
            query["via"] = checked_str(via, "via")
        changes = tallies.Changes()
        stamp = now()
        deactivated = 0
        for match in self.db.matches.find(query, {"evidence": 0}):
            done = self.db.matches.update_one(
                {**match_key(match), "active": True},
                {"$set": {"active": False, "last_checked": stamp}},
            )
            if done.modified_count:
                deactivated += 1
                changes.match(match, -1)
        self.tallies.add(changes)
        return deactivated

    @mongo_errors
    def active_matched_works(
        self, page_ids: Iterable[int | ObjectId]
    ) -> dict[int | ObjectId, dict[ObjectId, str]]:
        """Per page, the works of its active matches and how each was found (``via``:
        ``page``, or ``split`` for a share of its chapter's)."""
        query = {"page_id": {"$in": [page_key(p) for p in page_ids]}, "active": True}
        out: dict[int | ObjectId, dict[ObjectId, str]] = {}
        for m in self.db.matches.find(query, {"page_id": 1, "work_id": 1, "via": 1}):
            out.setdefault(m["page_id"], {})[m["work_id"]] = m.get("via") or "page"
        return out

    @mongo_errors
    def own_matched_works(self, page_id: ObjectId) -> set[ObjectId]:
        """The works a page copies on its own (its active matches not found via its chapter)."""
        query = {"page_id": page_id, "active": True, "via": {"$ne": "split"}}
        return {m["work_id"] for m in self.db.matches.find(query, {"work_id": 1})}

    @mongo_errors
    def matches_for(self, field: str, owner_id: str, active_only: bool = True) -> list[dict]:
        if field not in ("page_id", "work_id"):
            raise StoreError(f"cannot list matches by {field!r}")
        key = page_key(owner_id) if field == "page_id" else object_id(owner_id, field)
        query: dict[str, Any] = {field: key}
        if active_only:
            query["active"] = True
        return list(self.db.matches.find(query).sort("first_seen", ASCENDING))

    @mongo_errors
    def work_pages(self, work_id: ObjectId) -> list[dict[str, Any]]:
        """The match records of a work, active or not, archived or not: each one's
        ``page_id``, ``url`` and ``active``."""
        fields = {"page_id": 1, "url": 1, "active": 1}
        return list(self.db.matches.find({"work_id": work_id}, fields))

    @mongo_errors
    def count_found_since(self, site: str, since: datetime) -> int:
        """Matches found on ``site`` since ``since``."""
        return self.db.matches.count_documents(
            {"site": site_name(site), "first_seen": {"$gte": since}}
        )

    def match_filter(
        self,
        *,
        site: str | None = None,
        work_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        status: str | None = None,
        statuses: Sequence[str] | None = None,
        min_score: float | None = None,
        after: tuple[datetime, Any] | None = None,
        active_only: bool = True,
        archived: bool = False,
    ) -> dict[str, Any]:
        """A ``matches`` filter from typed values only (each validated, none an operator).

        ``statuses`` admits any of several statuses (``status`` one); ``min_score`` a lowest
        score; ``after`` = ``(first_seen, id)`` of the last match of a page of matches sorted
        newest first: the filter then selects the matches after it (keyset paging);
        ``archived``: the archived matches only (never active; ``active_only`` is then
        moot)."""
        query: dict[str, Any] = {}
        if site is not None:
            query["site"] = site_name(site)
        if work_id is not None:
            query["work_id"] = object_id(work_id, "work id")
        if since is not None or until is not None:
            query["first_seen"] = {}
            if since is not None:
                query["first_seen"]["$gte"] = checked_date(since)
            if until is not None:
                query["first_seen"]["$lt"] = checked_date(until)
        if status is not None:
            query["status"] = status_name(status)
        elif statuses is not None:
            query["status"] = {"$in": [status_name(s) for s in statuses]}
        if min_score is not None:
            if isinstance(min_score, bool) or not isinstance(min_score, int | float):
                raise StoreError(f"a score is a number, got {min_score!r}")
            query["score"] = {"$gte": float(min_score)}
        if archived:
            query["archived"] = {"$exists": True}
        elif active_only:
            query["active"] = True
        if after is not None:
            when, last = checked_date(after[0]), object_id(str(after[1]), "match id")
            query["$or"] = [
                {"first_seen": {"$lt": when}},
                {"first_seen": when, "_id": {"$lt": last}},
            ]
        return query

    @mongo_errors
    def list_matches(self, limit: int = 1000, **filters: Any) -> list[dict]:
        """Matches by filter (see :meth:`match_filter`), newest first, evidence included."""
        cursor = self.db.matches.find(self.match_filter(**filters))
        return list(cursor.sort("first_seen", DESCENDING).limit(min(int(limit), MAX_LIST)))

    @mongo_errors
    def find_matches(
        self,
        *,
        limit: int,
        fields: Sequence[str] = (),
        without: Sequence[str] = (),
        **filters: Any,
    ) -> Iterator[dict]:
        """Up to ``limit`` matches of a filter (:meth:`match_filter`), newest first then by
        id (the keyset order of ``after``): only the fields ``fields`` (with ``_id``) when
        given, else all but ``without``."""
        projection = {name: 1 for name in fields} or {name: 0 for name in without} or None
        cursor = self.db.matches.find(self.match_filter(**filters), projection)
        cursor = cursor.sort([("first_seen", DESCENDING), ("_id", DESCENDING)])
        yield from cursor.limit(int(limit))

    @mongo_errors
    def match_ids(self, *, limit: int | None, **filters: Any) -> list[str]:
        """The ids of the matches of a filter (:meth:`match_filter`), up to ``limit``
        (``None``: all)."""
        cursor = self.db.matches.find(self.match_filter(**filters), {"_id": 1})
        if limit is not None:
            cursor = cursor.limit(int(limit))
        return [str(d["_id"]) for d in cursor]

    @mongo_errors
    def match(self, *, match_id: str) -> dict | None:
        """One match record by id (a validated ObjectId string), or None."""
        return self.db.matches.find_one({"_id": object_id(match_id, "match id")})

    @mongo_errors
    def active_matches(self) -> Iterator[dict]:
        """Every active match record, in storage order."""
        yield from self.db.matches.find({"active": True})

    @mongo_errors
    def iter_matches(self, **filters: Any) -> Iterator[dict]:
        """Every match of a filter, newest first (for reports)."""
        yield from self.db.matches.find(self.match_filter(**filters)).sort("first_seen", -1)

    @mongo_errors
    def set_status(self, match_id: str, status: str, note: str = "", by: str = "") -> bool:
        """Set a match's review status (with a note and who set it); keeps the tallies."""
        status = status_name(status)
        oid = object_id(match_id, "match id")
        found = self.db.matches.find_one({"_id": oid}, {"page_id": 1})  # its shard key
        if found is None:
            return False
        before = self.db.matches.find_one_and_update(
            {"page_id": found["page_id"], "_id": oid},
            {
                "$set": {
                    "status": status,
                    "note": str(note),
                    "reviewed_by": str(by),
                    "reviewed_at": now(),
                }
            },
            projection={"evidence": 0},
            return_document=ReturnDocument.BEFORE,
        )
        if before is None:
            return False
        if before.get("active", True):
            changes = tallies.Changes()
            changes.status(before, before.get("status", "new"), status)
            changes.apply(self.db)
        return True

    @mongo_errors
    def set_split(self, page_id: ObjectId, urls: list[str]) -> None:
        """Record the URLs of the split chapter a page was last matched with on its active
        matches."""
        urls = [checked_str(u, "part url") for u in urls]
        self.db.matches.update_many({"page_id": page_id, "active": True}, {"$set": {"split": urls}})

    @mongo_errors
    def archive_refs(self) -> set[str]:
        """The SHA-256 of every archived exchange a match refers to (the text it was found in)."""
        found = self.db.matches.find({"archive.sha256": {"$exists": True}}, {"archive.sha256": 1})
        return {str(doc["archive"]["sha256"]) for doc in found}

    @mongo_errors
    def delete_all(self) -> int:
        """Delete every match record; how many there were."""
        return self.db.matches.delete_many({}).deleted_count

    @mongo_errors
    def active_count_by_url(self) -> dict[str, int]:
        """URL -> number of active match records of the page at that URL."""
        out: dict[str, int] = {}
        for m in self.db.matches.find({"active": True}, {"url": 1}):
            out[m["url"]] = out.get(m["url"], 0) + 1
        return out

    @mongo_errors
    def of_pairs(self, urls: Iterable[str], work_ids: Iterable[str | ObjectId]) -> list[dict]:
        """The match records of pages at ``urls`` with works ``work_ids`` (every pair of
        the two): ``url``, ``work_id``, ``first_seen``, ``active``, ``status``."""
        query = {
            "url": {"$in": [checked_str(u, "url") for u in urls]},
            "work_id": {"$in": [object_id(w, "work id") for w in work_ids]},
        }
        fields = {"url": 1, "work_id": 1, "first_seen": 1, "active": 1, "status": 1}
        return list(self.db.matches.find(query, fields))

    @mongo_errors
    def count(self, *, active_only: bool = False, **filters: Any) -> int:
        """Match records of a filter (:meth:`match_filter`): all of them by default, the
        active ones with ``active_only``."""
        query = self.match_filter(active_only=active_only, **filters)
        return self.db.matches.count_documents(query)
