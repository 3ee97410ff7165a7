"""Crawled pages (``pages``): stored under an id derived from their URL
(:mod:`matcher.store.ids`), marked ``pending`` until their current text is matched, and the marks
a crawl leaves on them (gone, unchanged, enqueued, archived: :mod:`matcher.store.page_marks`),
and the pages around one (:mod:`matcher.store.page_links`).

One page is one record: the other URLs the page was reached under are its ``aliases`` (at
most :data:`MAX_ALIASES`, index ``aliases``), and a page looked up or stored under one of
them is that record (:meth:`Pages.page_slot`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId
from pymongo import InsertOne, UpdateOne
from pymongo.database import Database
from pymongo.errors import BulkWriteError, DuplicateKeyError

from matcher.pages import CrawledPage, part_url
from matcher.store import ids, tallies
from matcher.store.common import (
    StoreError,
    checked_date,
    checked_str,
    mongo_errors,
    now,
    page_key,
    to_millis,
)
from matcher.store.failures import Failures
from matcher.store.fingerprints import PAGE_FIELD
from matcher.store.sequences import Sequences

_LINKS = {"next_url": 1, "prev_url": 1}
SEQ_BLOCK = 32
"""A process takes page seqs this many at a time, from one counter stripe
(:attr:`Pages.seq_stripe`)."""
LINKERS = 8
"""At most this many pages linking to one page as their next page are read."""
Around = tuple[dict[str, dict], list[dict]]
"""What :meth:`~matcher.store.page_links.PageLinks.pages_around` answers: ``({url: page}
of the pages at a page's previous and next URLs, [pages whose next page it is])``."""
AROUND = "around"
"""A page's field naming the pages it links with: its own ``_id`` and the first id
candidates (:func:`matcher.store.ids.page_id`) of its next and previous pages' URLs, so that one
read by this field finds a page together with the pages linking to it
(:meth:`~matcher.store.page_links.PageLinks.page_and_around`)."""
AROUND_READ = 2 * LINKERS + 4
"""At most this many documents are read by :data:`AROUND`; more, and the page and the pages
around it are read as :meth:`~matcher.store.page_links.PageLinks.pages_around` does."""
NAMES = "names"
"""A page's field naming the first id candidates (:func:`matcher.store.ids.page_id`) of its URL
and of its aliases, so that one read by this field finds the stored pages of a batch's URLs
whether they are a page's URL or one of its aliases (:meth:`Pages.page_slots`)."""
LAYOUT_RECHECK_SECONDS = 600.0
"""A process that found pages without :data:`AROUND` or :data:`NAMES` (a store of the
earlier layout, before ``fptrack migrate``) looks again after this long."""
MAX_ALIASES = 20
"""At most this many other URLs are kept beside a page (a site's cache-busters are endless)."""
VALIDATOR_CHARS = 200
"""At most this much of a page's ``ETag`` and ``Last-Modified`` is kept (hostile headers)."""


@dataclass(frozen=True)
class Sending:
    """A page's task about to be sent at ``at``, unless the same text's was sent less than
    ``again_after`` ago (:meth:`Pages.store_page_to_send`)."""

    at: datetime
    again_after: timedelta


@dataclass(frozen=True)
class _Planned:
    """A page's write: the URL it is stored under, its other URLs, its fields, when, and
    whether its text or links changed and its task is to be sent."""

    url: str
    aliases: list[str]
    fields: dict[str, Any]
    stamp: datetime
    changed: bool
    send: bool

    def aliases_to_add(self, doc: dict) -> list[str]:
        """The aliases ``doc`` (the stored page) lacks, up to :data:`MAX_ALIASES` in all."""
        known = list(doc.get("aliases") or ())
        return [a for a in self.aliases if a not in known][: max(0, MAX_ALIASES - len(known))]

    def state(self, created: bool) -> str:
        """``new``, ``changed`` or ``unchanged`` (:meth:`Pages.store_crawled_page`)."""
        return "new" if created else "changed" if self.changed else "unchanged"


def around_ids(slot: int, next_url: str, prev_url: str) -> list[int]:
    """The :data:`AROUND` value of the page stored at ``slot`` with these links.

    >>> around_ids(7, "", "")
    [7]
    >>> around_ids(7, "http://a.test/2", "") == [7, ids.page_id("http://a.test/2")]
    True
    """
    linked = [ids.page_id(u) for u in (next_url, prev_url) if u]
    return list(dict.fromkeys([int(slot), *linked]))


def names_of(url: str, aliases: Iterable[str] = ()) -> list[int]:
    """The :data:`NAMES` of a page stored under ``url`` with ``aliases``.

    >>> names_of("http://a.test/1") == [ids.page_id("http://a.test/1")]
    True
    """
    return list(dict.fromkeys(ids.page_id(u) for u in (url, *aliases)))


def _union(kept: list[int] | None, added: list[int]) -> list[int]:
    """``kept`` with ``added`` after it, as ``$addToSet`` leaves an array."""
    return list(dict.fromkeys([*(kept or ()), *added]))


def _sent_lately(before: dict | None, content_hash: str, sending: Sending) -> bool:
    """Whether ``before`` (the stored page) had this text's task sent within
    ``sending.again_after`` of ``sending.at``."""
    sent = None if before is None else before.get("enqueued_at")
    if before is None or before.get("enqueued_hash") != content_hash:
        return False
    if not isinstance(sent, datetime):
        return False
    sent = sent if sent.tzinfo else sent.replace(tzinfo=UTC)
    return sending.at - sent < sending.again_after


class LayoutCheck:
    """Whether every page carries a field of the current layout (:data:`AROUND`,
    :data:`NAMES`; a store of the earlier layout lacks them until ``fptrack migrate``): looked
    up once a process, or again every :data:`LAYOUT_RECHECK_SECONDS` while some do not."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._ready: set[str] = set()
        """The fields every page was seen to carry."""
        self._checked: dict[str, float] = {}

    def __call__(self, name: str) -> bool:
        """Whether every page carries the field ``name``."""
        if name in self._ready:
            return True
        clock = time.monotonic()
        if clock - self._checked.get(name, -LAYOUT_RECHECK_SECONDS) < LAYOUT_RECHECK_SECONDS:
            return False
        self._checked[name] = clock
        if self.db.pages.find_one({name: None}, {"_id": 1}) is None:
            self._ready.add(name)
            return True
        return False


class Pages:
    """The ``pages`` collection: pages stored, looked up and deleted (the pages around one:
    :class:`~matcher.store.page_links.PageLinks`; the marks a crawl and the matching leave
    on them: :class:`~matcher.store.page_marks.PageMarks`)."""

    def __init__(
        self,
        db: Database,
        sequences: Sequences,
        failures: Failures,
        sender: tallies.Sender | None = None,
    ) -> None:
        self.db = db
        self.sequences = sequences
        self.failures = failures
        self.tallies = sender or tallies.Sender(db)
        """Where the tallies of stored pages go (the store's :class:`tallies.Sender`)."""
        self.layout_ready = LayoutCheck(db)
        """Whether every page carries a field of the current layout (:class:`LayoutCheck`)."""
        self.seq_stripe: int | None = None
        """The counter stripe this process takes page seqs from: that of the first page it
        stores (so a crawl made again in the same order numbers its pages the same)."""

    @mongo_errors
    def get_page(self, page_id: str | int, projection: dict[str, int] | None = None) -> dict | None:
        return self.db.pages.find_one({"_id": page_key(page_id)}, projection)

    @mongo_errors
    def pages_by_id(self, page_ids: Iterable[str | int]) -> dict[int, dict]:
        """Stored pages by ``_id`` (those not stored are absent), in one read."""
        keys = [page_key(p) for p in page_ids]
        return {d["_id"]: d for d in self.db.pages.find({"_id": {"$in": keys}})}

    @mongo_errors
    def page_by_url(self, url: str, projection: dict[str, int] | None = None) -> dict | None:
        return self.page_slot(checked_str(url, "url"), projection)[0]

    def page_slot(
        self, url: str, projection: dict[str, int] | None = None, *, by_id: bool = False
    ) -> tuple[dict | None, int]:
        """``(the stored page of url or None, its _id or the free slot for it)``
        (:meth:`page_slots` of one URL); a :class:`StoreError` when every slot of the URL
        holds another."""
        doc, slot = self.page_slots([url], projection, by_id=by_id)[url]
        if slot is None:
            raise StoreError(f"every id slot of {url!r} holds another URL")
        return doc, slot

    def page_slots(
        self,
        urls: Sequence[str],
        projection: dict[str, int] | None = None,
        *,
        by_id: bool = False,
    ) -> dict[str, tuple[dict | None, int | None]]:
        """Per URL, ``(its stored page or None, that page's _id or a free slot for it)`` (the
        page without its fingerprints when no ``projection`` is given): one
        read of the URLs' candidate ids (:mod:`matcher.store.ids`), then, for the URLs none of them
        holds, one of the pages having those URLs among their ``aliases`` (then that page
        and its own ``_id``); the slot None when every one holds another URL. Two reads, not
        one ``$or``: a server may answer that with a collection scan. Once every page carries
        :data:`NAMES` (and not ``by_id``), one read by that field answers both, and a URL
        stored nowhere is offered its first candidate (:meth:`_slots_by_names`)."""
        wanted = list(dict.fromkeys(urls))
        fields = {PAGE_FIELD: 0} if projection is None else {**projection, "url": 1, "aliases": 1}
        if not by_id and self.layout_ready(NAMES):
            return self._slots_by_names(wanted, fields)
        slots = {url: list(ids.candidates(ids.page_id(url))) for url in wanted}
        every = [slot for candidates in slots.values() for slot in candidates]
        found = {d["_id"]: d for d in self.db.pages.find({"_id": {"$in": every}}, fields)}
        out: dict[str, tuple[dict | None, int | None]] = {}
        for url in wanted:
            at = next((s for s in slots[url] if found.get(s, {}).get("url") == url), None)
            if at is not None:
                out[url] = (found[at], at)
        missing = [url for url in wanted if url not in out]
        if missing:
            for doc in self.db.pages.find({"aliases": {"$in": missing}}, fields):
                for url in set(doc.get("aliases") or ()) & set(missing):
                    out.setdefault(url, (doc, doc["_id"]))
        taken = set(found)
        for url in wanted:
            if url not in out:
                free = next((s for s in slots[url] if s not in taken), None)
                taken.add(free)
                out[url] = (None, free)
        return out

    def _slots_by_names(
        self, wanted: list[str], fields: dict[str, int]
    ) -> dict[str, tuple[dict | None, int | None]]:
        """:meth:`page_slots` in one read by :data:`NAMES`: each URL's page (its URL or an
        alias), else its first id candidate, which a write finds taken in the rare case
        another URL holds it (then it is stored on its own, its slot looked up by id)."""
        keys = [ids.page_id(url) for url in wanted]
        found = list(self.db.pages.find({NAMES: {"$in": keys}}, fields))
        out: dict[str, tuple[dict | None, int | None]] = {}
        for doc in found:
            if doc.get("url") in wanted:
                out[doc["url"]] = (doc, doc["_id"])
        for doc in found:
            for url in set(doc.get("aliases") or ()) & set(wanted):
                out.setdefault(url, (doc, doc["_id"]))
        for url in wanted:
            out.setdefault(url, (None, ids.page_id(url)))
        return out

    @mongo_errors
    def add_page_alias(self, url: str, alias: str) -> bool:
        """Keep ``alias`` as another URL of the page stored at ``url`` (by its URL or one of
        its aliases), up to :data:`MAX_ALIASES`; False when no page is stored there."""
        alias = checked_str(alias, "alias")
        doc, _ = self.page_slot(checked_str(url, "url"), {"_id": 1})
        if doc is None:
            return False
        if alias != doc["url"]:
            self.db.pages.update_one(
                {"_id": doc["_id"], f"aliases.{MAX_ALIASES - 1}": {"$exists": False}},
                {"$addToSet": {"aliases": alias, NAMES: ids.page_id(alias)}},
            )
        return True

    def pages_by_seq(
        self, seqs: Iterable[int], projection: dict[str, int] | None = None
    ) -> dict[int, dict]:
        return self.sequences.by_seq("pages", seqs, projection)

    @mongo_errors
    def store_crawled_page(self, page: CrawledPage, content_hash: str) -> tuple[dict, str]:
        """Store a fetched page under its unique URL; returns ``(document, state)``.

        ``state`` is ``"new"``, ``"changed"`` (its text or its next / previous page links
        differ from the stored ones) or ``"unchanged"``. A new or changed page is marked
        ``pending`` until :meth:`mark_processed` records that this very text was matched.
        A page whose URL is an alias of a stored page is that page; the page's ``aliases``
        are added to the stored ones (up to :data:`MAX_ALIASES`).
        """
        doc, state, _ = self._store(page, content_hash, None)
        return doc, state

    @mongo_errors
    def store_page_to_send(
        self, page: CrawledPage, content_hash: str, sending: Sending
    ) -> tuple[dict, str, bool]:
        """:meth:`store_crawled_page`, and whether the page's task is to be sent: its text
        is new or changed, or was never matched and its task not sent within
        ``sending.again_after``. When it is, the page is marked sent (``enqueued_hash``,
        ``enqueued_at``) in the same write; a task then lost with its sender is sent again
        by beat's sweep of pending pages (:meth:`stale_pending_pages`)."""
        return self._store(page, content_hash, sending)

    def _stripe(self, slot: int) -> int:
        if self.seq_stripe is None:
            self.seq_stripe = ids.stripe_of(slot)
        return self.seq_stripe

    def _planned(
        self, page: CrawledPage, content_hash: str, sending: Sending | None, before: dict | None
    ) -> _Planned:
        """What storing ``page`` writes, given ``before``, the page stored at its URL (or
        whose alias its URL is), read whole: the document returned is made from it."""
        url = checked_str(page.url, "url")
        aliases = [checked_str(a, "alias") for a in getattr(page, "aliases", ()) or ()]
        if before is not None and before["url"] != url:  # stored under another URL
            aliases.append(url)
            url = before["url"]
        aliases = [a for a in dict.fromkeys(aliases) if a != url]
        stamp = now()
        fields = {
            "site": checked_str(page.site, "site"),
            "title": checked_str(page.title, "title"),
            "text": checked_str(page.text, "text"),
            "content_hash": checked_str(content_hash, "content_hash"),
            "status": int(page.status),
            "encoding": checked_str(page.encoding, "encoding"),
            "fetched_at": to_millis(checked_date(page.fetched_at)) if page.fetched_at else stamp,
            "last_seen": stamp,
            "next_url": checked_str(page.next_url, "next url"),
            "prev_url": checked_str(page.prev_url, "previous url"),
            "etag": checked_str(page.etag, "etag")[:VALIDATOR_CHARS],
            "last_modified": checked_str(page.last_modified, "last modified")[:VALIDATOR_CHARS],
            "parts": int(getattr(page, "parts", 0) or 0),
        }
        changed = (
            before is None
            or before.get("content_hash") != content_hash
            or any(before.get(k, "") != fields[k] for k in _LINKS)
        )
        unmatched = changed or before.get("processed_hash") != content_hash
        if unmatched:
            fields["pending"] = True  # in the same write: no moment stored and not pending
        send = sending is not None and (
            changed or (unmatched and not _sent_lately(before, content_hash, sending))
        )
        if send:
            assert sending is not None
            fields.update(enqueued_hash=content_hash, enqueued_at=sending.at)
        return _Planned(url, aliases, fields, stamp, changed, send)

    def _store(
        self, page: CrawledPage, content_hash: str, sending: Sending | None, attempt: int = 0
    ) -> tuple[dict, str, bool]:
        before, slot = self.page_slot(checked_str(page.url, "url"), by_id=attempt > 0)
        plan = self._planned(page, content_hash, sending, before)
        plan.fields[AROUND] = around_ids(slot, plan.fields["next_url"], plan.fields["prev_url"])
        try:
            doc, created = self.sequences.upsert(
                "pages",
                "page",
                {"_id": slot, "url": plan.url},
                {**plan.fields, "_stamp": plan.stamp},
                {NAMES: names_of(plan.url)},
                stripe=self._stripe(slot),
                block=SEQ_BLOCK,
                existing=before,
            )
        except DuplicateKeyError:  # another URL took the slot first: look again
            if attempt >= ids.PROBES:
                raise StoreError(f"no id slot of {plan.url!r} could be taken") from None
            return self._store(page, content_hash, sending, attempt + 1)
        added = plan.aliases_to_add(doc)
        if added:
            names = {"$each": names_of(plan.url, added)}
            self.db.pages.update_one(
                {"_id": doc["_id"]},
                {"$addToSet": {"aliases": {"$each": added}, NAMES: names}},
            )
            doc["aliases"] = list(doc.get("aliases") or ()) + added
            doc[NAMES] = _union(doc.get(NAMES), names["$each"])
        if doc.get("gone"):  # it answers again
            self.db.pages.update_one({"_id": doc["_id"]}, {"$unset": {"gone": ""}})
            doc.pop("gone")
        changes = tallies.Changes()
        changes.page(doc.get("site", ""), doc["fetched_at"], created)
        self.tallies.add(changes)
        # (``before`` None and not created: a concurrent writer stored it first: "changed")
        return doc, plan.state(created), plan.send

    @mongo_errors
    def store_pages_to_send(
        self, pages: Sequence[tuple[CrawledPage, str]], sending: Sending
    ) -> list[tuple[dict, str, bool]]:
        """:meth:`store_page_to_send` of each ``(page, content_hash)``, in a few commands
        whatever their number: one read of their URLs' id slots, one of the pages having one
        of those URLs as an alias (when some URL is at none of its slots), the seqs of the
        new pages (:data:`SEQ_BLOCK` at a time), one unordered bulk write of the new pages'
        inserts and the stored ones' updates (with their new aliases and their ``gone`` mark
        cleared; an insert costs a server less than an upsert, which first looks its filter
        up) and one of the tallies.
        A page whose write meets another writer (its slot taken meanwhile, its document
        removed), or a second page of the same record in the batch, is then stored on its
        own (:meth:`store_page_to_send`). Answers in the order of ``pages``."""
        urls = [checked_str(page.url, "url") for page, _ in pages]
        located = self.page_slots(urls)
        plans: list[tuple[int, _Planned, dict | None, int, dict[str, Any]]] = []
        alone: list[int] = []
        records: set[int] = set()
        for n, ((page, content_hash), url) in enumerate(zip(pages, urls, strict=True)):
            before, slot = located[url]
            if slot is None or slot in records:
                alone.append(n)
                continue
            records.add(slot)
            plan = self._planned(page, content_hash, sending, before)
            plan.fields[AROUND] = around_ids(slot, plan.fields["next_url"], plan.fields["prev_url"])
            plans.append((n, plan, before, slot, {}))
        ops: list[InsertOne | UpdateOne] = []
        for _, plan, before, slot, insert in plans:
            added = plan.aliases_to_add(before or {})
            if before is None:
                seq = self.sequences.next_seq("page", self._stripe(slot), SEQ_BLOCK)
                insert.update(seq=seq, first_seen=plan.stamp)
                doc = {"_id": slot, "url": plan.url, **insert, **plan.fields}
                doc[NAMES] = names_of(plan.url, added)
                if added:
                    doc["aliases"] = added
                ops.append(InsertOne(doc))
                continue
            update: dict[str, Any] = {"$set": plan.fields}
            update["$addToSet"] = {NAMES: {"$each": names_of(plan.url, added)}}
            if added:
                update["$addToSet"]["aliases"] = {"$each": added}
            if before.get("gone"):
                update["$unset"] = {"gone": ""}
            ops.append(UpdateOne({"_id": slot, "url": plan.url}, update))
        matched, failed = self._bulk(ops)
        alone += [plans[i][0] for i in failed]
        updates = sum(1 for i, plan in enumerate(plans) if plan[2] is not None and i not in failed)
        lost = matched < updates  # an update matched nothing: its page was removed meanwhile
        answers: dict[int, tuple[dict, str, bool]] = {}
        changes = tallies.Changes()
        for index, (n, plan, before, slot, insert) in enumerate(plans):
            if index in failed:
                continue
            if before is not None and lost:
                alone.append(n)
                continue
            doc = {**(before or {"_id": slot, "url": plan.url, **insert}), **plan.fields}
            added = plan.aliases_to_add(before or {})
            doc[NAMES] = _union(doc.get(NAMES), names_of(plan.url, added))
            if added:
                doc["aliases"] = list(doc.get("aliases") or ()) + added
            doc.pop("gone", None)
            changes.page(doc.get("site", ""), doc["fetched_at"], before is None)
            answers[n] = (doc, plan.state(before is None), plan.send)
        self.tallies.add(changes)
        for n in sorted(set(alone)):
            page, content_hash = pages[n]
            answers[n] = self._store(page, content_hash, sending)
        return [answers[n] for n in range(len(pages))]

    def _bulk(self, ops: list[InsertOne | UpdateOne]) -> tuple[int, set[int]]:
        """Send ``ops`` in one unordered bulk write: ``(how many updates matched a document,
        the indexes of the ops that failed on a duplicate key)`` (an insert whose slot was
        taken meanwhile)."""
        if not ops:
            return 0, set()
        try:
            result = self.db.pages.bulk_write(ops, ordered=False)
        except BulkWriteError as exc:
            details = exc.details
            if any(e.get("code") != 11000 for e in details.get("writeErrors", ())):
                raise
            return details["nMatched"], {e["index"] for e in details["writeErrors"]}
        return result.matched_count, set()

    @mongo_errors
    def download_text(self, doc: dict) -> str:
        """The text a page's match records point into: its own, or for the first part of a
        download in parts (``parts``), the parts' texts joined by a newline, in order
        (:mod:`matcher.matching.download_records`); ``doc`` needs its ``url``, ``text`` and
        ``parts``."""
        count = int(doc.get("parts") or 0)
        if count < 2:
            return str(doc.get("text", ""))
        urls = [part_url(doc["url"], n) for n in range(2, count + 1)]
        found = self.pages_by_url(urls, {"text": 1})
        return "\n".join([doc.get("text", ""), *(found[u]["text"] for u in urls if u in found)])

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
