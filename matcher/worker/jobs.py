"""The work behind each Celery task, as plain functions over an engine or a store.

Tasks (:mod:`matcher.worker.tasks`) only deal with messages, retries and failure records; what they
do is here, so it runs and is tested without a broker. Every function is idempotent: run
twice, it converges on the same records.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from matcher.errors import MatcherError, redis_errors, transient
from matcher.evidence.archive import Archive, prune
from matcher.keys import TAG_GROUPS, Keys
from matcher.matching.engine import Engine
from matcher.settings import Settings
from matcher.sites.crawl_runs import FRONTIER_LOST, LEASE_LOST, RUN_GONE
from matcher.sites.site_config import MAX_CRAWLERS
from matcher.store import STATUSES, Store, now

log = logging.getLogger(__name__)

NEW_WORKS_STATE = "match_new_works.since"
NEW_WORKS_OVERLAP = timedelta(minutes=5)
FRONTIER_STATS = "fptrack/frontier/"
INCREMENTAL_STATS = "fptrack/incremental/"


class CrawlFailed(MatcherError):
    """The crawl subprocess could not run or ended with an error (``stats``: what it wrote)."""

    def __init__(self, message: str, stats: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.stats = stats or {}


def process_page(engine: Engine, page_id: str, if_pending: bool = False) -> dict[str, Any]:
    """Fingerprint and match one stored page; returns a summary.

    With ``if_pending`` (a task sent again for a page whose first one may be lost), a page
    whose current text was matched already is left alone (``skipped``): the first task ran.
    """
    if if_pending:
        doc = engine.store.pages.get_page(page_id, {"pending": 1})
        if doc is not None and not doc.get("pending"):
            return {"page_id": page_id, "matches": 0, "new_matches": 0, "skipped": "matched"}
    records = engine.process_stored_page(
        page_id, authorised_sites=engine.licensed.get, as_task=True
    )
    return {"page_id": page_id, "matches": len(records), "new_matches": _unalerted(records)}


def process_pages(
    engine: Engine,
    page_ids: Sequence[str],
    failed: Callable[[str, Exception], None],
) -> dict[str, Any]:
    """:func:`process_page` of each page, matched together (:meth:`Engine.pages_together
    <matcher.matching.engine.Engine.pages_together>`: one read of the pages and those around them,
    one write of their processed marks); a page whose mark did not hold is matched again,
    on its own. A page that cannot be matched for good (an error not an outage,
    :func:`matcher.errors.transient`) is handed to ``failed`` (and named in the result's
    ``failed``) and the others go on; an outage ends the whole batch (the task runs again,
    and a page matched twice gets the same records)."""
    records: list[dict[str, Any]] = []
    failures: list[str] = []

    def one(page_id: str, rematch: bool = False) -> None:
        try:
            records.extend(
                engine.process_stored_page(
                    page_id, authorised_sites=engine.licensed.get, as_task=True, rematch=rematch
                )
            )
        except Exception as exc:
            if transient(exc):
                raise
            failures.append(page_id)
            failed(page_id, exc)

    pages = list(dict.fromkeys(page_ids))
    with engine.pages_together(pages) as unmarked:
        for page_id in pages:
            one(page_id)
    for page_id in unmarked:
        one(page_id, rematch=True)
    return {
        "pages": len(pages),
        "matched_again": len(unmarked),
        "matches": len(records),
        "new_matches": _unalerted(records),
        "failed": failures,
    }


def _unalerted(records: list[dict[str, Any]]) -> int:
    """How many of the match records wait to be handed to the alert rules (new ones)."""
    return sum(r.get("alert") == "pending" for r in records)


def index_work(engine: Engine, work_id: str) -> dict[str, Any]:
    engine.index_work(work_id)
    return {"work_id": work_id}


def match_work_against_pages(engine: Engine, work_id: str) -> dict[str, Any]:
    authorised = engine.store.sites.authorised_sites()
    records = engine.match_work_against_pages(work_id, authorised_sites=authorised)
    return {"work_id": work_id, "matches": len(records), "new_matches": _unalerted(records)}


def match_new_works(
    store: Store,
    enqueue_work: Callable[[str], None],
    enqueue_page: Callable[[str], None],
) -> dict[str, Any]:
    """The Daguan daily task: match works registered since the last run against all pages.

    Also enqueues every page whose current text was never processed (its task was lost to a
    broker outage, or failed for good before a fix). The window overlaps the last run by
    five minutes, so a work registered while the last run read the list is not missed.
    """
    started = now()
    since = store.state.get_state(NEW_WORKS_STATE)
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    works = store.works.works_registered_since(since - NEW_WORKS_OVERLAP if since else None)
    for work_id in works:
        enqueue_work(work_id)
    pages = 0
    for page_id in store.page_marks.pending_pages():
        enqueue_page(page_id)
        pages += 1
    store.state.set_state(NEW_WORKS_STATE, started)
    return {"works": len(works), "pending_pages": pages, "since": since}


REQUEUE_BATCH = 1000
"""Pages sent again by one run of :func:`requeue_pending` at most (the next run sends more)."""


def requeue_pending(
    store: Store,
    enqueue_page: Callable[[str], None],
    older_than: timedelta,
    limit: int = REQUEUE_BATCH,
) -> dict[str, Any]:
    """Send ``process_page`` again for the pages whose task was lost; how many were sent.

    A page is pending from its storing until its current text is matched. One whose last
    ``process_page`` was sent more than ``older_than`` ago (``FPTRACK_PENDING_AFTER``), or
    never sent (the broker was down) and stored that long ago, lost its task: to a worker
    killed while the broker kept nothing, to a broker restarted empty. Each is sent again
    and marked as sent now, so it waits ``older_than`` again before another try; a page
    whose task failed for good since its last send (a failure record) is left to the daily
    :func:`match_new_works` and the operator. Idempotent: the task sent skips a page
    matched meanwhile (``if_pending``).

    Beat sends this job's task on the page queue, which is first in, first out, with an
    expiry of its interval: when it runs, every message sent before it was delivered, so
    a page whose message still waits behind a backlog is not sent twice (while workers
    are behind, the task expires unrun).
    """
    sent_at = now()
    pages = store.page_marks.stale_pending_pages(sent_at - older_than, limit)
    for page in pages:
        enqueue_page(str(page["_id"]))
        store.page_marks.mark_enqueued(page["_id"], page["content_hash"], sent_at)
    if pages:
        log.warning("process_page sent again for %d page(s) whose task was lost", len(pages))
    return {"pages": len(pages)}


def crawl_site(
    settings: Settings,
    store: Store,
    site_name: str,
    environ: Mapping[str, str] | None = None,
    fan_out: Callable[[], None] | None = None,
    task_id: str = "",
) -> dict[str, Any]:
    """Run one crawler process of a site's crawl (Scrapy's reactor cannot restart in a worker).

    The subprocess (``python -m crawler.run``) takes one of the site's ``crawlers`` slots
    on its shared frontier in Redis (a lease renewed while it runs, expiring
    ``settings.crawl_lease`` seconds after a crash), joins the run under way or starts one,
    stores pages and enqueues their tasks itself, and stops gracefully a minute before
    ``settings.crawl_timeout`` seconds (it is killed at the timeout if it has not). This
    records its part of the run in ``crawls`` when it starts and when it ends. When every
    slot is held the crawl is skipped. ``fan_out`` (the scheduled crawl's task) is called
    ``crawlers - 1`` times once this process has its slot, to start the site's other
    processes (on any worker). ``task_id`` (the task's) goes in the run's ``tasks``, for
    ``fptrack crawl --wait``. A run whose frontier Redis lost (emptied, even before its
    start page was fetched: the process found its run over, and no process ended it) is
    ``interrupted``, its error :data:`~matcher.sites.crawl_runs.FRONTIER_LOST`, and the result's
    ``frontier_lost`` asks for a new crawl, as ``lease_lost`` does.
    """
    site = store.sites.get_site(site_name)
    if site is None:
        raise CrawlFailed(f"no site named {site_name!r}")
    with tempfile.TemporaryDirectory(prefix="fptrack-crawl-") as tmp:
        crawl = _CrawlProcess(site.to_dict(), Path(tmp), settings.crawl_timeout, environ)
        lease = crawl.lease()
        if lease is not None:
            record_crawler_started(store, site.name, lease, task_id)
            for _ in range(site.crawlers - 1 if fan_out is not None else 0):
                fan_out()
        returncode, stats, error = crawl.wait()
    if returncode == 3:
        return {"site": site.name, "skipped": f"all {site.crawlers} crawler slot(s) are held"}
    if lease is None:  # it failed before taking a slot: recorded as a run of its own
        run_id = uuid.uuid4().hex
        store.crawls.record_crawl(
            run_id, site.name, started_at=now(), finished_at=now(), outcome="failed",
            error=error, stats=stats, tasks=[task_id] if task_id else [],
        )  # fmt: skip
        raise CrawlFailed(error or f"crawl of {site.name} announced no lease", stats)
    lease_lost = stats.get("finish_reason") == LEASE_LOST
    outcome = "lost" if returncode < 0 or lease_lost else ("failed" if error else "finished")
    run = record_crawler_ended(store, site.name, lease, outcome, stats, error)
    if error and returncode >= 0:
        raise CrawlFailed(error, stats)
    # The run ended with no process ending it, though this one found it over: Redis lost
    # the frontier. Like a lost lease, a new process is wanted (a new run, here).
    gone = bool(stats.get(RUN_GONE)) and run.get("outcome") == "interrupted"
    if gone:
        log.warning("crawl of %s: %s", site.name, FRONTIER_LOST)
        store.crawls.record_crawl_process(
            lease["run_id"], site.name, lease["token"], error=FRONTIER_LOST
        )
    return {
        "site": site.name,
        "run_id": lease["run_id"],
        "slot": lease["slot"],
        "pages": stats.get("fptrack/pages", 0),
        "ended_run": bool(stats.get(FRONTIER_STATS + "ended_run")),
        "lease_lost": lease_lost,
        "frontier_lost": gone,
    }


def recrawl_site(
    settings: Settings,
    store: Store,
    site_name: str,
    environ: Mapping[str, str] | None = None,
    task_id: str = "",
) -> dict[str, Any]:
    """Run a site's incremental crawl (``python -m crawler.run --incremental``) and record it.

    The subprocess takes the site's recrawl lease; while another incremental crawl or a full
    crawl of the site runs it exits at once and nothing is recorded (``skipped``). Otherwise
    the run is recorded in ``crawls`` with ``kind`` ``incremental`` and its stats, among them
    ``fptrack/incremental/new``, ``.../changed`` and ``.../unchanged`` (304 answers and
    same-text pages).
    """
    site = store.sites.get_site(site_name)
    if site is None:
        raise CrawlFailed(f"no site named {site_name!r}")
    started = now()
    with tempfile.TemporaryDirectory(prefix="fptrack-recrawl-") as tmp:
        crawl = _CrawlProcess(
            site.to_dict(), Path(tmp), settings.crawl_timeout, environ, incremental=True
        )
        returncode, stats, error = crawl.wait()
    if returncode == 3:
        return {"site": site.name, "skipped": error.rsplit(": ", 1)[-1]}
    run_id = uuid.uuid4().hex
    outcome = "lost" if returncode < 0 else ("failed" if error else "finished")
    store.crawls.record_crawl(
        run_id, site.name, kind="incremental", started_at=started, finished_at=now(),
        outcome=outcome, error=error, stats=stats, tasks=[task_id] if task_id else [],
    )  # fmt: skip
    if error and returncode >= 0:
        raise CrawlFailed(error, stats)
    return {
        "site": site.name,
        "run_id": run_id,
        **{k: stats.get(INCREMENTAL_STATS + k, 0) for k in ("new", "changed", "unchanged")},
    }


def record_crawler_started(
    store: Store, site: str, lease: Mapping[str, Any], task_id: str = ""
) -> None:
    """Record that a crawler process (``lease``: ``CrawlLease.describe()``) started its part
    (run by the task ``task_id``, if any)."""
    store.crawls.record_crawl_process(
        lease["run_id"], site, lease["token"], task=task_id,
        run_started_at=datetime.fromisoformat(lease["run_started_at"]), started_at=now(),
        outcome="running", slot=lease["slot"], host=lease["host"], pid=lease["pid"],
    )  # fmt: skip


def record_crawler_ended(
    store: Store,
    site: str,
    lease: Mapping[str, Any],
    outcome: str,
    stats: dict[str, Any],
    error: str = "",
) -> dict[str, Any]:
    """Record the end of a crawler process's part, and the processes it found dead; the
    run's record."""
    return store.crawls.record_crawl_process(
        lease["run_id"], site, lease["token"],
        lost=tuple(stats.get(FRONTIER_STATS + "lost_processes") or ()), finished_at=now(),
        outcome=outcome, ended_run=bool(stats.get(FRONTIER_STATS + "ended_run")), error=error,
        stats=stats,
    )  # fmt: skip


class _CrawlProcess:
    """A ``python -m crawler.run --announce`` subprocess: its lease line, then its end."""

    GRACE = 60

    def __init__(
        self,
        site: dict[str, Any],
        tmp: Path,
        timeout: int,
        environ: Mapping[str, str] | None,
        incremental: bool = False,
    ) -> None:
        self.site = site["name"]
        self.stats_path = tmp / "stats.json"
        self.stderr_path = tmp / "stderr.txt"
        self.deadline = time.monotonic() + timeout
        graceful = max(timeout - self.GRACE, timeout / 2)  # time to finish the downloads
        command = [
            sys.executable, "-m", "crawler.run", "--site-json",
            json.dumps(site, ensure_ascii=False), "--stats-json", str(self.stats_path),
            "--timeout", str(graceful), "--incremental" if incremental else "--announce",
        ]  # fmt: skip
        with self.stderr_path.open("w", encoding="utf-8") as stderr:
            self.process = subprocess.Popen(
                command,
                env=dict(os.environ if environ is None else environ),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )

    def lease(self) -> dict[str, Any] | None:
        """The lease the crawl announced, or None if it ended (or hung) without one."""
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], self._left())
        line = self.process.stdout.readline() if ready else ""
        try:
            return json.loads(line) if line.strip() else None
        except ValueError:
            return None

    def wait(self) -> tuple[int, dict[str, Any], str]:
        """Exit status, stats and a one-line error ("" if none) of the ended crawl."""
        try:
            returncode = self.process.wait(self._left())
        except subprocess.TimeoutExpired:
            self.process.kill()
            returncode = self.process.wait()
            error = f"crawl of {self.site} ran over its time and was killed"
            return returncode, self._stats(), error
        finally:
            if self.process.stdout is not None:
                self.process.stdout.close()
        if returncode == 0:
            stats = self._stats()
            if not stats:
                return returncode, stats, f"crawl of {self.site} wrote no stats"
            return returncode, stats, ""
        lines = self.stderr_path.read_text(encoding="utf-8", errors="replace").strip()
        tail = (lines.splitlines()[-1:] or ["no output"])[0]
        if returncode < 0:
            tail = f"killed by signal {-returncode}"
        return returncode, self._stats(), f"crawl of {self.site} exited {returncode}: {tail}"

    def _stats(self) -> dict[str, Any]:
        try:
            return json.loads(self.stats_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


def close_lost_crawls(
    store: Store,
    redis_client: Any,
    keys: Keys,
    enqueue_crawl: Callable[[str], None] = lambda site: None,
) -> list[str]:
    """Close the records of crawler processes that died; the ids of the runs so ended.

    A process's record says ``running`` from its start until its worker records its end;
    a worker killed with it (SIGKILL, a lost machine) never does. Such a process no longer
    holds its lease: its slot's lock (``FPTRACK_CRAWL_LEASE``) has expired or holds
    another token. Its part is marked ``lost`` (at the time its loss is seen) and the run's
    summary written again: ``interrupted`` when no process of the run runs any more and
    none ended it, with the pages stored since the run started counted from the store
    (:meth:`matcher.store.crawls.CrawlRuns.record_crawl_process`). :func:`resume_crawls`
    then resumes the run from its frontier; a run whose frontier is gone too (Redis lost
    it) is crawled anew at once (``enqueue_crawl``), as the pages it did not reach would
    otherwise wait for the site's next schedule.
    """
    ended = []
    for run in store.crawls.running_crawls():
        running = {
            token: part
            for token, part in (run.get("processes") or {}).items()
            if part.get("outcome") == "running" and isinstance(part.get("slot"), int)
        }
        if not running:
            continue
        crawl = keys.crawl(run["site"])
        with redis_errors("reading the crawl leases"):
            holders = redis_client.mget([crawl.slot_lock(p["slot"]) for p in running.values()])
        lost = [
            token
            for token, holder in zip(running, holders, strict=True)
            if holder is None or holder.decode() != token
        ]
        if lost and store.crawls.close_crawl_processes(run["run_id"], lost)["outcome"] != "running":
            log.warning("crawl run %s of %s closed: its processes died", run["run_id"], run["site"])
            ended.append(run["run_id"])
            with redis_errors("reading a crawl frontier"):
                kept = redis_client.hget(crawl.run, "id")
            if kept is None or kept.decode() != run["run_id"]:
                log.warning("the frontier of %s was lost too: crawled anew", run["site"])
                enqueue_crawl(run["site"])
    return ended


def resume_crawls(
    redis_client: Any, keys: Keys, sites: set[str], enqueue_crawl: Callable[[str], None]
) -> list[str]:
    """Start a crawl of every site whose frontier holds an unfinished run and no process.

    A crawl whose every process stopped early (``FPTRACK_CRAWL_TIMEOUT``, a worker shut
    down) or died (a lost machine) keeps its frontier; once their leases have expired
    (``FPTRACK_CRAWL_LEASE``), this sends ``crawl_site`` for the site, and the new process
    joins the same run (same run id and record), puts the dead ones' requests back and
    goes on from the frontier: what was fetched is not fetched again. Beat runs it every
    lease, so a crawl resumes within two leases of a crash instead of waiting for the
    site's next schedule (a crawl's message is acknowledged as it starts: it is never
    delivered again). The frontier of a site no longer in ``sites`` (removed) is deleted.
    Returns the sites it started.
    """
    started = []
    with redis_errors("looking for abandoned crawls"):
        for site in sorted(s.decode() for s in redis_client.smembers(keys.crawl_frontiers)):
            crawl = keys.crawl(site)
            inflight = [crawl.inflight(slot) for slot in range(MAX_CRAWLERS)]
            if site not in sites:
                redis_client.delete(crawl.queue, crawl.seen, crawl.run, *inflight)
            if site not in sites or not redis_client.exists(crawl.run):
                redis_client.srem(keys.crawl_frontiers, site)
                continue
            if not redis_client.exists(*(crawl.slot_lock(s) for s in range(MAX_CRAWLERS))):
                enqueue_crawl(site)
                started.append(site)
    return started


ARCHIVE_GRACE = timedelta(days=1)
"""Archive files younger than this are never pruned: a crawl may have stored one and not yet
recorded it on its page."""


def prune_archive(
    engine: Engine, archive: Archive | None, grace: timedelta = ARCHIVE_GRACE
) -> dict[str, Any]:
    """Delete the archived exchanges superseded by a page's later text that no match refers
    to (:func:`matcher.evidence.archive.prune`); each page's current exchange and every match's
    stay."""
    if archive is None:
        return {"deleted": 0}
    pages, matches = engine.store.pages, engine.store.matches

    def referred() -> set[str]:
        """The SHA-256 of every archived exchange a page (its current text) or a match (the
        text it was found in) refers to."""
        return pages.archive_refs() | matches.archive_refs()

    return {"deleted": prune(archive, referred, now() - grace)}


def daily_report(store: Store, day: date | None = None) -> dict[str, Any]:
    """Totals of one UTC day (default: yesterday): new matches by site, work and status,
    pages fetched, crawl runs and their errors, tasks that failed. Stored in ``reports``."""
    day = day or (now() - timedelta(days=1)).date()
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    end = start + timedelta(days=1)
    by_site: Counter[str] = Counter()
    by_work: Counter[str] = Counter()
    by_status: Counter[str] = Counter({s: 0 for s in STATUSES})
    for m in store.matches.iter_matches(since=start, until=end, active_only=False):
        by_site[m.get("site", "")] += 1
        by_work[m.get("work_title", "") or str(m["work_id"])] += 1
        by_status[m.get("status", "new")] += 1
    pages = store.page_marks.pages_fetched(since=start, until=end)
    crawls = store.crawls.crawls_started(since=start, until=end)
    report = {
        "day": day.isoformat(),
        "matches": sum(by_site.values()),
        "matches_by_site": dict(by_site.most_common()),
        "matches_by_work": dict(by_work.most_common()),
        "matches_by_status": dict(by_status),
        "pages_fetched": pages,
        "crawls": len(crawls),
        "crawls_failed": sum(c.get("outcome") == "failed" for c in crawls),
        "failures": store.failure_log.failure_count(since=start, until=end),
        "generated_at": now(),
    }
    store.reports.save_report(report["day"], report)
    return report


SHORTFALL_SAMPLES = 3
"""Counts of stored and indexed owners the heal job takes, a moment apart; the smallest
shortfall counts (a page being matched is briefly stored and not yet indexed)."""


def heal_indexes(
    engine: Engine,
    enqueue_page: Callable[[str], None],
    enqueue_work: Callable[[str], None],
) -> dict[str, Any]:
    """The heal job (beat, every :data:`matcher.worker.schedules.HEAL_SECONDS` s): rebuild the tag
    groups Redis lost (:mod:`matcher.index.integrity`), or a side that holds fewer owners than the
    store at two runs in a row (a failover to a replica that missed the last writes); then
    match again what a lost part could have touched since the indexes were last seen whole:
    the pages matched and the works registered in that time. Idempotent."""
    integrity = engine.integrity
    state = integrity.state
    result: dict[str, Any] = {"lost_groups": [], "rebuilt": [], "pages": 0, "works": 0}
    seen_at = now()
    snap = integrity.snapshot()
    if not snap.whole:
        result["lost_groups"] = snap.lost
        engine.ready()
    else:
        short = _shortfall(engine)
        before = state.shortfall()
        state.shortfall(short)
        for kind, missing in short.items():
            if missing > 0 and before.get(kind, 0) > 0 and missing >= before[kind]:
                reason = f"the {kind}s' index held {missing} fewer owners than the store"
                integrity.rebuild(range(TAG_GROUPS), reason, (kind,))
                state.shortfall({**short, kind: 0})
                result["rebuilt"].append(kind)
        if integrity.unchanged(snap):
            state.seen_whole(seen_at)
    since = state.rematch_since()
    until = state.last_heal_at()
    if since is not None and until is not None:
        for page_id in state.touched_pages(since, until):
            enqueue_page(page_id)
            result["pages"] += 1
        for work_id in state.touched_works(since, until):
            enqueue_work(work_id)
            result["works"] += 1
        state.rematched(since)
    return result


def _shortfall(engine: Engine) -> dict[str, int]:
    """Owners with stored fingerprints that the index does not hold, per kind (the least
    of a few counts)."""
    state = engine.integrity.state
    sides = {"work": engine.works, "page": engine.pages}
    if not engine.index_pages:
        del sides["page"]
    least: dict[str, int] = {}
    for i in range(SHORTFALL_SAMPLES):
        if i:
            time.sleep(0.2)
        stored = state.indexable()
        with redis_errors("counting the indexes"):
            for kind, side in sides.items():
                missing = stored[kind] - side.simhash.entries()
                least[kind] = min(least.get(kind, missing), missing)
    return least
