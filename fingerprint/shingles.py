"""w-shingles, resemblance and containment, Broder's sampling schemes, and winnowing.

Broder (1997), "On the resemblance and containment of documents": a document is its set S
of w-shingles (runs of w consecutive tokens); resemblance R(A, B) = |S_A ∩ S_B| / |S_A ∪ S_B|
and containment C(A, B) = |S_A ∩ S_B| / |S_A|. Sampling keeps a sketch per document:
MIN_s (the s smallest hashes), MOD_m (hashes that are 0 mod m) and min-wise permutations
(see :mod:`fingerprint.minhash`).

Winnowing (Schleimer, Wilkerson, Aiken 2003): over the hashes of k-grams, take the minimum
of every window of w consecutive hashes (the rightmost on ties) and record its position;
hashes are compared on their top 32 bits, which keeps the position in the sort key.
Any match of at least t = w + k - 1 tokens shares a selected hash; no match shorter than
the noise threshold k is detected.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fingerprint.base import (
    CorruptFingerprint,
    array_from_hex,
    array_to_hex,
    check_compatible,
    check_header,
    decoding,
    header,
)
from fingerprint.tokens import char_ngrams, ngram_hash_array

VERSION = 1


def shingles(text: str, w: int) -> set[str]:
    """The set of w-shingles of the content characters of ``text``.

    >>> sorted(shingles("abcd", 2))
    ['ab', 'bc', 'cd']
    """
    return set(char_ngrams(text, w))


def resemblance(a: set | np.ndarray, b: set | np.ndarray) -> float:
    """R(A, B) = |A ∩ B| / |A ∪ B| (0 for two empty sets)."""
    a, b = _as_set(a), _as_set(b)
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def containment(a: set | np.ndarray, b: set | np.ndarray) -> float:
    """C(A, B) = |A ∩ B| / |A|: how much of A is inside B (0 when A is empty)."""
    a, b = _as_set(a), _as_set(b)
    return len(a & b) / len(a) if a else 0.0


def _as_set(x: set | np.ndarray) -> set:
    return x if isinstance(x, set | frozenset) else set(np.asarray(x).tolist())


def mins(hashes: np.ndarray, s: int) -> np.ndarray:
    """MIN_s: the s smallest distinct hashes, sorted.

    Only the values up to the k-th smallest are sorted (k = s, doubled while fewer than s of
    them are distinct): the s smallest distinct hashes are among them, whatever the rest.
    """
    hashes = np.asarray(hashes)
    k = s
    while 0 < k < len(hashes):
        smallest = np.unique(hashes[hashes <= np.partition(hashes, k - 1)[k - 1]])
        if len(smallest) >= s:
            return smallest[:s]
        k *= 2
    return np.unique(hashes)[:s]


def modm(hashes: np.ndarray, m: int) -> np.ndarray:
    """MOD_m: the distinct hashes that are 0 modulo m, sorted."""
    unique = np.unique(hashes)
    return unique[unique % np.uint64(m) == 0]


def minwise(hashes: np.ndarray, k: int = 128, seed: int = 1) -> np.ndarray:
    """Min-Wise sampling: the minimum under each of k seeded permutations (a MinHash signature).

    Implemented by :func:`fingerprint.minhash.signature` (datasketch's ``affine32`` scheme)
    over the low 32 bits of the shingle hashes.
    """
    from fingerprint.minhash import signature

    low = np.unique(np.asarray(hashes, dtype=np.uint64) & np.uint64(0xFFFFFFFF))
    return signature(low, k, seed)


def minwise_resemblance(sketch_a: np.ndarray, sketch_b: np.ndarray) -> float:
    """Estimate of R from Min-Wise samples: the share of permutations whose minima agree."""
    if len(sketch_a) != len(sketch_b):
        raise ValueError("Min-Wise samples of different lengths cannot be compared")
    return float(np.mean(np.asarray(sketch_a) == np.asarray(sketch_b)))


def mins_resemblance(sketch_a: np.ndarray, sketch_b: np.ndarray, s: int) -> float:
    """Broder's estimate of R from MIN_s sketches.

    R ~ |MIN_s(A ∪ B) ∩ MIN_s(A) ∩ MIN_s(B)| / |MIN_s(A ∪ B)|.
    """
    union = mins(np.concatenate([sketch_a, sketch_b]), s)
    if len(union) == 0:
        return 0.0
    both = np.intersect1d(np.intersect1d(union, sketch_a), sketch_b)
    return len(both) / len(union)


def mins_containments(sketch_a: np.ndarray, sketch_b: np.ndarray, s: int) -> tuple[float, float]:
    """Estimates of C(A, B) and C(B, A) from MIN_s sketches (Broder 1997, section 3).

    The s smallest hashes of A ∪ B are a uniform sample of the union; among those in A,
    the share also in B estimates C(A, B) (and the other way round). Exact when both
    sets have at most s hashes.

    >>> mins_containments(np.array([1, 2, 3, 4]), np.array([1, 2, 3]), 8)
    (0.75, 1.0)
    """
    union = mins(np.concatenate([sketch_a, sketch_b]), s)
    in_a, in_b = np.isin(union, sketch_a), np.isin(union, sketch_b)
    both = int(np.count_nonzero(in_a & in_b))
    a, b = int(np.count_nonzero(in_a)), int(np.count_nonzero(in_b))
    return (both / a if a else 0.0, both / b if b else 0.0)


def modm_resemblance(sketch_a: np.ndarray, sketch_b: np.ndarray) -> float:
    """Estimate of R from MOD_m sketches: |MOD(A) ∩ MOD(B)| / |MOD(A) ∪ MOD(B)|."""
    return resemblance(sketch_a, sketch_b)


def modm_containment(sketch_a: np.ndarray, sketch_b: np.ndarray) -> float:
    """Estimate of C(A, B) from MOD_m sketches: |MOD(A) ∩ MOD(B)| / |MOD(A)|."""
    return containment(sketch_a, sketch_b)


def sliding_min(values: np.ndarray, window: int) -> np.ndarray:
    """Minimum of every run of ``window`` consecutive values (van Herk / Gil-Werman, O(n)).

    Returns ``len(values) - window + 1`` minima; needs ``len(values) >= window``.
    """
    n = len(values)
    blocks = -(-n // window)
    padded = np.full(blocks * window, np.iinfo(values.dtype).max, dtype=values.dtype)
    padded[:n] = values
    grid = padded.reshape(blocks, window)
    prefix = np.minimum.accumulate(grid, axis=1).ravel()
    suffix = np.minimum.accumulate(grid[:, ::-1], axis=1)[:, ::-1].ravel()
    count = n - window + 1
    return np.minimum(suffix[:count], prefix[window - 1 : window - 1 + count])


def winnow_keys(hashes: np.ndarray) -> np.ndarray:
    """Sort keys for winnowing: the top 32 bits of each hash, then the position reversed.

    The minimum key of a window is its smallest hash, the rightmost one on ties.
    """
    positions = np.arange(len(hashes), dtype=np.uint64)
    high = np.asarray(hashes, dtype=np.uint64) & np.uint64(0xFFFFFFFF00000000)
    return high | (np.uint64(0xFFFFFFFF) - positions)


def winnow_positions(hashes: np.ndarray, window: int) -> np.ndarray:
    """Positions selected by winnowing ``hashes`` with ``window``, deduplicated and sorted.

    Hashes are compared on their top 32 bits (:func:`winnow_keys`); a sequence shorter than
    the window selects its rightmost minimum.
    """
    hashes = np.asarray(hashes, dtype=np.uint64)
    if len(hashes) == 0:
        return np.empty(0, dtype=np.int64)
    keys = winnow_keys(hashes)
    minima = keys.min(keepdims=True) if len(keys) <= window else sliding_min(keys, window)
    positions = (np.uint64(0xFFFFFFFF) - (minima & np.uint64(0xFFFFFFFF))).astype(np.int64)
    return np.unique(positions)


@dataclass(frozen=True)
class WinnowParams:
    """k: the n-gram length (noise threshold); window: w; guarantee threshold t = w + k - 1."""

    k: int = 8
    window: int = 8
    seed: int = 0

    def __post_init__(self) -> None:
        if self.k < 1 or self.window < 1:
            raise ValueError("winnowing needs k >= 1 and window >= 1")


@dataclass(frozen=True, eq=False)
class WinnowFingerprint:
    """Winnowed k-gram hashes of a text and the character offset where each k-gram starts."""

    params: WinnowParams
    hashes: np.ndarray
    positions: np.ndarray
    version: int = VERSION
    method: str = field(default="winnow", init=False)

    def __len__(self) -> int:
        return len(self.hashes)

    def containment_in(self, other: WinnowFingerprint) -> float:
        """Share of this text's distinct selected hashes found among ``other``'s."""
        check_compatible(self, other)
        return containment(self.hashes, other.hashes)

    def resemblance(self, other: WinnowFingerprint) -> float:
        check_compatible(self, other)
        return resemblance(self.hashes, other.hashes)

    def to_dict(self) -> dict:
        return {
            **header(self),
            "hashes": array_to_hex(self.hashes, "<u8"),
            "positions": array_to_hex(self.positions, "<u4"),
        }

    @classmethod
    def from_dict(cls, data: dict) -> WinnowFingerprint:
        check_header(data, "winnow", VERSION)
        with decoding("winnow fingerprint"):
            params = WinnowParams(**data["params"])
            hashes = array_from_hex(data["hashes"], "<u8", np.uint64)
            positions = array_from_hex(data["positions"], "<u4", np.int64)
        if len(hashes) != len(positions):
            raise CorruptFingerprint("winnow fingerprint arrays differ in length")
        return cls(params, hashes, positions)


def winnow(text: str, params: WinnowParams | None = None) -> WinnowFingerprint:
    """Winnow the content-character k-grams of (normalised) ``text``.

    >>> fp = winnow("天下大势，分久必合，合久必分。周末七国分争，并入于秦。")
    >>> len(fp) > 0, fp.method
    (True, 'winnow')
    """
    params = params or WinnowParams()
    hashes, starts = ngram_hash_array(text, params.k, params.seed)
    chosen = winnow_positions(hashes, params.window)
    return WinnowFingerprint(params, hashes[chosen], starts[chosen])
