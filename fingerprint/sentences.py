"""Top-k longest-sentence signature.

A document is summarised by its k longest sentences (by content characters; earlier
sentence first on ties), each hashed over its content characters only, so punctuation and
spacing changes do not matter. Long sentences are rare and specific, so two documents that
share several of them almost surely share text. Similarity = |S_A ∩ S_B| / min(|S_A|, |S_B|).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from fingerprint.base import CorruptFingerprint, check_compatible, check_header, params_dict
from fingerprint.hashing import hash64
from fingerprint.tokens import codepoints, content_mask, from_codepoints

VERSION = 1
_SENTENCE_END = re.compile(r"[。！？!?；;…\n]+")


@dataclass(frozen=True)
class SentenceParams:
    k: int = 5
    min_chars: int = 8

    def __post_init__(self) -> None:
        if self.k < 1 or self.min_chars < 1:
            raise ValueError("k and min_chars must be >= 1")


def sentences(text: str) -> list[tuple[int, int]]:
    """Spans [start, end) of the sentences of ``text`` (split at 。！？!?；; … and newlines)."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if match.start() > start:
            spans.append((start, match.start()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


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
            "method": self.method,
            "version": self.version,
            "params": params_dict(self.params),
            "hashes": [f"{int(h):016x}" for h in self.hashes],
            "spans": [list(s) for s in self.spans],
        }

    @classmethod
    def from_dict(cls, data: dict) -> SentenceSignature:
        check_header(data, "sentences", VERSION)
        try:
            hashes = np.array([int(h, 16) for h in data["hashes"]], dtype=np.uint64)
            spans = tuple((int(a), int(b)) for a, b in data["spans"])
            params = SentenceParams(**data["params"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptFingerprint(f"sentence signature cannot be decoded: {exc}") from exc
        if len(hashes) != len(spans):
            raise CorruptFingerprint("sentence signature arrays differ in length")
        return cls(hashes, spans, params)


def sentence_signature(text: str, params: SentenceParams | None = None) -> SentenceSignature:
    """The top-k longest-sentence signature of (normalised) ``text``.

    >>> sig = sentence_signature("短句。这是一个相当长的句子，用来做签名！又一句比较长的话在这里。")
    >>> len(sig.spans)
    2
    """
    params = params or SentenceParams()
    spans = sentences(text)
    if not spans:
        return SentenceSignature(np.empty(0, dtype=np.uint64), (), params)
    codes = codepoints(text)
    mask = content_mask(codes)
    cumulative = np.concatenate([[0], np.cumsum(mask)])
    bounds = np.array(spans, dtype=np.int64)
    lengths = cumulative[bounds[:, 1]] - cumulative[bounds[:, 0]]
    order = np.lexsort((bounds[:, 0], -lengths))
    order = order[lengths[order] >= params.min_chars][: params.k]
    hashes = [hash64(from_codepoints(codes[a:b][mask[a:b]])) for a, b in bounds[order]]
    return SentenceSignature(
        np.array(hashes, dtype=np.uint64),
        tuple((int(a), int(b)) for a, b in bounds[order]),
        params,
    )
