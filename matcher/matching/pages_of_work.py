"""The reverse direction: a newly registered work matched against the pages crawled before
(:class:`PagesOfWork`), so that a work added today finds the copies crawled last month.

Every segment of the work is looked up in the pages' indexes; every candidate page (all of
them, in batches of :data:`PAGE_BATCH`) is aligned with the segment, and each page that
shares passages with it is matched again as a crawled page is
(:meth:`matcher.matching.page_matching.PageMatcher.process`), so that attribution among
works stays right.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from bson import ObjectId

from fingerprint.align import align
from fingerprint.base import FingerprintError
from matcher.errors import UnusableText, redis_errors
from matcher.index.window_index import stored_postings
from matcher.matching.page_matching import PageMatcher
from matcher.matching.prepared import INDEX_KEYS, from_blob, prepare
from matcher.matching.registry import is_twin
from matcher.matching.verify import ALIGN_PARAMS
from matcher.pages import fetched_url
from matcher.store.matches import NO_LONGER_MATCHES

if TYPE_CHECKING:
    from matcher.matching.engine_protocol import MatchingEngine

PAGE_BATCH = 200


class PagesOfWork:
    """The stored pages that copy a work, of one engine (see the module docstring)."""

    def __init__(
        self, engine: MatchingEngine, stored_pages: PageMatcher, problem: Callable[[str], None]
    ) -> None:
        self.engine = engine
        self.stored_pages = stored_pages
        self.problem = problem
        """Where an unusable stored fingerprint is reported (the engine's problems)."""

    def match(self, work_id: str, authorised_sites: Iterable[str] = ()) -> list[dict[str, Any]]:
        """Find the pages already crawled that copy a work; match them again and return the
        work's match records.

        Every segment of the work is looked up in the pages' indexes; every candidate page
        (all of them, in batches) is aligned with the segment, and each page that shares
        passages with it is matched again as a crawled page is
        (:meth:`PageMatcher.process <matcher.matching.page_matching.PageMatcher.process>`),
        so that its text goes to the works that explain it best. Matches on pages of
        ``authorised_sites`` are recorded as ``authorised``.

        The pages the work has records on already are matched again too: those of its
        text before (registered again with another text) and the archived records of an
        earlier registration it took back (:attr:`Registration.restored
        <matcher.matching.registry.Registration.restored>`). A record found again is active,
        its review unchanged; an active one its text no longer explains is let go and
        archived with its review (:data:`~matcher.store.matches.NO_LONGER_MATCHES`), never
        lost. A twin (:meth:`Registry.add <matcher.matching.registry.Registry.add>`) is
        looked up in no index: its copies are recorded under the work it repeats, whose
        pages are matched again too. A near twin is indexed, an edition like any other:
        looked up as any work.
        """
        engine = self.engine
        store = engine.store
        snap = engine.integrity.ready()
        fields = {"seq": 1, "key": 1, "content_hash": 1, "same_text_as": 1, "near_twin": 1}
        work = store.works.get_work(work_id, fields)
        if work is None:
            raise UnusableText(f"no work with id {work_id}")
        # A twin is not indexed: its copies are recorded under the work it repeats.
        twin_of = work.get("same_text_as") if is_twin(work) else None
        own = store.matches.work_pages(work["_id"])
        held = own + (store.matches.work_pages(twin_of) if twin_of else [])
        affected = [] if twin_of else self._pages_sharing(work["_id"])
        engine.integrity.confirm(snap, "looking for the pages that copy a work")
        done: set[str] = set()
        sites = set(authorised_sites)

        def match(page_id: Any, url: str) -> None:
            key = fetched_url(url)  # the parts of a download are matched as one
            if key not in done:
                done.add(key)
                self.stored_pages.process(str(page_id), sites)

        for i in range(0, len(affected), PAGE_BATCH):
            docs = store.pages.pages_by_seq(affected[i : i + PAGE_BATCH], {"_id": 1, "url": 1})
            for doc in docs.values():
                match(doc["_id"], doc["url"])
        for record in held:
            with suppress(UnusableText):  # its page is gone, or its text cannot be read
                match(record["page_id"], record.get("url", ""))
        active = [r["page_id"] for r in own if r.get("active", True)]
        if active:
            store.archived_matches.archive_let_go(work, active, NO_LONGER_MATCHES)
        return store.matches.matches_for("work_id", str(work["_id"]))

    def _pages_sharing(self, work_id: ObjectId) -> list[int]:
        """Seqs of the pages that share passages with one of the work's segments."""
        engine = self.engine
        policy = engine.settings.policy
        batch = engine.settings.candidate_batch
        affected: set[int] = set()
        stored = engine.store.fingerprints.owner_fingerprints("work", work_id, INDEX_KEYS)
        for i in range(0, len(stored), batch):
            chunk = stored[i : i + batch]
            loaded = engine.segments.load([int(fp["seq"]) for fp in chunk])
            with redis_errors("reading work fingerprints"):
                simhashes = [int(fp["value"]["simhash"], 16) for fp in chunk]
                near = engine.pages.simhash.query_many(simhashes, policy.simhash_k)
            for fp, close in zip(chunk, near, strict=True):
                if int(fp["seq"]) not in loaded:
                    continue
                _, anchors = loaded[int(fp["seq"])]
                keys = stored_postings(fp["value"], int(fp.get("version", 1)))
                with redis_errors("looking up candidate pages"):
                    found = engine.pages.windows.lookup(keys)
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
        engine = self.engine
        store = engine.store
        found = set()
        min_chars = engine.settings.policy.min_chars
        for i in range(0, len(seqs), PAGE_BATCH):
            batch = seqs[i : i + PAGE_BATCH]
            views: dict[int, Any] = {}
            for fp in store.fingerprints.fingerprints_by_seq("page", batch, "anchors"):
                try:
                    views[int(fp["seq"])] = from_blob(bytes(fp["value"]))[1]
                except FingerprintError as exc:
                    self.problem(f"page {fp['seq']}: stored fingerprint unusable: {exc}")
                    views[int(fp["seq"])] = None
            unseen = [seq for seq in batch if seq not in views]
            if unseen:
                fields = {"seq": 1, "url": 1, "text": 1}
                for doc in store.pages.pages_by_seq(unseen, fields).values():
                    with suppress(UnusableText):
                        limit = engine.settings.max_text_chars
                        fresh = prepare(doc["text"], limit, f"page {doc['url']}")
                        views[int(doc["seq"])] = fresh.anchors
            for seq, page in views.items():
                if page is not None and align(anchors, page, ALIGN_PARAMS).a_covered >= min_chars:
                    found.add(seq)
        return found
