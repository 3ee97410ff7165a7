"""Crawl runs (``crawls``): one record per run, one part per crawler process, and the
summary written over them (:mod:`matcher.sites.crawl_runs`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.database import Database

from matcher.sites import crawl_runs
from matcher.store.common import (
    MAX_LIST,
    TOKEN,
    StoreError,
    checked_date,
    checked_str,
    mongo_errors,
    now,
    period,
    site_name,
)
from matcher.store.matches import Matches
from matcher.store.page_marks import PageMarks


class CrawlRuns:
    """The ``crawls`` collection; a run's pages and matches are counted from theirs."""

    def __init__(self, db: Database, page_marks: PageMarks, matches: Matches) -> None:
        self.db = db
        self.page_marks = page_marks
        self.matches = matches

    @mongo_errors
    def record_crawl(self, run_id: str, site: str, **fields: Any) -> dict:
        """Create or update one crawl run (``started_at``, ``finished_at``, ``stats``, ...)."""
        return self.db.crawls.find_one_and_update(
            {"run_id": str(run_id)},
            {"$set": {"site": site_name(site), **fields}},
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )

    @mongo_errors
    def record_crawl_process(
        self,
        run_id: str,
        site: str,
        process: str,
        *,
        lost: tuple[str, ...] = (),
        task: str = "",
        **fields: Any,
    ) -> dict:
        """Set one crawler process's part of a crawl run, then the run's summary.

        The run's record is created by its first process (``started_at``: the run's start,
        given as ``run_started_at``). ``fields`` go under ``processes.<process>`` (see
        :mod:`matcher.sites.crawl_runs`); ``lost`` names processes this one found dead (their
        requests put back), marked ``lost`` unless they recorded an end of their own.
        ``task``: the id of the task that runs the process, added to the run's ``tasks``
        (:meth:`crawl_of_task`).
        """
        if not TOKEN.match(process) or not all(TOKEN.match(t) for t in lost):
            raise StoreError(f"not a crawler process token: {process!r} {lost!r}")
        started = fields.pop("run_started_at", None)
        update: dict[str, Any] = {
            "$set": {
                "site": site_name(site),
                **{f"processes.{process}.{k}": v for k, v in fields.items()},
            },
            "$inc": {"version": 1},
        }
        if task:
            update["$addToSet"] = {"tasks": str(task)}
        if started is not None:
            update["$setOnInsert"] = {"started_at": started}
        self.db.crawls.find_one_and_update({"run_id": str(run_id)}, update, upsert=True)
        self._mark_lost(str(run_id), lost)
        return self._summarize(str(run_id))

    @mongo_errors
    def crawl_of_task(self, site: str, task_id: str) -> dict | None:
        """The crawl run a ``crawl_site`` / ``recrawl_site`` task (``task_id``) started or
        joined (its id in the run's ``tasks``), or None while none is recorded."""
        return self.db.crawls.find_one({"site": site_name(site), "tasks": str(task_id)})

    @mongo_errors
    def crawl_progress(self, run: dict) -> dict[str, int]:
        """A run's pages so far, counted from the store: ``stored`` (pages of its site
        stored or fetched again since it started), ``pending`` (of those, not matched yet)
        and ``matched`` (matches found on its site since it started)."""
        started = run.get("started_at")
        if not isinstance(started, datetime):
            return {"stored": 0, "pending": 0, "matched": 0}
        site = site_name(run["site"])
        return {
            "stored": self.page_marks.count_seen_since(site, started),
            "pending": self.page_marks.count_seen_since(site, started, pending_only=True),
            "matched": self.matches.count_found_since(site, started),
        }

    @mongo_errors
    def failed_crawls(self, since: datetime) -> list[dict]:
        """The crawl runs ended ``failed`` since ``since``, newest first: site, run id,
        start and finish times, error, and who acknowledged the failure and when
        (``acknowledged_by``, ``acknowledged_at``; absent while nobody did)."""
        fields = {
            **{"site": 1, "run_id": 1, "finished_at": 1, "error": 1, "started_at": 1},
            **{"acknowledged_at": 1, "acknowledged_by": 1},
        }
        query = {"outcome": "failed", "finished_at": {"$gte": checked_date(since)}}
        cursor = self.db.crawls.find(query, fields).sort("finished_at", DESCENDING)
        return list(cursor.limit(MAX_LIST))

    @mongo_errors
    def last_finished(self, since: datetime) -> dict[str, datetime]:
        """Per site, when its latest run that ended ``finished`` ended, of the runs ended
        since ``since`` (one aggregation)."""
        pipeline = [
            {"$match": {"outcome": "finished", "finished_at": {"$gte": checked_date(since)}}},
            {"$group": {"_id": "$site", "at": {"$max": "$finished_at"}}},
        ]
        return {d["_id"]: d["at"] for d in self.db.crawls.aggregate(pipeline)}

    @mongo_errors
    def acknowledge_failures(
        self, site: str, *, by: str, at: datetime, run_id: str | None = None
    ) -> int:
        """Record that ``by`` saw to the failed runs of ``site`` (only run ``run_id``, when
        given) at ``at``, those nobody acknowledged yet; how many that was. ``fptrack
        check`` reports a failure until then (:func:`matcher.sites.crawl_runs.open_failures`)."""
        query: dict[str, Any] = {
            "site": site_name(site),
            "outcome": "failed",
            "acknowledged_at": None,
        }
        if run_id is not None:
            query["run_id"] = checked_str(run_id, "run id")
        fields = {"acknowledged_at": checked_date(at), "acknowledged_by": str(by)}
        return self.db.crawls.update_many(query, {"$set": fields}).modified_count

    @mongo_errors
    def running_crawls_started_before(self, before: datetime) -> list[dict]:
        """The runs still recorded ``running`` whose start is before ``before``."""
        fields = {"site": 1, "run_id": 1, "started_at": 1, "processes": 1}
        query = {"outcome": "running", "started_at": {"$lt": checked_date(before)}}
        return list(self.db.crawls.find(query, fields).limit(MAX_LIST))

    @mongo_errors
    def running_crawls(self) -> list[dict]:
        """The crawl runs whose record says a crawler process runs: id, site, processes."""
        fields = {"run_id": 1, "site": 1, "processes": 1}
        return list(self.db.crawls.find({"outcome": "running"}, fields).limit(MAX_LIST))

    @mongo_errors
    def close_crawl_processes(self, run_id: str, tokens: Sequence[str]) -> dict:
        """Mark a run's processes ``tokens`` ``lost`` (those still ``running``: they died
        without recording an end), then write the run's summary; the run's record."""
        if not all(isinstance(t, str) and TOKEN.match(t) for t in tokens):
            raise StoreError(f"not crawler process tokens: {tokens!r}")
        self._mark_lost(str(run_id), tuple(tokens), at=now())
        return self._summarize(str(run_id))

    def _mark_lost(self, run_id: str, tokens: tuple[str, ...], at: datetime | None = None) -> None:
        for token in tokens:
            fields: dict[str, Any] = {f"processes.{token}.outcome": "lost"}
            if at is not None:
                fields[f"processes.{token}.finished_at"] = at
            self.db.crawls.update_one(
                {"run_id": run_id, f"processes.{token}.outcome": "running"},
                {"$set": fields, "$inc": {"version": 1}},
            )

    def _summarize(self, run_id: str) -> dict:
        """Write the run's summary (:func:`matcher.sites.crawl_runs.summary`) with its pages
        counted
        from the store: those of its site stored or fetched again since the run started, by
        any of its processes, dead ones included (a process's own count dies with it). The
        summary is written only over the version it was computed from, so processes ending
        at once cannot overwrite each other's part."""
        for _ in range(20):
            doc = self.db.crawls.find_one({"run_id": run_id})
            if doc is None:
                raise StoreError(f"no crawl run {run_id!r}")
            summary = crawl_runs.summary(doc.get("processes") or {}, self._run_pages(doc))
            done = self.db.crawls.update_one(
                {"run_id": run_id, "version": doc.get("version")}, {"$set": summary}
            )
            if done.matched_count:
                return self.db.crawls.find_one({"run_id": run_id})
        raise StoreError(f"crawl run {run_id}: its summary kept changing under it")

    def _run_pages(self, run: dict) -> int | None:
        """Pages of the run's site last seen since the run started (None: no start known)."""
        started = run.get("started_at")
        if not isinstance(started, datetime) or not run.get("site"):
            return None
        return self.page_marks.count_seen_since(site_name(run["site"]), started)

    @mongo_errors
    def last_crawls(self, site: str | None = None, limit: int = 20) -> list[dict]:
        query = {} if site is None else {"site": site_name(site)}
        cursor = self.db.crawls.find(query).sort("started_at", DESCENDING)
        return list(cursor.limit(min(int(limit), MAX_LIST)))

    @mongo_errors
    def latest_crawls(self) -> dict[str, dict]:
        """The newest crawl run of every site, in one aggregation (index ``site_started``)."""
        pipeline = [
            {"$sort": {"site": 1, "started_at": -1}},
            {"$group": {"_id": "$site", "crawl": {"$first": "$$ROOT"}}},
        ]
        return {d["_id"]: d["crawl"] for d in self.db.crawls.aggregate(pipeline)}

    @mongo_errors
    def crawl_outcomes(self) -> list[dict[str, Any]]:
        """Crawl runs per site and outcome, and the pages they stored or fetched again
        (their stats' ``fptrack/pages``, :mod:`matcher.sites.crawl_runs`), in one aggregation over
        ``crawls`` (one document per run): ``site``, ``outcome`` (``unknown`` for a run
        recorded without one), ``runs``, ``pages``."""
        pipeline = [
            {
                "$group": {
                    "_id": {"site": "$site", "outcome": "$outcome"},
                    "runs": {"$sum": 1},
                    "pages": {"$sum": f"$stats.{crawl_runs.PAGES}"},
                }
            }
        ]
        return [
            {
                "site": str(d["_id"].get("site") or ""),
                "outcome": str(d["_id"].get("outcome") or "unknown"),
                "runs": int(d.get("runs") or 0),
                "pages": int(d.get("pages") or 0),
            }
            for d in self.db.crawls.aggregate(pipeline)
        ]

    @mongo_errors
    def crawls_started(self, *, since: datetime, until: datetime) -> list[dict]:
        """The crawl runs started in ``[since, until)``."""
        return list(self.db.crawls.find(period("started_at", since, until)))

    @mongo_errors
    def delete_all(self) -> int:
        """Delete every crawl run's record; how many there were."""
        return self.db.crawls.delete_many({}).deleted_count

    @mongo_errors
    def runs_of_kind(self, kind: str) -> list[dict]:
        """The crawl runs of ``kind`` (``full``, ``incremental``, ...), oldest first."""
        found = self.db.crawls.find({"kind": checked_str(kind, "crawl kind")})
        return list(found.sort("started_at", ASCENDING).limit(MAX_LIST))

    @mongo_errors
    def run(self, run_id: str) -> dict | None:
        """The record of crawl run ``run_id``, or None."""
        return self.db.crawls.find_one({"run_id": checked_str(run_id, "run id")})
