"""Crawled pages (``pages``): stored under an id derived from their URL
(:mod:`matcher.ids`), marked ``pending`` until their current text is matched, and the marks
a crawl leaves on them (gone, unchanged, enqueued, archived)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, ReturnDocument
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from matcher import ids
from matcher.pages import CrawledPage
from matcher.store import tallies
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
from matcher.store.sequences import Sequences

_LINKS = {"next_url": 1, "prev_url": 1}
VALIDATOR_CHARS = 200
"""At most this much of a page's ``ETag`` and ``Last-Modified`` is kept (hostile headers)."""


class Pages:
    """The ``pages`` collection."""

    def __init__(self, db: Database, sequences: Sequences, failures: Failures) -> None:
        self.db = db
        self.sequences = sequences
        self.failures = failures

    @mongo_errors
    def get_page(self, page_id: str | int, projection: dict[str, int] | None = None) -> dict | None:
        return self.db.pages.find_one({"_id": page_key(page_id)}, projection)

    @mongo_errors
    def page_by_url(self, url: str, projection: dict[str, int] | None = None) -> dict | None:
        return self.page_slot(checked_str(url, "url"), projection)[0]

    def page_slot(
        self, url: str, projection: dict[str, int] | None = None
    ) -> tuple[dict | None, int]:
        """``(the stored page of url or None, its _id or the free slot for it)``: one read
        of the URL's candidate ids (:mod:`matcher.ids`)."""
        slots = list(ids.candidates(ids.page_id(url)))
        wanted = None if projection is None else {**projection, "url": 1}
        found = {d["_id"]: d for d in self.db.pages.find({"_id": {"$in": slots}}, wanted)}
        for slot in slots:
            doc = found.get(slot)
            if doc is not None and doc.get("url") == url:
                return doc, slot
        for slot in slots:
            if slot not in found:
                return None, slot
        raise StoreError(f"every id slot of {url!r} holds another URL")

    def pages_by_seq(
        self, seqs: Iterable[int], projection: dict[str, int] | None = None
    ) -> dict[int, dict]:
        return self.sequences.by_seq("pages", seqs, projection)

    @mongo_errors
    def store_crawled_page(
        self, page: CrawledPage, content_hash: str, _attempt: int = 0
    ) -> tuple[dict, str]:
        """Store a fetched page under its unique URL; returns ``(document, state)``.

        ``state`` is ``"new"``, ``"changed"`` (its text or its next / previous page links
        differ from the stored ones) or ``"unchanged"``. A new or changed page is marked
        ``pending`` until :meth:`mark_processed` records that this very text was matched.
        """
        url = checked_str(page.url, "url")
        before, slot = self.page_slot(url, {"content_hash": 1, "seq": 1, **_LINKS})
        stamp = now()
        fields = {
            "site": checked_str(page.site, "site"),
            "title": checked_str(page.title, "title"),
            "text": checked_str(page.text, "text"),
            "content_hash": checked_str(content_hash, "content_hash"),
            "status": int(page.status),
            "encoding": checked_str(page.encoding, "encoding"),
            "fetched_at": page.fetched_at or stamp,
            "last_seen": stamp,
            "next_url": checked_str(page.next_url, "next url"),
            "prev_url": checked_str(page.prev_url, "previous url"),
            "etag": checked_str(page.etag, "etag")[:VALIDATOR_CHARS],
            "last_modified": checked_str(page.last_modified, "last modified")[:VALIDATOR_CHARS],
            "_stamp": stamp,
        }
        try:
            doc, created = self.sequences.upsert(
                "pages",
                "page",
                {"_id": slot, "url": url},
                fields,
                stripe=ids.stripe_of(slot),
                existing=before,
            )
        except DuplicateKeyError:  # another URL took the slot first: look again
            if _attempt >= ids.PROBES:
                raise StoreError(f"no id slot of {url!r} could be taken") from None
            return self.store_crawled_page(page, content_hash, _attempt=_attempt + 1)
        if doc.get("gone"):  # it answers again
            self.db.pages.update_one({"_id": doc["_id"]}, {"$unset": {"gone": ""}})
            doc.pop("gone")
        changes = tallies.Changes()
        changes.page(doc.get("site", ""), doc["fetched_at"], created)
        changes.apply(self.db)
        if created:
            state = "new"
        elif (
            before is None
            or before.get("content_hash") != content_hash
            or any(before.get(k, "") != fields[k] for k in _LINKS)
        ):  # a concurrent writer stored it first: match this text again
            state = "changed"
        else:
            state = "unchanged"
        if state != "unchanged" or doc.get("processed_hash") != content_hash:
            doc = self.db.pages.find_one_and_update(
                {"_id": doc["_id"]},
                {"$set": {"pending": True}},
                return_document=ReturnDocument.AFTER,
            )
        return doc, state

    @mongo_errors
    def pages_by_url(
        self, urls: Iterable[str], projection: dict[str, int] | None = None
    ) -> dict[str, dict]:
        """Stored pages by URL (those not stored are absent)."""
        wanted = {checked_str(u, "url") for u in urls}
        slots = [slot for u in wanted for slot in ids.candidates(ids.page_id(u))]
        fields = None if projection is None else {**projection, "url": 1}
        found = self.db.pages.find({"_id": {"$in": slots}}, fields)
        return {d["url"]: d for d in found if d.get("url") in wanted}

    def page_validators(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored pages among ``urls``: ``{url: {fetched_at, etag, last_modified}}``,
        for an incremental crawl's conditional requests (read in batches)."""
        wanted = list(dict.fromkeys(checked_str(u, "url") for u in urls))
        fields = {"fetched_at": 1, "etag": 1, "last_modified": 1}
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(wanted), 1000):
            out.update(self.pages_by_url(wanted[start : start + 1000], fields))
        return out

    @mongo_errors
    def pages_linking_to(self, url: str, projection: dict[str, int] | None = None) -> list[dict]:
        """Pages whose "next page" link leads to ``url``."""
        return list(self.db.pages.find({"next_url": checked_str(url, "url")}, projection).limit(8))

    @mongo_errors
    def mark_processed(
        self,
        page_id: str | ObjectId,
        content_hash: str,
        considered: list[dict[str, Any]] | None = None,
        split: list[str] | None = None,
    ) -> bool:
        """Record that the page's text with ``content_hash`` was matched (no-op if it changed).

        ``considered``: the works verified for the page and not recorded, with the reason;
        ``split``: the URLs of the split chapter the page was matched with, in order.
        """
        fields: dict[str, Any] = {"processed_hash": content_hash, "pending": False}
        fields.update(processed_at=now(), considered=considered or [], split=split or [])
        result = self.db.pages.update_one(
            {"_id": page_key(page_id), "content_hash": checked_str(content_hash, "hash")},
            {"$set": fields},
        )
        return result.matched_count == 1

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
    def mark_page_gone(self, url: str, status: int, at: datetime) -> bool:
        """Record that the stored page at ``url`` answered ``status`` (404, 410) at ``at``,
        unless already recorded; False when no page is stored there. Storing the page again
        (:meth:`store_crawled_page`) clears it."""
        doc, _ = self.page_slot(checked_str(url, "url"), {"_id": 1})
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
        doc, _ = self.page_slot(checked_str(url, "url"), {"_id": 1})
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

    @mongo_errors
    def set_split(self, page_id: ObjectId, urls: list[str]) -> None:
        """Record the URLs of the split chapter a page was last matched with."""
        urls = [checked_str(u, "part url") for u in urls]
        self.db.pages.update_one({"_id": page_id}, {"$set": {"split": urls}})

    @mongo_errors
    def archive_refs(self) -> set[str]:
        """The SHA-256 of every archived exchange a page refers to (its current text's exchange)."""
        found = self.db.pages.find({"archive.sha256": {"$exists": True}}, {"archive.sha256": 1})
        return {str(doc["archive"]["sha256"]) for doc in found}

    @mongo_errors
    def delete_all(self) -> int:
        """Delete every page; how many there were."""
        return self.db.pages.delete_many({}).deleted_count
