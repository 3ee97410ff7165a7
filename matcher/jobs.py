"""The work behind each Celery task, as plain functions over an engine or a store.

Tasks (:mod:`matcher.tasks`) only deal with messages, retries and failure records; what they
do is here, so it runs and is tested without a broker. Every function is idempotent: run
twice, it converges on the same records.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from matcher.engine import Engine
from matcher.errors import MatcherError, redis_errors
from matcher.keys import Keys
from matcher.operations import Operations
from matcher.settings import Settings
from matcher.store import STATUSES, now

log = logging.getLogger(__name__)

NEW_WORKS_STATE = "match_new_works.since"
NEW_WORKS_OVERLAP = timedelta(minutes=5)


class CrawlFailed(MatcherError):
    """The crawl subprocess could not run or ended with an error (``stats``: what it wrote)."""

    def __init__(self, message: str, stats: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.stats = stats or {}


def process_page(engine: Engine, page_id: str) -> dict[str, Any]:
    """Fingerprint and match one stored page; returns a summary."""
    authorised = engine.store.authorised_sites()
    records = engine.process_stored_page(page_id, authorised_sites=authorised)
    return {"page_id": page_id, "matches": len(records)}


def index_work(engine: Engine, work_id: str) -> dict[str, Any]:
    engine.index_work(work_id)
    return {"work_id": work_id}


def match_work_against_pages(engine: Engine, work_id: str) -> dict[str, Any]:
    authorised = engine.store.authorised_sites()
    records = engine.match_work_against_pages(work_id, authorised_sites=authorised)
    return {"work_id": work_id, "matches": len(records)}


def match_new_works(
    ops: Operations,
    enqueue_work: Callable[[str], None],
    enqueue_page: Callable[[str], None],
) -> dict[str, Any]:
    """The Daguan daily task: match works registered since the last run against all pages.

    Also enqueues every page whose current text was never processed (its task was lost to a
    broker outage, or failed for good before a fix). The window overlaps the last run by
    five minutes, so a work registered while the last run read the list is not missed.
    """
    started = now()
    since = ops.get_state(NEW_WORKS_STATE)
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    works = ops.works_registered_since(since - NEW_WORKS_OVERLAP if since else None)
    for work_id in works:
        enqueue_work(work_id)
    pages = 0
    for page_id in ops.store.pending_pages():
        enqueue_page(page_id)
        pages += 1
    ops.set_state(NEW_WORKS_STATE, started)
    return {"works": len(works), "pending_pages": pages, "since": since}


def crawl_site(
    settings: Settings,
    ops: Operations,
    redis_client: Any,
    site_name: str,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Crawl one site in a subprocess (Scrapy's reactor cannot restart in a worker).

    The subprocess (``python -m crawler.run``) stores pages and enqueues their tasks itself;
    this records the run in ``crawls`` (start, end, outcome, Scrapy's stats). A lock in Redis
    (expiring after ``settings.crawl_timeout``) keeps a site to one crawl at a time, so a
    redelivered or doubly scheduled crawl does not run twice at once.
    """
    site = ops.get_site(site_name)
    if site is None:
        raise CrawlFailed(f"no site named {site_name!r}")
    run_id = uuid.uuid4().hex
    lock = Keys(settings.redis_prefix).crawl_lock(site.name)
    with redis_errors("taking the crawl lock"):
        if not redis_client.set(lock, run_id, nx=True, ex=settings.crawl_timeout):
            return {"site": site.name, "skipped": "a crawl of this site is running"}
    ops.record_crawl(run_id, site.name, started_at=now(), outcome="running")
    try:
        stats = _run_crawler(site.to_dict(), settings.crawl_timeout, environ)
    except CrawlFailed as exc:
        ops.record_crawl(
            run_id, site.name, finished_at=now(), outcome="failed", error=str(exc), stats=exc.stats
        )
        raise
    finally:
        with redis_errors("releasing the crawl lock"):
            if redis_client.get(lock) == run_id.encode():
                redis_client.delete(lock)
    ops.record_crawl(run_id, site.name, finished_at=now(), outcome="finished", stats=stats)
    return {"site": site.name, "run_id": run_id, "pages": stats.get("fptrack/pages", 0)}


def _run_crawler(
    site: dict[str, Any], timeout: int, environ: Mapping[str, str] | None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fptrack-crawl-") as tmp:
        stats_path = Path(tmp) / "stats.json"
        command = [
            sys.executable,
            "-m",
            "crawler.run",
            "--site-json",
            json.dumps(site, ensure_ascii=False),
            "--stats-json",
            str(stats_path),
        ]
        try:
            done = subprocess.run(
                command,
                env=dict(os.environ if environ is None else environ),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise CrawlFailed(f"crawl of {site['name']} ran over {timeout} s") from exc
        try:
            stats = json.loads(stats_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            stats, missing = {}, exc
        else:
            missing = None
        if done.returncode != 0:
            tail = (done.stderr or "").strip().splitlines()[-1:] or ["no output"]
            message = f"crawl of {site['name']} exited {done.returncode}: {tail[0]}"
            raise CrawlFailed(message, stats)
        if missing is not None:
            raise CrawlFailed(f"crawl of {site['name']} wrote no stats: {missing}")
        return stats


def daily_report(ops: Operations, day: date | None = None) -> dict[str, Any]:
    """Totals of one UTC day (default: yesterday): new matches by site, work and status,
    pages fetched, crawl runs and their errors, tasks that failed. Stored in ``reports``."""
    day = day or (now() - timedelta(days=1)).date()
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    end = start + timedelta(days=1)
    by_site: Counter[str] = Counter()
    by_work: Counter[str] = Counter()
    by_status: Counter[str] = Counter({s: 0 for s in STATUSES})
    for m in ops.iter_matches(since=start, until=end, active_only=False):
        by_site[m.get("site", "")] += 1
        by_work[m.get("work_title", "") or str(m["work_id"])] += 1
        by_status[m.get("status", "new")] += 1
    db = ops.db
    pages = db.pages.count_documents({"fetched_at": {"$gte": start, "$lt": end}})
    crawls = list(db.crawls.find({"started_at": {"$gte": start, "$lt": end}}))
    report = {
        "day": day.isoformat(),
        "matches": sum(by_site.values()),
        "matches_by_site": dict(by_site.most_common()),
        "matches_by_work": dict(by_work.most_common()),
        "matches_by_status": dict(by_status),
        "pages_fetched": pages,
        "crawls": len(crawls),
        "crawls_failed": sum(c.get("outcome") == "failed" for c in crawls),
        "failures": db.failures.count_documents({"failed_at": {"$gte": start, "$lt": end}}),
        "generated_at": now(),
    }
    ops.save_report(report["day"], report)
    return report
