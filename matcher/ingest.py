"""Crawled pages into the store, and a task for each new or changed one.

The crawler's item pipeline calls :meth:`Ingest.page` for every page it extracts. The page
is upserted by URL; its content hash says whether the text changed since it was last
stored. A new or changed page is handed to ``enqueue`` (with its id, never the document),
and then marked as enqueued with that hash (``enqueued_hash``). An unchanged page is
enqueued again only when its text was neither matched (``processed_hash``) nor enqueued:
its crawler died between storing it and enqueueing it, so a crawl run again mends it, and a
page fetched twice (a crawl killed and resumed) still gets one task. A page whose enqueue
failed stays marked unprocessed (``pending``) and is enqueued again by
:meth:`Ingest.requeue_pending`, which the daily job runs: a broker outage loses no page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from matcher.pages import CrawledPage
from matcher.prepared import content_hash
from matcher.store import Store

NEW, CHANGED, UNCHANGED = "new", "changed", "unchanged"


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

    def page(self, page: CrawledPage) -> Ingested:
        """Upsert one crawled page; enqueue it when its text is new or changed."""
        digest = content_hash(page.text)
        doc, state = self.store.store_crawled_page(page, digest)
        page_id = str(doc["_id"])
        if state == UNCHANGED and digest in (doc.get("processed_hash"), doc.get("enqueued_hash")):
            return Ingested(page_id, state, False)
        self.enqueue(page_id)
        self.store.mark_enqueued(doc["_id"], digest)
        return Ingested(page_id, state, True)

    def requeue_pending(self, limit: int = 100_000) -> int:
        """Enqueue every stored page whose current text was never processed."""
        count = 0
        for page_id in self.store.pending_pages(limit):
            self.enqueue(page_id)
            count += 1
        return count
