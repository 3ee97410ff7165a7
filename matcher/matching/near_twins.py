"""Near twins: a work whose text is nearly that of a work registered earlier.

A work is summed up at registration by a MIN_s sketch (Broder 1997: the ``SKETCH_SIZE``
smallest hashes) of the 8-grams of its content characters after normalisation (the
anchors' k-grams, :class:`fingerprint.anchors.AnchorParams`), built one segment at a time
(the MIN_s of a union is the MIN_s of its parts' MIN_s, so memory stays flat in the work's
length). Two works are near twins when each lies at least ``settings.near_twin_share``
inside the other (:func:`fingerprint.shingles.mins_containments`): a line added, removed or
mistyped keeps both containments near 1, while a sequel quoting a chapter of its
predecessor, or an anthology holding a novel, lies mostly outside the other work.

The store finds the candidates by the sketch's ``LOOKUP_KEYS`` smallest hashes (works whose
own smallest hashes share one of them): two works whose resemblance is at least 0.9, as two
near twins' is, share the smallest hash of their union with probability 0.9 and miss all of
the first 16 with a probability below 10^-15.

The sketch only finds near twins: a work is one only when the characters of it found
nowhere in the earlier work (:func:`unique_chars`, aligned segment by segment) are fewer
than a copy of them alone would need to be a match (:func:`unique_limit`), so an edition
with a chapter added is none. A near twin is reported as such (``same_text_as``,
``near_twin``, the scan's ``duplicates``) and indexed as any edition
(:mod:`matcher.matching.editions`): a page copying it is attributed to the edition that explains it
best, or names a tie (:meth:`matcher.matching.registry.Registry.register`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from fingerprint.align import align, covered
from fingerprint.hashing import ngram_hashes
from fingerprint.segments import Segment
from fingerprint.shingles import mins, mins_containments
from fingerprint.tokens import codepoints
from matcher.matching.prepared import ANCHOR_PARAMS, Located, prepare
from matcher.settings import MatchPolicy
from matcher.store.field_names import LOOKUP_KEYS as LOOKUP_KEYS

SKETCH_SIZE = 256
"""Hashes kept per work: containments within about ±0.014 at 0.95."""
GRAM = ANCHOR_PARAMS.char_k
EDGE = 200
"""Characters of context on each side of a segment aligned with the other work's text, so
that the segment's own edges are covered when the other work has them."""
SLACK = 1_000
MAX_SLACK = 20_000
"""How far (beyond the difference of their lengths, at most ``MAX_SLACK``) a segment's text
is looked for in the other work from where it sits in its own."""


def segment_sketch(located: Located) -> np.ndarray:
    """MIN_s of the content-character 8-gram hashes of one segment (int64: the 64-bit
    hashes shifted right by one, so the store keeps them as they sort)."""
    codes = codepoints(located.normalized.text)[located.positions]
    hashes = (ngram_hashes(codes, GRAM) >> np.uint64(1)).astype(np.int64)
    return mins(hashes, SKETCH_SIZE)


def sketch_many(located: Sequence[Located]) -> np.ndarray:
    """``merge`` of the segments' :func:`segment_sketch`: their content characters end to
    end hashed at once, the n-grams that cross from one segment into the next left out (a
    hash depends on its own ``GRAM`` characters alone)."""
    codes = [codepoints(s.normalized.text)[s.positions] for s in located]
    if not codes:
        return np.empty(0, dtype=np.int64)
    ends = np.cumsum([len(c) for c in codes])
    hashes = ngram_hashes(np.concatenate(codes), GRAM)
    starts = np.arange(len(hashes))
    inside = starts + GRAM <= ends[np.searchsorted(ends, starts, side="right")]
    return mins((hashes[inside] >> np.uint64(1)).astype(np.int64), SKETCH_SIZE)


def merge(sketches: Iterable[np.ndarray]) -> np.ndarray:
    """The sketch of a whole work from its segments' sketches."""
    parts = list(sketches)
    if not parts:
        return np.empty(0, dtype=np.int64)
    return mins(np.concatenate(parts), SKETCH_SIZE)


def containments(a: Iterable[int], b: Iterable[int]) -> tuple[float, float]:
    """How much of work A lies in work B, and of B in A, from their sketches."""
    sa = np.asarray(list(a), dtype=np.int64)
    sb = np.asarray(list(b), dtype=np.int64)
    return mins_containments(sa, sb, SKETCH_SIZE)


def is_near(a: Iterable[int], b: Iterable[int], share: float) -> bool:
    """Whether two works' sketches make them near twins at ``share`` (0: never)."""
    if not share:
        return False
    return min(containments(a, b)) >= share


def unique_limit(policy: MatchPolicy, content_chars: int) -> int:
    """Fewer characters of a work than this, found nowhere in another, could never be a
    match on their own (:func:`matcher.matching.verify.decide`): fewer than ``min_page_chars`` and
    ``min_quote_chars``, and than ``min_chars`` or ``min_work_share`` of the work."""
    share = int(policy.min_work_share * content_chars)
    return min(policy.min_page_chars, policy.min_quote_chars, max(policy.min_chars, share))


def unique_chars(text: str, segments: list[Segment], other: str, limit: int) -> int:
    """Content characters of ``text`` (cut into ``segments``) not found in ``other``
    (:func:`fingerprint.align.align` of each segment, with ``EDGE`` characters of context,
    and the part of ``other`` around the same place); counting stops at ``limit``.

    A segment whose text ``other`` holds at the same offset, or shifted by the difference
    of their lengths (a line added at the start), is found without aligning anything.
    """
    shift = len(other) - len(text)
    slack = min(abs(shift) + SLACK, MAX_SLACK)
    found = 0
    for s in segments:
        own = text[s.start : s.end]
        if any(other[s.start + d : s.end + d] == own for d in {0, shift} if s.start + d >= 0):
            continue
        lo, hi = max(0, s.start - EDGE), min(len(text), s.end + EDGE)
        mine = prepare(text[lo:hi], hi - lo + 1, "a work segment")
        start = mine.located.content_before(s.start - lo)
        end = mine.located.content_before(s.end - lo)
        left = max(0, min(lo, lo + shift) - slack)
        right = max(hi, hi + shift) + slack
        theirs = prepare(other[left:right], right - left + 1, "a work segment")
        passages = align(mine.anchors, theirs.anchors).passages
        starts = np.array([p.a_start for p in passages], dtype=np.int64)
        ends = np.array([p.a_end for p in passages], dtype=np.int64)
        shared = covered(np.clip(starts, start, end), np.clip(ends, start, end))
        found += end - start - shared
        if found >= limit:
            break
    return found
