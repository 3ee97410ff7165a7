"""What MongoDB keeps of the Redis indexes' health: the rebuild lease and the heal record.

Redis may lose any part of the indexes (:mod:`matcher.index.integrity`), so what must outlive
such a loss is kept in the store:

- the **rebuild lease** (``state`` document ``index.rebuild``): one process at a time
  rebuilds lost tag groups; the lease names it, the groups and an expiry it renews while it
  works, so a rebuild whose process died is taken over when the lease runs out;
- the **heal record** (``index.health``): when the indexes were last seen whole, and the
  rebuilds done since, with the time from which pages and works are matched again
  (``rematch_since``), until the heal job has sent them (:func:`matcher.worker.jobs.heal_indexes`).

Same rules as :mod:`matcher.store`: typed filters, connection failures raised as
:class:`matcher.errors.StoreUnavailable`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from matcher.store import Store, mongo_errors, now
from matcher.store.field_names import INDEX_KEYS
from matcher.store.works import TWINS

LEASE = "index.rebuild"
HEALTH = "index.health"
HEALS_KEPT = 20


class IndexState:
    """The rebuild lease and the heal record, in the store's ``state`` collection."""

    def __init__(self, store: Store) -> None:
        self.db = store.db
        self.fingerprints = store.fingerprints

    # the rebuild lease -------------------------------------------------------------------

    @mongo_errors
    def claim(self, holder: str, groups: Iterable[int], seconds: float) -> bool:
        """Take the rebuild lease for ``seconds`` (held by nobody, expired, or ``holder``'s)."""
        stamp = now()
        fields = {
            "holder": str(holder),
            "groups": sorted(int(g) for g in groups),
            "expires_at": stamp + timedelta(seconds=seconds),
        }
        free = {"$or": [{"holder": None}, {"expires_at": {"$lt": stamp}}, {"holder": holder}]}
        try:
            doc = self.db.state.find_one_and_update(
                {"_id": LEASE, **free},
                {"$set": {**fields, "since": stamp}},
                upsert=True,
                return_document=ReturnDocument.AFTER,
            )
        except DuplicateKeyError:  # the document exists and another process holds it
            return False
        return doc is not None and doc.get("holder") == holder

    @mongo_errors
    def renew(self, holder: str, seconds: float) -> bool:
        """Move the lease's expiry on; False when ``holder`` no longer holds it."""
        result = self.db.state.update_one(
            {"_id": LEASE, "holder": str(holder)},
            {"$set": {"expires_at": now() + timedelta(seconds=seconds)}},
        )
        return result.matched_count == 1

    @mongo_errors
    def release(self, holder: str) -> None:
        self.db.state.update_one(
            {"_id": LEASE, "holder": str(holder)},
            {"$set": {"holder": None, "expires_at": None}},
        )

    @mongo_errors
    def rebuilding(self) -> dict[str, Any] | None:
        """The lease while a live process holds it: ``holder``, ``groups``, ``since``."""
        doc = self.db.state.find_one({"_id": LEASE})
        if not doc or not doc.get("holder") or _aware(doc.get("expires_at")) < now():
            return None
        return {
            "holder": doc["holder"],
            "groups": list(doc.get("groups") or ()),
            "since": _aware(doc.get("since")),
            "expires_at": _aware(doc.get("expires_at")),
        }

    # the heal record ---------------------------------------------------------------------

    @mongo_errors
    def seen_whole(self, at: datetime | None = None) -> None:
        """Record that every tag group held its marker at ``at`` (default now)."""
        self.db.state.update_one({"_id": HEALTH}, {"$set": {"whole_at": at or now()}}, upsert=True)

    @mongo_errors
    def healed(self, groups: Iterable[int], counts: dict[str, int], reason: str) -> None:
        """Record a rebuild of ``groups``: what the lost part could have touched since the
        indexes were last seen whole is to be matched again (kept until :meth:`rematched`)."""
        stamp = now()
        doc = self.db.state.find_one({"_id": HEALTH}) or {}
        since = _aware(doc.get("whole_at")) if doc.get("whole_at") else None
        pending = _aware(doc.get("rematch_since")) if doc.get("rematch_since") else None
        if since is None or (pending is not None and pending < since):
            since = pending
        entry = {
            "at": stamp,
            "groups": sorted(int(g) for g in groups),
            "counts": {str(k): int(v) for k, v in counts.items()},
            "reason": str(reason)[:300],
        }
        update: dict[str, Any] = {
            "$set": {"whole_at": stamp, "rematch_since": since or stamp, "last_heal": entry},
            "$push": {"heals": {"$each": [entry], "$slice": -HEALS_KEPT}},
        }
        self.db.state.update_one({"_id": HEALTH}, update, upsert=True)

    @mongo_errors
    def rematch_since(self) -> datetime | None:
        """From when pages and works wait to be matched again after a rebuild (None: none)."""
        doc = self.db.state.find_one({"_id": HEALTH}, {"rematch_since": 1})
        value = (doc or {}).get("rematch_since")
        return _aware(value) if value else None

    @mongo_errors
    def rematched(self, since: datetime) -> None:
        """The rematch from ``since`` was sent (a later rebuild's request stays)."""
        self.db.state.update_one(
            {"_id": HEALTH, "rematch_since": since}, {"$unset": {"rematch_since": ""}}
        )

    @mongo_errors
    def last_heal_at(self) -> datetime | None:
        doc = self.db.state.find_one({"_id": HEALTH}, {"last_heal.at": 1}) or {}
        at = doc.get("last_heal", {}).get("at")
        return _aware(at) if at else None

    @mongo_errors
    def indexable(self) -> dict[str, int]:
        """Owners the indexes should hold, per kind: those with stored index keys, but the
        segments of works that are twins of earlier ones (stored, never indexed; a near
        twin is indexed)."""
        twins = [w["_id"] for w in self.db.works.find(TWINS, {"_id": 1})]
        works = self.fingerprints.count_with(
            "work", INDEX_KEYS, {"owner_id": {"$nin": twins}} if twins else None
        )
        return {"work": works, "page": self.fingerprints.count_with("page", INDEX_KEYS)}

    @mongo_errors
    def touched_pages(self, since: datetime, until: datetime) -> Iterator[str]:
        """Ids of the pages matched in ``[since, until]``: a lost part of the index may
        have touched them."""
        query = {"processed_at": {"$gte": since, "$lte": until}}
        for doc in self.db.pages.find(query, {"_id": 1}):
            yield str(doc["_id"])

    @mongo_errors
    def touched_works(self, since: datetime, until: datetime) -> list[str]:
        """Ids of the works registered in ``[since, until]``."""
        query = {"registered_at": {"$gte": since, "$lte": until}}
        return [str(d["_id"]) for d in self.db.works.find(query, {"_id": 1})]

    @mongo_errors
    def shortfall(self, value: dict[str, int] | None = None) -> dict[str, int]:
        """The owners the index lacked at the heal job's last count, per kind; ``value``
        replaces it."""
        if value is not None:
            update = {"$set": {"shortfall": {k: int(v) for k, v in value.items()}}}
            self.db.state.update_one({"_id": HEALTH}, update, upsert=True)
            return value
        doc = self.db.state.find_one({"_id": HEALTH}, {"shortfall": 1}) or {}
        return dict(doc.get("shortfall") or {})

    @mongo_errors
    def health(self) -> dict[str, Any]:
        """The heal record: ``whole_at``, ``last_heal``, ``heals``, ``rematch_since``."""
        doc = self.db.state.find_one({"_id": HEALTH}) or {}
        doc.pop("_id", None)
        return doc


def _aware(value: Any) -> datetime:
    """A stored time as an aware UTC datetime (mongomock and some clients return naive)."""
    if not isinstance(value, datetime):
        return datetime.min.replace(tzinfo=now().tzinfo)
    return value if value.tzinfo else value.replace(tzinfo=now().tzinfo)
