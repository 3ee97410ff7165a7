"""A stored page matched (:class:`PageMatcher`): the ``process_page`` task's work.

The page is read (with the pages around it, for its split chapter), locked, matched
(:class:`matcher.matching.works_of_text.WorksOfText`), and its records written
(:class:`matcher.matching.page_writes.PageWrites`). A page that is one part of a chapter
split over several pages (:mod:`matcher.matching.split`) is matched alone and as part of the
joined chapter, and every part gets its share of the chapter's matches
(:mod:`matcher.matching.parts`), under the parts' locks
(:func:`matcher.matching.page_locks.locked`).
A part of a whole-book download is matched with the download's other parts
(:class:`matcher.matching.download_matching.DownloadMatcher`). Pages matched together read
their pages in one read and write their processed marks in one write
(:meth:`PageMatcher.together`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import numpy as np
from bson import ObjectId

from fingerprint.base import FingerprintError
from matcher.errors import IndexLost, IndexUnavailable, UnusableText
from matcher.index.integrity import Snapshot
from matcher.matching import split
from matcher.matching.download_matching import DownloadMatcher
from matcher.matching.page_locks import locked
from matcher.matching.page_writes import PageWrites, ReadBeforeLock, authorised, never_matched
from matcher.matching.parts import StoredPart, shares
from matcher.matching.prepared import Prepared, from_blob, prepare
from matcher.matching.verify import PageFingerprint, Verdict
from matcher.matching.works_of_text import WorksOfText
from matcher.store.common import page_key
from matcher.store.fingerprints import page_fingerprint
from matcher.store.pages import Around

if TYPE_CHECKING:
    from matcher.matching.engine_protocol import MatchingEngine


class PageMatcher:
    """The stored pages of one engine matched (see the module docstring)."""

    def __init__(
        self,
        engine: MatchingEngine,
        texts: WorksOfText,
        writes: PageWrites,
        downloads: DownloadMatcher,
    ) -> None:
        self.engine = engine
        self.texts = texts
        self.writes = writes
        self.downloads = downloads
        self._together = threading.local()
        """This thread's pages read for :meth:`together` (``read``: by ``_id``, until their
        task reads them)."""

    @contextmanager
    def together(self, page_ids: Sequence[str]) -> Iterator[list[str]]:
        """Match pages together in this thread (one :meth:`process` each while the block
        runs): the pages and the pages around each are read in one read, each task's first
        read answered from it, and their processed marks are written in one bulk write as
        the block ends. The list given fills, as the block ends, with the pages whose mark
        did not hold (their text or links changed since they were read, by a crawl or
        another task): the caller matches each again, outside the block and with
        ``rematch`` (:meth:`process`), so that no page's records are those of a text it no
        longer has. A page of a split chapter is read again by its task (another part's task
        wrote to it)."""
        store = self.engine.store
        by_key = {page_key(p): p for p in page_ids}
        self._together.read = store.page_links.pages_and_around(page_ids)
        store.page_marks.gather_marks()
        unmarked: list[str] = []
        try:
            yield unmarked
        finally:
            self._together.read = {}
            unmarked += [by_key.get(key, str(key)) for key in store.page_marks.send_marks()]

    def _read_ahead(self) -> dict[Any, tuple[dict, Around | None]]:
        """This thread's pages read ahead (:meth:`together`), by ``_id``."""
        read = getattr(self._together, "read", None)
        if read is None:
            read = self._together.read = {}
        return read

    def process(
        self,
        page_id: str,
        authorised_sites: Iterable[str] | Callable[[], Iterable[str]] = (),
        as_task: bool = False,
        rematch: bool = False,
    ) -> list[dict[str, Any]]:
        """Match a stored page (the ``process_page`` task's work); returns its match records.

        When the page is a part of a split chapter, the joined chapter is matched too, and
        every part gets its share of the chapter's matches (:mod:`matcher.matching.parts`);
        the other parts' own matches stay as their own tasks wrote them. Idempotent: the
        same texts give the same records; records of works a page no longer copies are
        marked ``active: False``. Matches on pages of ``authorised_sites`` are recorded with
        status ``authorised`` (given as a function, it is called only when there is a match
        to write).

        A page alone (no split chapter) is matched as read before its lock was taken, not
        read again under it: its processed mark is written only if its text and links are
        still those read (:meth:`PageWrites.record_page
        <matcher.matching.page_writes.PageWrites.record_page>`), else it is matched once
        more, read under the lock (a task that matched a newer text between the read and
        the lock leaves nothing older behind). The parts of a split chapter are read again
        under their locks.

        A part of a whole-book download is matched with the download's other parts, their
        records one per work on the download's first page (:meth:`DownloadMatcher.match
        <matcher.matching.download_matching.DownloadMatcher.match>`). The task of a next
        part (``as_task``: sent again by beat's sweep; the ingest sends the first part's
        only) does nothing when the part's text was matched with its download already, or
        when the first part's task is still to come.

        ``rematch``: the page was matched moments ago and its mark did not hold
        (:meth:`together`), so records of that match may stand though no mark says so: they
        are read and those no longer found let go, not taken to be none.
        """
        engine = self.engine
        lost = 0
        optimistic = True
        read = self._read_ahead().pop(page_key(page_id), None)
        while True:
            snap = engine.integrity.ready()
            doc, around = read or engine.store.page_links.page_and_around(page_id)
            read = None
            if doc is None:
                raise UnusableText(f"no page with id {page_id}")
            download = self.downloads.first_part(doc)
            if download is not None:
                covered = not doc.get("pending") or download.get("pending")
                if as_task and download["_id"] != doc["_id"] and covered:
                    return []  # matched with its download, or the first part's task will
                return self.downloads.match(download, authorised_sites)
            try:
                parts = self._parts(doc, around)
                if len(parts) > 1:
                    for part in parts:
                        self._read_ahead().pop(part["_id"], None)
                lease = engine.settings.page_lock_seconds
                with locked(engine.storage, engine.keys, parts, lease) as lock_lost:
                    alone = optimistic and len(parts) == 1
                    if not alone:
                        doc, parts = self._reread(doc, parts)
                    return self._match(
                        doc, parts, authorised_sites, snap, lock_lost, alone, rematch
                    )
            except IndexLost:
                lost += 1
                if lost > 1:
                    raise
            except ReadBeforeLock:
                optimistic = False

    def _parts(self, doc: dict, around: Around | EllipsisType | None = ...) -> list[dict]:
        """The parts of ``doc``'s split chapter (:func:`matcher.matching.split.chain`), the
        first steps answered by ``around``, the pages around it
        (:meth:`~matcher.store.page_links.PageLinks.pages_around`, read when not given)."""
        store = self.engine.store
        by_url, linking_to = store.pages.pages_by_url, store.page_links.pages_linking_to
        if around is ...:
            around = store.page_links.pages_around(doc)
        if around is not None:
            known, linkers = around
            looked = {u for u in (doc.get("prev_url"), doc.get("next_url")) if u}

            def by_url(urls: Iterable[str]) -> dict[str, dict]:
                wanted = set(urls)
                if wanted <= looked:
                    return {u: known[u] for u in wanted if u in known}
                return store.pages.pages_by_url(wanted)

            def linking_to(url: str) -> list[dict]:
                return linkers if url == doc["url"] else store.page_links.pages_linking_to(url)

        return split.chain(doc, by_url, linking_to, self.engine.settings.max_split_parts)

    def _reread(self, doc: dict, parts: list[dict]) -> tuple[dict, list[dict]]:
        """``doc`` and its parts as stored now that their locks are held (one read): the
        chapter walked again only when a part's links or title changed meanwhile, or one is
        gone (a part that appeared meanwhile has a task of its own)."""
        fresh = self.engine.store.pages.pages_by_id([p["_id"] for p in parts])
        doc = fresh.get(doc["_id"], doc)
        if any(
            p["_id"] not in fresh or split.Part.of(p) != split.Part.of(fresh[p["_id"]])
            for p in parts
        ):
            return doc, self._parts(doc)
        return doc, [fresh[p["_id"]] for p in parts]

    def _match(
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
        store's own data before its match is let go (:meth:`WorksOfText.recheck
        <matcher.matching.works_of_text.WorksOfText.recheck>`).
        """
        engine = self.engine
        evidence = engine.evidence
        page = prepare(doc["text"], engine.settings.max_text_chars, f"page {doc['url']}")
        never = len(parts) == 1 and not rematch and never_matched(doc)
        previous = (
            {} if never else engine.store.matches.active_matched_works([p["_id"] for p in parts])
        )
        own = self.texts.recheck(page, self.texts.find(page), previous.get(doc["_id"], {}), "page")
        urls = [p["url"] for p in parts] if len(parts) > 1 else []
        shares = self._chapter_shares(parts, doc, page, own, previous) if urls else {}
        matched = [v for v in own if v.matched]
        records = evidence.records(matched, page.located, doc, {"split": urls, "via": "page"})
        chapter = shares.pop(doc["_id"], [])
        records += evidence.records(chapter, page.located, doc, {"split": urls, "via": "split"})
        considered = self.writes.considered(own, {r["work_id"] for r in records})
        engine.integrity.confirm(snap, "the page was matched")
        if lock_lost.is_set():
            raise IndexUnavailable(f"the lock of page {doc['seq']} expired; try again")
        licensed = authorised(authorised_sites, bool(records or any(shares.values())))
        written = self.writes.record_page(
            doc,
            page,
            records,
            doc.get("site") in licensed,
            considered,
            urls,
            previous.get(doc["_id"], {}),
            read_before_lock,
            never,
        )
        for part in parts:
            if part["_id"] != doc["_id"]:
                before = previous.get(part["_id"], {})
                share = shares.get(part["_id"], [])
                self.writes.record_share(part, share, urls, part.get("site") in licensed, before)
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
        engine = self.engine
        joined = "\n".join(p["text"] for p in parts)
        limit = engine.settings.max_text_chars * 2
        unit = prepare(joined, limit, f"split chapter {parts[0]['url']}")
        starts = np.cumsum([0] + [len(p["text"]) + 1 for p in parts[:-1]])
        offsets = [unit.located.content_before(int(s)) for s in starts]
        before = {w: v for works in previous.values() for w, v in works.items()}
        found = self.texts.recheck(unit, self.texts.find(unit), before, "split")
        chapter = [v for v in found if v.matched]
        if not chapter:
            return {}
        named = engine.work_names.of([v.work for v in chapter])
        ids = {seq: w["_id"] for seq, w in named.items()}
        out = {}
        for part, offset in zip(parts, offsets, strict=True):
            if part["_id"] == doc["_id"]:
                view, alone = page, {v.work for v in own if v.matched}
            else:
                view = self._stored_part(part)
                theirs = engine.store.matches.own_matched_works(part["_id"])
                alone = {seq for seq, work_id in ids.items() if work_id in theirs}
            count = len(parts)
            out[part["_id"]] = shares(chapter, view, offset, count, alone, engine.settings.policy)
        return out

    def _stored_part(self, part: dict) -> PageFingerprint:
        """A part's fingerprints: as stored when its current text was matched, else fresh."""
        if part.get("processed_hash") == part.get("content_hash"):
            fp = page_fingerprint(part, "anchors")
            if fp is not None:
                with suppress(FingerprintError):
                    return StoredPart(*from_blob(bytes(fp["value"])))
        return prepare(part["text"], self.engine.settings.max_text_chars, f"page {part['url']}")
