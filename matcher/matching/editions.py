"""Editions: registered works that share most of their text, and which of them a page copies.

Rights holders register several editions of one work (revised, abridged, another
publisher's), which share most of their text. Text that registered works share is
boilerplate only when *unrelated* works share it (a licence notice, a site's footer): the
text a group of editions shares is their text, and a page copying it is a copy, attributed
to the edition that explains it best, the others named as its siblings
(:func:`matcher.matching.verify.judge`).

Two works are editions of each other when each lies at least ``policy.edition_share``
inside the other (Broder's containments of their content 8-grams, estimated from the
near-twin sketches the works get at registration, :mod:`matcher.matching.near_twins`): editions
differing by a fifth of their text lie about 0.8 inside each other, while volumes of a series
sharing a preface, sibling documents sharing a section, or works sharing a licence notice
lie mostly outside each other. A page's candidate works fall into groups, the connected
components of that relation (:func:`groups`); a work alone is its own group. Pairs are
looked for among works whose sketches share one of their :data:`PAIR_KEYS` smallest hashes
(two works whose resemblance is at least 0.4, as editions' is, miss all of them with a
probability below 10^-7), and not by a hash more than :data:`CROWDED` of them hold, so a
page carrying a licence that a thousand short works hold costs no million comparisons.

Which edition explains a page best (:func:`differences`): the one whose text differs least
from the page over what the page copies, counted in content characters: the page's
characters, inside the passages any edition of the group shares with it, that the
edition's shared anchors do not cover (a sentence another edition words otherwise, a
paragraph it alone holds), plus the edition's own characters inside its passages, and
between two passages that follow each other on the page, that the page lacks (a paragraph
an abridged edition dropped: at most :data:`SKIPPED_MAX` a gap, so a page copying two
chapters far apart is not charged the chapters between, and only between passages of
:data:`MIN_RUN` characters or more). Each part of the page is counted at one place of the
edition (:func:`explaining`: a phrase the edition repeats elsewhere is no difference).
Editions whose differences are within :data:`TIE_CHARS` of the least explain the page as
well: a tie, named as such (a chapter every edition holds word for word).
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from fingerprint.align import Passage, covered
from matcher.matching.near_twins import containments

PAIR_KEYS = 32
"""Smallest sketch hashes by which works are paired for comparison."""
SKIPPED_MAX = 2_000
"""Most characters of an edition counted as missing from the page in one gap between two
passages that follow each other on the page."""
MIN_RUN = 64
"""Passages shorter than this (a phrase the work repeats, a heading found elsewhere) are
not taken for the ends of a gap the page skips."""
TIE_CHARS = 8
"""Editions whose differences from the page are at most this many characters apart explain
it as well (about one anchor: the edges of a passage fall a few characters apart with the
text around it)."""
CROWDED = 64
"""A hash among the smallest of more works than this is text many works share (a licence in
a catalogue of short works): the works are not paired by it (editions share a score of
their smallest hashes, and are paired by the others)."""
CACHED_WORKS = 4_096
"""Works' sketches kept in a process (2 KiB each)."""


def related(a: np.ndarray, b: np.ndarray, share: float) -> bool:
    """Whether two works whose sketches are ``a`` and ``b`` are editions of each other:
    each lies at least ``share`` inside the other."""
    if not share or not len(a) or not len(b):
        return False
    return min(containments(a, b)) >= share


def groups(sketches: Mapping[int, np.ndarray], share: float) -> dict[int, int]:
    """The works of ``sketches`` (by seq) that have an edition among them, each mapped to
    its group (the smallest seq of the group); a work with none is left out.

    >>> a = np.arange(0, 256)
    >>> groups({1: a, 2: a + 10, 3: a + 1000}, 0.6)
    {1: 1, 2: 1}
    """
    if not share or len(sketches) < 2:
        return {}
    parent = {seq: seq for seq in sketches}

    def root(seq: int) -> int:
        while parent[seq] != seq:
            parent[seq] = parent[parent[seq]]
            seq = parent[seq]
        return seq

    by_key: dict[int, list[int]] = {}
    for seq in sorted(sketches):
        for key in sketches[seq][:PAIR_KEYS].tolist():
            by_key.setdefault(key, []).append(seq)
    tried: set[tuple[int, int]] = set()
    for seqs in by_key.values():
        if len(seqs) > CROWDED:
            continue
        for i, a in enumerate(seqs):
            for b in seqs[i + 1 :]:
                if (a, b) in tried or root(a) == root(b):
                    continue
                tried.add((a, b))
                if related(sketches[a], sketches[b], share):
                    ra, rb = root(a), root(b)
                    parent[max(ra, rb)] = min(ra, rb)
    found = {seq: root(seq) for seq in sketches}
    sizes: dict[int, int] = {}
    for g in found.values():
        sizes[g] = sizes.get(g, 0) + 1
    return {seq: g for seq, g in sorted(found.items()) if sizes[g] > 1}


class Sketches:
    """Works' near-twin sketches by seq, read through ``works_by_seq`` (a store's) and kept
    (at most :data:`CACHED_WORKS`, least recently used dropped first). A work is known by
    its seq and length: registered again with another text, it is read again."""

    def __init__(
        self,
        works_by_seq: Callable[[Iterable[int], dict[str, int]], dict[int, dict]],
        limit: int = CACHED_WORKS,
    ) -> None:
        self._read = works_by_seq
        self._limit = limit
        self._known: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, lengths: Mapping[int, int]) -> dict[int, np.ndarray]:
        """The sketches of the works ``lengths`` names (seq -> the work's length in content
        characters), those not known read in one query; works without one are left out."""
        out: dict[int, np.ndarray] = {}
        missing = []
        with self._lock:
            for seq, length in lengths.items():
                known = self._known.get((seq, length))
                if known is None:
                    missing.append(seq)
                else:
                    self._known.move_to_end((seq, length))
                    out[seq] = known
        if missing:
            read = self._read(missing, {"near_sketch": 1})
            with self._lock:
                for seq in missing:
                    sketch = np.asarray((read.get(seq) or {}).get("near_sketch") or [], np.int64)
                    self._known[(seq, lengths[seq])] = sketch
                    out[seq] = sketch
                while len(self._known) > self._limit:
                    self._known.popitem(last=False)
        return {seq: s for seq, s in out.items() if len(s)}


def spans_mask(starts: np.ndarray, ends: np.ndarray, length: int) -> np.ndarray:
    """Positions ``0..length`` inside one of the intervals ``[starts, ends)``."""
    marks = np.zeros(length + 1, dtype=np.int64)
    np.add.at(marks, np.clip(starts, 0, length), 1)
    np.add.at(marks, np.clip(ends, 0, length), -1)
    return np.cumsum(marks)[:length] > 0


def differences(
    passages: Sequence[Passage], pairs: np.ndarray, region: np.ndarray, max_gap: int
) -> int:
    """How many content characters an edition's text and the page differ by over what the
    page copies (see the module docstring).

    ``passages``: the edition's passages (``a`` the work, ``b`` the page); ``pairs``: the
    anchors it shares with the page (:func:`fingerprint.align.anchor_pairs`, in the work's
    and the page's content characters); ``region``: the page positions inside a passage of
    any edition of the group; ``max_gap``: the alignment's largest gap.
    """
    passages = explaining(passages, len(region))
    if not passages:
        return int(region.sum())
    a0, a1, b0, b1 = (np.array([getattr(p, f) for p in passages], dtype=np.int64)
                      for f in ("a_start", "a_end", "b_start", "b_end"))  # fmt: skip
    pairs = _inside(pairs, a0, a1, b0, b1)
    page_missing = int((region & ~spans_mask(pairs[2], pairs[3], len(region))).sum())
    own = covered(a0, a1) - covered(pairs[0], pairs[1])
    runs = np.flatnonzero((a1 - a0 >= MIN_RUN) & (b1 - b0 >= MIN_RUN))
    order = runs[np.argsort(b0[runs], kind="stable")]
    skipped = 0
    for i, j in itertools.pairwise(order):
        gap = a0[j] - a1[i]
        if gap > 0 and 0 <= b0[j] - b1[i] <= max_gap:
            skipped += min(int(gap), SKIPPED_MAX)
    return page_missing + own + skipped


def explaining(passages: Sequence[Passage], page_length: int) -> list[Passage]:
    """The passages that explain the page, one place of the work for each part of it: the
    longest first (on the page), then each other one unless its page text lies mostly
    inside those kept (text the work repeats elsewhere, a phrase found twice)."""
    kept: list[Passage] = []
    taken = np.zeros(page_length, dtype=bool)
    for p in sorted(passages, key=lambda p: (-(p.b_end - p.b_start), p.b_start, p.a_start)):
        span = taken[p.b_start : p.b_end]
        if len(span) and span.mean() > 0.5:
            continue
        kept.append(p)
        taken[p.b_start : p.b_end] = True
    return kept


def _inside(
    pairs: np.ndarray, a0: np.ndarray, a1: np.ndarray, b0: np.ndarray, b1: np.ndarray
) -> np.ndarray:
    """The anchor pairs lying inside a passage on both sides (the last passage starting at
    or before each in the work): chance anchors outside the passages explain nothing."""
    if not pairs.shape[1]:
        return pairs
    order = np.argsort(a0, kind="stable")
    at = np.searchsorted(a0[order], pairs[0], side="right") - 1
    found = at >= 0
    p = order[np.maximum(at, 0)]
    inside = found & (pairs[1] <= a1[p]) & (pairs[2] >= b0[p]) & (pairs[3] <= b1[p])
    return pairs[:, inside]
