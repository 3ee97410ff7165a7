"""Work segments' verification data: a reference in Redis, the data in MongoDB, a cache here.

The works' index holds, per segment, only a 24-byte reference
(:func:`matcher.index.segment_refs.segment_ref`: the digest of the segment's blob and its
work's id); the blob (header and anchors, :func:`matcher.matching.prepared.segment_blob`) is
the ``anchors`` fingerprint the store keeps anyway.
Verifying a page reads the references of its candidate segments (one ``MGET``), takes the
blobs it has already parsed from a bounded least-recently-used cache keyed by digest, and
reads the others from the store in one query by work id and segment (the fingerprints'
shard key). Redis then holds no per-character
verification data, and a re-registered work can never be verified against stale data: a
new text has a new digest.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from bson import ObjectId

from fingerprint.anchors import Anchors
from fingerprint.base import FingerprintError
from matcher.index.segment_refs import is_segment_ref, ref_work, segment_ref
from matcher.index.storage import Storage
from matcher.keys import Keys, owner_segment
from matcher.matching.prepared import (
    SegmentHeader,
    from_segment_blob,
)
from matcher.store import Store

log = logging.getLogger(__name__)

Parsed = tuple[SegmentHeader, Anchors]


@dataclass
class SegmentCache:
    """Parsed segment blobs by reference, least recently used dropped first, at most
    ``max_bytes`` of blob in all (the parsed arrays take about as much). Shared by the
    threads of a process (the admin's gthread workers): each call holds the cache's lock, so
    a lookup and its ``move_to_end``, an insert and its evictions, are one step to the other
    threads whatever the interpreter lets run between them (CPython's GIL happens not to
    switch there; a free-threaded build may)."""

    max_bytes: int
    _items: OrderedDict[bytes, tuple[Parsed, int]] = field(default_factory=OrderedDict)
    size: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def get(self, ref: bytes) -> Parsed | None:
        with self._lock:
            item = self._items.get(ref)
            if item is None:
                return None
            self._items.move_to_end(ref)
            return item[0]

    def put(self, ref: bytes, parsed: Parsed, size: int) -> None:
        with self._lock:
            if size > self.max_bytes or ref in self._items:
                return
            self._items[ref] = (parsed, size)
            self.size += size
            while self.size > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self.size -= dropped

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class SegmentData:
    """Reads candidate segments' verification data (see the module docstring)."""

    storage: Storage
    store: Store
    keys: Keys
    cache: SegmentCache
    problem: Callable[[str], None]

    def load(self, owners: Sequence[int]) -> dict[int, Parsed]:
        """The parsed blob of each of ``owners`` (segment owner ids) that the index holds;
        a segment whose data is missing or unusable is reported and left out."""
        names = [self.keys.segment(o) for o in owners]
        refs, _ = self.storage.mget(names, "reading work segments")
        found: dict[int, Parsed] = {}
        wanted: dict[int, bytes] = {}
        for owner, ref in zip(owners, refs, strict=True):
            if ref is None:
                self.problem(f"work segment {owner} is in the index but its data is missing")
            elif not is_segment_ref(ref):  # an index built before references: the blob itself
                parsed = self._parse(owner, ref)
                if parsed is not None:
                    found[owner] = parsed
            elif (hit := self.cache.get(ref)) is not None:
                found[owner] = hit
            else:
                wanted[owner] = ref
        if wanted:
            pairs = [(ref_work(ref), owner_segment(owner)) for owner, ref in wanted.items()]
            for fp in self.store.fingerprints.work_fingerprints(pairs, "anchors"):
                owner, blob = int(fp["seq"]), bytes(fp["value"])
                if owner not in wanted:
                    continue
                parsed = self._parse(owner, blob)
                if parsed is None:
                    continue
                found[owner] = parsed
                self.cache.put(segment_ref(blob, fp["owner_id"]), parsed, len(blob))
            for owner in wanted.keys() - found.keys():
                self.problem(f"work segment {owner} is in the index but not in the store")
        return found

    def of_works(self, work_ids: Iterable[ObjectId]) -> Iterator[Parsed]:
        """Every segment of the works ``work_ids``, read from the store (not from the index,
        which may have lost them): the verification of a match before it is let go."""
        for work_id in work_ids:
            for fp in self.store.fingerprints.owner_fingerprints("work", work_id, "anchors"):
                blob = bytes(fp["value"])
                ref = segment_ref(blob, work_id)
                parsed = self.cache.get(ref)
                if parsed is None:
                    parsed = self._parse(int(fp["seq"]), blob)
                    if parsed is None:
                        continue
                    self.cache.put(ref, parsed, len(blob))
                yield parsed

    def remember(self, blob: bytes, work_id: ObjectId) -> None:
        """Parse and cache a blob read in bulk (the embedded scan's index load)."""
        if len(blob) + self.cache.size <= self.cache.max_bytes:
            parsed = self._parse(-1, blob)
            if parsed is not None:
                self.cache.put(segment_ref(blob, work_id), parsed, len(blob))

    def _parse(self, owner: int, blob: bytes) -> Parsed | None:
        try:
            return from_segment_blob(blob)
        except FingerprintError as exc:
            self.problem(f"work segment {owner}: stored fingerprint unusable: {exc}")
            return None
