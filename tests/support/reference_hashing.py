"""Plain-Python reference of the hash finaliser, shared by the tests that check numpy code."""

from __future__ import annotations

M64 = (1 << 64) - 1


def fmix64_ref(x: int) -> int:
    """MurmurHash3's fmix64 on Python ints (the reference, not the numpy code)."""
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & M64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & M64
    return x ^ (x >> 33)
