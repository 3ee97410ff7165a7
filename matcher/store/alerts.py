"""The alerts' records in MongoDB: rules, the outbox of messages to send, the delivery log.

The outbox makes alerts survive any failure. A new match carries ``alert: "pending"`` from
the write that created it (:meth:`matcher.store.matches.Matches.upsert_match`); :meth:`AlertStore.
take_new_matches` hands each one to the rules in scope — one outbox entry per (rule,
match), on a unique key, so doing it twice changes nothing — and only then clears the mark.
An immediate rule's entry is ``pending`` at once; a daily rule's waits ``queued`` until
:meth:`AlertStore.make_digest` gathers the rule's queued entries into one ``pending``
digest. A sender claims a ``pending`` entry (``sending``, with a lease: one whose sender
died is claimed again when the lease ends), then records the attempt in ``alert_log`` and
the outcome: ``delivered``, ``pending`` again later (a retry), ``failed`` (attempts
exhausted) or ``dropped`` (its rule was removed or disabled, or its matches deleted).

Same rules as :mod:`matcher.store`: typed filters only, connection failures raised as
:class:`matcher.errors.StoreUnavailable`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError

from matcher.alerts.rules import LOG, OUTBOX, RULES, AlertRule
from matcher.store import Store, mongo_errors, now, object_id

STATES = ("queued", "pending", "sending", "delivered", "failed", "dropped", "digested")
LOG_KEPT = 200
"""Delivery log entries the admin shows."""
DIGEST_MAX_MATCHES = 1000
"""Matches in one digest message at most; a day with more sends several."""
MATCH_FIELDS = {
    "work_id": 1, "work_title": 1, "site": 1, "url": 1, "page_id": 1, "score": 1,
    "containment": 1, "methods": 1, "first_seen": 1, "status": 1,
}  # fmt: skip
"""What an alert says of a match (never its evidence or text)."""
CLAIM_ORDER = [("next_at", ASCENDING), ("_id", ASCENDING)]
"""The order due outbox entries are sent in: oldest due first."""
CLAIM_BATCH = 8
"""Due entries :meth:`AlertStore.claim` reads at once, to claim the first still pending."""
CLAIM_ROUNDS = 16
"""Reads of due entries one claim makes at most while other senders take those it read."""


class AlertStore:
    """Rules, outbox and delivery log over one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # rules -----------------------------------------------------------------------------

    @mongo_errors
    def save_rule(self, rule: AlertRule) -> AlertRule:
        """Store a new rule (no id) or replace one; returns it with its id."""
        doc = {**rule.to_document(), "updated_at": now()}
        if rule.id:
            oid = object_id(rule.id, "rule id")
            self.db[RULES].update_one({"_id": oid}, {"$set": doc})
            return AlertRule.from_dict({**doc, "_id": oid})
        doc["created_at"] = doc["updated_at"]
        oid = self.db[RULES].insert_one(doc).inserted_id
        return AlertRule.from_dict({**doc, "_id": oid})

    @mongo_errors
    def rules(self, enabled_only: bool = False) -> list[AlertRule]:
        """Every rule, oldest first."""
        query = {"enabled": True} if enabled_only else {}
        found = self.db[RULES].find(query).sort([("created_at", ASCENDING), ("_id", ASCENDING)])
        return [AlertRule.from_dict(d) for d in found]

    @mongo_errors
    def any_enabled(self) -> bool:
        """Whether any rule is enabled."""
        return self.db[RULES].find_one({"enabled": True}, {"_id": 1}) is not None

    @mongo_errors
    def rule(self, rule_id: str | ObjectId) -> AlertRule | None:
        doc = self.db[RULES].find_one({"_id": object_id(rule_id, "rule id")})
        return None if doc is None else AlertRule.from_dict(doc)

    @mongo_errors
    def set_enabled(self, rule_id: str, enabled: bool) -> bool:
        done = self.db[RULES].update_one(
            {"_id": object_id(rule_id, "rule id")}, {"$set": {"enabled": bool(enabled)}}
        )
        return done.matched_count == 1

    @mongo_errors
    def remove_rule(self, rule_id: str) -> bool:
        """Delete a rule; its messages not yet sent are dropped."""
        oid = object_id(rule_id, "rule id")
        removed = self.db[RULES].delete_one({"_id": oid}).deleted_count == 1
        self.db[OUTBOX].update_many(
            {"rule_id": oid, "state": {"$in": ["queued", "pending"]}},
            {"$set": {"state": "dropped", "last_error": "rule removed"}},
        )
        return removed

    # new matches -> outbox -------------------------------------------------------------

    @mongo_errors
    def take_new_matches(self, limit: int = 500) -> int:
        """Hand up to ``limit`` new matches to the enabled rules in scope; returns how many
        matches were taken."""
        fields = {"page_id": 1, "work_id": 1, "site": 1}
        found = list(self.db.matches.find({"alert": "pending"}, fields).limit(int(limit)))
        if not found:
            return 0
        rules = self.rules(enabled_only=True)
        stamp = now()
        for match in found:
            for rule in rules:
                if rule.applies_to(match):
                    self._enqueue(rule, match["_id"], stamp)
            self.db.matches.update_one(
                {"page_id": match["page_id"], "_id": match["_id"], "alert": "pending"},
                {"$unset": {"alert": ""}},
            )
        return len(found)

    def _enqueue(self, rule: AlertRule, match_id: ObjectId, stamp: datetime) -> None:
        state = "pending" if rule.mode == "immediate" else "queued"
        entry = {
            "rule_id": ObjectId(rule.id),
            "mode": rule.mode,
            "match_ids": [match_id],
            "state": state,
            "attempts": 0,
            "next_at": stamp,
            "created_at": stamp,
        }
        with contextlib.suppress(DuplicateKeyError):  # a concurrent taker inserted it first
            self.db[OUTBOX].update_one(
                {"key": f"{rule.id}|{match_id}"}, {"$setOnInsert": entry}, upsert=True
            )

    @mongo_errors
    def make_digest(self, rule: AlertRule, limit: int = DIGEST_MAX_MATCHES) -> ObjectId | None:
        """Gather a daily rule's oldest queued entries (``limit`` at most) into one pending
        digest; its id, or None when none is queued.

        The digest's key is made from the oldest queued entry, so a run interrupted between
        the two writes makes the same digest again when run again.
        """
        oid = ObjectId(rule.id)
        queued = list(
            self.db[OUTBOX]
            .find({"rule_id": oid, "state": "queued"}, {"match_ids": 1})
            .sort("_id", ASCENDING)
            .limit(int(limit))
        )
        if not queued:
            return None
        stamp = now()
        match_ids = [m for entry in queued for m in entry["match_ids"]]
        first = {"rule_id": oid, "mode": "digest", "state": "pending", "attempts": 0}
        first.update(next_at=stamp, created_at=stamp)
        digest = self.db[OUTBOX].find_one_and_update(
            {"key": f"{rule.id}|digest|{queued[0]['_id']}"},
            {"$addToSet": {"match_ids": {"$each": match_ids}}, "$setOnInsert": first},
            upsert=True,
            return_document=ReturnDocument.AFTER,
            projection={"_id": 1},
        )
        self.db[OUTBOX].update_many(
            {"_id": {"$in": [e["_id"] for e in queued]}, "state": "queued"},
            {"$set": {"state": "digested", "digest_id": digest["_id"]}},
        )
        return digest["_id"]

    # delivery --------------------------------------------------------------------------

    @mongo_errors
    def claim(self, lease: float) -> dict | None:
        """The oldest due pending entry, now ``sending`` for ``lease`` seconds, its attempt
        counted; None when nothing is due. An entry whose lease ran out is due again.

        The oldest due entries are read first, then one is claimed by its ``key`` (the shard
        key) if it is still pending: one another sender claimed meanwhile is passed over
        (:data:`CLAIM_BATCH`, :data:`CLAIM_ROUNDS`).
        """
        stamp = now()
        self.db[OUTBOX].update_many(
            {"state": "sending", "lease_until": {"$lte": stamp}},
            {"$set": {"state": "pending", "last_error": "its sender stopped mid-attempt"}},
        )
        due = {"state": "pending", "next_at": {"$lte": stamp}}
        change = {
            "$set": {"state": "sending", "lease_until": stamp + timedelta(seconds=lease)},
            "$inc": {"attempts": 1},
        }
        for _ in range(CLAIM_ROUNDS):
            oldest = self.db[OUTBOX].find(due, {"key": 1}).sort(CLAIM_ORDER).limit(CLAIM_BATCH)
            keys = [entry["key"] for entry in oldest]
            if not keys:
                return None
            for key in keys:
                entry = self.db[OUTBOX].find_one_and_update(
                    {"key": key, **due}, change, return_document=ReturnDocument.AFTER
                )
                if entry is not None:
                    return entry
        return None  # other senders took every due entry read: they are being sent

    @mongo_errors
    def finish(
        self, entry: dict, state: str, *, error: str = "", retry_at: datetime | None = None
    ) -> None:
        """Record the outcome of a claimed entry's attempt (``retry_at``: when, for a retry)."""
        if state not in STATES:
            raise ValueError(f"unknown outbox state {state!r}")
        fields: dict[str, Any] = {"state": state, "last_error": error}
        if state == "delivered":
            fields["delivered_at"] = now()
        if retry_at is not None:
            fields["next_at"] = retry_at
        change = {"$set": fields, "$unset": {"lease_until": ""}}
        self.db[OUTBOX].update_one(
            {"key": entry["key"], "_id": entry["_id"], "state": "sending"}, change
        )

    @mongo_errors
    def next_due(self) -> datetime | None:
        """When the earliest pending entry is due, if any."""
        found = self.db[OUTBOX].find({"state": "pending"}, {"next_at": 1})
        first = next(iter(found.sort("next_at", ASCENDING).limit(1)), None)
        return None if first is None else first["next_at"]

    @mongo_errors
    def matches(self, match_ids: Iterable[ObjectId]) -> list[dict]:
        """The matches an entry names (those deleted since are absent), oldest first."""
        found = self.db.matches.find({"_id": {"$in": list(match_ids)}}, MATCH_FIELDS)
        return sorted(found, key=lambda m: (m.get("first_seen") or now(), m["_id"]))

    @mongo_errors
    def log(self, **fields: Any) -> None:
        """Write one attempt to the delivery log (``outbox_id``, ``rule_id``, ``rule``,
        ``attempt``, ``ok``, ``status``, ``error``, ``target``, ``matches``)."""
        self.db[LOG].insert_one({"at": now(), **fields})

    @mongo_errors
    def recent_log(self, limit: int = LOG_KEPT) -> list[dict]:
        """The latest delivery attempts, newest first."""
        found = self.db[LOG].find().sort([("at", DESCENDING), ("_id", DESCENDING)])
        return list(found.limit(int(limit)))

    @mongo_errors
    def outbox_counts(self) -> dict[str, int]:
        """Outbox entries by state."""
        return {s: self.db[OUTBOX].count_documents({"state": s}) for s in STATES}

    @mongo_errors
    def entries(self, rule_id: str | None = None) -> list[dict]:
        """Outbox entries (of one rule), oldest first."""
        query = {} if rule_id is None else {"rule_id": object_id(rule_id, "rule id")}
        return list(self.db[OUTBOX].find(query).sort("_id", ASCENDING))
