"""Simhash (Charikar 2002; Manku, Jain, Das Sarma 2007): f = 64 bits, weighted features.

Each feature x with weight w(x) hashes to 64 bits; component j of V sums +w(x) where bit j
of the hash is 1 and -w(x) where it is 0; bit j of the fingerprint is 1 when V_j > 0. Two
documents are near-duplicates when the Hamming distance of their fingerprints is <= k
(k = 3 for 64 bits).

Weights (``SimhashParams.weighting``):

* ``tf``: the term frequency of x in the document;
* ``tfidf``: tf(x) * idf(x) from an :class:`IdfTable`;
* ``tfidf_len``: tf(x) * idf(x) * (1 + len(x)), len(x) the normal density of the term's
  length in characters, N(mean 4.51, sd 2.207), normalised to 1 at the mean (the seeds'
  microblog weighting).

Features (``SimhashParams.features``): ``char`` for content-character n-grams (n =
``ngram``), ``word`` for jieba words without stop words.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from fingerprint.base import CorruptFingerprint, check_compatible, check_header, decoding, header
from fingerprint.tokens import ngram_hash_array, word_hashes, words

VERSION = 1
BITS = 64
_HEX16 = re.compile(r"[0-9a-fA-F]{16}")


@dataclass(frozen=True)
class SimhashParams:
    features: str = "char"
    ngram: int = 3
    weighting: str = "tf"
    idf_table: str = ""
    length_mean: float = 4.51
    length_sd: float = 2.207
    seed: int = 0

    def __post_init__(self) -> None:
        if self.features not in ("char", "word"):
            raise ValueError(f"features must be 'char' or 'word', got {self.features!r}")
        if self.weighting not in ("tf", "tfidf", "tfidf_len"):
            raise ValueError(f"weighting must be tf, tfidf or tfidf_len, got {self.weighting!r}")
        if self.weighting != "tf" and not self.idf_table:
            raise ValueError(f"weighting {self.weighting!r} needs the name of an IDF table")
        if self.ngram < 1 or self.length_sd <= 0:
            raise ValueError("ngram must be >= 1 and length_sd > 0")


@dataclass(frozen=True, eq=False)
class IdfTable:
    """Inverse document frequencies by feature hash: idf = ln((1 + N) / (1 + df)) + 1."""

    name: str
    hashes: np.ndarray
    idf: np.ndarray
    default: float

    @classmethod
    def from_documents(cls, name: str, documents: list[np.ndarray]) -> IdfTable:
        """Build the table from each document's feature hashes."""
        n = len(documents)
        if n == 0:
            raise ValueError("an IDF table needs at least one document")
        all_hashes = np.concatenate([np.unique(d) for d in documents] or [np.empty(0, np.uint64)])
        hashes, df = np.unique(all_hashes, return_counts=True)
        idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
        return cls(name, hashes, idf, math.log(1.0 + n) + 1.0)

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        if len(self.hashes) == 0:
            return np.full(len(hashes), self.default)
        at = np.minimum(np.searchsorted(self.hashes, hashes), len(self.hashes) - 1)
        return np.where(self.hashes[at] == hashes, self.idf[at], self.default)


@dataclass(frozen=True)
class Simhash:
    """A 64-bit simhash with the parameters that made it.

    >>> Simhash(0xFF, SimhashParams()).distance(Simhash(0x0F, SimhashParams()))
    4
    """

    value: int
    params: SimhashParams = SimhashParams()
    version: int = VERSION
    method: str = field(default="simhash", init=False)

    def __post_init__(self) -> None:
        if not 0 <= self.value < 1 << BITS:
            raise CorruptFingerprint(f"simhash value {self.value!r} is not a 64-bit unsigned int")

    def distance(self, other: Simhash) -> int:
        """Hamming distance to ``other`` (same parameters required)."""
        check_compatible(self, other)
        return (self.value ^ other.value).bit_count()

    def is_near_duplicate(self, other: Simhash, k: int = 3) -> bool:
        return self.distance(other) <= k

    def to_hex(self) -> str:
        return f"{self.value:016x}"

    @classmethod
    def from_hex(cls, text: str, params: SimhashParams | None = None) -> Simhash:
        if not isinstance(text, str) or not _HEX16.fullmatch(text):
            raise CorruptFingerprint(f"a 64-bit simhash is 16 hex digits, got {text!r}")
        return cls(int(text, 16), params or SimhashParams())

    def to_dict(self) -> dict:
        return {**header(self), "value": self.to_hex()}

    @classmethod
    def from_dict(cls, data: dict) -> Simhash:
        check_header(data, "simhash", VERSION)
        with decoding("simhash"):
            return cls.from_hex(data.get("value"), SimhashParams(**data["params"]))


def hamming(a: int, b: int) -> int:
    """Hamming distance of two 64-bit integers."""
    return (a ^ b).bit_count()


def hamming_many(value: int, values: np.ndarray) -> np.ndarray:
    """Hamming distance of ``value`` to each entry of a uint64 array (numpy popcount)."""
    return np.bitwise_count(np.asarray(values, dtype=np.uint64) ^ np.uint64(value))


def simhash_of_hashes(hashes: np.ndarray, weights: np.ndarray) -> int:
    """The simhash of feature hashes with their weights (one entry per distinct feature)."""
    if len(hashes) == 0:
        return 0
    bits = np.unpackbits(
        np.ascontiguousarray(hashes, dtype="<u8").view(np.uint8).reshape(-1, 8),
        axis=1,
        bitorder="little",
    )
    weights = np.asarray(weights, dtype=np.float64)
    v = 2.0 * (weights @ bits) - weights.sum()
    return int.from_bytes(np.packbits(v > 0, bitorder="little").tobytes(), "little")


def length_weight(lengths: np.ndarray, mean: float, sd: float) -> np.ndarray:
    """Normal density of term length, normalised to 1 at the mean."""
    return np.exp(-((np.asarray(lengths, dtype=np.float64) - mean) ** 2) / (2.0 * sd * sd))


def feature_weights(
    text: str, params: SimhashParams, idf: IdfTable | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct feature hashes of (normalised) ``text`` and their weights."""
    if params.features == "char":
        hashes, _ = ngram_hash_array(text, params.ngram, params.seed)
        hashes, tf = np.unique(hashes, return_counts=True)
        lengths = np.full(len(hashes), params.ngram)
    else:
        tokens = words(text)
        all_hashes = word_hashes(tokens, params.seed)
        hashes, first, tf = np.unique(all_hashes, return_index=True, return_counts=True)
        lengths = np.array([len(tokens[i]) for i in first], dtype=np.int64)
    weights = tf.astype(np.float64)
    if params.weighting != "tf":
        if idf is None or idf.name != params.idf_table:
            raise ValueError(f"weighting {params.weighting!r} needs IDF table {params.idf_table!r}")
        weights = weights * idf.lookup(hashes)
    if params.weighting == "tfidf_len":
        weights = weights * (1.0 + length_weight(lengths, params.length_mean, params.length_sd))
    return hashes, weights


def simhash(text: str, params: SimhashParams | None = None, idf: IdfTable | None = None) -> Simhash:
    """The simhash of (normalised) ``text``; an empty text gives 0.

    >>> simhash("").value
    0
    """
    params = params or SimhashParams()
    hashes, weights = feature_weights(text, params, idf)
    return Simhash(simhash_of_hashes(hashes, weights), params)
