"""How the admin starts background work: Celery tasks, or threads in the embedded scan.

:class:`CeleryDispatch` (``fptrack admin serve``) sends tasks by name to the workers.
:class:`InlineDispatch` (``fptrack scan --serve``, tests) runs the same plain functions in
a thread of the server process, over its in-memory store; ``lock`` serialises them with the
requests, since mongomock is not thread-safe.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any, Protocol

from admin.context import Context
from matcher.pages import CrawledPage
from matcher.sites.site_config import SiteConfig
from matcher.store import now


class Dispatch(Protocol):
    def crawl(self, site: SiteConfig) -> str:
        """Start a crawl of ``site`` now; returns a line for the operator."""

    def work_added(self, work_id: str) -> None:
        """Match a newly registered work against the pages already crawled."""


class CeleryDispatch:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        # built now, not by two request threads at once: the app, its connection and producer
        # pools (no connection is opened yet); each send then takes a producer of the pool
        _ = ctx.app.producer_pool

    def crawl(self, site: SiteConfig) -> str:
        task = self.ctx.send("fptrack.crawl_site", site.name)
        return f"crawl of {site.name} enqueued (task {task})"

    def work_added(self, work_id: str) -> None:
        self.ctx.send("fptrack.match_work_against_pages", work_id)


class InlineDispatch:
    """Runs crawls and matching in threads of this process (one crawl at a time)."""

    def __init__(self, ctx: Context, lock: threading.RLock, crawl_overrides: dict | None = None):
        self.ctx, self.lock = ctx, lock
        self.overrides = dict(crawl_overrides or {})
        self.threads: list[threading.Thread] = []
        self._crawling = threading.Lock()

    def crawl(self, site: SiteConfig) -> str:
        if not self._crawling.acquire(blocking=False):
            return "a crawl is already running; try again when it has finished"
        thread = threading.Thread(target=self._crawl, args=(site,), daemon=True)
        self.threads.append(thread)
        thread.start()
        return f"crawl of {site.name} started"

    def _crawl(self, site: SiteConfig) -> None:
        from crawler.run import crawl_in_process, crawl_problem

        ctx, run_id = self.ctx, uuid.uuid4().hex
        try:
            with self.lock:
                ctx.store.crawls.record_crawl(
                    run_id, site.name, started_at=now(), outcome="running"
                )
                authorised = ctx.store.sites.authorised_sites()

            ingest = _LockedIngest(ctx, self.lock, authorised)
            try:
                stats = crawl_in_process([site], {**self.overrides, "FPTRACK_INGEST": ingest})
                stats = stats.get(site.name, {})
                error = crawl_problem(stats) or ""  # a start URL without a page, nothing fetched
                outcome = "failed" if error else "finished"
            except Exception as exc:  # recorded for the operator, like a failed crawl task
                stats, outcome, error = {}, "failed", str(exc)
            with self.lock:
                ctx.store.crawls.record_crawl(
                    run_id, site.name, finished_at=now(), outcome=outcome, stats=stats, error=error
                )
        finally:
            self._crawling.release()

    def work_added(self, work_id: str) -> None:
        with self.lock:
            self.ctx.engine.match_work_against_pages(
                work_id, self.ctx.store.sites.authorised_sites()
            )

    def busy(self) -> bool:
        return any(t.is_alive() for t in self.threads)

    def wait(self, timeout: float = 120.0) -> None:
        """Wait for the threads started so far (tests)."""
        for thread in list(self.threads):
            thread.join(timeout)


class _LockedIngest:
    """The crawler's ingest, storing then matching each page under the lock."""

    def __init__(self, ctx: Context, lock: threading.RLock, authorised: set[str]) -> None:
        self.ctx, self.lock, self.authorised = ctx, lock, authorised

    def page(self, page: CrawledPage) -> Any:
        from matcher.worker.ingest import Ingest

        queued: list[str] = []
        with self.lock:
            result = Ingest(self.ctx.engine.store, queued.append).page(page)
        for page_id in queued:
            with self.lock:
                self.ctx.engine.process_stored_page(page_id, self.authorised)
        return result
