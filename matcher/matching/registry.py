"""Registering works: their segments and fingerprints in MongoDB, their index entries in Redis.

A work is cut into segments (:func:`fingerprint.segments.segment`); each is stored with its
text (and its overlap with the next), fingerprinted with the same steps as a page
(:func:`matcher.matching.prepared.prepare`; a batch of segments together,
:func:`~matcher.matching.prepared.prepare_many`, the same values), and indexed as an owner
of the works' side (:class:`matcher.index.indexes.Side`); its verification blob
(:func:`matcher.matching.prepared.segment_blob`)
is stored with its fingerprints and the index holds a reference to it
(:mod:`matcher.matching.segment_cache`). Memory stays flat in the length of the work: a
first pass counts each segment's content characters (the blobs place each segment in its
work), a second prepares, writes and drops a batch of segments at a time (both passes take
at most ``BATCH_SEGMENTS`` segments at a time).

Every write is idempotent; registering a work again replaces its segments (those it no
longer has are deleted) and its index entries. A work registered (again) takes back the
archived matches of an earlier registration under its key or with its text, their reviews
with them (:meth:`matcher.store.archived_matches.ArchivedMatches.restore_archived`); a
removed work's matches are archived, never deleted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from bson import ObjectId

from fingerprint.base import array_from_hex
from fingerprint.segments import Segment, SegmentParams, segment
from matcher.errors import UnusableText, redis_errors
from matcher.index.indexes import Side
from matcher.index.segment_refs import segment_ref
from matcher.index.storage import Storage
from matcher.keys import Keys, segment_owner
from matcher.matching import near_twins
from matcher.matching.prepared import (
    INDEX_KEYS,
    SegmentHeader,
    as_text,
    content_hash,
    locate_many,
    prepare_many,
    segment_blob,
)
from matcher.settings import Settings
from matcher.store import Store

SEGMENT_PARAMS = SegmentParams()
BATCH_SEGMENTS = 64
BATCH_CHARS = 1_000_000
"""Segments written together: one bulk write per collection, one index call per tag group."""
_Load = Callable[[], tuple[str, list[Segment], int]]
IN_FLIGHT = 2
"""Batches prepared and not yet indexed, at most (memory stays flat in the work's length)."""


@dataclass(frozen=True)
class Registration:
    """What registering a work did (:meth:`Registry.register`)."""

    work_id: str
    created: bool
    """A new work; False: one was registered under its key already (updated in place)."""
    changed: bool
    """Its text differs from the one registered under its key before (True when created)."""
    holder: str = ""
    """The work its copies are recorded under: itself, or the work it is a twin of (a near
    twin records its own)."""
    restored: int = 0
    """Archived matches of an earlier registration (same key, or same text) given to the
    ``holder``; each is active again once its page is matched with it again."""


@dataclass
class Registry:
    """Registers, re-indexes and removes works over one store and the works' indexes."""

    settings: Settings
    store: Store
    storage: Storage
    works: Side
    keys: Keys
    index_now: bool = True
    """Write each registered segment to the Redis indexes at once; ``False`` leaves that to
    a bulk load (:func:`matcher.index.maintenance.load_side`) after many registrations."""

    def add(self, text: str | bytes, *, title: str, **fields: Any) -> str:
        """Register (or update) a work, segment and index it; returns its id
        (:meth:`register`)."""
        return self.register(text, title=title, **fields).work_id

    def register(
        self,
        text: str | bytes,
        *,
        title: str,
        source: str = "",
        author: str = "",
        owner: str = "",
        tags: Iterable[str] = (),
        key: str | None = None,
    ) -> Registration:
        """Register (or update) a work, segment and index it; returns what was done.

        The work's unique key is ``key``, else ``source`` (e.g. its file path), else the
        hash of its text: registering the same work again updates it in place. A work whose
        text is that of a work registered earlier is its twin (``same_text_as``, reported
        by the CLI, the admin and the scan): it is stored but not indexed, so identical
        works never count as text many works share (boilerplate), and its copies are
        recorded under the earlier work (identical texts cannot be told apart). A work
        whose text and an earlier indexed work's each lie at least
        ``settings.near_twin_share`` inside the other is that work's near twin
        (:mod:`matcher.matching.near_twins`; ``same_text_as`` and ``near_twin``), reported as such
        and indexed as any edition (:mod:`matcher.matching.editions`): a page copying it is
        attributed to the edition that explains it best, or names a tie.
        The archived matches of an earlier registration under its key or with its text go
        back to it (``restored``), before its segments are indexed, so a page matched
        with it from then on finds its record and review; a twin's, those of its text, go
        to the work it is a twin of, which records its copies (``holder``).
        Raises
        :class:`UnusableText` for a text longer than ``settings.max_work_chars`` or with
        fewer than ``settings.min_work_chars`` content characters after normalisation.
        """
        what = f"work {title!r}"
        text = as_text(text, what)
        if len(text) > self.settings.max_work_chars:
            limit = self.settings.max_work_chars
            raise UnusableText(f"{what} has {len(text):,} characters, more than {limit:,}")
        segments = segment(text, SEGMENT_PARAMS)
        cores, sketch = _survey(text, segments)
        if sum(cores) < self.settings.min_work_chars:
            raise UnusableText(
                f"{what} has {sum(cores)} content characters after normalisation;"
                f" at least {self.settings.min_work_chars} are needed"
            )
        digest = content_hash(text)
        doc, before = self.store.works.register_work(
            key or source or digest,
            title=title,
            content_hash=digest,
            length=len(text),
            segments=len(segments),
            author=author,
            source=source,
            owner=owner,
            tags=tags,
            sketch=sketch.tolist(),
        )
        created = before is None
        if not created:
            self.unindex(doc["_id"])
        head = self._place(
            doc, digest, sketch.tolist(), lambda: (text, segments, sum(cores)), marked=not created
        )
        exact = _exact(head, digest)  # a twin, not a near twin (an edition, indexed)
        holder = head if exact else doc  # the work its copies are recorded under
        if exact:
            restored = self.store.archived_matches.restore_archived(doc, into=head)
        else:
            restored = self.store.archived_matches.restore_archived(doc)
        self._index(doc, text, segments, cores, fresh=created, indexed=not exact)
        if not created:  # its twins are compared with its new text, now stored
            self._resettle(self.store.twins.twins(doc["_id"]))
        changed = created or before.get("content_hash") != digest
        return Registration(str(doc["_id"]), created, changed, str(holder["_id"]), restored)

    def _place(
        self, doc: dict, digest: str, sketch: list[int], load: _Load, *, marked: bool = True
    ) -> dict | None:
        """Mark ``doc`` the twin of the earliest indexed work with its text, else the near
        twin of the earliest indexed work with nearly its text, else neither; returns that
        work, or None (neither). ``doc`` is to be indexed unless it is a twin (the work
        returned has its text, :func:`_exact`): a near twin is. ``load`` gives its text,
        segments and content characters, when they are needed. A work just created (not
        ``marked``) has no mark to clear: neither is then not written."""
        first = self.store.twins.twin_of(doc["_id"], digest)
        near = None if first else self._near_twin_of(doc["_id"], sketch, load)
        head = first or near
        if head is not None or marked:
            self.store.twins.set_same_text(
                doc["_id"], head["_id"] if head else None, key=doc["key"], near=near is not None
            )
        return head

    def _near_twin_of(self, work_id: ObjectId, sketch: list[int], load: _Load) -> dict | None:
        """The earliest indexed work this one is a near twin of, if any: their sketches
        say each lies at least ``settings.near_twin_share`` inside the other, and the
        characters of this one found nowhere in it could never be a match on their own
        (:func:`matcher.matching.near_twins.unique_chars`): the two are one text for a reader, and
        reported as such; both are indexed, editions of each other
        (:mod:`matcher.matching.editions`)."""
        share = self.settings.near_twin_share
        if not share or not sketch:
            return None
        found = self.store.twins.near_twin_candidates(work_id, sketch[: near_twins.LOOKUP_KEYS])
        for work in found:
            if not near_twins.is_near(sketch, work["near_sketch"], share):
                continue
            text, segments, content_chars = load()
            limit = near_twins.unique_limit(self.settings.policy, content_chars)
            other = self.store.works.work_text(work["_id"])
            if near_twins.unique_chars(text, segments, other, limit) < limit:
                return work
        return None

    def _resettle(self, twins: list[dict], removed: dict | None = None) -> None:
        """``twins`` (earliest first) lost the work they were (near) twins of (``removed``,
        when it was removed), or its text changed: each is placed again (:meth:`_place`),
        so the earliest that has no indexed work with its very text is indexed (a near
        twin is already), and the others with that text become its twins; each is marked
        the near twin of a work it nearly repeats, if any. A twin indexed in place of a
        removed work with its very text takes the removed work's archived matches
        (:meth:`~matcher.store.archived_matches.ArchivedMatches.restore_archived`):
        its copies were recorded there."""
        for twin in twins:
            digest = twin.get("content_hash", "")
            was_indexed = bool(twin.get("near_twin"))
            head = self._place(twin, digest, twin.get("near_sketch") or [], self._loader(twin))
            indexed = not _exact(head, digest)
            if indexed and not was_indexed:
                self.reindex(str(twin["_id"]))
                if removed is not None and removed["content_hash"] == digest:
                    self.store.archived_matches.restore_archived(removed, into=twin)
            elif was_indexed and not indexed:
                self.unindex(twin["_id"])

    def _loader(self, doc: dict) -> _Load:
        """What :meth:`_place` loads of a stored work: its text, segments and content
        characters."""

        def load() -> tuple[str, list[Segment], int]:
            text = self.store.works.work_text(doc["_id"])
            segments = segment(text, SEGMENT_PARAMS)
            return text, segments, sum(_survey(text, segments)[0])

        return load

    def reindex(self, work_id: str) -> None:
        """Fingerprint and index a stored work again (the ``index_work`` task; idempotent)."""
        doc = self.store.works.get_work(work_id)
        if doc is None:
            raise UnusableText(f"no work with id {work_id}")
        text = self.store.works.work_text(doc["_id"])
        segments = segment(text, SEGMENT_PARAMS)
        cores, sketch = _survey(text, segments)
        if "near_sketch" not in doc:  # registered before near twins were looked for
            self.store.twins.set_sketch(doc["_id"], sketch.tolist(), key=doc["key"])
        self.unindex(doc["_id"])
        self._index(doc, text, segments, cores, indexed=not is_twin(doc))

    def remove(self, work_id: str) -> bool:
        """Remove a work, its segments and index entries; its matches are archived with
        their reviews (:meth:`matcher.store.works.Works.delete_work`). Its twins and
        near twins, if any, are placed again (:meth:`_resettle`): the earliest of its twins is
        indexed in its place, and the others become its twins (or near twins) if they are."""
        doc = self.store.works.get_work(work_id, {"seq": 1})
        if doc is None:
            return False
        self.unindex(doc["_id"])
        twins = self.store.twins.twins(doc["_id"])
        removed = self.store.works.delete_work(work_id)
        self._resettle(twins, removed)
        return True

    def unindex(self, work_id: ObjectId) -> None:
        """Remove every segment of a work from the works' indexes (its store records stay)."""
        stored = self.store.fingerprints.owner_fingerprints("work", work_id, INDEX_KEYS)
        with redis_errors("removing a work from the index"):
            for fp in stored:
                value = fp["value"]
                keys = array_from_hex(value["windows"], "<u8", np.uint64)
                self.works.remove(int(fp["seq"]), int(value["simhash"], 16), keys)
        segments = [self.keys.segment(int(fp["seq"])) for fp in stored]
        self.storage.unlink(segments, "removing a work's segments")

    def _index(
        self,
        doc: dict,
        text: str,
        segments: list[Segment],
        cores: list[int],
        *,
        fresh: bool = False,
        indexed: bool = True,
    ) -> None:
        """Store, fingerprint and index (unless not ``indexed``: a twin; a near twin is
        indexed) the segments, a batch at a time, in three stages that overlap: this thread
        prepares a batch while one thread writes the previous batch to the store and another
        indexes the batch before that once the store holds it (a segment is in the index
        only after its verification data is in the store). ``fresh``: the work was just
        created, so none of its segments is in the index (its seq is new)."""
        work_seq = int(doc["seq"])
        try:
            owners = [segment_owner(work_seq, s.index) for s in segments]
        except ValueError as exc:
            raise UnusableText(f"work {doc.get('title', '')!r}: {exc}") from exc
        offsets = np.cumsum([0, *cores[:-1]]).tolist()
        with (
            ThreadPoolExecutor(1, thread_name_prefix="fptrack-store") as stores,
            ThreadPoolExecutor(1, thread_name_prefix="fptrack-index") as indexes,
        ):
            pending: deque[Future] = deque()
            for batch in self._batches(doc, text, segments, cores, owners, offsets):
                stored = stores.submit(self._store_batch, doc["_id"], batch, fresh)
                if indexed:
                    pending.append(indexes.submit(self._index_batch, stored, batch, fresh))
                else:
                    pending.append(stored)
                while len(pending) > IN_FLIGHT:
                    pending.popleft().result()
            for done in pending:
                done.result()
        if not fresh:  # a text registered again may have had more segments
            self.store.works.drop_work_segments(doc["_id"], from_index=len(segments))

    def _batches(
        self,
        doc: dict,
        text: str,
        segments: list[Segment],
        cores: list[int],
        owners: list[int],
        offsets: list[int],
    ) -> Iterator[_Batch]:
        """The segments prepared, in batches of at most ``BATCH_SEGMENTS`` segments or
        ``BATCH_CHARS`` characters, each fingerprinted together
        (:func:`matcher.matching.prepared.prepare_many`)."""
        work_seq, work_length = int(doc["seq"]), sum(cores)
        rows = list(zip(segments, owners, offsets, cores, strict=True))
        start = 0
        while start < len(rows):
            end, chars = start, 0
            while end < len(rows) and end - start < BATCH_SEGMENTS and chars < BATCH_CHARS:
                s = rows[end][0]
                chars += s.stop - s.start
                end += 1
            parts = [text[s.start : s.stop] for s, *_ in rows[start:end]]
            batch = _Batch()
            for (s, owner, offset, core), part, prepared in zip(
                rows[start:end], parts, prepare_many(parts), strict=True
            ):
                header = SegmentHeader(
                    work_seq, s.index, offset, core, work_length, s.start, prepared.simhash
                )
                blob = segment_blob(header, prepared.anchors)
                stored = prepared.stored_fingerprints()
                stored["anchors"]["value"] = blob
                segment_doc = {"index": s.index, "start": s.start, "end": s.end, "title": s.title}
                batch.segments.append({**segment_doc, "text": part})
                batch.fingerprints.append((owner, s.index, stored))
                batch.owners.append(owner)
                batch.simhashes.append(prepared.simhash)
                batch.keys.append(prepared.window_keys)
                batch.refs.append((self.keys.segment(owner), segment_ref(blob, doc["_id"])))
                batch.chars += len(part)
            yield batch
            start = end

    def _store_batch(self, work_id: ObjectId, batch: _Batch, fresh: bool) -> None:
        """A batch of segments into the store: their text and fingerprints (inserted when
        ``fresh``: the work was just created)."""
        self.store.works.save_work_segments(work_id, batch.segments, fresh=fresh)
        self.store.fingerprints.save_fingerprints_many(
            "work", work_id, batch.fingerprints, fresh=fresh
        )

    def _index_batch(self, stored: Future, batch: _Batch, fresh: bool) -> None:
        """A batch of segments into the index (``index_now``), once ``stored`` is done."""
        stored.result()
        if self.index_now and batch.owners:
            with redis_errors("indexing a work"):
                self.works.add_many(batch.owners, batch.simhashes, batch.keys, fresh=fresh)
            self.storage.set_many(batch.refs, "indexing a work")


@dataclass
class _Batch:
    """Segments prepared and not yet written."""

    segments: list[dict] = field(default_factory=list)
    fingerprints: list[tuple[int, int, dict]] = field(default_factory=list)
    owners: list[int] = field(default_factory=list)
    simhashes: list[int] = field(default_factory=list)
    keys: list[np.ndarray] = field(default_factory=list)
    refs: list[tuple[str, bytes]] = field(default_factory=list)
    chars: int = 0


def is_twin(work: dict) -> bool:
    """Whether a stored work is a twin (``same_text_as`` another work and not ``near_twin``:
    its very text), stored and never indexed; a near twin is indexed (:meth:`Registry.register`)."""
    return bool(work.get("same_text_as")) and not work.get("near_twin")


def _exact(head: dict | None, digest: str) -> bool:
    """Whether the work :meth:`Registry._place` found for a text of ``digest`` has that
    very text (a twin, not indexed), not nearly (a near twin, indexed)."""
    return head is not None and head.get("content_hash") == digest


def _survey(text: str, segments: list[Segment]) -> tuple[list[int], np.ndarray]:
    """Each segment's content characters after normalisation (its own length, its overlap
    with the next left out), and the work's near-twin sketch
    (:mod:`matcher.matching.near_twins`); ``BATCH_SEGMENTS`` segments normalised together."""
    cores, sketches = [], []
    for at in range(0, len(segments), BATCH_SEGMENTS):
        located = locate_many([text[s.start : s.end] for s in segments[at : at + BATCH_SEGMENTS]])
        cores += [len(one.positions) for one in located]
        sketches.append(near_twins.sketch_many(located))
    return cores, near_twins.merge(sketches)
