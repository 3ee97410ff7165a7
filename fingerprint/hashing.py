"""Stable hashing: the same input gives the same value in every process and on every machine.

Scalars go through xxHash (XXH3, 64 bit). Arrays of integers (code points, n-gram
hashes) go through a vectorised 64-bit finaliser, the ``fmix64`` step of MurmurHash3,
so whole documents are hashed in a few numpy passes. Python's ``hash()`` is never used:
it is salted per process.
"""

from __future__ import annotations

import numpy as np
import xxhash

U64 = np.uint64
_FMIX_C1 = U64(0xFF51AFD7ED558CCD)
_FMIX_C2 = U64(0xC4CEB9FE1A85EC53)
_GOLDEN_INT = 0x9E3779B97F4A7C15
_GOLDEN = U64(_GOLDEN_INT)
_MASK64 = (1 << 64) - 1
_S33 = U64(33)


def hash64(data: bytes | str, seed: int = 0) -> int:
    """XXH3-64 of ``data`` (UTF-8 for ``str``); stable across processes."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return xxhash.xxh3_64_intdigest(data, seed)


def hash32(data: bytes | str, seed: int = 0) -> int:
    """Lower 32 bits of :func:`hash64`."""
    return hash64(data, seed) & 0xFFFFFFFF


def fmix64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, element-wise: a bijection that avalanches every bit.

    >>> int(fmix64(np.array([1], dtype=np.uint64))[0])
    12994781566227106604
    """
    x = np.asarray(x, dtype=U64)
    x = x ^ (x >> _S33)
    x = x * _FMIX_C1
    x = x ^ (x >> _S33)
    x = x * _FMIX_C2
    return x ^ (x >> _S33)


def _seed_offset(seed: int) -> np.uint64:
    return U64((seed * _GOLDEN_INT) & _MASK64)


def ngram_hashes(codes: np.ndarray, n: int, seed: int = 0, bits: int = 21) -> np.ndarray:
    """Stable 64-bit hash of every run of ``n`` consecutive symbols in ``codes``.

    Symbols are ``bits`` wide (21 covers every code point); p = 64 // bits of them are
    packed into one 64-bit word, so an n-gram is ceil(n / p) words w_0, w_1, ... and
    h_0 = fmix64(seed * golden + w_0), h_j = fmix64(h_{j-1} * golden + w_j). Returns
    ``len(codes) - n + 1`` hashes (none when the input is shorter than ``n``).

    >>> int(ngram_hashes(np.array([20013, 25991], dtype=np.uint32), 2)[0])
    6826477264631780719
    """
    if n < 1:
        raise ValueError(f"n-gram length must be >= 1, got {n}")
    if not 1 <= bits <= 32:
        raise ValueError(f"symbol width must be 1..32 bits, got {bits}")
    codes = np.asarray(codes, dtype=U64)
    count = len(codes) - n + 1
    if count <= 0:
        return np.empty(0, dtype=U64)
    per_word = 64 // bits
    h = None
    for first in range(0, n, per_word):
        word = codes[first : first + count]
        for j in range(first + 1, min(first + per_word, n)):
            word = (word << U64(bits)) | codes[j : j + count]
        h = fmix64(word + _seed_offset(seed)) if h is None else fmix64(h * _GOLDEN + word)
    return h


def hash_rows(rows: np.ndarray, seed: int = 0) -> np.ndarray:
    """Stable 64-bit hash of each row of a 2-D integer array (rows of equal length)."""
    rows = np.asarray(rows)
    if rows.ndim != 2:
        raise ValueError("hash_rows expects a 2-D array")
    h = np.full(rows.shape[0], _seed_offset(seed) + U64(rows.shape[1]), dtype=U64)
    for j in range(rows.shape[1]):
        h = fmix64(h * _GOLDEN + rows[:, j].astype(U64))
    return h
