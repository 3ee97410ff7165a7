"""Compiled loops of normalisation (numba); :mod:`fingerprint.batch` is their reference.

Three passes of :func:`fingerprint.batch.normalize_many` run here: the per-character mapping
of step 1 (``normalize.map_chars``); OpenCC's ``t2s`` of step 2 by the code-point table of
:mod:`fingerprint.t2s`, with the texts joined by the separator (:func:`join_t2s`: a text
holding one of the table's exceptions is flagged, and converted by OpenCC itself); and,
after the noise patterns (which stay in Python's ``re``), the removal of noise and
separators with the whitespace folding of step 4 (``batch._fold``).
``tests/fingerprint/test_normalize_kernels.py`` and ``test_t2s.py`` assert that the results
are equal.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from fingerprint.kernels import compile_kernel
from fingerprint.literal_scan import first_literal_at
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


def _join_t2s(
    codes,
    cut,
    separator,
    convert,
    bmp,
    astral,
    astral_to,
    is_head,
    heads,
    head_starts,
    phrase_starts,
    phrase_codes,
):
    """The texts ``codes[cut[d]:cut[d + 1]]`` joined by ``separator``, each character through
    the t2s table when ``convert`` (:class:`fingerprint.t2s.T2sTables`), and per text whether
    one of the table's exceptions (phrases) occurs in it (the caller converts those texts
    with OpenCC). Phrases are looked for in the unconverted text, as OpenCC sees it."""
    count = len(cut) - 1
    gap = len(separator)
    out = np.empty(len(codes) + gap * max(count - 1, 0), np.uint32)
    flagged = np.zeros(count, np.bool_)
    k = 0
    for d in range(count):
        if d > 0:
            for g in range(gap):
                out[k] = separator[g]
                k += 1
        end = cut[d + 1]
        for p in range(cut[d], end):
            c = codes[p]
            if not convert:
                out[k] = c
                k += 1
                continue
            if c < 0x10000:
                out[k] = bmp[c]
                head = is_head[c]
            else:
                j = np.searchsorted(astral, c)
                out[k] = astral_to[j] if j < len(astral) and astral[j] == c else c
                j = np.searchsorted(heads, c)
                head = j < len(heads) and heads[j] == c
            k += 1
            if head and not flagged[d]:
                h = np.searchsorted(heads, c)
                found = first_literal_at(codes, p, end, h, head_starts, phrase_starts, phrase_codes)
                flagged[d] = found > 0
    return out, flagged


join_t2s = compile_kernel(_join_t2s)


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
