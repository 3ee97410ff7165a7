"""What was done with the pages (``pages``): the processed mark left when a page's text is
matched (gathered and sent in bulk by a worker), the task enqueued, the archived exchange,
the crawl's gone, back and unchanged marks; and the pages still pending (never matched)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, UpdateOne
from pymongo.database import Database

from matcher.store.common import (
    StoreError,
    checked_date,
    checked_str,
    mongo_errors,
    now,
    page_key,
    period,
    site_name,
)
from matcher.store.failures import Failures
from matcher.store.fingerprints import PAGE_FIELD, stored_methods
from matcher.store.pages import _LINKS, Pages


class PageMarks:
    """The marks on the ``pages`` collection's pages, and its pending pages."""

    def __init__(self, db: Database, pages: Pages, failures: Failures) -> None:
        self.db = db
        self.pages = pages
        self.failures = failures
        self._gathering = threading.local()
        """This thread's processed marks gathered and not yet written, as ``marks``, a list
        of ``(query, fields)`` (:meth:`gather_marks`)."""

    @mongo_errors
    def mark_processed(
        self,
        page_id: str | ObjectId,
        content_hash: str,
        considered: list[dict[str, Any]] | None = None,
        split: list[str] | None = None,
        links: dict[str, Any] | None = None,
        fingerprints: dict[str, dict[str, Any]] | None = None,
    ) -> bool:
        """Record that the page's text with ``content_hash`` was matched (no-op if it changed).

        ``considered``: the works verified for the page and not recorded, with the reason;
        ``split``: the URLs of the split chapter the page was matched with, in order;
        ``links``: the page's ``next_url`` and ``prev_url`` as matched (a stored value that
        differs, or is missing where one is given, makes it a no-op too); False on a no-op.
        ``fingerprints``: those of this text (``{method: {"version", "params", "value"}}``),
        stored in the same write as the page's (:data:`~matcher.store.fingerprints.PAGE_FIELD`),
        replacing those of the text matched before.
        """
        fields: dict[str, Any] = {"processed_hash": content_hash, "pending": False}
        fields.update(processed_at=now(), considered=considered or [], split=split or [])
        if fingerprints is not None:
            fields[PAGE_FIELD] = stored_methods(fingerprints)
        query: dict[str, Any] = {
            "_id": page_key(page_id),
            "content_hash": checked_str(content_hash, "hash"),
        }
        for name in _LINKS:
            if links is not None:
                value = links.get(name)
                query[name] = {"$exists": False} if value is None else checked_str(value, name)
        marks = getattr(self._gathering, "marks", None)
        if marks is not None:
            marks.append((query, fields))
            return True
        result = self.db.pages.update_one(query, {"$set": fields})
        return result.matched_count == 1

    def gather_marks(self) -> None:
        """From now on, keep this thread's processed marks (:meth:`mark_processed`) until
        :meth:`send_marks`, each answered as written; :meth:`send_marks` says which did not
        hold."""
        if getattr(self._gathering, "marks", None) is None:
            self._gathering.marks = []

    @mongo_errors
    def send_marks(self) -> list[int]:
        """Write the marks gathered, in one bulk write, and stop gathering; the ``_id`` of
        each page whose mark did not hold (its text or links changed since they were read),
        read again when fewer marks matched than were sent."""
        marks, self._gathering.marks = getattr(self._gathering, "marks", None) or [], None
        if not marks:
            return []
        ops = [UpdateOne(query, {"$set": fields}) for query, fields in marks]
        if self.db.pages.bulk_write(ops, ordered=False).matched_count == len(ops):
            return []
        fields = {"content_hash": 1, **_LINKS}
        keys = [query["_id"] for query, _ in marks]
        now_stored = {d["_id"]: d for d in self.db.pages.find({"_id": {"$in": keys}}, fields)}
        return [q["_id"] for q, _ in marks if not _holds(q, now_stored.get(q["_id"]))]

    @mongo_errors
    def set_page_archive(
        self, page_id: str | ObjectId, content_hash: str, ref: dict[str, Any]
    ) -> None:
        """Record where the exchange of the page's text with ``content_hash`` is archived
        (no-op if the text changed meanwhile)."""
        self.db.pages.update_one(
            {"_id": page_key(page_id), "content_hash": checked_str(content_hash, "hash")},
            {"$set": {"archive": dict(ref)}},
        )

    @mongo_errors
    def mark_page_back(self, url: str) -> bool:
        """Clear the ``gone`` mark of the page stored at ``url`` (it answers again); False
        when no page is stored there."""
        doc, _ = self.pages.page_slot(checked_str(url, "url"), {"_id": 1})
        if doc is None:
            return False
        self.db.pages.update_one({"_id": doc["_id"]}, {"$unset": {"gone": ""}})
        return True

    @mongo_errors
    def mark_page_gone(self, url: str, status: int, at: datetime) -> bool:
        """Record that the stored page at ``url`` answered ``status`` (404, 410) at ``at``,
        unless already recorded; False when no page is stored there. Storing the page again
        (:meth:`~matcher.store.pages.Pages.store_crawled_page`) clears it."""
        doc, _ = self.pages.page_slot(checked_str(url, "url"), {"_id": 1})
        if doc is None:
            return False
        self.db.pages.update_one(
            {"_id": doc["_id"], "gone": {"$exists": False}},
            {"$set": {"gone": {"status": int(status), "at": at}}},
        )
        return True

    @mongo_errors
    def mark_page_unchanged(self, url: str, at: datetime) -> bool:
        """Record that the stored page at ``url`` answered 304 at ``at``: its text is still
        the stored one (``fetched_at`` and ``last_seen`` move on, so a sitemap date older
        than ``at`` does not ask for it again); False when nothing is stored there."""
        doc, _ = self.pages.page_slot(checked_str(url, "url"), {"_id": 1})
        if doc is None:
            return False
        if not isinstance(at, datetime):
            raise StoreError("a page's fetch time must be a datetime")
        self.db.pages.update_one({"_id": doc["_id"]}, {"$set": {"fetched_at": at, "last_seen": at}})
        return True

    @mongo_errors
    def mark_enqueued(self, page_id: str | ObjectId, content_hash: str, at: datetime) -> None:
        """Record that a task to match the page's text with ``content_hash`` was enqueued at
        ``at`` (no-op if the text changed meanwhile)."""
        self.db.pages.update_one(
            {"_id": page_key(page_id), "content_hash": checked_str(content_hash, "hash")},
            {"$set": {"enqueued_hash": content_hash, "enqueued_at": at}},
        )

    @mongo_errors
    def pending_pages(self, limit: int = 100_000) -> Iterator[str]:
        """Ids of pages whose current text was never processed, oldest first."""
        cursor = self.db.pages.find({"pending": True}, {"_id": 1}).sort("seq", ASCENDING)
        for doc in cursor.limit(int(limit)):
            yield str(doc["_id"])

    @mongo_errors
    def still_pending(self, page_ids: Sequence[str]) -> list[str]:
        """Those of ``page_ids`` (as given) whose current text is not matched yet."""
        keys = {page_key(p): p for p in page_ids}
        found = self.db.pages.find({"_id": {"$in": list(keys)}, "pending": True}, {"_id": 1})
        return [keys[doc["_id"]] for doc in found]

    @mongo_errors
    def count_seen_since(self, site: str, since: datetime, *, pending_only: bool = False) -> int:
        """Pages of ``site`` stored or fetched again since ``since`` (of those, the ones not
        matched yet when ``pending_only``)."""
        query: dict[str, Any] = {"site": site_name(site), "last_seen": {"$gte": since}}
        if pending_only:
            query["pending"] = True
        return self.db.pages.count_documents(query)

    @mongo_errors
    def pending_since(self, before: datetime) -> int:
        """Pages pending (their current text not matched) since before ``before``."""
        return self.db.pages.count_documents(
            {"pending": True, "fetched_at": {"$lt": checked_date(before)}}
        )

    @mongo_errors
    def pending_page_count(self) -> int:
        """Pages whose current text was never matched (index ``pending_seq``)."""
        return self.db.pages.count_documents({"pending": True})

    @mongo_errors
    def pages_fetched(self, *, since: datetime, until: datetime) -> int:
        """Pages whose last fetch is in ``[since, until)``."""
        return self.db.pages.count_documents(period("fetched_at", since, until))

    @mongo_errors
    def stale_pending_pages(
        self, sent_before: datetime, limit: int, *, task: str = "fptrack.process_page"
    ) -> list[dict]:
        """Up to ``limit`` pending pages (their current text never matched) whose last
        ``task`` was sent before ``sent_before``, or never sent and fetched before it, oldest
        first: ``_id`` and ``content_hash``. A page whose ``task`` failed for good since it
        was last sent (a ``failures`` record newer than its ``enqueued_at``) is left out.
        At most ``10 * limit`` pending pages are looked at."""
        sent_before = checked_date(sent_before)
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
                out += self.failures.not_failed(batch, task)
                batch = []
            if len(out) >= limit:
                break
        out += self.failures.not_failed(batch, task)
        return out[: int(limit)]


def _holds(query: dict[str, Any], doc: dict | None) -> bool:
    """Whether the stored page ``doc`` is as a processed mark's ``query`` (of
    :meth:`PageMarks.mark_processed`: equalities and ``{"$exists": False}``) wants it."""
    if doc is None:
        return False
    for name, want in query.items():
        if want == {"$exists": False}:
            if name in doc:
                return False
        elif doc.get(name) != want:
            return False
    return True
