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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from matcher.pages import CrawledPage
from matcher.prepared import content_hash
from matcher.store import Store, now

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

    def page(self, page: CrawledPage) -> Ingested:
        """Upsert one crawled page; enqueue it when its text is new, changed, or neither
        matched nor recently enqueued."""
        digest = content_hash(page.text)
        doc, state = self.store.store_crawled_page(page, digest)
        page_id = str(doc["_id"])
        if state == UNCHANGED and (
            doc.get("processed_hash") == digest or self._recently_enqueued(doc, digest)
        ):
            return Ingested(page_id, state, False)
        self.enqueue(page_id)
        self.store.mark_enqueued(doc["_id"], digest, self.clock())
        return Ingested(page_id, state, True)

    def _recently_enqueued(self, doc: dict, digest: str) -> bool:
        sent = doc.get("enqueued_at")
        if doc.get("enqueued_hash") != digest or not isinstance(sent, datetime):
            return False
        sent = sent if sent.tzinfo else sent.replace(tzinfo=UTC)
        return self.clock() - sent < REENQUEUE_AFTER

    def requeue_pending(self, limit: int = 100_000) -> int:
        """Enqueue every stored page whose current text was never processed."""
        count = 0
        for page_id in self.store.pending_pages(limit):
            self.enqueue(page_id)
            count += 1
        return count
