"""What the matching engine's collaborators read of it: :class:`MatchingEngine`, the state
that :class:`matcher.matching.engine.Engine` holds and they share (settings, store, indexes,
integrity, segment data, work names, evidence), as a protocol that the engine meets.

The collaborators (:class:`matcher.matching.works_of_text.WorksOfText`,
:class:`matcher.matching.page_matching.PageMatcher`,
:class:`matcher.matching.download_matching.DownloadMatcher`,
:class:`matcher.matching.page_writes.PageWrites`,
:class:`matcher.matching.pages_of_work.PagesOfWork`) read it at each call, as
:class:`matcher.index.integrity.Integrity` reads its engine
(:mod:`matcher.index.engine_protocol`): settings given to the engine, or the pages' indexing
switched off for a bulk load (:attr:`IndexView.index_pages
<matcher.index.index_view.IndexView.index_pages>`, as the embedded scan does), reach them at
once. Typing them by this protocol rather than by ``Engine`` keeps them free of the engine's
module, which imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from matcher.index.engine_protocol import IndexedEngine

if TYPE_CHECKING:
    from matcher.index.integrity import Integrity
    from matcher.matching.editions import Sketches
    from matcher.matching.match_records import Evidence
    from matcher.matching.segment_cache import SegmentData
    from matcher.matching.work_names import WorkNames


class MatchingEngine(IndexedEngine, Protocol):
    """What the index upkeep reads of an engine (:class:`IndexedEngine`: settings, store,
    index storage and key layout, both sides' indexes), with the integrity and segment data
    as the matching uses them, work names, editions' sketches and evidence."""

    integrity: Integrity
    segments: SegmentData
    work_names: WorkNames
    sketches: Sketches
    evidence: Evidence
