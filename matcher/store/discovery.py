"""Pirate sites discovered (:mod:`matcher.sites.discovery`): ``candidates``, one document per host
(``_id`` its ``host[:port]``) with its evidence (the leads to it from watched sites or a
search engine, the sample's matches), its score and its state (``new``, ``watched``,
``dismissed``); and ``search_days``, the search queries sent each day (``_id`` the UTC day,
``queries`` their count) against the daily budget (:mod:`matcher.sites.search`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo import DESCENDING, UpdateOne
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from matcher.store.common import checked_str, mongo_errors

STATES = ("new", "watched", "dismissed")
MAX_CANDIDATES = 1000


class Discovery:
    """The ``candidates`` collection."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def save_candidates(self, found: list[dict[str, Any]], at: datetime) -> None:
        """Keep the candidates of one discovery run (as :func:`candidate_doc` makes them);
        a candidate's state, once an operator set it, is kept."""
        ops = [
            UpdateOne(
                {"_id": checked_str(doc["host"], "host")},
                {
                    "$set": {**{k: v for k, v in doc.items() if k != "host"}, "checked_at": at},
                    "$setOnInsert": {"state": "new", "first_seen": at},
                },
                upsert=True,
            )
            for doc in found
        ]
        if ops:
            self.db.candidates.bulk_write(ops, ordered=False)

    @mongo_errors
    def candidates(self, state: str | None = None, limit: int = MAX_CANDIDATES) -> list[dict]:
        """Candidates, best scored first (in one ``state``)."""
        query = {} if state is None else {"state": _state(state)}
        found = self.db.candidates.find(query).sort([("score", DESCENDING), ("_id", 1)])
        return list(found.limit(int(limit)))

    @mongo_errors
    def candidate(self, host: str) -> dict | None:
        return self.db.candidates.find_one({"_id": checked_str(host, "host")})

    @mongo_errors
    def set_candidate_state(self, host: str, state: str) -> bool:
        result = self.db.candidates.update_one(
            {"_id": checked_str(host, "host")}, {"$set": {"state": _state(state)}}
        )
        return result.matched_count == 1

    @mongo_errors
    def take_search_query(self, day: str, budget: int) -> bool:
        """Count one search query on ``day`` (``YYYY-MM-DD``), if fewer than ``budget``
        were sent that day; whether it may be sent. Atomic: writers at once never send more
        than the budget between them."""
        try:
            self.db.search_days.update_one(
                {"_id": checked_str(day, "day"), "queries": {"$lt": int(budget)}},
                {"$inc": {"queries": 1}},
                upsert=True,
            )
        except DuplicateKeyError:  # the day's document exists and its budget is spent
            return False
        return True

    @mongo_errors
    def search_queries(self, day: str) -> int:
        """Search queries sent on ``day``."""
        found = self.db.search_days.find_one({"_id": checked_str(day, "day")})
        return int(found["queries"]) if found else 0

    @mongo_errors
    def dismissed_hosts(self) -> set[str]:
        return {d["_id"] for d in self.db.candidates.find({"state": "dismissed"}, {"_id": 1})}


def _state(value: str) -> str:
    if value not in STATES:
        raise ValueError(f"not a candidate state: {value!r}")
    return value
