"""Crawled pages into the store, and a task for each new or changed one.

The crawler's item pipeline calls :meth:`Ingest.page` for every page it extracts. The page
is upserted by URL; its content hash says whether the text changed since it was last
stored. A new or changed page is handed to ``enqueue`` (with its id, never the document),
and then marked as enqueued with that hash and the time (``enqueued_hash``,
``enqueued_at``). An unchanged page whose text was never matched (``processed_hash``) is
enqueued again unless its task was sent less than :data:`REENQUEUE_AFTER` ago: a page
fetched twice within minutes (a crawl killed and resumed) gets one task, while a crawler
that died between storing a page and enqueueing it, or a task lost with a broker that keeps
nothing on disk, is made good by the next crawl. A page whose enqueue failed stays marked
unprocessed (``pending``) and is enqueued again by :meth:`Ingest.requeue_pending`, which the
daily job runs: a broker outage loses no page.

With an ``archive`` (:mod:`matcher.archive`), the HTTP exchange of every new or changed text
(and of a stored page that has none yet) is kept there as a WARC file, and the page records
which (``archive``: ``sha256``, ``fetched_at``, ``bytes``) before its task is sent, so a
match always finds the exchange its text came from. An archive that fails is logged and
the page stored without it: evidence never costs a page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pymongo.errors import PyMongoError

from matcher.archive import Archive, ArchiveError, Exchange, warc_bytes
from matcher.pages import CrawledPage, GonePage, UnchangedPage
from matcher.prepared import content_hash
from matcher.store import Store, now

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

    def page(self, page: CrawledPage) -> Ingested:
        """Upsert one crawled page; enqueue it when its text is new, changed, or neither
        matched nor recently enqueued."""
        digest = content_hash(page.text)
        doc, state = self.store.store_crawled_page(page, digest)
        page_id = str(doc["_id"])
        wanted = state != UNCHANGED or not doc.get("archive")
        if self.archive is not None and page.exchange is not None and wanted:
            self._keep(doc, digest, page.exchange)
        if state == UNCHANGED and (
            doc.get("processed_hash") == digest or self._recently_enqueued(doc, digest)
        ):
            return Ingested(page_id, state, False)
        self.enqueue(page_id)
        self.store.mark_enqueued(doc["_id"], digest, self.clock())
        return Ingested(page_id, state, True)

    def _keep(self, doc: dict, digest: str, exchange: Exchange) -> None:
        assert self.archive is not None
        try:
            data = warc_bytes(exchange)
            sha256 = self.archive.put(data)
        except (ArchiveError, OSError, PyMongoError) as exc:
            logger.warning("evidence of %s not archived: %s", doc.get("url"), exc)
            return
        ref = {"sha256": sha256, "fetched_at": exchange.fetched_at, "bytes": len(data)}
        self.store.set_page_archive(doc["_id"], digest, ref)

    def _recently_enqueued(self, doc: dict, digest: str) -> bool:
        sent = doc.get("enqueued_at")
        if doc.get("enqueued_hash") != digest or not isinstance(sent, datetime):
            return False
        sent = sent if sent.tzinfo else sent.replace(tzinfo=UTC)
        return self.clock() - sent < REENQUEUE_AFTER

    def unchanged(self, page: UnchangedPage) -> bool:
        """Record that a stored page answered 304 Not Modified (nothing to match again)."""
        return self.store.mark_page_unchanged(page.url, page.fetched_at)

    def known_pages(self, urls: Iterable[str]) -> dict[str, dict]:
        """The stored pages among ``urls`` with their fetch time and HTTP validators, for an
        incremental crawl (:class:`crawler.incremental.PageLedger`)."""
        return self.store.page_validators(urls)

    def gone(self, page: GonePage) -> bool:
        """Record that a stored page answered 404 or 410 (the match view says "removed
        since"); False when nothing was stored at its URL."""
        return self.store.mark_page_gone(page.url, page.status, page.fetched_at)

    def requeue_pending(self, limit: int = 100_000) -> int:
        """Enqueue every stored page whose current text was never processed."""
        count = 0
        for page_id in self.store.pending_pages(limit):
            self.enqueue(page_id)
            count += 1
        return count
