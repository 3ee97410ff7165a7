"""Compiled loops of normalisation (numba); :mod:`fingerprint.batch` is their reference.

Two passes of :func:`fingerprint.batch.normalize_many` run here: the per-character mapping
of step 1 (``normalize.map_chars``) and, after OpenCC and the noise patterns (which stay in
OpenCC's C++ and Python's ``re``), the removal of noise and separators with the whitespace
folding of step 4 (``batch._fold``). ``tests/fingerprint/test_normalize_kernels.py``
asserts that the results are equal.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from fingerprint.kernels import compile_kernel
from fingerprint.normalize import _BMP, _EXPAND, _expand, char_table
from fingerprint.tokens import codepoints

_SPACE, _NEWLINE = ord(" "), ord("\n")


def _map(codes, table, special, special_starts, special_values):
    """Mapped code points and the index in ``codes`` each comes from: BMP characters through
    ``table`` (-1: deleted), the ``special`` ones (astral, or mapped to several characters;
    sorted) to their ``special_values``."""
    size = 0
    for i in range(len(codes)):
        c = codes[i]
        m = table[c] if c < 0x10000 else -2
        if m >= 0:
            size += 1
        elif m == -2:
            j = np.searchsorted(special, c)
            size += special_starts[j + 1] - special_starts[j]
    mapped = np.empty(size, np.uint32)
    offsets = np.empty(size, np.int64)
    k = 0
    for i in range(len(codes)):
        c = codes[i]
        m = table[c] if c < 0x10000 else -2
        if m >= 0:
            mapped[k] = m
            offsets[k] = i
            k += 1
        elif m == -2:
            j = np.searchsorted(special, c)
            for v in range(special_starts[j], special_starts[j + 1]):
                mapped[k] = special_values[v]
                offsets[k] = i
                k += 1
    return mapped, offsets


_map = compile_kernel(_map)


@cache
def _table32(lowercase: bool) -> np.ndarray:
    """``normalize.char_table`` as int32: half the cache lines to read."""
    table = char_table(lowercase).astype(np.int32)
    table.setflags(write=False)
    return table


@cache
def _bmp_expansions(lowercase: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The BMP characters that map to several characters, sorted, and what each maps to
    (``starts`` into ``values``), made once per process."""
    special = np.flatnonzero(char_table(lowercase) == _EXPAND).astype(np.uint32)
    values = [codepoints(_expand(chr(c), lowercase)) for c in special.tolist()]
    starts = np.zeros(len(special) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in values], out=starts[1:])
    flat = np.concatenate(values) if values else np.empty(0, dtype=np.uint32)
    return special, starts, flat


def map_chars(text: str, lowercase: bool) -> tuple[np.ndarray, np.ndarray]:
    """``normalize.map_chars``: mapped code points (uint32) and the original index of each."""
    codes = codepoints(text)
    special, starts, values = _bmp_expansions(lowercase)
    astral = np.unique(codes[codes >= _BMP])
    if len(astral):  # astral characters follow the BMP ones, so the list stays sorted
        mapped = [codepoints(_expand(chr(c), lowercase)) for c in astral.tolist()]
        special = np.concatenate([special, astral])
        starts = np.concatenate([starts, starts[-1] + np.cumsum([len(m) for m in mapped])])
        values = np.concatenate([values, *mapped])
    return _map(codes, _table32(lowercase), special, starts, values)


def _fold(codes, lengths, gap, drop, offsets, text_starts):
    """Noise and separators removed and whitespace folded, per document (``batch._fold``).

    ``codes``: the documents joined with separators of ``gap`` characters; ``drop``: the
    noise mask of the joined text; ``offsets``: original index of each character without
    the separators. Returns code points, offsets within each original text, and starts.
    """
    count = len(lengths)
    out = np.empty(len(codes), np.uint32)
    local = np.empty(len(codes), np.int64)
    starts = np.empty(count + 1, np.int64)
    k = 0
    at = 0
    for d in range(count):
        starts[d] = k
        run = -1  # offset of the pending whitespace run, -1 when none
        newline = False
        for p in range(at, at + lengths[d]):
            if drop[p]:
                continue
            c = codes[p]
            origin = offsets[p - d * gap] - text_starts[d]
            if c in (_SPACE, _NEWLINE):
                if run < 0:
                    run = origin
                    newline = False
                newline = newline or c == _NEWLINE
                continue
            if run >= 0:
                if k > starts[d]:
                    out[k] = _NEWLINE if newline else _SPACE
                    local[k] = run
                    k += 1
                run = -1
            out[k] = c
            local[k] = origin
            k += 1
        at += lengths[d] + gap
    starts[count] = k
    return out[:k].copy(), local[:k].copy(), starts


fold = compile_kernel(_fold)
