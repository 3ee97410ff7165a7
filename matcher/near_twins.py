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
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from fingerprint.hashing import ngram_hashes
from fingerprint.shingles import mins, mins_containments
from fingerprint.tokens import codepoints
from matcher.prepared import ANCHOR_PARAMS, Located

SKETCH_SIZE = 256
"""Hashes kept per work: containments within about ±0.014 at 0.95."""
LOOKUP_KEYS = 16
"""The sketch's smallest hashes the store indexes to find candidates."""
GRAM = ANCHOR_PARAMS.char_k


def segment_sketch(located: Located) -> np.ndarray:
    """MIN_s of the content-character 8-gram hashes of one segment (int64: the 64-bit
    hashes shifted right by one, so the store keeps them as they sort)."""
    codes = codepoints(located.normalized.text)[located.positions]
    hashes = (ngram_hashes(codes, GRAM) >> np.uint64(1)).astype(np.int64)
    return mins(hashes, SKETCH_SIZE)


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
