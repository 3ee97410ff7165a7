"""The per-element loops of the fingerprints, compiled with numba; numpy stays the reference.

Each kernel loops over a *segmented* array: ``starts`` (int64, one more entry than there
are documents) says where each document's elements begin, so one call serves one text or a
batch. Each computes exactly what the numpy code of its module computes (named in its
docstring); ``tests/fingerprint/test_kernels.py`` asserts equality, values and order.
Integer arithmetic wraps at 64 bits as numpy's does; the floating point of the window
levels uses the same operations in the same order, without fast-math, so it rounds the
same.

Compiled code is cached (numba ``cache=True``): next to these modules when their folder is
writable, else in the user's cache folder (``NUMBA_CACHE_DIR`` overrides both); a process
that can write neither compiles in memory. :func:`available` says whether the kernels can
run: False without numba, with ``NUMBA_DISABLE_JIT`` set, or when compiling fails, and
then callers use the numpy reference.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from fingerprint.kernels.grams import ngrams, simhash_oph, winnow
from fingerprint.kernels.jit import compile_kernel, numba, seed_offset
from fingerprint.kernels.text import sentences, split_text, utf8_offsets
from fingerprint.kernels.windows import anchored_windows, fixed_windows, level_table, window_keys

__all__ = [
    "anchored_windows",
    "available",
    "compile_kernel",
    "fixed_windows",
    "level_table",
    "ngrams",
    "seed_offset",
    "sentences",
    "simhash_oph",
    "split_text",
    "use_compiled",
    "utf8_offsets",
    "window_keys",
    "winnow",
]


# --- availability ---------------------------------------------------------------------------
@cache
def available() -> bool:
    """True when the kernels run compiled (numba present, JIT on, a first compile works)."""
    if numba is None or numba.config.DISABLE_JIT:
        return False
    try:
        codes = np.arange(40, 60, dtype=np.uint32)
        starts = np.array([0, 20], dtype=np.int64)
        hashes, _, gram_starts = ngrams(codes, starts, 3, 21, seed_offset(0), True)
        winnow(hashes, gram_starts, 4)
    except Exception:  # any failure to compile means: use the reference
        return False
    return True


def use_compiled(compiled: bool | None = None) -> bool:
    """Whether to run the compiled kernels: ``None`` means when they are :func:`available`.

    ``True`` insists (and raises ``RuntimeError`` where they cannot run); ``False`` runs the
    numpy reference. Both give the same values.
    """
    if compiled is None:
        return available()
    if compiled and not available():
        raise RuntimeError("the compiled kernels cannot run here (numba missing or JIT off)")
    return bool(compiled)
