"""Tasks that gave up (``failures``): one record per task and object, updated on repeats."""

from __future__ import annotations

from datetime import datetime

from pymongo import DESCENDING, ReturnDocument
from pymongo.database import Database

from matcher.store.common import (
    MAX_LIST,
    StoreError,
    checked_date,
    mongo_errors,
    now,
    period,
    to_millis,
)

TASK_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz_.")


class Failures:
    """The ``failures`` collection."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def record_failure(
        self, task: str, ref: str, error: str, attempts: int, *, at: datetime | None = None
    ) -> dict:
        """Keep a task that gave up (one record per task and object, updated on repeats);
        ``at``: when it failed (default now: a record kept while MongoDB was down is written
        later, :mod:`matcher.worker.kept_failures`)."""
        if not set(task) <= TASK_NAME_CHARS:
            raise StoreError(f"not a task name: {task!r}")
        stamp = now() if at is None else to_millis(checked_date(at))
        return self.db.failures.find_one_and_update(
            {"task": task, "ref": str(ref)},
            {
                "$set": {"error": str(error)[:2000], "attempts": int(attempts), "failed_at": stamp},
                "$setOnInsert": {"first_failed_at": stamp},
                "$inc": {"count": 1},
            },
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )

    @mongo_errors
    def clear_failure(self, task: str, ref: str) -> None:
        self.db.failures.delete_one({"task": str(task), "ref": str(ref)})

    @mongo_errors
    def recent(self, limit: int = 100) -> list[dict]:
        cursor = self.db.failures.find({}).sort("failed_at", DESCENDING)
        return list(cursor.limit(min(int(limit), MAX_LIST)))

    @mongo_errors
    def failure_count(self, *, since: datetime | None = None, until: datetime | None = None) -> int:
        """Failure records, all or those of ``[since, until)``."""
        return self.db.failures.count_documents(period("failed_at", since, until))

    @mongo_errors
    def failure_counts(self) -> dict[str, int]:
        """Failure records kept per task (one aggregation over ``failures``)."""
        pipeline = [{"$group": {"_id": "$task", "n": {"$sum": 1}}}]
        return {str(d["_id"]): int(d["n"]) for d in self.db.failures.aggregate(pipeline)}

    def not_failed(self, pages: list[dict], task: str) -> list[dict]:
        """``pages`` but those whose ``task`` failed for good after it was last sent."""
        if not pages:
            return []
        refs = [str(p["_id"]) for p in pages]
        failed = {
            f["ref"]: f["failed_at"]
            for f in self.db.failures.find(
                {"task": str(task), "ref": {"$in": refs}}, {"ref": 1, "failed_at": 1}
            )
        }
        return [
            p
            for p in pages
            if str(p["_id"]) not in failed
            or (p.get("enqueued_at") is not None and p["enqueued_at"] > failed[str(p["_id"])])
        ]

    @mongo_errors
    def delete_all(self) -> int:
        """Delete every failure record; how many there were."""
        return self.db.failures.delete_many({}).deleted_count
