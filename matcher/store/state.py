"""Small records beside the data: job state by key (``state``), the daily reports
(``reports``) and the dashboard's counters (:mod:`matcher.store.tallies`)."""

from __future__ import annotations

from typing import Any

from pymongo.database import Database

from matcher.store import tallies
from matcher.store.common import (
    checked_str,
    mongo_errors,
    object_id,
)


class State:
    """The ``state`` collection: one value per key."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def get_state(self, key: str, default: Any = None) -> Any:
        doc = self.db.state.find_one({"_id": str(key)})
        return default if doc is None else doc.get("value", default)

    @mongo_errors
    def set_state(self, key: str, value: Any) -> None:
        self.db.state.update_one({"_id": str(key)}, {"$set": {"value": value}}, upsert=True)

    @mongo_errors
    def state_once(self, *, key: str, value: Any) -> Any:
        """The value kept under ``key``, setting it to ``value`` first if there is none
        (atomic: concurrent callers all get the first value written)."""
        self.db.state.update_one({"_id": str(key)}, {"$setOnInsert": {"value": value}}, upsert=True)
        return self.get_state(key)


class Reports:
    """The ``reports`` collection: one report per day."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def report(self, day: str) -> dict | None:
        """The report of ``day`` (ISO date), or None."""
        return self.db.reports.find_one({"day": checked_str(day, "day")})

    @mongo_errors
    def save_report(self, day: str, report: dict[str, Any]) -> None:
        self.db.reports.update_one({"day": str(day)}, {"$set": report}, upsert=True)


class Dashboard:
    """The dashboard's counters (:mod:`matcher.store.tallies`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def tally_total(self) -> dict:
        """The deployment-wide counters (works, pages, matches by status, infringing)."""
        return tallies.total(self.db)

    @mongo_errors
    def tally_sites(self) -> list[dict[str, Any]]:
        """Every site's counters: ``key`` (the site), ``pages`` stored, ``matches_seen``,
        ``active.<status>``, ``infringing``."""
        return tallies.sites(self.db)

    @mongo_errors
    def tally_days(self, *, first: str) -> list[dict[str, Any]]:
        """The per-day counters from day ``first`` (ISO date) on."""
        return tallies.days(self.db, first)

    @mongo_errors
    def tally_top(self, *, scope: str, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` sites or works (``scope``) with the most infringing matches."""
        return tallies.top(self.db, scope, limit)

    @mongo_errors
    def infringing_by_work(self, *, work_ids: list[Any]) -> dict[Any, int]:
        """Infringing match counts of the works ``work_ids`` (0 for those without)."""
        keys = [f"work|{object_id(str(w), 'work id')}" for w in work_ids]
        found = self.db[tallies.WORKS_COLLECTION].find({"_id": {"$in": keys}}, {"infringing": 1})
        by_key = {d["_id"]: int(d.get("infringing", 0)) for d in found}
        return {w: by_key.get(f"work|{w}", 0) for w in work_ids}

    @mongo_errors
    def recount(self) -> int:
        """Rebuild every dashboard counter from the matches; the documents written."""
        return tallies.recount(self.db)
