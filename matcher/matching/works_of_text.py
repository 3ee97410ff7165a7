"""The works a text copies: candidates from the works' indexes, verified (:class:`WorksOfText`).

A text (a crawled page, a query, a page rechecked for a takedown) is looked up in the index
of registered works (:meth:`WorksOfText.find`): its simhash and postings keys give
candidate work segments, ranked by postings hits and verified in batches (their
verification data from :mod:`matcher.matching.segment_cache`: references in Redis, blobs
cached in the process or read from the store), never truncated; the aligned segments go to
:func:`matcher.matching.verify.judge` with the corpus document frequency of the page's
anchors, and the editions among them (:mod:`matcher.matching.editions`). A work the text
was matched with before is verified on all its segments from the store before its match is
let go (:meth:`WorksOfText.recheck`): never because an index lookup came back short.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from bson import ObjectId

from fingerprint.align import align
from matcher.errors import redis_errors
from matcher.keys import SEGMENT_BITS, owner_work
from matcher.matching import editions
from matcher.matching.prepared import Prepared, prepare, prepare_many
from matcher.matching.verify import ALIGN_PARAMS, SegmentHit, Verdict, judge

if TYPE_CHECKING:
    from matcher.matching.engine_protocol import MatchingEngine


class WorksOfText:
    """Candidates and verification of a text over one engine's works' index (see the module
    docstring)."""

    def __init__(self, engine: MatchingEngine) -> None:
        self.engine = engine

    def find(self, page: Prepared, verify: Collection[int] = ()) -> list[Verdict]:
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
        return judge(hits, page, df, self.engine.settings.policy, self._editions(hits))

    def recheck(
        self,
        page: Prepared,
        verdicts: list[Verdict],
        previous: dict[ObjectId, str],
        via: str,
    ) -> list[Verdict]:
        """``verdicts``, unless a work matched before (``previous``: work id -> how the
        match was found, ``page`` or ``split``; those found ``via``) is not matched now: then
        those works are verified on all their segments from the store
        (:meth:`find`). A match is let go only when the store's own data says so,
        never because an index lookup came back short."""
        doubted = [w for w, how in previous.items() if how == via]
        if not doubted:
            return verdicts
        matched = {v.work for v in verdicts if v.matched}
        seqs = self.engine.store.works.work_seqs(doubted).values()
        again = {seq for seq in seqs if seq not in matched}
        if not again:
            return verdicts
        return self.find(page, verify=again)

    def match_text(self, text: str | bytes) -> list[dict[str, Any]]:
        """What ``text`` copies, with evidence; stores nothing (the CLI's and admin's query)."""
        engine = self.engine
        engine.integrity.ready()
        page = prepare(text, engine.settings.max_text_chars, "query text")
        matched = [v for v in self.find(page) if v.matched]
        return engine.evidence.records(matched, page.located)

    def still_copies(self, text: str | bytes, work_ids: Collection[Any]) -> set[str]:
        """Which of the works ``work_ids`` ``text`` still copies, each verified on all its
        segments read from the store (a takedown's recheck: verified, not assumed)."""
        engine = self.engine
        engine.integrity.ready()
        page = prepare(text, engine.settings.max_text_chars, "rechecked page")
        seqs = set(engine.store.works.work_seqs([ObjectId(str(w)) for w in work_ids]).values())
        if not seqs:
            return set()
        names = engine.work_names.of(seqs)
        return {
            str(names[v.work]["_id"])
            for v in self.find(page, verify=seqs)
            if v.matched and v.work in seqs and v.work in names
        }

    def frequency(self, texts: Sequence[str]) -> list[np.ndarray]:
        """For each of ``texts``, the document frequency in works (how many registered
        works hold it, however many of their segments do) of each of its postings keys
        (:func:`matcher.matching.prepared.window_keys`): one lookup of the works' index for
        them all; an :class:`~matcher.errors.IndexUnavailable` when it cannot be read."""
        keys = [p.window_keys for p in prepare_many(list(texts))]
        every = np.unique(np.concatenate(keys)) if keys else np.empty(0, np.uint64)
        if not len(every):
            return [np.empty(0, np.int64) for _ in keys]
        self.engine.integrity.ready()
        with redis_errors("looking up how many works hold a text"):
            found = self.engine.works.windows.lookup(every, group_shift=SEGMENT_BITS)
        df = found.df_of(every)
        return [df[np.searchsorted(every, held)] for held in keys]

    def _candidates(self, page: Prepared) -> tuple[list[tuple[int, int]], np.ndarray]:
        """Candidate segments as ``(owner, postings hits)``, most hits first, and the
        corpus document frequency (in works) of the page's sampled anchors."""
        policy = self.engine.settings.policy
        works = self.engine.works
        with redis_errors("looking up candidates"):
            near = works.simhash.query(page.simhash, policy.simhash_k)
            found = works.windows.lookup(page.window_keys, group_shift=SEGMENT_BITS)
        hits = dict(zip(found.owners.tolist(), found.counts.tolist(), strict=True))
        chosen = {o: c for o, c in hits.items() if c >= policy.min_window_hits}
        for owner, _ in near:
            chosen.setdefault(owner, hits.get(owner, 0))
        ranked = sorted(chosen.items(), key=lambda oc: (-oc[1], oc[0]))
        return ranked, found.df_of(page.sampled.keys)

    def _segment_hits(self, page: Prepared, ranked: list[tuple[int, int]]) -> Iterator[SegmentHit]:
        """Every candidate segment aligned with the page, read in batches."""
        batch = self.engine.settings.candidate_batch
        for i in range(0, len(ranked), batch):
            chunk = ranked[i : i + batch]
            loaded = self.engine.segments.load([o for o, _ in chunk])
            for owner, count in chunk:
                if owner not in loaded:
                    continue
                header, anchors = loaded[owner]
                alignment = align(anchors, page.anchors, ALIGN_PARAMS)
                if alignment.passages:
                    yield SegmentHit(header, anchors, alignment, count)

    def _editions(self, hits: Mapping[int, Sequence[SegmentHit]]) -> dict[int, int]:
        """The works of ``hits`` that are editions of each other, each mapped to its group
        (:func:`matcher.matching.editions.groups`, from the works' sketches, read only when
        two or more works share passages with the page)."""
        share = self.engine.settings.policy.edition_share
        if not share or len(hits) < 2:
            return {}
        lengths = {work: h[0].header.work_length for work, h in hits.items() if h}
        return editions.groups(self.engine.sketches.of(lengths), share)

    def _stored_hits(self, page: Prepared, works: Collection[int]) -> Iterator[SegmentHit]:
        """Every segment of the works ``works`` (seqs), read from the store, aligned with
        the page."""
        if not works:
            return
        ids = [w["_id"] for w in self.engine.work_names.of(works).values()]
        for header, anchors in self.engine.segments.of_works(ids):
            alignment = align(anchors, page.anchors, ALIGN_PARAMS)
            if alignment.passages:
                yield SegmentHit(header, anchors, alignment, 0)
