"""Top-k longest-sentence signature.

A document is summarised by its k longest sentences (by content characters; earlier
sentence first on ties), each hashed over its content characters only, so punctuation and
spacing changes do not matter. Long sentences are rare and specific, so two documents that
share several of them almost surely share text. Similarity = |S_A ∩ S_B| / min(|S_A|, |S_B|).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np

from fingerprint.base import CorruptFingerprint, check_compatible, check_header, decoding, header
from fingerprint.hashing import hash64
from fingerprint.tokens import codepoints, content_mask, from_codepoints

VERSION = 1
_SENTENCE_ENDS = "。！？!?；;…\n"


@cache
def sentence_end_table() -> np.ndarray:
    table = np.zeros(0x10000, dtype=bool)
    table[[ord(c) for c in _SENTENCE_ENDS]] = True
    table.setflags(write=False)
    return table


@dataclass(frozen=True)
class SentenceParams:
    k: int = 5
    min_chars: int = 8

    def __post_init__(self) -> None:
        if self.k < 1 or self.min_chars < 1:
            raise ValueError("k and min_chars must be >= 1")


def sentence_bounds(codes: np.ndarray) -> np.ndarray:
    """(n, 2) spans [start, end) of the sentences of a code-point array (see :func:`sentences`)."""
    boundary = sentence_end_table()[np.minimum(codes, 0xFFFF)]
    inside = np.concatenate([[False], ~boundary, [False]]).astype(np.int8)
    edges = np.diff(inside)
    return np.stack([np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)], axis=1)


def sentences(text: str) -> list[tuple[int, int]]:
    """Spans [start, end) of the sentences of ``text`` (split at 。！？!?；; … and newlines)."""
    return [(int(a), int(b)) for a, b in sentence_bounds(codepoints(text))]


@dataclass(frozen=True, eq=False)
class SentenceSignature:
    """Hashes of the k longest sentences and their spans in the fingerprinted text."""

    hashes: np.ndarray
    spans: tuple[tuple[int, int], ...]
    params: SentenceParams = SentenceParams()
    version: int = VERSION
    method: str = field(default="sentences", init=False)

    def similarity(self, other: SentenceSignature) -> float:
        """|S_A ∩ S_B| / min(|S_A|, |S_B|) (0 when either is empty)."""
        check_compatible(self, other)
        smaller = min(len(set(self.hashes.tolist())), len(set(other.hashes.tolist())))
        if smaller == 0:
            return 0.0
        return len(np.intersect1d(self.hashes, other.hashes)) / smaller

    def to_dict(self) -> dict:
        return {
            **header(self),
            "hashes": [f"{int(h):016x}" for h in self.hashes],
            "spans": [list(s) for s in self.spans],
        }

    @classmethod
    def from_dict(cls, data: dict) -> SentenceSignature:
        check_header(data, "sentences", VERSION)
        with decoding("sentence signature"):
            hashes = np.array([int(h, 16) for h in data["hashes"]], dtype=np.uint64)
            spans = tuple((int(a), int(b)) for a, b in data["spans"])
            params = SentenceParams(**data["params"])
        if len(hashes) != len(spans):
            raise CorruptFingerprint("sentence signature arrays differ in length")
        return cls(hashes, spans, params)


def sentence_signature(text: str, params: SentenceParams | None = None) -> SentenceSignature:
    """The top-k longest-sentence signature of (normalised) ``text``.

    >>> sig = sentence_signature("短句。这是一个相当长的句子，用来做签名！又一句比较长的话在这里。")
    >>> len(sig.spans)
    2
    """
    codes = codepoints(text)
    return signature_from_codes(codes, content_mask(codes), params or SentenceParams())


def signature_from_codes(
    codes: np.ndarray, mask: np.ndarray, params: SentenceParams
) -> SentenceSignature:
    """The signature of a text given its code points and content mask."""
    bounds = sentence_bounds(codes)
    if len(bounds) == 0:
        return SentenceSignature(np.empty(0, dtype=np.uint64), (), params)
    cumulative = np.concatenate([[0], np.cumsum(mask)])
    lengths = cumulative[bounds[:, 1]] - cumulative[bounds[:, 0]]
    order = np.lexsort((bounds[:, 0], -lengths))
    order = order[lengths[order] >= params.min_chars][: params.k]
    hashes = [hash64(from_codepoints(codes[a:b][mask[a:b]])) for a, b in bounds[order]]
    return SentenceSignature(
        np.array(hashes, dtype=np.uint64),
        tuple((int(a), int(b)) for a, b in bounds[order]),
        params,
    )
