"""MinHash signatures (Broder 1997) with LSH banding, in numpy, compatible with datasketch.

For a set S of shingles and k permutations pi_i, the signature is min_{x in S} pi_i(x); the
share of equal entries of two signatures estimates their Jaccard resemblance. Permutations
follow datasketch's ``affine32`` scheme exactly: the 32-bit input hash h is pre-mixed with
MurmurHash3's 32-bit finaliser, then pi_i(h) = a_i * h + b_i mod 2**32 with (a_i, b_i)
drawn from ``numpy.random.RandomState(seed)`` as datasketch draws them. Given the same input
hashes, :func:`minhash` returns the same values as ``datasketch.MinHash(num_perm, seed,
hashfunc=...)`` with ``update_batch`` (checked in the tests), many times faster.

One-permutation hashing (Li, Owen, Zhang 2012) with optimal densification (Shrivastava
2017), ``scheme="oph"``: one 64-bit hash per element; its high bits pick one of k bins and
its low 32 bits are the value; each bin keeps its minimum; an empty bin borrows the value of
the first non-empty bin reached by a seeded probe sequence. Equal entries again estimate
Jaccard, at O(n + k) instead of O(n k): the fast default of document fingerprints.

LSH: b bands of r rows; two sets of Jaccard s share a band with probability
1 - (1 - s**r)**b. :func:`lsh_params` picks (b, r) for a threshold by minimising the
weighted false-positive and false-negative areas, as datasketch's ``MinHashLSH`` does.
Containment (LSH Ensemble, Zhu et al. 2016): C(Q, X) = J (|Q| + |X|) / ((1 + J) |Q|).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np

from fingerprint.base import CorruptFingerprint, check_compatible, check_header, decoding, header
from fingerprint.hashing import fmix64, hash_rows
from fingerprint.tokens import ngram_hash_array

VERSION = 1
_U32 = np.uint32
_EMPTY = np.uint32(0xFFFFFFFF)
_CHUNK_ROWS = 4096
_M64 = (1 << 64) - 1


@dataclass(frozen=True)
class MinHashParams:
    """``scheme``: ``affine32`` (k permutations, datasketch-compatible) or ``oph``."""

    num_perm: int = 128
    seed: int = 1
    ngram: int = 3
    scheme: str = "affine32"

    def __post_init__(self) -> None:
        if not 1 <= self.num_perm <= 4096 or self.ngram < 1:
            raise ValueError("num_perm must be in [1, 4096] and ngram >= 1")
        if self.scheme not in ("affine32", "oph"):
            raise ValueError(f"scheme must be 'affine32' or 'oph', got {self.scheme!r}")


@cache
def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of the affine32 permutations, drawn as datasketch draws them."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=_U32) * _U32(2) + _U32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint64).astype(_U32)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finaliser, element-wise."""
    h = np.asarray(h, dtype=_U32)
    h = h ^ (h >> _U32(16))
    h = h * _U32(0x85EBCA6B)
    h = h ^ (h >> _U32(13))
    h = h * _U32(0xC2B2AE35)
    return h ^ (h >> _U32(16))


def signature(hashes32: np.ndarray, num_perm: int = 128, seed: int = 1) -> np.ndarray:
    """The MinHash signature (uint32, ``num_perm`` values) of a set of 32-bit hashes."""
    a, b = permutations(num_perm, seed)
    values = np.full(num_perm, _EMPTY, dtype=_U32)
    mixed = fmix32(np.unique(np.asarray(hashes32, dtype=np.uint64).astype(_U32)))
    for start in range(0, len(mixed), _CHUNK_ROWS):
        chunk = mixed[start : start + _CHUNK_ROWS, None]
        np.minimum(values, (chunk * a + b).min(axis=0), out=values)
    return values


def oph_signature(hashes: np.ndarray, num_perm: int = 128, seed: int = 1) -> np.ndarray:
    """One-permutation MinHash with optimal densification (module docstring)."""
    bins, low = oph_bins(hashes, num_perm, seed)
    values = np.full(num_perm, _EMPTY, dtype=_U32)
    keys = np.sort((bins << np.uint64(32)) | low)
    if len(keys) == 0:
        return values
    first = np.concatenate([[True], (keys[1:] >> np.uint64(32)) != (keys[:-1] >> np.uint64(32))])
    values[(keys[first] >> np.uint64(32)).astype(np.int64)] = keys[first].astype(_U32)
    return densify(values, num_perm, seed)


def oph_bins(hashes: np.ndarray, num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Bin (uint64) and value (uint64, < 2**32) of each element under one-permutation hashing."""
    h = fmix64(np.asarray(hashes, dtype=np.uint64) ^ np.uint64((seed * 0x9E3779B97F4A7C15) & _M64))
    return ((h >> np.uint64(32)) * np.uint64(num_perm)) >> np.uint64(32), h & np.uint64(0xFFFFFFFF)


def densify(values: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    """Optimal densification: each empty bin takes the value of the first non-empty bin that
    its seeded probe sequence reaches. Changes ``values`` in place and returns it."""
    filled = values != _EMPTY
    if filled.all() or not filled.any():
        return values
    empty = np.flatnonzero(~filled).astype(np.uint64)
    source = np.full(len(empty), -1, dtype=np.int64)
    attempt = 0
    while (source < 0).any():
        tries = np.arange(attempt, attempt + 64, dtype=np.uint64)
        probe = fmix64((empty[:, None] << np.uint64(32)) + tries[None, :] + np.uint64(seed))
        probe = (((probe >> np.uint64(32)) * np.uint64(num_perm)) >> np.uint64(32)).astype(np.int64)
        hit = filled[probe]
        first = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
        found = (source < 0) & (first >= 0)
        source[found] = probe[found, first[found]]
        attempt += 64
    values[empty.astype(np.int64)] = values[source]
    return values


@dataclass(frozen=True, eq=False)
class MinHash:
    """A MinHash signature, the size of the set it summarises, and its parameters."""

    hashvalues: np.ndarray
    size: int
    params: MinHashParams = MinHashParams()
    version: int = VERSION
    method: str = field(default="minhash", init=False)

    def __post_init__(self) -> None:
        if len(self.hashvalues) != self.params.num_perm:
            raise CorruptFingerprint(
                f"minhash has {len(self.hashvalues)} values, parameters say {self.params.num_perm}"
            )

    def jaccard(self, other: MinHash) -> float:
        """Estimated Jaccard resemblance (0 when both sets are empty)."""
        check_compatible(self, other)
        if self.size == 0 and other.size == 0:
            return 0.0
        return float(np.mean(self.hashvalues == other.hashvalues))

    def containment_in(self, other: MinHash) -> float:
        """Estimated share of this set inside ``other``, from Jaccard and the two set sizes."""
        j = self.jaccard(other)
        if self.size == 0:
            return 0.0
        return min(1.0, j * (self.size + other.size) / ((1.0 + j) * self.size))

    def band_keys(self, bands: int, rows: int) -> np.ndarray:
        """One stable 64-bit key per LSH band."""
        return band_keys(self.hashvalues, bands, rows)

    def to_hex(self) -> str:
        return self.hashvalues.astype("<u4").tobytes().hex()

    @classmethod
    def from_hex(cls, text: str, size: int, params: MinHashParams | None = None) -> MinHash:
        params = params or MinHashParams()
        try:
            values = np.frombuffer(bytes.fromhex(text), dtype="<u4").astype(_U32)
        except (TypeError, ValueError) as exc:
            raise CorruptFingerprint(f"minhash value is not hex of uint32s: {exc}") from exc
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise CorruptFingerprint(f"minhash set size must be an int >= 0, got {size!r}")
        return cls(values, size, params)

    def to_dict(self) -> dict:
        return {**header(self), "size": self.size, "value": self.to_hex()}

    @classmethod
    def from_dict(cls, data: dict) -> MinHash:
        check_header(data, "minhash", VERSION)
        with decoding("minhash"):
            return cls.from_hex(data["value"], data["size"], MinHashParams(**data["params"]))


def minhash_of_hashes(hashes: np.ndarray, params: MinHashParams | None = None) -> MinHash:
    """MinHash of a set given as hashes (their lower 32 bits are used)."""
    params = params or MinHashParams()
    if params.scheme == "oph":
        distinct = np.unique(np.asarray(hashes, dtype=np.uint64))
        return MinHash(oph_signature(distinct, params.num_perm, params.seed), len(distinct), params)
    low = np.unique(np.asarray(hashes, dtype=np.uint64) & np.uint64(0xFFFFFFFF))
    return MinHash(signature(low, params.num_perm, params.seed), len(low), params)


def minhash(text: str, params: MinHashParams | None = None) -> MinHash:
    """MinHash of the content-character n-grams of (normalised) ``text``."""
    params = params or MinHashParams()
    hashes, _ = ngram_hash_array(text, params.ngram)
    return minhash_of_hashes(hashes, params)


def band_keys(values: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """Stable 64-bit key of each of ``bands`` bands of ``rows`` signature values."""
    if bands * rows > len(values):
        raise ValueError(f"{bands} bands x {rows} rows exceed {len(values)} signature values")
    grid = np.asarray(values[: bands * rows], dtype=np.uint64).reshape(bands, rows)
    return hash_rows(np.column_stack([np.arange(bands, dtype=np.uint64), grid]), seed=rows)


def collision_probability(s: np.ndarray | float, bands: int, rows: int) -> np.ndarray | float:
    """P(two sets of Jaccard s share at least one band) = 1 - (1 - s**r)**b."""
    return 1.0 - (1.0 - np.asarray(s) ** rows) ** bands


def lsh_params(
    threshold: float, num_perm: int = 128, fp_weight: float = 0.5, fn_weight: float = 0.5
) -> tuple[int, int]:
    """(bands, rows) minimising fp_weight * FP area + fn_weight * FN area around ``threshold``."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    below = np.linspace(0.0, threshold, 201)
    above = np.linspace(threshold, 1.0, 201)
    best, best_cost = (1, num_perm), float("inf")
    for bands in range(1, num_perm + 1):
        for rows in range(1, num_perm // bands + 1):
            fp = np.trapezoid(collision_probability(below, bands, rows), below)
            fn = np.trapezoid(1.0 - collision_probability(above, bands, rows), above)
            cost = fp_weight * fp + fn_weight * fn
            if cost < best_cost:
                best, best_cost = (bands, rows), cost
    return best
