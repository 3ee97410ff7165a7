"""The compile step and the hash finaliser the kernels share."""

from __future__ import annotations

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; this is the fallback
    numba = None

G = np.uint64(0x9E3779B97F4A7C15)
_C1 = np.uint64(0xFF51AFD7ED558CCD)
_C2 = np.uint64(0xC4CEB9FE1A85EC53)
S32 = np.uint64(32)
_S33 = np.uint64(33)
ONE = np.uint64(1)
LO32 = np.uint64(0xFFFFFFFF)
_MASK64 = (1 << 64) - 1


def compile_kernel(fn):
    """``numba.njit`` with an on-disk cache when some cache folder is writable."""
    if numba is None:
        return fn
    try:
        return numba.njit(cache=True, nogil=True)(fn)
    except RuntimeError:  # no writable cache location: compile in memory only
        return numba.njit(nogil=True)(fn)


def seed_offset(seed: int) -> np.uint64:
    """``seed * golden mod 2**64``, as :func:`fingerprint.hashing.ngram_hashes` adds it."""
    return np.uint64((seed * 0x9E3779B97F4A7C15) & _MASK64)


def _fmix(x):
    """MurmurHash3's 64-bit finaliser (``hashing.fmix64``, one value)."""
    x ^= x >> _S33
    x *= _C1
    x ^= x >> _S33
    x *= _C2
    return x ^ (x >> _S33)


fmix = compile_kernel(_fmix)
