"""What the index upkeep needs of an engine: the attributes :mod:`matcher.index.integrity` and
:mod:`matcher.index.maintenance` read, as a protocol that :class:`matcher.matching.engine.Engine`
meets.

Typing them by this protocol rather than by ``Engine`` keeps the upkeep modules free of the
engine's module, which imports them (the engine calls them; they never call back into its
matching)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bson import ObjectId

    from matcher.index.indexes import Side
    from matcher.index.storage import Storage
    from matcher.keys import Keys
    from matcher.settings import Settings
    from matcher.store import Store


class Rebuilds(Protocol):
    """The index's integrity as the upkeep calls it (:class:`matcher.index.integrity.Integrity`)."""

    def rebuild(
        self, groups: Iterable[int], reason: str, kinds: Iterable[str] = ...
    ) -> dict[str, int]: ...


class RemembersSegments(Protocol):
    """The engine's segment cache as the index load fills it
    (:class:`matcher.matching.segment_cache.SegmentData`)."""

    def remember(self, blob: bytes, work_id: ObjectId) -> None: ...


class IndexedEngine(Protocol):
    """An engine's store, index storage and key layout, both sides' indexes, its segment
    data and integrity, and where it reports problems."""

    settings: Settings
    store: Store
    storage: Storage
    keys: Keys
    works: Side
    pages: Side
    segments: RemembersSegments
    integrity: Rebuilds
    problems: deque[str]
    index_pages: bool
