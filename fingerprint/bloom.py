"""Bloom-filter signatures of shingle sets and the similarity measures defined on them.

Design, "Fingerprints": a document's signature is an m-bit Bloom filter in which every
shingle sets two bits, chosen by two hash functions (here the low and high 32 bits of the
shingle's stable 64-bit hash, each taken modulo m). For signatures x and y with |x| set
bits and dot = |x AND y|:

* Hamming = |x XOR y|
* Cosine  = dot / sqrt(|x| |y|)
* Overlap = dot / min(|x|, |y|)
* Dice    = 2 dot / (|x| + |y|)
* Jaccard = dot / (|x| + |y| - dot)

Each measure is 0 when its denominator is 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fingerprint.base import CorruptFingerprint, check_compatible, check_header, decoding, header
from fingerprint.hashing import fmix64
from fingerprint.tokens import ngram_hash_array

VERSION = 1


@dataclass(frozen=True)
class BloomParams:
    bits: int = 1024
    ngram: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        if self.bits < 8 or self.bits % 8 or self.ngram < 1:
            raise ValueError("bits must be a positive multiple of 8 and ngram >= 1")


@dataclass(frozen=True, eq=False)
class BloomSignature:
    """An m-bit Bloom signature, stored as a boolean array of m entries."""

    bits: np.ndarray
    params: BloomParams = BloomParams()
    version: int = VERSION
    method: str = field(default="bloom", init=False)

    def __post_init__(self) -> None:
        if self.bits.dtype != bool or len(self.bits) != self.params.bits:
            raise CorruptFingerprint(f"bloom signature must be {self.params.bits} booleans")

    @property
    def weight(self) -> int:
        """|x|: the number of set bits."""
        return int(self.bits.sum())

    def _dot(self, other: BloomSignature) -> tuple[int, int, int]:
        check_compatible(self, other)
        return int(np.count_nonzero(self.bits & other.bits)), self.weight, other.weight

    def hamming(self, other: BloomSignature) -> int:
        check_compatible(self, other)
        return int(np.count_nonzero(self.bits ^ other.bits))

    def cosine(self, other: BloomSignature) -> float:
        dot, x, y = self._dot(other)
        return dot / math.sqrt(x * y) if x and y else 0.0

    def overlap(self, other: BloomSignature) -> float:
        dot, x, y = self._dot(other)
        return dot / min(x, y) if x and y else 0.0

    def dice(self, other: BloomSignature) -> float:
        dot, x, y = self._dot(other)
        return 2 * dot / (x + y) if x + y else 0.0

    def jaccard(self, other: BloomSignature) -> float:
        dot, x, y = self._dot(other)
        return dot / (x + y - dot) if x + y - dot else 0.0

    def to_hex(self) -> str:
        return np.packbits(self.bits, bitorder="little").tobytes().hex()

    @classmethod
    def from_hex(cls, text: str, params: BloomParams | None = None) -> BloomSignature:
        params = params or BloomParams()
        try:
            raw = np.frombuffer(bytes.fromhex(text), dtype=np.uint8)
        except (TypeError, ValueError) as exc:
            raise CorruptFingerprint(f"bloom signature is not hex: {exc}") from exc
        if len(raw) * 8 != params.bits:
            raise CorruptFingerprint(
                f"bloom signature has {len(raw) * 8} bits, expected {params.bits}"
            )
        return cls(np.unpackbits(raw, bitorder="little").astype(bool), params)

    def to_dict(self) -> dict:
        return {**header(self), "value": self.to_hex()}

    @classmethod
    def from_dict(cls, data: dict) -> BloomSignature:
        check_header(data, "bloom", VERSION)
        with decoding("bloom signature"):
            return cls.from_hex(data["value"], BloomParams(**data["params"]))


def bloom_positions(hashes: np.ndarray, bits: int, seed: int = 0) -> np.ndarray:
    """The two bit positions of each shingle hash, as an (n, 2) array."""
    h = np.asarray(hashes, dtype=np.uint64)
    if seed:
        h = fmix64(h ^ np.uint64(seed))
    low = (h & np.uint64(0xFFFFFFFF)) % np.uint64(bits)
    high = (h >> np.uint64(32)) % np.uint64(bits)
    return np.stack([low, high], axis=1).astype(np.int64)


def bloom_of_hashes(hashes: np.ndarray, params: BloomParams | None = None) -> BloomSignature:
    params = params or BloomParams()
    bits = np.zeros(params.bits, dtype=bool)
    bits[bloom_positions(hashes, params.bits, params.seed).ravel()] = True
    return BloomSignature(bits, params)


def bloom(text: str, params: BloomParams | None = None) -> BloomSignature:
    """Bloom signature of the content-character n-grams of (normalised) ``text``."""
    params = params or BloomParams()
    hashes, _ = ngram_hash_array(text, params.ngram)
    return bloom_of_hashes(hashes, params)
