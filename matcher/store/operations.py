"""Operational records beside the matching data: sites, crawl runs, failures, job state,
daily reports, and the operator's match queries.

Same rules as :mod:`matcher.store`: typed filters only (a site name must match
:data:`matcher.sites.NAME`, an id must be an ObjectId string, a status one of
:data:`matcher.store.STATUSES`), every write an upsert on a unique key, connection failures
raised as :class:`matcher.errors.StoreUnavailable`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument

from matcher import crawl_runs
from matcher.prepared import INDEX_KEYS
from matcher.sites import NAME, SiteConfig, SiteConfigError
from matcher.store import (
    KINDS,
    REGISTRATION_ORDER,
    STATUSES,
    Store,
    StoreError,
    mongo_errors,
    now,
    object_id,
    tallies,
)

MAX_LIST = 10_000
TASK_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz_.")
_TOKEN = re.compile(r"^[0-9a-f]{8,64}$")


def site_name(value: Any) -> str:
    """A site name fit for a filter; anything else is a :class:`StoreError`."""
    if not isinstance(value, str) or not NAME.match(value):
        raise StoreError(f"not a site name: {value!r}")
    return value


def status_name(value: Any) -> str:
    if value not in STATUSES:
        raise StoreError(f"status must be one of {', '.join(STATUSES)}, got {value!r}")
    return value


class Operations:
    """Sites, crawl runs, failure records, job state and match queries over one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # sites -----------------------------------------------------------------------------

    @mongo_errors
    def save_site(self, site: SiteConfig) -> tuple[dict, bool]:
        """Create or replace a site's configuration; returns ``(document, created)``."""
        stamp = now()
        before = self.db.sites.find_one({"name": site.name}, {"_id": 1})
        doc = self.db.sites.find_one_and_update(
            {"name": site.name},
            {
                "$set": {**site.to_dict(), "updated_at": stamp},
                "$setOnInsert": {"created_at": stamp},
            },
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )
        return doc, before is None

    @mongo_errors
    def get_site(self, name: str) -> SiteConfig | None:
        doc = self.db.sites.find_one({"name": site_name(name)})
        return None if doc is None else self._site(doc)

    @mongo_errors
    def list_sites(self) -> list[SiteConfig]:
        return [self._site(d) for d in self.db.sites.find({}).sort("name", ASCENDING)]

    @staticmethod
    def _site(doc: dict) -> SiteConfig:
        try:
            return SiteConfig.from_dict(doc)
        except SiteConfigError as exc:
            raise StoreError(f"stored site {doc.get('name')!r} is invalid: {exc}") from exc

    @mongo_errors
    def delete_site(self, name: str) -> bool:
        return self.db.sites.delete_one({"name": site_name(name)}).deleted_count == 1

    def authorised_sites(self) -> set[str]:
        return self.store.authorised_sites()

    # crawl runs ------------------------------------------------------------------------

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
        :mod:`matcher.crawl_runs`); ``lost`` names processes this one found dead (their
        requests put back), marked ``lost`` unless they recorded an end of their own.
        ``task``: the id of the task that runs the process, added to the run's ``tasks``
        (:meth:`crawl_of_task`).
        """
        if not _TOKEN.match(process) or not all(_TOKEN.match(t) for t in lost):
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
        pages = {"site": site_name(run["site"]), "last_seen": {"$gte": started}}
        return {
            "stored": self.db.pages.count_documents(pages),
            "pending": self.db.pages.count_documents({**pages, "pending": True}),
            "matched": self.db.matches.count_documents(
                {"site": site_name(run["site"]), "first_seen": {"$gte": started}}
            ),
        }

    @mongo_errors
    def failed_crawls(self, since: datetime) -> list[dict]:
        """The crawl runs ended ``failed`` since ``since``, newest first: site, run id,
        finish time, error."""
        fields = {"site": 1, "run_id": 1, "finished_at": 1, "error": 1, "started_at": 1}
        query = {"outcome": "failed", "finished_at": {"$gte": _when(since)}}
        cursor = self.db.crawls.find(query, fields).sort("finished_at", DESCENDING)
        return list(cursor.limit(MAX_LIST))

    @mongo_errors
    def running_crawls_started_before(self, before: datetime) -> list[dict]:
        """The runs still recorded ``running`` whose start is before ``before``."""
        fields = {"site": 1, "run_id": 1, "started_at": 1, "processes": 1}
        query = {"outcome": "running", "started_at": {"$lt": _when(before)}}
        return list(self.db.crawls.find(query, fields).limit(MAX_LIST))

    @mongo_errors
    def pending_since(self, before: datetime) -> int:
        """Pages pending (their current text not matched) since before ``before``."""
        return self.db.pages.count_documents(
            {"pending": True, "fetched_at": {"$lt": _when(before)}}
        )

    @mongo_errors
    def running_crawls(self) -> list[dict]:
        """The crawl runs whose record says a crawler process runs: id, site, processes."""
        fields = {"run_id": 1, "site": 1, "processes": 1}
        return list(self.db.crawls.find({"outcome": "running"}, fields).limit(MAX_LIST))

    @mongo_errors
    def close_crawl_processes(self, run_id: str, tokens: Sequence[str]) -> dict:
        """Mark a run's processes ``tokens`` ``lost`` (those still ``running``: they died
        without recording an end), then write the run's summary; the run's record."""
        if not all(isinstance(t, str) and _TOKEN.match(t) for t in tokens):
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
        """Write the run's summary (:func:`matcher.crawl_runs.summary`) with its pages counted
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
        query = {"site": site_name(run["site"]), "last_seen": {"$gte": started}}
        return self.db.pages.count_documents(query)

    # pending pages -----------------------------------------------------------------------

    @mongo_errors
    def stale_pending_pages(
        self, sent_before: datetime, limit: int, *, task: str = "fptrack.process_page"
    ) -> list[dict]:
        """Up to ``limit`` pending pages (their current text never matched) whose last
        ``task`` was sent before ``sent_before``, or never sent and fetched before it, oldest
        first: ``_id`` and ``content_hash``. A page whose ``task`` failed for good since it
        was last sent (a ``failures`` record newer than its ``enqueued_at``) is left out.
        At most ``10 * limit`` pending pages are looked at."""
        sent_before = _when(sent_before)
        query = {
            "pending": True,
            "$or": [
                {"enqueued_at": {"$lt": sent_before}},
                {"enqueued_at": {"$exists": False}, "fetched_at": {"$lt": sent_before}},
            ],
        }
        fields = {"_id": 1, "content_hash": 1, "enqueued_at": 1}
        cursor = self.db.pages.find(query, fields).sort("seq", ASCENDING).limit(10 * int(limit))
        out: list[dict] = []
        batch: list[dict] = []
        for doc in cursor:
            batch.append(doc)
            if len(batch) == 500:
                out += self._not_failed(batch, task)
                batch = []
            if len(out) >= limit:
                break
        out += self._not_failed(batch, task)
        return out[: int(limit)]

    def _not_failed(self, pages: list[dict], task: str) -> list[dict]:
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
        (their stats' ``fptrack/pages``, :mod:`matcher.crawl_runs`), in one aggregation over
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

    # failures --------------------------------------------------------------------------

    @mongo_errors
    def record_failure(self, task: str, ref: str, error: str, attempts: int) -> dict:
        """Keep a task that gave up (one record per task and object, updated on repeats)."""
        if not set(task) <= TASK_NAME_CHARS:
            raise StoreError(f"not a task name: {task!r}")
        stamp = now()
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
    def failures(self, limit: int = 100) -> list[dict]:
        cursor = self.db.failures.find({}).sort("failed_at", DESCENDING)
        return list(cursor.limit(min(int(limit), MAX_LIST)))

    @mongo_errors
    def failure_count(self, *, since: datetime | None = None, until: datetime | None = None) -> int:
        """Failure records, all or those of ``[since, until)``."""
        return self.db.failures.count_documents(_period("failed_at", since, until))

    @mongo_errors
    def failure_counts(self) -> dict[str, int]:
        """Failure records kept per task (one aggregation over ``failures``)."""
        pipeline = [{"$group": {"_id": "$task", "n": {"$sum": 1}}}]
        return {str(d["_id"]): int(d["n"]) for d in self.db.failures.aggregate(pipeline)}

    @mongo_errors
    def pending_page_count(self) -> int:
        """Pages whose current text was never matched (index ``pending_seq``)."""
        return self.db.pages.count_documents({"pending": True})

    @mongo_errors
    def crawls_started(self, *, since: datetime, until: datetime) -> list[dict]:
        """The crawl runs started in ``[since, until)``."""
        return list(self.db.crawls.find(_period("started_at", since, until)))

    @mongo_errors
    def pages_fetched(self, *, since: datetime, until: datetime) -> int:
        """Pages whose last fetch is in ``[since, until)``."""
        return self.db.pages.count_documents(_period("fetched_at", since, until))

    # accounts --------------------------------------------------------------------------

    @mongo_errors
    def has_users(self) -> bool:
        """Whether the admin platform has at least one account."""
        return self.db.users.find_one({}, {"_id": 1}) is not None

    @mongo_errors
    def user_record(self, *, username: str, fields: dict[str, int] | None = None) -> dict | None:
        """The account document of ``username`` (a validated name), or None."""
        return self.db.users.find_one({"username": _plain_str(username, "username")}, fields)

    @mongo_errors
    def user_records(self) -> list[dict]:
        """Every account (no password hashes), by username."""
        fields = {"username": 1, "role": 1, "created_at": 1, "last_login": 1}
        return list(self.db.users.find({}, fields).sort("username", ASCENDING))

    @mongo_errors
    def save_user(self, *, username: str, fields: dict[str, Any]) -> None:
        """Create or update the account ``username`` with ``fields`` (plain values)."""
        stamp = now()
        self.db.users.update_one(
            {"username": _plain_str(username, "username")},
            {
                "$set": {**_plain_fields(fields), "updated_at": stamp},
                "$setOnInsert": {"created_at": stamp},
            },
            upsert=True,
        )

    @mongo_errors
    def update_user(self, *, username: str, fields: dict[str, Any]) -> None:
        """Set ``fields`` (plain values) on the existing account ``username``."""
        self.db.users.update_one(
            {"username": _plain_str(username, "username")}, {"$set": _plain_fields(fields)}
        )

    @mongo_errors
    def count_login_failure(self, *, username: str, client: str) -> int:
        """Add one failed login of ``client`` (a hex digest of its address) to the account
        ``username``, in one atomic update (logins failing at once all count); the client's
        failures now (0 when there is no such account)."""
        field = f"throttle.{_plain_token(client)}"
        doc = self.db.users.find_one_and_update(
            {"username": _plain_str(username, "username")},
            {"$inc": {f"{field}.failures": 1}},
            projection={field: 1},
            return_document=ReturnDocument.AFTER,
        )
        mine = ((doc or {}).get("throttle") or {}).get(client) or {}
        return int(mine.get("failures", 0))

    @mongo_errors
    def hold_logins(self, *, username: str, client: str, until: datetime) -> None:
        """Refuse ``client``'s logins to ``username`` until ``until`` (or a later time
        already set)."""
        self.db.users.update_one(
            {"username": _plain_str(username, "username")},
            {"$max": {f"throttle.{_plain_token(client)}.until": _when(until)}},
        )

    @mongo_errors
    def login_succeeded(self, *, username: str, client: str, fields: dict[str, Any]) -> None:
        """Forget ``client``'s failed logins to ``username`` and set ``fields`` (plain
        values), the other clients' failures left as they are."""
        self.db.users.update_one(
            {"username": _plain_str(username, "username")},
            {"$unset": {f"throttle.{_plain_token(client)}": ""}, "$set": _plain_fields(fields)},
        )

    # API tokens ------------------------------------------------------------------------

    @mongo_errors
    def save_api_token(self, *, digest: str, fields: dict[str, Any]) -> None:
        """Store a new API token under the SHA-256 ``digest`` of its secret."""
        self.db.api_tokens.insert_one({**_plain_fields(fields), "_id": _plain_str(digest, "id")})

    @mongo_errors
    def api_token(self, *, digest: str) -> dict | None:
        """The unrevoked token whose secret has SHA-256 ``digest``, or None."""
        return self.db.api_tokens.find_one({"_id": _plain_str(digest, "token"), "revoked_at": None})

    @mongo_errors
    def api_tokens(self, *, username: str | None = None) -> list[dict]:
        """Unrevoked tokens (of ``username``; of everyone when None), newest first."""
        query: dict[str, Any] = {"revoked_at": None}
        if username is not None:
            query["username"] = _plain_str(username, "username")
        return list(self.db.api_tokens.find(query).sort("created_at", DESCENDING))

    @mongo_errors
    def revoke_api_token(self, *, token_id: str, username: str | None = None) -> bool:
        """Revoke the token whose id (its digest's first characters) is ``token_id``, of
        ``username`` when given; whether one was revoked. The token is found first, then
        revoked by its digest (``_id``, the shard key)."""
        query: dict[str, Any] = {"token_id": _plain_str(token_id, "token id"), "revoked_at": None}
        if username is not None:
            query["username"] = _plain_str(username, "username")
        found = self.db.api_tokens.find_one(query, {"_id": 1})
        if found is None:
            return False
        result = self.db.api_tokens.update_one(
            {"_id": found["_id"], "revoked_at": None}, {"$set": {"revoked_at": now()}}
        )
        return result.modified_count == 1

    @mongo_errors
    def api_token_used(self, *, digest: str, at: datetime) -> None:
        self.db.api_tokens.update_one(
            {"_id": _plain_str(digest, "token")}, {"$set": {"last_used_at": _when(at)}}
        )

    # index health ----------------------------------------------------------------------

    @mongo_errors
    def fingerprint_counts(self) -> dict[str, int]:
        """Owners with stored index keys, per kind: what ``fptrack index rebuild`` indexes."""
        field = f"methods.{INDEX_KEYS}"
        return {
            kind: self.db.fingerprints.count_documents(
                {"owner_kind": kind, field: {"$exists": True}}
            )
            for kind in KINDS
        }

    # job state -------------------------------------------------------------------------

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

    # dashboard counters ------------------------------------------------------------------

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

    # works and matches for operators ----------------------------------------------------

    @mongo_errors
    def works_registered_since(self, since: datetime | None) -> list[str]:
        query = {} if since is None else {"registered_at": {"$gt": _when(since)}}
        cursor = self.db.works.find(query, {"_id": 1}).sort("registered_at", ASCENDING)
        return [str(d["_id"]) for d in cursor]

    @mongo_errors
    def search_works(
        self, *, text: str = "", limit: int, keyset: bool = False, before: str | None = None
    ) -> list[dict]:
        """Works whose title or source contains ``text`` (a literal substring, never a
        pattern), newest first; all works when ``text`` is empty. ``keyset``: newest first
        by id, those before the work id ``before`` when given (pages that hold however many
        works are registered meanwhile)."""
        query: dict[str, Any] = {}
        if text:
            pattern = re.escape(_plain_str(text, "search text"))
            query = {"$or": [{"title": {"$regex": pattern}}, {"source": {"$regex": pattern}}]}
        fields = {
            "title": 1, "author": 1, "source": 1, "registered_at": 1, "same_text_as": 1,
            "near_twin": 1,
        }  # fmt: skip
        if not keyset:
            cursor = self.db.works.find(query, fields).sort("registered_at", DESCENDING)
        else:
            if before is not None:
                query = {"$and": [query, {"_id": {"$lt": object_id(before, "work id")}}]}
            cursor = self.db.works.find(query, fields).sort("_id", DESCENDING)
        return list(cursor.limit(min(int(limit), MAX_LIST)))

    @mongo_errors
    def work_sources(self) -> dict[Any, str]:
        """Work id -> the work's source (file name)."""
        return {d["_id"]: d.get("source", "") for d in self.db.works.find({}, {"source": 1})}

    @mongo_errors
    def twin_pairs(self) -> list[tuple[dict, dict]]:
        """Every work with the same (or, ``near_twin``, nearly the same) text as an earlier
        one, with that work, earliest first (:meth:`matcher.registry.Registry.add`)."""
        fields = {"title": 1, "source": 1, "seq": 1, "same_text_as": 1, "near_twin": 1}
        found = self.db.works.find({"same_text_as": {"$ne": None}}, fields)
        twins = list(found.sort(list(REGISTRATION_ORDER)))
        ids = list({t["same_text_as"] for t in twins})
        firsts = {d["_id"]: d for d in self.db.works.find({"_id": {"$in": ids}}, fields)}
        return [(t, firsts[t["same_text_as"]]) for t in twins if t["same_text_as"] in firsts]

    @mongo_errors
    def same_text_note(self, work_id: Any) -> str:
        """ "same text as work ID (TITLE) ..." for a twin ("nearly the same text ..." for a
        near twin), else ""."""
        fields = {"same_text_as": 1, "near_twin": 1}
        work = self.db.works.find_one({"_id": object_id(str(work_id), "work id")}, fields)
        first = work and work.get("same_text_as")
        if not first:
            return ""
        other = self.db.works.find_one({"_id": first}, {"title": 1}) or {}
        nearly = "nearly the " if work.get("near_twin") else ""
        return (
            f"{nearly}same text as work {first} ({other.get('title', '')!r}):"
            " its copies are recorded under that work"
        )

    @mongo_errors
    def list_works(self, limit: int = MAX_LIST) -> list[dict]:
        projection = {
            "title": 1, "author": 1, "source": 1, "registered_at": 1, "seq": 1, "same_text_as": 1,
            "near_twin": 1,
        }  # fmt: skip
        cursor = self.db.works.find({}, projection).sort("seq", ASCENDING)
        return list(cursor.limit(min(int(limit), MAX_LIST)))

    @mongo_errors
    def find_works(self, ref: str) -> list[dict]:
        """Works whose id, key, source or title is exactly ``ref``."""
        if not isinstance(ref, str):
            raise StoreError("a work reference must be a string")
        clauses: list[dict[str, Any]] = [{"key": ref}, {"source": ref}, {"title": ref}]
        with contextlib.suppress(StoreError):
            clauses.append({"_id": object_id(ref)})
        projection = {"title": 1, "source": 1, "seq": 1}
        return list(self.db.works.find({"$or": clauses}, projection))

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
    ) -> dict[str, Any]:
        """A ``matches`` filter from typed values only (each validated, none an operator).

        ``statuses`` admits any of several statuses (``status`` one); ``min_score`` a lowest
        score; ``after`` = ``(first_seen, id)`` of the last match of a page of matches sorted
        newest first: the filter then selects the matches after it (keyset paging)."""
        query: dict[str, Any] = {}
        if site is not None:
            query["site"] = site_name(site)
        if work_id is not None:
            query["work_id"] = object_id(work_id, "work id")
        if since is not None or until is not None:
            query["first_seen"] = {}
            if since is not None:
                query["first_seen"]["$gte"] = _when(since)
            if until is not None:
                query["first_seen"]["$lt"] = _when(until)
        if status is not None:
            query["status"] = status_name(status)
        elif statuses is not None:
            query["status"] = {"$in": [status_name(s) for s in statuses]}
        if min_score is not None:
            if isinstance(min_score, bool) or not isinstance(min_score, int | float):
                raise StoreError(f"a score is a number, got {min_score!r}")
            query["score"] = {"$gte": float(min_score)}
        if active_only:
            query["active"] = True
        if after is not None:
            when, last = _when(after[0]), object_id(str(after[1]), "match id")
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
    def save_report(self, day: str, report: dict[str, Any]) -> None:
        self.db.reports.update_one({"day": str(day)}, {"$set": report}, upsert=True)


def _period(field: str, since: datetime | None, until: datetime | None) -> dict[str, Any]:
    clause: dict[str, Any] = {}
    if since is not None:
        clause["$gte"] = _when(since)
    if until is not None:
        clause["$lt"] = _when(until)
    return {field: clause} if clause else {}


def _plain_str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise StoreError(f"{what} must be a string, got {type(value).__name__}")
    return value


def _plain_token(value: Any) -> str:
    """A lowercase hex token (8 to 64 digits) fit for a field name."""
    if not isinstance(value, str) or not _TOKEN.match(value):
        raise StoreError(f"not a hex token: {value!r}")
    return value


def _plain_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` when no name is an operator or a path (they are set as given)."""
    for name in fields:
        if not isinstance(name, str) or not name or name[0] == "$" or "." in name:
            raise StoreError(f"not a field name: {name!r}")
    return dict(fields)


def _when(value: datetime) -> datetime:
    if not isinstance(value, datetime):
        raise StoreError(f"a date is needed, got {type(value).__name__}")
    return value
