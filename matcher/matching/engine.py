"""The matching engine: candidates and verification, in both directions, as a thin facade
over the collaborators that do the work (:class:`Engine`).

A crawled page is looked up in the index of registered works
(:class:`matcher.matching.works_of_text.WorksOfText`: candidate segments ranked by postings
hits, verified in batches, never truncated, judged by :func:`matcher.matching.verify.judge`).
A stored page is matched and its records written
(:class:`matcher.matching.page_matching.PageMatcher`, the writes in
:class:`matcher.matching.page_writes.PageWrites`, under the locks of
:mod:`matcher.matching.page_locks`): a page that is one part of a chapter split over several
pages (:mod:`matcher.matching.split`) is matched alone and as part of the joined chapter, a
part of a whole-book download with the download's other parts
(:class:`matcher.matching.download_matching.DownloadMatcher`). A newly registered work is
looked up in the index of crawled pages (:class:`matcher.matching.pages_of_work.PagesOfWork`):
every page sharing passages with one of its segments is matched again, so attribution among
works stays right. The collaborators read the engine's shared state through
:class:`matcher.matching.engine_protocol.MatchingEngine`.

Works are registered by segments (:mod:`matcher.matching.registry`): a novel of millions of
characters costs the same per page as a short story.

Order of writes, so that an outage never leaves a half-written result: everything read
from Redis for matching is read first, verification runs in memory, and only then are the
page's fingerprints, index entries, match records and processed mark written, each an
idempotent upsert; the parts of a split chapter are written under their pages' locks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from matcher.index.index_view import IndexView
from matcher.index.integrity import Snapshot
from matcher.matching import editions
from matcher.matching.download_matching import DownloadMatcher
from matcher.matching.match_records import Evidence
from matcher.matching.page_matching import PageMatcher
from matcher.matching.page_writes import PageWrites
from matcher.matching.pages_of_work import PagesOfWork
from matcher.matching.prepared import Prepared, as_text, content_hash
from matcher.matching.recent import Recent
from matcher.matching.registry import Registration, Registry
from matcher.matching.segment_cache import SegmentCache, SegmentData
from matcher.matching.verify import Verdict
from matcher.matching.work_names import WorkNames
from matcher.matching.works_of_text import WorksOfText
from matcher.pages import CrawledPage


@dataclass
class Engine(IndexView):
    """Matching over the indexes of one store and the index client (the fields of
    :class:`matcher.index.index_view.IndexView`; :meth:`IndexView.open
    <matcher.index.index_view.IndexView.open>` opens one).

    Every index key (the indexes, the segments' references, the markers, the page locks) is
    reached through ``storage``: :class:`~matcher.index.storage.RedisStorage` of ``redis``
    unless another :class:`~matcher.index.storage.Storage` is given (the in-memory twin of
    the unit tests, whose engine has no ``redis``).

    The engine holds what its collaborators share (it meets
    :class:`~matcher.matching.engine_protocol.MatchingEngine`) and composes them:
    ``works_of_text`` (:class:`~matcher.matching.works_of_text.WorksOfText`),
    ``page_writes`` (:class:`~matcher.matching.page_writes.PageWrites`),
    ``downloads`` (:class:`~matcher.matching.download_matching.DownloadMatcher`),
    ``stored_pages`` (:class:`~matcher.matching.page_matching.PageMatcher`) and
    ``pages_of_work`` (:class:`~matcher.matching.pages_of_work.PagesOfWork`); its methods
    are the entry points callers use, each handed to one of them."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.work_names = WorkNames(self.store.works.works_by_seq)
        self.sketches = editions.Sketches(self.store.works.works_by_seq)
        self.evidence = Evidence(self.store, self.work_names.of)
        self.licensed = Recent(self.store.sites.authorised_sites)
        self.registry = Registry(self.settings, self.store, self.storage, self.works, self.keys)
        cache = SegmentCache(self.settings.segment_cache_mb << 20)
        self.segments = SegmentData(self.storage, self.store, self.keys, cache, self._problem)
        self.works_of_text = WorksOfText(self)
        self.page_writes = PageWrites(self)
        self.downloads = DownloadMatcher(self, self.works_of_text, self.page_writes)
        self.stored_pages = PageMatcher(self, self.works_of_text, self.page_writes, self.downloads)
        self.pages_of_work = PagesOfWork(self, self.stored_pages, self._problem)

    def ready(self) -> Snapshot:
        """Before the index is read: every tag group whole, the lost ones rebuilt from the
        store first (:meth:`matcher.index.integrity.Integrity.ready`); the snapshot to compare
        with before writing what was found
        (:meth:`~matcher.index.integrity.Integrity.confirm`)."""
        return self.integrity.ready()

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
        while the block runs; :meth:`PageMatcher.together
        <matcher.matching.page_matching.PageMatcher.together>`). The list given fills, as the
        block ends, with the pages whose mark did not hold: the caller matches each again,
        outside the block and with ``rematch``."""
        with self.stored_pages.together(page_ids) as unmarked:
            yield unmarked

    def find_works(self, page: Prepared, verify: Collection[int] = ()) -> list[Verdict]:
        """The verdict of every work that shares passages with ``page``, matches first; the
        works of ``verify`` (seqs) verified on all their segments read from the store
        (:meth:`WorksOfText.find <matcher.matching.works_of_text.WorksOfText.find>`)."""
        return self.works_of_text.find(page, verify)

    def match_text(self, text: str | bytes) -> list[dict[str, Any]]:
        """What ``text`` copies, with evidence; stores nothing (the CLI's and admin's query;
        :meth:`WorksOfText.match_text <matcher.matching.works_of_text.WorksOfText.match_text>`)."""
        return self.works_of_text.match_text(text)

    def work_frequency(self, texts: Sequence[str]) -> list[np.ndarray]:
        """For each of ``texts``, how many registered works hold each of its postings keys
        (the search queries' choice, :mod:`matcher.sites.query_choice`;
        :meth:`WorksOfText.frequency <matcher.matching.works_of_text.WorksOfText.frequency>`)."""
        return self.works_of_text.frequency(texts)

    def still_copies(self, text: str | bytes, work_ids: Collection[Any]) -> set[str]:
        """Which of the works ``work_ids`` ``text`` still copies, each verified on all its
        segments read from the store (a takedown's recheck: :meth:`WorksOfText.still_copies
        <matcher.matching.works_of_text.WorksOfText.still_copies>`)."""
        return self.works_of_text.still_copies(text, work_ids)

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
        """Match a stored page (the ``process_page`` task's work); returns its match records
        (:meth:`PageMatcher.process <matcher.matching.page_matching.PageMatcher.process>`:
        split chapters as parts and as a whole, whole-book downloads as one). Matches on
        pages of ``authorised_sites`` are recorded with status ``authorised`` (given as a
        function, it is called only when there is a match to write); ``as_task``: the task
        of a download's next part; ``rematch``: the page's mark did not hold
        (:meth:`pages_together`)."""
        return self.stored_pages.process(page_id, authorised_sites, as_task, rematch)

    # works -> pages --------------------------------------------------------------------

    def match_work_against_pages(
        self, work_id: str, authorised_sites: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        """Find the pages already crawled that copy a work; match them again and return the
        work's match records (:meth:`PagesOfWork.match
        <matcher.matching.pages_of_work.PagesOfWork.match>`). Matches on pages of
        ``authorised_sites`` are recorded as ``authorised``."""
        return self.pages_of_work.match(work_id, authorised_sites)
