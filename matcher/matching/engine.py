"""The matching engine: candidates and verification, in both directions.

A crawled page is looked up in the index of registered works (:meth:`Engine.find_works`):
its simhash and postings keys give candidate work segments, ranked by postings hits and
verified in batches (their verification data from :mod:`matcher.matching.segment_cache`: references
in Redis, blobs cached in the process or read from the store), never truncated; the
aligned segments go to :func:`matcher.matching.verify.judge` with the corpus document frequency of
the page's anchors. A page that is one part of a chapter split over several pages
(:mod:`matcher.matching.split`) is matched alone and as part of the joined chapter
(:meth:`Engine.process_stored_page`). A newly registered work is looked up in the index of
crawled pages (:meth:`Engine.match_work_against_pages`): every page sharing passages with
one of its segments is matched again, so attribution among works stays right.

Works are registered by segments (:mod:`matcher.matching.registry`): a novel of millions of
characters costs the same per page as a short story.

Order of writes, so that an outage never leaves a half-written result: everything read
from Redis for matching is read first, verification runs in memory, and only then are the
page's fingerprints, index entries, match records and processed mark written, each an
idempotent upsert; the parts of a split chapter are written under their pages' locks.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from types import EllipsisType
from typing import Any

import numpy as np
import redis
from bson import ObjectId

from fingerprint.align import align
from fingerprint.base import FingerprintError, array_from_hex
from matcher.errors import IndexLost, IndexUnavailable, UnusableText, redis_errors
from matcher.index.index_view import IndexView
from matcher.index.integrity import Snapshot
from matcher.index.renewal import Renewal
from matcher.keys import SEGMENT_BITS, owner_work
from matcher.matching import download_records, editions, split
from matcher.matching.match_records import Evidence
from matcher.matching.parts import StoredPart, shares
from matcher.matching.prepared import (
    INDEX_KEYS,
    Prepared,
    as_text,
    content_hash,
    from_blob,
    locate,
    prepare,
)
from matcher.matching.recent import Recent
from matcher.matching.registry import Registration, Registry, is_twin
from matcher.matching.segment_cache import SegmentCache, SegmentData
from matcher.matching.verify import ALIGN_PARAMS, PageFingerprint, SegmentHit, Verdict, judge
from matcher.matching.work_names import WorkNames
from matcher.pages import CrawledPage, fetched_url, part_number, part_url
from matcher.store.common import StoreError, page_key
from matcher.store.fingerprints import fitted_page_fingerprints, page_fingerprint
from matcher.store.matches import NO_LONGER_MATCHES
from matcher.store.pages import Around

log = logging.getLogger(__name__)

CONSIDERED_KEPT = 10
PAGE_BATCH = 200
LOCK_WAIT_SECONDS = 60


@dataclass
class Engine(IndexView):
    """Matching over the indexes of one store and the index client (the fields of
    :class:`matcher.index.index_view.IndexView`; :meth:`IndexView.open
    <matcher.index.index_view.IndexView.open>` opens one).

    Every index key (the indexes, the segments' references, the markers, the page locks) is
    reached through ``storage``: :class:`~matcher.index.storage.RedisStorage` of ``redis``
    unless another :class:`~matcher.index.storage.Storage` is given (the in-memory twin of
    the unit tests, whose engine has no ``redis``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.work_names = WorkNames(self.store.works.works_by_seq)
        self.sketches = editions.Sketches(self.store.works.works_by_seq)
        self.evidence = Evidence(self.store, self.work_names.of)
        self.licensed = Recent(self.store.sites.authorised_sites)
        self.registry = Registry(self.settings, self.store, self.storage, self.works, self.keys)
        cache = SegmentCache(self.settings.segment_cache_mb << 20)
        self.segments = SegmentData(self.storage, self.store, self.keys, cache, self._problem)
        self._together = threading.local()
        """This thread's pages read for :meth:`pages_together` (``read``: by ``_id``, until
        their task reads them)."""

    # the index's integrity -------------------------------------------------------------

    def ready(self) -> Snapshot:
        """Before the index is read: every tag group whole, the lost ones rebuilt from the
        store first (:meth:`matcher.index.integrity.Integrity.ready`); the snapshot to compare
        with before writing what was found (:meth:`_still`)."""
        return self.integrity.ready()

    def _still(self, snap: Snapshot, what: str) -> None:
        """Raise :class:`IndexLost` when a tag group was lost (or rebuilt) since ``snap``."""
        if not self.integrity.unchanged(snap):
            raise IndexLost(f"the Redis indexes lost a part while {what}")

    # works -----------------------------------------------------------------------------

    def add_work(self, text: str | bytes, *, title: str, **fields: Any) -> str:
        """Register (or update) a work; returns its id (:meth:`register_work`)."""
        return self.register_work(text, title=title, **fields).work_id

    def register_work(self, text: str | bytes, *, title: str, **fields: Any) -> Registration:
        """Register (or update) a work; returns what was done (:meth:`Registry.register
        <matcher.matching.registry.Registry.register>`: ``source``, ``author``, ``owner``, ``tags``,
        ``key``)."""
        snap = self.ready()
        done = self.registry.register(text, title=title, **fields)
        self._settle(snap, "registered")
        return done

    def index_work(self, work_id: str) -> None:
        """Fingerprint and index a stored work again (the ``index_work`` task; idempotent)."""
        snap = self.ready()
        self.registry.reindex(work_id)
        self._settle(snap, "indexed")

    def remove_work(self, work_id: str) -> bool:
        """Remove a work, its segments and index entries; its matches are archived, their
        reviews kept (:meth:`Registry.remove <matcher.matching.registry.Registry.remove>`)."""
        snap = self.ready()
        removed = self.registry.remove(work_id)
        self._settle(snap, "removed")
        return removed

    def _settle(self, snap: Snapshot, done: str) -> None:
        """After a work's index entries were written or removed: the tag groups lost or
        rebuilt meanwhile are rebuilt (again) from the store, which holds the work as it is
        now (a rebuild in between may have read it half-written)."""
        changed = self.integrity.changed(snap)
        if changed:
            self.integrity.rebuild(changed, f"a tag group was lost while a work was {done}")

    # pages -> works --------------------------------------------------------------------

    @contextmanager
    def pages_together(self, page_ids: Sequence[str]) -> Iterator[list[str]]:
        """Match pages together in this thread (one task of :meth:`process_stored_page` each
        while the block runs): the pages and the pages around each are read in one read,
        each task's first read answered from it, and their processed marks are written in
        one bulk write as the block ends. The list given fills, as the block ends, with the
        pages whose mark did not hold (their text or links changed since they were read,
        by a crawl or another task): the caller matches each again, outside the block and
        with ``rematch`` (:meth:`process_stored_page`), so that no page's records are those
        of a text it no longer has. A page of a split chapter is
        read again by its task (another part's task wrote to it)."""
        by_key = {page_key(p): p for p in page_ids}
        self._together.read = self.store.page_links.pages_and_around(page_ids)
        self.store.page_marks.gather_marks()
        unmarked: list[str] = []
        try:
            yield unmarked
        finally:
            self._together.read = {}
            unmarked += [by_key.get(key, str(key)) for key in self.store.page_marks.send_marks()]

    def _read_ahead(self) -> dict[Any, tuple[dict, Around | None]]:
        """This thread's pages read ahead (:meth:`pages_together`), by ``_id``."""
        read = getattr(self._together, "read", None)
        if read is None:
            read = self._together.read = {}
        return read

    def _candidates(self, page: Prepared) -> tuple[list[tuple[int, int]], np.ndarray]:
        """Candidate segments as ``(owner, postings hits)``, most hits first, and the
        corpus document frequency (in works) of the page's sampled anchors."""
        policy = self.settings.policy
        with redis_errors("looking up candidates"):
            near = self.works.simhash.query(page.simhash, policy.simhash_k)
            found = self.works.windows.lookup(page.window_keys, group_shift=SEGMENT_BITS)
        hits = dict(zip(found.owners.tolist(), found.counts.tolist(), strict=True))
        chosen = {o: c for o, c in hits.items() if c >= policy.min_window_hits}
        for owner, _ in near:
            chosen.setdefault(owner, hits.get(owner, 0))
        ranked = sorted(chosen.items(), key=lambda oc: (-oc[1], oc[0]))
        return ranked, found.df_of(page.sampled.keys)

    def _segment_hits(self, page: Prepared, ranked: list[tuple[int, int]]) -> Iterator[SegmentHit]:
        """Every candidate segment aligned with the page, read in batches."""
        batch = self.settings.candidate_batch
        for i in range(0, len(ranked), batch):
            chunk = ranked[i : i + batch]
            loaded = self.segments.load([o for o, _ in chunk])
            for owner, count in chunk:
                if owner not in loaded:
                    continue
                header, anchors = loaded[owner]
                alignment = align(anchors, page.anchors, ALIGN_PARAMS)
                if alignment.passages:
                    yield SegmentHit(header, anchors, alignment, count)

    def find_works(self, page: Prepared, verify: Collection[int] = ()) -> list[Verdict]:
        """The verdict of every work that shares passages with ``page``, matches first.

        Reads the index, and the store for candidate segments not in the segment cache.
        The works of ``verify`` (seqs) are verified on every one of their segments, read
        from the store, whatever the index answers.
        """
        if not page.length:
            return []
        ranked, df = self._candidates(page)
        if verify:
            ranked = [(o, c) for o, c in ranked if owner_work(o) not in verify]
        hits: dict[int, list[SegmentHit]] = defaultdict(list)
        for hit in self._segment_hits(page, ranked):
            hits[hit.header.work].append(hit)
        for hit in self._stored_hits(page, verify):
            hits[hit.header.work].append(hit)
        return judge(hits, page, df, self.settings.policy, self._editions(hits))

    def _editions(self, hits: Mapping[int, Sequence[SegmentHit]]) -> dict[int, int]:
        """The works of ``hits`` that are editions of each other, each mapped to its group
        (:func:`matcher.matching.editions.groups`, from the works' sketches, read only when two or
        more works share passages with the page)."""
        share = self.settings.policy.edition_share
        if not share or len(hits) < 2:
            return {}
        lengths = {work: h[0].header.work_length for work, h in hits.items() if h}
        return editions.groups(self.sketches.of(lengths), share)

    def _stored_hits(self, page: Prepared, works: Collection[int]) -> Iterator[SegmentHit]:
        """Every segment of the works ``works`` (seqs), read from the store, aligned with
        the page."""
        if not works:
            return
        ids = [w["_id"] for w in self.work_names.of(works).values()]
        for header, anchors in self.segments.of_works(ids):
            alignment = align(anchors, page.anchors, ALIGN_PARAMS)
            if alignment.passages:
                yield SegmentHit(header, anchors, alignment, 0)

    def _recheck(
        self,
        page: Prepared,
        verdicts: list[Verdict],
        previous: dict[ObjectId, str],
        via: str,
    ) -> list[Verdict]:
        """``verdicts``, unless a work matched before (``previous``: work id -> how the
        match was found, ``page`` or ``split``; those found ``via``) is not matched now: then
        those works are verified on all their segments from the store
        (:meth:`find_works`). A match is let go only when the store's own data says so,
        never because an index lookup came back short."""
        doubted = [w for w, how in previous.items() if how == via]
        if not doubted:
            return verdicts
        matched = {v.work for v in verdicts if v.matched}
        again = {seq for seq in self.store.works.work_seqs(doubted).values() if seq not in matched}
        if not again:
            return verdicts
        return self.find_works(page, verify=again)

    def match_text(self, text: str | bytes) -> list[dict[str, Any]]:
        """What ``text`` copies, with evidence; stores nothing (the CLI's and admin's query)."""
        self.ready()
        page = prepare(text, self.settings.max_text_chars, "query text")
        matched = [v for v in self.find_works(page) if v.matched]
        return self.evidence.records(matched, page.located)

    def still_copies(self, text: str | bytes, work_ids: Collection[Any]) -> set[str]:
        """Which of the works ``work_ids`` ``text`` still copies, each verified on all its
        segments read from the store (a takedown's recheck: verified, not assumed)."""
        self.ready()
        page = prepare(text, self.settings.max_text_chars, "rechecked page")
        seqs = set(self.store.works.work_seqs([ObjectId(str(w)) for w in work_ids]).values())
        if not seqs:
            return set()
        names = self.work_names.of(seqs)
        return {
            str(names[v.work]["_id"])
            for v in self.find_works(page, verify=seqs)
            if v.matched and v.work in seqs and v.work in names
        }

    def process_page(
        self,
        url: str,
        text: str | bytes,
        *,
        site: str = "",
        title: str = "",
        authorised: bool = False,
        **fields: Any,
    ) -> list[dict[str, Any]]:
        """Store a page as the crawler would, then match it (:meth:`process_stored_page`).

        For pages that were not crawled (tests, the evaluation, imports); ``fields`` are
        the other :class:`~matcher.pages.CrawledPage` fields. Returns its match records.
        """
        text = as_text(text, f"page {url}")
        page = CrawledPage(url=url, site=site, title=title, text=text, **fields)
        doc, _ = self.store.pages.store_crawled_page(page, content_hash(text))
        authorised_sites = [site] if authorised else []
        return self.process_stored_page(str(doc["_id"]), authorised_sites=authorised_sites)

    def process_stored_page(
        self,
        page_id: str,
        authorised_sites: Iterable[str] | Callable[[], Iterable[str]] = (),
        as_task: bool = False,
        rematch: bool = False,
    ) -> list[dict[str, Any]]:
        """Match a stored page (the ``process_page`` task's work); returns its match records.

        When the page is a part of a split chapter, the joined chapter is matched too, and
        every part gets its share of the chapter's matches (:mod:`matcher.matching.parts`); the
        other
        parts' own matches stay as their own tasks wrote them. Idempotent: the same texts
        give the same records; records of works a page no longer copies are marked
        ``active: False``. Matches on pages of ``authorised_sites`` are recorded with status
        ``authorised`` (given as a function, it is called only when there is a match to
        write).

        A page alone (no split chapter) is matched as read before its lock was taken, not
        read again under it: its processed mark is written only if its text and links are
        still those read (:meth:`_record_page`), else it is matched once more, read under
        the lock (a task that matched a newer text between the read and the lock leaves
        nothing older behind). The parts of a split chapter are read again under their locks.

        A part of a whole-book download is matched with the download's other parts, their
        records one per work on the download's first page (:meth:`_match_download`). The
        task of a next part (``as_task``: sent again by beat's sweep; the ingest sends the
        first part's only) does nothing when the part's text was matched with its download
        already, or when the first part's task is still to come.

        ``rematch``: the page was matched moments ago and its mark did not hold
        (:meth:`pages_together`), so records of that match may stand though no mark says
        so: they are read and those no longer found let go, not taken to be none.
        """
        lost = 0
        optimistic = True
        read = self._read_ahead().pop(page_key(page_id), None)
        while True:
            snap = self.ready()
            doc, around = read or self.store.page_links.page_and_around(page_id)
            read = None
            if doc is None:
                raise UnusableText(f"no page with id {page_id}")
            download = self._download_of(doc)
            if download is not None:
                covered = not doc.get("pending") or download.get("pending")
                if as_task and download["_id"] != doc["_id"] and covered:
                    return []  # matched with its download, or the first part's task will
                return self._match_download(download, authorised_sites)
            try:
                parts = self._parts(doc, around)
                if len(parts) > 1:
                    for part in parts:
                        self._read_ahead().pop(part["_id"], None)
                with self._locked(parts) as lock_lost:
                    alone = optimistic and len(parts) == 1
                    if not alone:
                        doc, parts = self._reread(doc, parts)
                    return self._process(
                        doc, parts, authorised_sites, snap, lock_lost, alone, rematch
                    )
            except IndexLost:
                lost += 1
                if lost > 1:
                    raise
            except _ReadBeforeLock:
                optimistic = False

    def _download_of(self, doc: dict) -> dict | None:
        """The first part's page of the download ``doc`` is a part of (``doc`` itself for
        the first part); None for a page that is not, or a next part whose download's page
        is gone or no longer has it (matched alone, as any page)."""
        number = part_number(doc["url"])
        if number == 1:
            return doc if int(doc.get("parts") or 0) > 1 else None
        first = self.store.pages.page_by_url(fetched_url(doc["url"]))
        if first is None or int(first.get("parts") or 0) < number:
            return None
        return first

    def _match_download(
        self, first: dict, authorised_sites: Iterable[str] | Callable[[], Iterable[str]]
    ) -> list[dict[str, Any]]:
        """Match every part of a download, under its first part's lock, and record one match
        per work on the first part's page (:func:`matcher.matching.download_records.merge`); each
        part gets its index entries, fingerprints and processed mark, and a part's records
        of before (when parts were matched apart) are let go."""
        lost = 0
        while True:
            snap = self.ready()
            try:
                with self._locked([first]) as lock_lost:
                    return self._download_records(first["_id"], authorised_sites, snap, lock_lost)
            except IndexLost:
                lost += 1
                if lost > 1:
                    raise

    def _download_records(
        self,
        first_id: Any,
        authorised_sites: Iterable[str] | Callable[[], Iterable[str]],
        snap: Snapshot,
        lock_lost: threading.Event,
    ) -> list[dict[str, Any]]:
        """:meth:`_match_download`'s work, its pages read under the lock. A work matched
        before and found in no part now is verified on all its segments in every part
        (:meth:`_recheck`'s rule)."""
        first = self.store.pages.get_page(first_id)
        if first is None:
            raise UnusableText(f"no page with id {first_id}")
        urls = [part_url(first["url"], n) for n in range(2, int(first.get("parts") or 0) + 1)]
        others = self.store.pages.pages_by_url(urls)
        parts = [first, *(others[u] for u in urls if u in others)]
        limit = self.settings.max_text_chars
        pages = [prepare(p["text"], limit, f"page {p['url']}") for p in parts]
        found = [self.find_works(page) for page in pages]
        previous = self.store.matches.active_matched_works([p["_id"] for p in parts])
        before = previous.get(first["_id"], {})
        if before:
            held = {v.work for verdicts in found for v in verdicts if v.matched}
            seqs = self.store.works.work_seqs(list(before)).values()
            again = {seq for seq in seqs if seq not in held}
            if again:
                found = [self.find_works(page, verify=again) for page in pages]
        per_part, start = [], 0
        for part, page, verdicts in zip(parts, pages, found, strict=True):
            matched = [v for v in verdicts if v.matched]
            extra = {"split": [], "via": "page"}
            records = self.evidence.records(matched, page.located, part, extra)
            per_part.append((part_number(part["url"]), start, records))
            start += len(part["text"]) + 1
        records = download_records.merge(first, per_part)
        recorded = {r["work_id"] for r in records}
        self._still(snap, "the download was matched")
        if lock_lost.is_set():
            raise IndexUnavailable(f"the lock of page {first['seq']} expired; try again")
        licensed = first.get("site") in _authorised(authorised_sites, bool(records))
        written: list[dict[str, Any]] = []
        for part, page, verdicts in zip(parts, pages, found, strict=True):
            own = records if part is first else []
            considered = self._considered(verdicts, recorded)
            mine = previous.get(part["_id"], {})
            never = part is first and _never_matched(part)
            done = self._record_page(part, page, own, licensed, considered, [], mine, never=never)
            if part is first:
                written = done
        return written

    def _parts(self, doc: dict, around: Around | EllipsisType | None = ...) -> list[dict]:
        """The parts of ``doc``'s split chapter (:func:`matcher.matching.split.chain`), the first
        steps answered by ``around``, the pages around it
        (:meth:`~matcher.store.page_links.PageLinks.pages_around`, read when not given)."""
        by_url, linking_to = self.store.pages.pages_by_url, self.store.page_links.pages_linking_to
        if around is ...:
            around = self.store.page_links.pages_around(doc)
        if around is not None:
            known, linkers = around
            looked = {u for u in (doc.get("prev_url"), doc.get("next_url")) if u}

            def by_url(urls: Iterable[str]) -> dict[str, dict]:
                wanted = set(urls)
                if wanted <= looked:
                    return {u: known[u] for u in wanted if u in known}
                return self.store.pages.pages_by_url(wanted)

            def linking_to(url: str) -> list[dict]:
                return linkers if url == doc["url"] else self.store.page_links.pages_linking_to(url)

        return split.chain(doc, by_url, linking_to, self.settings.max_split_parts)

    def _reread(self, doc: dict, parts: list[dict]) -> tuple[dict, list[dict]]:
        """``doc`` and its parts as stored now that their locks are held (one read): the
        chapter walked again only when a part's links or title changed meanwhile, or one is
        gone (a part that appeared meanwhile has a task of its own)."""
        fresh = self.store.pages.pages_by_id([p["_id"] for p in parts])
        doc = fresh.get(doc["_id"], doc)
        if any(
            p["_id"] not in fresh or split.Part.of(p) != split.Part.of(fresh[p["_id"]])
            for p in parts
        ):
            return doc, self._parts(doc)
        return doc, [fresh[p["_id"]] for p in parts]

    @contextmanager
    def _locked(self, parts: Sequence[dict]) -> Iterator[threading.Event]:
        """Hold the locks of ``parts`` (in seq order, so two workers never deadlock) while
        the block runs, each a lease of ``page_lock_seconds`` renewed every third of it: a
        worker that dies holding one frees the page within a lease. Yields an event set
        when a lock could not be renewed (another worker may have the page now)."""
        lost = threading.Event()
        lease = self.settings.page_lock_seconds
        with ExitStack() as stack, redis_errors("locking a page"):
            for seq in sorted({int(p["seq"]) for p in parts}):
                lock = self.storage.lock(self.keys.page_lock(seq), lease, LOCK_WAIT_SECONDS)
                if not lock.acquire():
                    raise IndexUnavailable(f"page {seq} is being matched elsewhere; try again")
                stack.callback(_release, lock)
                renewal = Renewal(lock, lease, f"page lock {seq}", on_lost=lost.set).start()
                stack.callback(renewal.stop)
            yield lost

    def _process(
        self,
        doc: dict,
        parts: Sequence[dict],
        authorised_sites: Iterable[str] | Callable[[], Iterable[str]],
        snap: Snapshot,
        lock_lost: threading.Event,
        read_before_lock: bool = False,
        rematch: bool = False,
    ) -> list[dict[str, Any]]:
        """Match one page (and its chapter), then write its records and its parts' shares.

        Nothing found on the index is written unless the index stayed whole meanwhile
        (``snap``), and a work the page was matched with before is verified against the
        store's own data before its match is let go (:meth:`_recheck`).
        """
        page = prepare(doc["text"], self.settings.max_text_chars, f"page {doc['url']}")
        never = len(parts) == 1 and not rematch and _never_matched(doc)
        previous = (
            {} if never else self.store.matches.active_matched_works([p["_id"] for p in parts])
        )
        own = self._recheck(page, self.find_works(page), previous.get(doc["_id"], {}), "page")
        urls = [p["url"] for p in parts] if len(parts) > 1 else []
        shares = self._chapter_shares(parts, doc, page, own, previous) if urls else {}
        matched = [v for v in own if v.matched]
        records = self.evidence.records(matched, page.located, doc, {"split": urls, "via": "page"})
        chapter = shares.pop(doc["_id"], [])
        records += self.evidence.records(
            chapter, page.located, doc, {"split": urls, "via": "split"}
        )
        considered = self._considered(own, {r["work_id"] for r in records})
        self._still(snap, "the page was matched")
        if lock_lost.is_set():
            raise IndexUnavailable(f"the lock of page {doc['seq']} expired; try again")
        authorised = _authorised(authorised_sites, bool(records or any(shares.values())))
        written = self._record_page(
            doc,
            page,
            records,
            doc.get("site") in authorised,
            considered,
            urls,
            previous.get(doc["_id"], {}),
            read_before_lock,
            never,
        )
        for part in parts:
            if part["_id"] != doc["_id"]:
                licensed = part.get("site") in authorised
                before = previous.get(part["_id"], {})
                self._record_share(part, shares.get(part["_id"], []), urls, licensed, before)
        return written

    def _chapter_shares(
        self,
        parts: Sequence[dict],
        doc: dict,
        page: Prepared,
        own: Sequence[Verdict],
        previous: dict[ObjectId, dict[ObjectId, str]],
    ) -> dict[ObjectId, list[Verdict]]:
        """Per part, its share of the works the joined chapter copies and it does not."""
        joined = "\n".join(p["text"] for p in parts)
        limit = self.settings.max_text_chars * 2
        unit = prepare(joined, limit, f"split chapter {parts[0]['url']}")
        starts = np.cumsum([0] + [len(p["text"]) + 1 for p in parts[:-1]])
        offsets = [unit.located.content_before(int(s)) for s in starts]
        before = {w: v for works in previous.values() for w, v in works.items()}
        chapter = [
            v for v in self._recheck(unit, self.find_works(unit), before, "split") if v.matched
        ]
        if not chapter:
            return {}
        ids = {seq: w["_id"] for seq, w in self.work_names.of([v.work for v in chapter]).items()}
        out = {}
        for part, offset in zip(parts, offsets, strict=True):
            if part["_id"] == doc["_id"]:
                view, alone = page, {v.work for v in own if v.matched}
            else:
                view = self._stored_part(part)
                theirs = self.store.matches.own_matched_works(part["_id"])
                alone = {seq for seq, work_id in ids.items() if work_id in theirs}
            count = len(parts)
            out[part["_id"]] = shares(chapter, view, offset, count, alone, self.settings.policy)
        return out

    def _stored_part(self, part: dict) -> PageFingerprint:
        """A part's fingerprints: as stored when its current text was matched, else fresh."""
        if part.get("processed_hash") == part.get("content_hash"):
            fp = page_fingerprint(part, "anchors")
            if fp is not None:
                with suppress(FingerprintError):
                    return StoredPart(*from_blob(bytes(fp["value"])))
        return prepare(part["text"], self.settings.max_text_chars, f"page {part['url']}")

    def _record_share(
        self,
        part: dict,
        verdicts: list[Verdict],
        urls: list[str],
        authorised: bool,
        previous: dict[ObjectId, str],
    ) -> None:
        """Write another part's records of the chapter's matches (its own matches stay);
        ``previous``: its active matches before (work id -> how found)."""
        extra = {"split": urls, "via": "split"}
        records = self.evidence.records(verdicts, locate(part["text"]), part, extra)
        initial = "authorised" if authorised else "new"
        written = [self.store.matches.upsert_match(r, initial)["work_id"] for r in records]
        if any(w not in written for w, via in previous.items() if via == "split"):
            self.store.matches.deactivate_matches("page_id", part["_id"], written, via="split")
        self.store.pages.set_split(part["_id"], urls)
        self.store.matches.set_split(part["_id"], urls)

    def _considered(self, verdicts: Sequence[Verdict], recorded: set[ObjectId]) -> list[dict]:
        """The works verified and not recorded, with the reason (for the admin's match view)."""
        rejected: dict[int, Verdict] = {}
        for v in verdicts:
            if not v.matched and v.work not in rejected:
                rejected[v.work] = v
        top = sorted(rejected.values(), key=lambda v: -v.alignment.page_covered)[:CONSIDERED_KEPT]
        if not top:
            return []
        seqs = {v.work for v in top} | {v.explained_by for v in top if v.explained_by}
        meta = self.work_names.of(seqs)
        out = []
        for v in top:
            work = meta.get(v.work)
            if work is None or work["_id"] in recorded:
                continue
            reason = v.reason
            if v.explained_by in meta:
                title = meta[v.explained_by].get("title", "")
                if v.edition_tie is None:
                    reason = f"its shared passages are explained better by {title!r}"
                elif v.edition_tie:
                    reason = f"an edition of {title!r}, which explains the page as well (a tie)"
                else:
                    reason = f"an edition of {title!r}, which explains the page better"
            out.append(
                {
                    "work_id": work["_id"],
                    "work_title": work.get("title", ""),
                    "reason": reason,
                    "containment_work": round(v.scores["containment_work"], 4),
                    "containment_page": round(v.scores["containment_page"], 4),
                }
            )
        return out

    def _record_page(
        self,
        doc: dict,
        page: Prepared,
        records: list[dict[str, Any]],
        authorised: bool,
        considered: list[dict],
        split_urls: list[str],
        previous: dict[ObjectId, str],
        read_before_lock: bool = False,
        never: bool = False,
    ) -> list[dict[str, Any]]:
        """Write a matched page's index entries, records and processed mark (with its
        fingerprints, :meth:`~matcher.store.page_marks.PageMarks.mark_processed`);
        ``previous``: its active matches before (work id -> how found), read under the
        page's lock, so those no longer found are the only ones to let go. With
        ``read_before_lock``, a page whose text or links changed since ``doc`` was read is
        not marked: :class:`_ReadBeforeLock` asks for it to be matched again. ``never``:
        the page was never matched (:func:`_never_matched`), its records are inserted.

        The page's new index entries are added before its old ones, those of a text it no
        longer has, are removed: an outage in between leaves a stale entry (a candidate
        verified against the stored fingerprints, never a match), never a page missing from
        the index that a work registered later looks it up in (one whose fingerprints are
        not stored yet is matched from its text, :meth:`_sharing`). The old entries are
        those of the fingerprints ``doc`` holds, stored with its last processed mark; a
        task that died before marking the page leaves entries no document names, stale
        entries too.
        """
        seq = int(doc["seq"])
        try:
            fingerprints = fitted_page_fingerprints(doc["text"], page.stored_fingerprints())
        except StoreError as exc:
            raise UnusableText(f"page {doc['url']}: {exc}") from None
        old = _index_entries(page_fingerprint(doc, INDEX_KEYS))
        if self.index_pages:
            with redis_errors("indexing a page"):
                self.pages.add(seq, page.simhash, page.window_keys)
                if old is not None:
                    simhash, keys = old
                    self.pages.remove_stale(seq, simhash, keys, page.simhash, page.window_keys)
        initial = "authorised" if authorised else "new"
        written = [self.store.matches.upsert_match(r, initial, fresh=never) for r in records]
        kept = [r["work_id"] for r in written]
        if any(w not in kept for w in previous):
            self.store.matches.deactivate_matches("page_id", doc["_id"], kept)
        links = {name: doc.get(name) for name in ("next_url", "prev_url")}
        marked = self.store.page_marks.mark_processed(
            doc["_id"], doc["content_hash"], considered, split_urls,
            links if read_before_lock else None, fingerprints,
        )  # fmt: skip
        if read_before_lock and not marked:
            raise _ReadBeforeLock(doc["_id"])
        return written

    # works -> pages --------------------------------------------------------------------

    def match_work_against_pages(
        self, work_id: str, authorised_sites: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        """Find the pages already crawled that copy a work; match them again and return the
        work's match records.

        Every segment of the work is looked up in the pages' indexes; every candidate page
        (all of them, in batches) is aligned with the segment, and each page that shares
        passages with it is matched again as a crawled page is
        (:meth:`process_stored_page`), so that its text goes to the works that explain it
        best. Matches on pages of ``authorised_sites`` are recorded as ``authorised``.

        The pages the work has records on already are matched again too: those of its
        text before (registered again with another text) and the archived records of an
        earlier registration it took back (:attr:`Registration.restored
        <matcher.matching.registry.Registration.restored>`). A record found again is active, its
        review unchanged; an active one its text no longer explains is let go and archived
        with its review (:data:`~matcher.store.matches.NO_LONGER_MATCHES`), never lost. A
        twin (:meth:`Registry.add <matcher.matching.registry.Registry.add>`) is looked up in no
        index: its copies are recorded under the work it repeats, whose pages are matched
        again too. A near twin is indexed, an edition like any other: looked up as any work.
        """
        snap = self.ready()
        fields = {"seq": 1, "key": 1, "content_hash": 1, "same_text_as": 1, "near_twin": 1}
        work = self.store.works.get_work(work_id, fields)
        if work is None:
            raise UnusableText(f"no work with id {work_id}")
        # A twin is not indexed: its copies are recorded under the work it repeats.
        twin_of = work.get("same_text_as") if is_twin(work) else None
        own = self.store.matches.work_pages(work["_id"])
        held = own + (self.store.matches.work_pages(twin_of) if twin_of else [])
        affected = [] if twin_of else self._pages_sharing(work["_id"])
        self._still(snap, "looking for the pages that copy a work")
        done: set[str] = set()
        sites = set(authorised_sites)

        def match(page_id: Any, url: str) -> None:
            key = fetched_url(url)  # the parts of a download are matched as one
            if key not in done:
                done.add(key)
                self.process_stored_page(str(page_id), sites)

        for i in range(0, len(affected), PAGE_BATCH):
            docs = self.store.pages.pages_by_seq(affected[i : i + PAGE_BATCH], {"_id": 1, "url": 1})
            for doc in docs.values():
                match(doc["_id"], doc["url"])
        for record in held:
            with suppress(UnusableText):  # its page is gone, or its text cannot be read
                match(record["page_id"], record.get("url", ""))
        active = [r["page_id"] for r in own if r.get("active", True)]
        if active:
            self.store.archived_matches.archive_let_go(work, active, NO_LONGER_MATCHES)
        return self.store.matches.matches_for("work_id", str(work["_id"]))

    def _pages_sharing(self, work_id: ObjectId) -> list[int]:
        """Seqs of the pages that share passages with one of the work's segments."""
        policy = self.settings.policy
        affected: set[int] = set()
        stored = self.store.fingerprints.owner_fingerprints("work", work_id, INDEX_KEYS)
        for i in range(0, len(stored), self.settings.candidate_batch):
            chunk = stored[i : i + self.settings.candidate_batch]
            loaded = self.segments.load([int(fp["seq"]) for fp in chunk])
            with redis_errors("reading work fingerprints"):
                simhashes = [int(fp["value"]["simhash"], 16) for fp in chunk]
                near = self.pages.simhash.query_many(simhashes, policy.simhash_k)
            for fp, close in zip(chunk, near, strict=True):
                if int(fp["seq"]) not in loaded:
                    continue
                _, anchors = loaded[int(fp["seq"])]
                keys = array_from_hex(fp["value"]["windows"], "<u8", np.uint64)
                with redis_errors("looking up candidate pages"):
                    found = self.pages.windows.lookup(keys)
                candidates = {
                    int(o) for o, c in zip(found.owners, found.counts, strict=True)
                    if c >= policy.min_window_hits
                } | {int(o) for o, _ in close}  # fmt: skip
                candidates -= affected
                affected |= self._sharing(anchors, sorted(candidates))
        return sorted(affected)

    def _sharing(self, anchors: Any, seqs: list[int]) -> set[int]:
        """Which of the pages ``seqs`` share at least ``min_chars`` with a segment: each
        seen through its stored fingerprints, or its text when it has none yet (a page whose
        task indexed it and has not marked it: its fingerprints are stored with the mark)."""
        found = set()
        min_chars = self.settings.policy.min_chars
        for i in range(0, len(seqs), PAGE_BATCH):
            batch = seqs[i : i + PAGE_BATCH]
            views: dict[int, Any] = {}
            for fp in self.store.fingerprints.fingerprints_by_seq("page", batch, "anchors"):
                try:
                    views[int(fp["seq"])] = from_blob(bytes(fp["value"]))[1]
                except FingerprintError as exc:
                    self._problem(f"page {fp['seq']}: stored fingerprint unusable: {exc}")
                    views[int(fp["seq"])] = None
            unseen = [seq for seq in batch if seq not in views]
            if unseen:
                fields = {"seq": 1, "url": 1, "text": 1}
                for doc in self.store.pages.pages_by_seq(unseen, fields).values():
                    with suppress(UnusableText):
                        limit = self.settings.max_text_chars
                        fresh = prepare(doc["text"], limit, f"page {doc['url']}")
                        views[int(doc["seq"])] = fresh.anchors
            for seq, page in views.items():
                if page is not None and align(anchors, page, ALIGN_PARAMS).a_covered >= min_chars:
                    found.add(seq)
        return found


def _authorised(sites: Iterable[str] | Callable[[], Iterable[str]], needed: bool) -> set[str]:
    """The authorised sites, asked of ``sites`` (a function is called) only when ``needed``:
    there is a match to write."""
    if not needed:
        return set()
    return set(sites() if callable(sites) else sites)


def _never_matched(doc: dict) -> bool:
    """Whether a page has no match records: it was never matched, nor named a part of a
    split chapter by another part's task (which writes the part's share of the chapter's
    matches, :meth:`Engine._record_share`). A task that died between writing a page's
    records and its processed mark leaves records behind: the next one finds them when it
    writes its own (:meth:`~matcher.store.matches.Matches.upsert_match`), and
    lets go those it does not find again only when the page is matched once more."""
    return "processed_hash" not in doc and not doc.get("split")


class _ReadBeforeLock(Exception):
    """A page matched as read before its lock changed meanwhile: match it again."""


def _release(lock: Any) -> None:
    """Release a page lock; one that expired meanwhile, or a server that does not answer,
    leaves nothing to do (the lock expires on its own)."""
    try:
        with redis_errors("releasing a page lock"):
            lock.release()
    except redis.exceptions.LockError:
        pass
    except IndexUnavailable as exc:
        log.warning("could not release %s (it expires on its own): %s", lock.name, exc)


def _index_entries(stored: dict | None) -> tuple[int, np.ndarray] | None:
    """The simhash and postings keys a page was indexed with, from its stored fingerprints
    (None: it never was)."""
    if stored is None:
        return None
    value = stored["value"]
    return int(value["simhash"], 16), array_from_hex(value["windows"], "<u8", np.uint64)
