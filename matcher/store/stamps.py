"""Trusted timestamps of the evidence archive (:mod:`matcher.evidence.timestamps`): ``stamps``, one
document per archived WARC file (``_id`` its SHA-256; ``batch``, the name of the batch whose
token covers it, absent while it waits), and ``stamp_batches``, one per token (``_id`` the
batch list's SHA-256; ``list``, the list itself; ``token``, the TSA's DER answer; ``tsa``,
``gen_time``, ``serial``, ``count``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from bson import Binary
from pymongo import ASCENDING, UpdateOne
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from matcher.store.common import checked_str, mongo_errors, now

WAITING = {"batch": None}
"""The filter of the files no token covers yet (``batch`` absent)."""


def _sha(value: str) -> str:
    digest = checked_str(value, "sha256").lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"not a SHA-256 hex digest: {digest[:80]!r}")
    return digest


class Stamps:
    """The ``stamps`` and ``stamp_batches`` collections."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def queue_stamps(self, sha256s: Iterable[str], at: datetime | None = None) -> None:
        """Queue archived files for a token (a file queued or stamped before is left as is)."""
        stamp = at or now()
        ops = [
            UpdateOne({"_id": d}, {"$setOnInsert": {"queued_at": stamp}}, upsert=True)
            for d in dict.fromkeys(_sha(s) for s in sha256s)
        ]
        if ops:
            self.db.stamps.bulk_write(ops, ordered=False)

    @mongo_errors
    def waiting_stamps(self, limit: int) -> list[str]:
        """Up to ``limit`` queued files no token covers yet, the longest waiting first."""
        found = self.db.stamps.find(WAITING, {"_id": 1}).sort("queued_at", ASCENDING)
        return [d["_id"] for d in found.limit(int(limit))]

    @mongo_errors
    def waiting_count(self) -> int:
        return self.db.stamps.count_documents(WAITING)

    @mongo_errors
    def oldest_waiting(self) -> datetime | None:
        """When the file waiting longest for a token was queued (None: none waits)."""
        found = self.db.stamps.find(WAITING, {"queued_at": 1}).sort("queued_at", ASCENDING)
        first = next(iter(found.limit(1)), None)
        return None if first is None else first.get("queued_at")

    @mongo_errors
    def save_batch(
        self, name: str, listed: bytes, sha256s: list[str], token: dict[str, Any]
    ) -> None:
        """Keep a batch's list and token (``token``: ``der``, ``tsa``, ``gen_time``,
        ``serial``), then point its files at it. Run again after a failure in between, the
        batch is kept once and its files pointed at it."""
        doc = {
            "_id": _sha(name),
            "list": listed.decode("ascii"),
            "token": Binary(token["der"]),
            "tsa": checked_str(token["tsa"], "tsa"),
            "gen_time": token["gen_time"],
            "serial": str(int(token["serial"])),
            "count": len(sha256s),
            "stamped_at": now(),
        }
        with contextlib.suppress(DuplicateKeyError):  # kept by a run that stopped after it
            self.db.stamp_batches.insert_one(doc)
        self.db.stamps.update_many(
            {"_id": {"$in": [_sha(s) for s in sha256s]}}, {"$set": {"batch": doc["_id"]}}
        )

    @mongo_errors
    def stamps_of(self, sha256s: Iterable[str]) -> dict[str, dict]:
        """``{sha256: batch document}`` of the files among ``sha256s`` a token covers."""
        wanted = [_sha(s) for s in sha256s]
        found = self.db.stamps.find({"_id": {"$in": wanted}, "batch": {"$ne": None}})
        by_file = {d["_id"]: d["batch"] for d in found}
        names = sorted(set(by_file.values()))
        batches = {b["_id"]: b for b in self.db.stamp_batches.find({"_id": {"$in": names}})}
        return {s: batches[b] for s, b in by_file.items() if b in batches}

    @mongo_errors
    def is_queued(self, sha256: str) -> bool:
        return self.db.stamps.count_documents({"_id": _sha(sha256)}, limit=1) == 1
