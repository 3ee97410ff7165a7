"""Passages two documents share, found by chaining their common anchors.

Anchors (:mod:`fingerprint.anchors`) common to both documents pair up, as the unique lines
of Heckel's difference algorithm do (CACM 1978, "A technique for isolating differences
between files"); an anchor repeated in both pairs its occurrences in order. Sorted by
position in document ``a``, consecutive pairs that advance together in both documents —
each gap at most ``max_gap`` content characters, and ``b`` stepping back no more than
``max_back`` — form one passage; a passage needs at least ``min_anchors`` anchors and
``min_chars`` characters, which filters chance collisions.

From the passages: the containment of ``a`` in ``b`` is the share of ``a``'s content
characters covered by passages (Broder's containment, measured in characters rather than
shingles, so that a typo costs the characters it touches and not k shingles), and likewise
for ``b`` in ``a``. Shuffled paragraphs give one passage each; an excerpt gives one passage
covering part of ``a``; typos and inserted ad lines leave gaps shorter than ``max_gap``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fingerprint.anchors import Anchors, Channel
from fingerprint.base import check_compatible


@dataclass(frozen=True)
class AlignParams:
    """Chaining rules; lengths are in content characters."""

    max_gap: int = 64
    max_back: int = 8
    min_anchors: int = 2
    min_chars: int = 12

    def __post_init__(self) -> None:
        if self.max_gap < 0 or self.max_back < 0 or self.min_anchors < 1 or self.min_chars < 0:
            raise ValueError("max_gap, max_back, min_chars must be >= 0 and min_anchors >= 1")


@dataclass(frozen=True)
class Passage:
    """A shared passage: ``[a_start, a_end)`` of ``a`` and ``[b_start, b_end)`` of ``b``."""

    a_start: int
    a_end: int
    b_start: int
    b_end: int
    anchors: int

    @property
    def chars(self) -> int:
        """Length of the passage in ``a``."""
        return self.a_end - self.a_start


@dataclass(frozen=True)
class Alignment:
    """The passages of ``a`` found in ``b`` and how much of each document they cover."""

    passages: tuple[Passage, ...]
    a_covered: int
    b_covered: int
    a_length: int
    b_length: int
    shared_anchors: int

    @property
    def containment_a(self) -> float:
        """Share of ``a``'s content characters found in ``b``: C(a, b)."""
        return self.a_covered / self.a_length if self.a_length else 0.0

    @property
    def containment_b(self) -> float:
        """Share of ``b``'s content characters found in ``a``: C(b, a)."""
        return self.b_covered / self.b_length if self.b_length else 0.0


def occurrence_pairs(a: Channel, b: Channel, max_repeat: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(i, j)`` with ``a.hashes[i] == b.hashes[j]``, paired by occurrence rank.

    A hash unique in both documents pairs once (Heckel's unique anchors); a hash seen r
    times in ``a`` and s times in ``b`` pairs its first min(r, s) occurrences in order,
    and a hash seen more than ``max_repeat`` times in either is not an anchor.
    """

    def ranked(channel: Channel) -> tuple[np.ndarray, np.ndarray]:
        order = np.lexsort((channel.starts, channel.hashes))
        hashes = channel.hashes[order].astype(np.uint64)
        heads = np.r_[True, hashes[1:] != hashes[:-1]] if len(hashes) else np.ones(0, bool)
        group_start = np.maximum.accumulate(np.where(heads, np.arange(len(hashes)), 0))
        rank = np.arange(len(hashes)) - group_start
        counts = np.diff(np.r_[np.flatnonzero(heads), len(hashes)])
        keep = np.repeat(counts <= max_repeat, counts)
        return ((hashes << np.uint64(8)) | rank.astype(np.uint64))[keep], order[keep]

    ka, ia = ranked(a)
    kb, ib = ranked(b)
    _, ja, jb = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    return ia[ja], ib[jb]


def covered(starts: np.ndarray, ends: np.ndarray) -> int:
    """Number of positions in the union of the intervals ``[starts, ends)``."""
    if len(starts) == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    s = np.asarray(starts, dtype=np.int64)[order]
    e = np.maximum.accumulate(np.asarray(ends, dtype=np.int64)[order])
    # An interval adds what reaches past the furthest end seen before it.
    previous = np.concatenate(([s[0]], e[:-1]))
    return int(np.maximum(e - np.maximum(s, previous), 0).sum())


def anchor_pairs(a: Anchors, b: Anchors) -> np.ndarray:
    """The anchors ``a`` and ``b`` share (:func:`occurrence_pairs`, both channels), as the
    rows ``a_start, a_end, b_start, b_end`` of an int64 array, sorted by ``a_start`` then
    ``b_start``: the pairs :func:`align` chains into passages."""
    check_compatible(a, b)
    spans = []
    for ca, cb in ((a.chars, b.chars), (a.pinyin, b.pinyin)):
        i, j = occurrence_pairs(ca, cb)
        spans.append(
            np.stack([ca.starts[i], ca.ends[i], cb.starts[j], cb.ends[j]]).astype(np.int64)
        )
    pairs = np.concatenate(spans, axis=1)
    return pairs[:, np.lexsort((pairs[2], pairs[0]))]


def align(a: Anchors, b: Anchors, params: AlignParams | None = None) -> Alignment:
    """Passages shared by ``a`` and ``b`` (see the module docstring)."""
    params = params or AlignParams()
    pairs = anchor_pairs(a, b)
    shared = pairs.shape[1]
    if shared == 0:
        return Alignment((), 0, 0, a.length, b.length, 0)
    a0, a1, b0, b1 = pairs
    joins = (
        (a0[1:] - a1[:-1] <= params.max_gap)
        & (b0[1:] - b0[:-1] >= -params.max_back)
        & (b0[1:] - b1[:-1] <= params.max_gap)
    )
    heads = np.flatnonzero(np.concatenate(([True], ~joins)))
    counts = np.diff(np.append(heads, shared))
    runs = np.stack(
        [
            a0[heads],
            np.maximum.reduceat(a1, heads),
            np.minimum.reduceat(b0, heads),
            np.maximum.reduceat(b1, heads),
            counts,
        ]
    )
    keep = (runs[4] >= params.min_anchors) & (runs[1] - runs[0] >= params.min_chars)
    runs = runs[:, keep]
    passages = tuple(Passage(*(int(x) for x in column)) for column in runs.T)
    return Alignment(
        passages,
        covered(runs[0], runs[1]),
        covered(runs[2], runs[3]),
        a.length,
        b.length,
        shared,
    )
