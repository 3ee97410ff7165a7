"""Match records: a verdict's scores and its passages as spans of the original texts.

:class:`Evidence` turns :class:`~matcher.matching.verify.Verdict` objects into the records the store
keeps. Passages are in content characters; a span of the original text comes from the
text's normalisation and content positions only (:func:`matcher.matching.prepared.locate`), never a
whole :func:`~matcher.matching.prepared.prepare`. Work segments are read from the store by index,
only those a record quotes, and kept in a small cache keyed by the segment as the verdict
verified it (work, index, first character, length and simhash: a work registered again
with another text has other segments), under a lock (the threads of an admin worker share
it; see :class:`matcher.matching.segment_cache.SegmentCache`). The works' titles and sources come
from ``names`` (the engine's :class:`matcher.matching.work_names.WorkNames`, kept a minute), so a
record costs no read of ``works``; a work removed meanwhile has no segments left, and no
record.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fingerprint.align import Passage
from matcher.matching.prepared import Located, locate
from matcher.matching.verify import Verdict
from matcher.store import Store

MAX_PASSAGES = 50
PREVIEW_CHARS = 200
CACHE_BYTES = 64 << 20
"""The work segments' located texts kept for the next records (about 18 bytes a character:
some 3.7 million characters of segments, a thousand works of a few chapters each)."""
CHAR_BYTES = 18


@dataclass(frozen=True, eq=False)
class WorkSegment:
    """A segment's located text, where it starts in its work and its title."""

    located: Located
    start: int
    title: str


class Evidence:
    """Builds match records with evidence over one store (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        names: Callable[[Iterable[int]], dict[int, dict[str, Any]]],
        cache_bytes: int = CACHE_BYTES,
    ) -> None:
        self.store = store
        self.names = names
        self.cache_bytes = cache_bytes
        self._segments: OrderedDict[tuple[Any, ...], WorkSegment] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def records(
        self,
        verdicts: Sequence[Verdict],
        page: Located,
        page_doc: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """One record per verdict: work, scores, methods, evidence (and the page's id, URL
        and site when ``page_doc`` is given; ``extra`` fields are added as they are)."""
        if not verdicts:
            return []
        meta = self.names(
            [v.work for v in verdicts] + [s.work for v in verdicts for s in v.siblings]
        )
        records = []
        for v in verdicts:
            work = meta.get(v.work)
            if work is None:  # removed since it was indexed
                continue
            passages, indexes = v.alignment.passages, v.alignment.segments
            longest = sorted(range(len(passages)), key=lambda i: (-passages[i].chars, i))
            chosen = sorted(longest[:MAX_PASSAGES], key=lambda i: passages[i].a_start)
            segments = self._load(work, v, {indexes[i] for i in chosen})
            if any(indexes[i] not in segments for i in chosen):  # removed meanwhile
                continue
            items = [self._item(passages[i], indexes[i], v, segments, page) for i in chosen]
            quoted = {i["segment"]["index"]: i["segment"]["title"] for i in items}
            record: dict[str, Any] = {
                "work_id": work["_id"],
                "work_title": work.get("title", ""),
                "work_source": work.get("source", ""),
                "score": v.score,
                "containment": v.scores["containment_work"],
                "containment_work": v.scores["containment_work"],
                "containment_page": v.scores["containment_page"],
                "scores": v.scores,
                "methods": list(v.methods),
                "segments": self._held(work, set(indexes), quoted),
                "evidence": items,
                "siblings": siblings(v, meta),
                **(extra or {}),
            }
            if page_doc is not None:
                record.update(
                    page_id=page_doc["_id"], url=page_doc["url"], site=page_doc.get("site", "")
                )
                if page_doc.get("archive"):
                    record["archive"] = page_doc["archive"]
            records.append(record)
        return records

    def _held(
        self, work: dict[str, Any], held: set[int], titles: dict[int, str]
    ) -> list[dict[str, Any]]:
        """Every segment of the work (a chapter, when the work is a novel) that a passage of
        the page comes from, with its title, in order: those of the quoted passages as read,
        the others' titles read in one query (a whole-book download holds more chapters
        than :data:`MAX_PASSAGES` passages quote)."""
        missing = held - titles.keys()
        if missing:
            for doc in self.store.works.work_segments(work["_id"], missing, text=False):
                titles[int(doc["index"])] = doc.get("title", "")
        return [{"index": i, "title": titles.get(i, "")} for i in sorted(held)]

    def _item(
        self,
        p: Passage,
        index: int,
        v: Verdict,
        segments: dict[int, WorkSegment],
        page: Located,
    ) -> dict[str, Any]:
        offset, _ = v.alignment.segment_spans[index]
        segment = segments[index]
        local = segment.located.original_span(p.a_start - offset, p.a_end - offset)
        ps = page.original_span(p.b_start, p.b_end)
        text = page.normalized.original[ps[0] : ps[1]]
        if len(text) > PREVIEW_CHARS:
            text = text[:PREVIEW_CHARS] + "…"
        return {
            "work_span": [segment.start + local[0], segment.start + local[1]],
            "page_span": list(ps),
            "text": text,
            "chars": p.chars,
            "segment": {"index": index, "title": segment.title},
        }

    def _load(
        self, work: dict[str, Any], verdict: Verdict, indexes: set[int]
    ) -> dict[int, WorkSegment]:
        """The work's segments of ``indexes``, from the cache or one store query."""
        headers = {h.header.index: h.header for h in verdict.hits}

        def key(i: int) -> tuple[Any, ...]:
            h = headers.get(i)
            return (str(work["_id"]), i) + ((h.start, h.length, h.simhash) if h else ())

        out = {}
        with self._lock:
            for i in indexes:
                cached = self._segments.get(key(i))
                if cached is not None:
                    self._segments.move_to_end(key(i))
                    out[i] = cached
        missing = indexes - set(out)
        if missing:
            for doc in self.store.works.work_segments(work["_id"], missing):
                segment = WorkSegment(locate(doc["text"]), int(doc["start"]), doc.get("title", ""))
                out[int(doc["index"])] = self._remember(key(int(doc["index"])), segment)
        return out

    def _remember(self, key: tuple[Any, ...], segment: WorkSegment) -> WorkSegment:
        with self._lock:
            if key not in self._segments:
                self._segments[key] = segment
                self._bytes += _weight(segment)
            while self._bytes > self.cache_bytes and len(self._segments) > 1:
                _, dropped = self._segments.popitem(last=False)
                self._bytes -= _weight(dropped)
        return segment


def siblings(v: Verdict, meta: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """The record's ``siblings``: the other editions of the work that explain the page too
    (:mod:`matcher.matching.editions`), the best first, each with ``tie`` (it explains the page as
    well) and the containments of its own alignment with the page; those removed meanwhile
    are left out."""
    return [
        {
            "work_id": meta[s.work]["_id"],
            "work_title": meta[s.work].get("title", ""),
            "work_source": meta[s.work].get("source", ""),
            "tie": s.tie,
            "containment_work": round(s.containment_work, 4),
            "containment_page": round(s.containment_page, 4),
        }
        for s in v.siblings
        if s.work in meta
    ]


def _weight(segment: WorkSegment) -> int:
    """About what a cached segment holds in memory (:data:`CHAR_BYTES` a character)."""
    return CHAR_BYTES * len(segment.located.normalized.original) + 256
