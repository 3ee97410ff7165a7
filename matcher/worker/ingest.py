"""Crawled pages into the store, and a task for each new or changed one.

The crawler's item pipeline calls :meth:`Ingest.page` for every page it extracts. The page
is upserted by URL; its content hash says whether the text changed since it was last
stored. A new or changed page is marked as enqueued with that hash and the time
(``enqueued_hash``, ``enqueued_at``) in the same write that stores it, then handed to
``enqueue`` (with its id, never the document). An unchanged page whose text was never
matched (``processed_hash``) is enqueued again unless its task was sent less than
:data:`REENQUEUE_AFTER` ago: a page fetched twice within minutes (a crawl killed and
resumed) gets one task. A page stays ``pending`` until its text is matched, so a task that
never left (a crawler that died between storing a page and enqueueing it, a broker outage)
or was lost with a broker that keeps nothing on disk is sent again by beat's sweep once
``pending_after`` has passed (:func:`matcher.worker.jobs.requeue_pending`), and by
:meth:`Ingest.requeue_pending`, which the daily job runs: no page is lost.

A whole-book download stored in parts (:func:`matcher.pages.part_url`) gets one task, its
first part's: the crawl yields the next parts first, stored without a task of their own,
and the first part's is sent also when only a next part's text is new or changed; the
first part's task matches them all (:meth:`matcher.matching.engine.Engine.process_stored_page`).

With an ``archive`` (:mod:`matcher.evidence.archive`), the HTTP exchange of every new or changed
text
(and of a stored page that has none yet) is kept there as a WARC file, and the page records
which (``archive``: ``sha256``, ``fetched_at``, ``bytes``) before its task is sent, so a
match always finds the exchange its text came from. An archive that fails is logged and
the page stored without it: evidence never costs a page. With ``stamp`` (a TSA is set,
``FPTRACK_TSA_URL``), each file archived is queued for a trusted timestamp
(:mod:`matcher.evidence.stamping`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pymongo.errors import PyMongoError

from matcher.evidence.archive import Archive, ArchiveError, Exchange, warc_bytes
from matcher.matching.prepared import content_hash
from matcher.pages import (
    CrawledPage,
    GonePage,
    PageAlias,
    UnchangedPage,
    fetched_url,
    part_number,
)
from matcher.store import Store, now
from matcher.store.pages import Sending

logger = logging.getLogger(__name__)
NEW, CHANGED, UNCHANGED = "new", "changed", "unchanged"
REENQUEUE_AFTER = timedelta(hours=1)
"""An unprocessed page's task is sent again on a refetch once this long has passed."""


@dataclass(frozen=True)
class Ingested:
    page_id: str
    state: str  # NEW, CHANGED or UNCHANGED
    enqueued: bool


@dataclass
class Ingest:
    """Stores crawled pages and enqueues ``process_page`` for the new and changed ones."""

    store: Store
    enqueue: Callable[[str], None]
    clock: Callable[[], datetime] = now
    archive: Archive | None = None
    stamp: bool = False
    send_many: Callable[[list[str]], None] | None = None
    """Sends the tasks of a batch of pages (:meth:`pages`) at once, when given (the embedded
    scan matches them together); else each goes through ``enqueue``."""
    _last_kept: tuple[Exchange, dict] | None = field(default=None, init=False, repr=False)
    _parts_changed: set[str] = field(default_factory=set, init=False, repr=False)
    """Downloads (their URLs) whose next part was stored new or changed, until their first
    part comes."""
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def thread_safe(self) -> bool:
        """Whether pages may be ingested from several threads at once: the store is on a
        pymongo client (mongomock's is not safe across threads)."""
        return self.store.thread_safe

    def page(self, page: CrawledPage) -> Ingested:
        """Upsert one crawled page; enqueue it when its text is new, changed, or neither
        matched nor recently enqueued (marked enqueued in the same write)."""
        digest = content_hash(page.text)
        sending = Sending(self.clock(), REENQUEUE_AFTER)
        return self._after(
            page, digest, *self.store.pages.store_page_to_send(page, digest, sending)
        )

    def pages(self, pages: Sequence[CrawledPage]) -> list[Ingested]:
        """:meth:`page` of each page, their store writes made together
        (:meth:`matcher.store.pages.Pages.store_pages_to_send`)."""
        digests = [content_hash(page.text) for page in pages]
        sending = Sending(self.clock(), REENQUEUE_AFTER)
        stored = self.store.pages.store_pages_to_send(
            list(zip(pages, digests, strict=True)), sending
        )
        together = self.send_many is not None
        answers = [
            self._after(page, digest, *answer, send_now=not together)
            for page, digest, answer in zip(pages, digests, stored, strict=True)
        ]
        if self.send_many is not None:
            self.send_many([answer.page_id for answer in answers if answer.enqueued])
        return answers

    def flush(self) -> None:
        """Send the tasks the enqueue holds back, if it does (its ``flush``:
        :class:`crawler.pipelines.CelerySender` sends pages in batches)."""
        flush = getattr(self.enqueue, "flush", None)
        if callable(flush):
            flush()

    def _after(
        self,
        page: CrawledPage,
        digest: str,
        doc: dict,
        state: str,
        send: bool,
        send_now: bool = True,
    ) -> Ingested:
        """A stored page's evidence kept and its task sent (unless not ``send_now``: the caller
        sends it), as :meth:`page` says."""
        page_id = str(doc["_id"])
        wanted = state != UNCHANGED or not doc.get("archive")
        if self.archive is not None and page.exchange is not None and wanted:
            self._keep(doc, digest, page.exchange)
        send = self._download_send(page, state, send)
        if send and send_now:
            self.enqueue(page_id)
        return Ingested(page_id, state, send)

    def _download_send(self, page: CrawledPage, state: str, send: bool) -> bool:
        """Whether to send the task of a download's part: never that of a next part (the
        first part's task matches them all,
        :meth:`matcher.matching.engine.Engine.process_stored_page`;
        the crawl yields them before it), and the first part's also when a next part's text
        is new or changed though its own is not. Any other page: ``send``."""
        if part_number(page.url) > 1:
            if state != UNCHANGED:
                with self._lock:
                    self._parts_changed.add(fetched_url(page.url))
            return False
        if page.parts > 1:
            with self._lock:
                changed = page.url in self._parts_changed
                self._parts_changed.discard(page.url)
            return send or changed
        return send

    def _keep(self, doc: dict, digest: str, exchange: Exchange) -> None:
        """Archive ``exchange`` and point the page at it; the exchange archived last is not
        written again (the parts of a download share their response's)."""
        assert self.archive is not None
        last = self._last_kept
        if last is not None and last[0] == exchange:
            ref = last[1]
        else:
            try:
                data = warc_bytes(exchange)
                sha256 = self.archive.put(data)
            except (ArchiveError, OSError, PyMongoError) as exc:
                logger.warning("evidence of %s not archived: %s", doc.get("url"), exc)
                return
            ref = {"sha256": sha256, "fetched_at": exchange.fetched_at, "bytes": len(data)}
            self._last_kept = (exchange, ref)
            if self.stamp:
                self.store.stamps.queue_stamps([sha256])
        self.store.page_marks.set_page_archive(doc["_id"], digest, ref)

    def alias(self, alias: PageAlias) -> bool:
        """Keep another URL of a stored page beside it (one page, one record)."""
        return self.store.pages.add_page_alias(alias.url, alias.alias)

    def unchanged(self, page: UnchangedPage) -> bool:
        """Record that a stored page answered 304 Not Modified (nothing to match again)."""
        return self.store.page_marks.mark_page_unchanged(page.url, page.fetched_at)

    def known_pages(self, urls: Iterable[str]) -> dict[str, dict]:
        """The stored pages among ``urls`` with their fetch time and HTTP validators, for an
        incremental crawl (:class:`crawler.incremental.PageLedger`)."""
        return self.store.pages.page_validators(urls)

    def gone(self, page: GonePage) -> bool:
        """Record that a stored page answered 404 or 410 (the match view says "removed
        since"); False when nothing was stored at its URL."""
        return self.store.page_marks.mark_page_gone(page.url, page.status, page.fetched_at)

    def requeue_pending(self, limit: int = 100_000) -> int:
        """Enqueue every stored page whose current text was never processed."""
        count = 0
        for page_id in self.store.page_marks.pending_pages(limit):
            self.enqueue(page_id)
            count += 1
        self.flush()
        return count
