"""Pinyin windows: fixed and anchored bounds, the levels of each letter, the dna keys."""

from __future__ import annotations

import math

import numpy as np

from fingerprint.kernels.jit import G, compile_kernel, fmix

_LETTERS = 23
_MEMO = 128  # window lengths whose levels window_keys tabulates


def _fixed_windows(starts, granule, step):
    """Fixed windows of each document's letters (``pinyin.fixed_bounds``), global indices."""
    count = len(starts) - 1
    total = 0
    for d in range(count):
        size = starts[d + 1] - starts[d]
        if size > granule:
            n = (size - granule) // step + 1
            total += n + (1 if (n - 1) * step + granule < size else 0)
        elif size > 0:
            total += 1
    bounds = np.empty((total, 2), np.int64)
    out = np.empty(count + 1, np.int64)
    k = 0
    for d in range(count):
        out[d] = k
        a, size = starts[d], starts[d + 1] - starts[d]
        if size == 0:
            continue
        if size <= granule:
            bounds[k, 0], bounds[k, 1] = a, a + size
            k += 1
            continue
        s = 0
        while s <= size - granule:
            bounds[k, 0], bounds[k, 1] = a + s, a + s + granule
            k += 1
            s += step
        if s - step + granule < size:
            bounds[k, 0], bounds[k, 1] = a + size - granule, a + size
            k += 1
    out[count] = k
    return bounds, out


fixed_windows = compile_kernel(_fixed_windows)


def _anchored_windows(starts, anchors, anchor_starts):
    """Windows from one anchor to the next but one (``pinyin.anchored_bounds``), global
    indices; ``anchors`` are letter indices within each document, sorted."""
    count = len(starts) - 1
    bounds = np.empty((len(anchors) + 2 * count, 2), np.int64)
    cuts = np.empty(len(anchors) + 2, np.int64)
    out = np.empty(count + 1, np.int64)
    k = 0
    for d in range(count):
        out[d] = k
        a, size = starts[d], starts[d + 1] - starts[d]
        if size == 0:
            continue
        n = 0
        for i in range(anchor_starts[d], anchor_starts[d + 1]):
            if n == 0 and anchors[i] != 0:
                cuts[n] = 0
                n += 1
            cuts[n] = anchors[i]
            n += 1
        if n == 0:
            cuts[0] = 0
            n = 1
        cuts[n] = size
        n += 1
        if n < 3:
            bounds[k, 0], bounds[k, 1] = a, a + size
            k += 1
            continue
        for i in range(n - 2):
            bounds[k, 0], bounds[k, 1] = a + cuts[i], a + cuts[i + 2]
            k += 1
    out[count] = k
    return bounds[:k].copy(), out


anchored_windows = compile_kernel(_anchored_windows)


def _level(count, n, p, width, q):
    """One letter's level: its binomial z-score binned by ``width``, clamped to [0, q - 1]."""
    z = (count / n - p) / math.sqrt(p * (1.0 - p) / n)
    return min(max(math.floor(z / width) + q // 2, 0), q - 1)


_level = compile_kernel(_level)


def _level_table(reference, width, q):
    """``table[n, i, c]``: the level of letter i seen c times in a window of n letters, for
    windows of up to ``_MEMO`` letters."""
    table = np.zeros((_MEMO + 1, _LETTERS, _MEMO + 1), np.uint8)
    for n in range(1, _MEMO + 1):
        for i in range(_LETTERS):
            for c in range(n + 1):
                table[n, i, c] = _level(c, float(n), reference[i], width, q)
    return table


level_table = compile_kernel(_level_table)


def _window_keys(letters, bounds, reference, width, q, exact, offset, table):
    """dna key of each window (``pinyin.window_levels`` then ``pinyin.dna_keys``): per letter
    the binomial z-score of its count, binned by ``width`` and clamped to [0, q - 1], read as
    a base-q number when ``exact``, else hashed as ``hashing.hash_rows`` hashes the row.

    ``table``: the levels of windows up to ``_MEMO`` letters (:func:`level_table`)."""
    keys = np.empty(len(bounds), np.uint64)
    counts = np.zeros(_LETTERS, np.int64)
    base = np.uint64(q)
    for w in range(len(bounds)):
        counts[:] = 0
        for i in range(bounds[w, 0], bounds[w, 1]):
            counts[letters[i]] += 1
        size = bounds[w, 1] - bounds[w, 0]
        n = float(size)
        key = np.uint64(0) if exact else offset + np.uint64(_LETTERS)
        for i in range(_LETTERS):
            if size <= _MEMO:
                level = np.uint64(table[size, i, counts[i]])
            else:
                level = np.uint64(_level(counts[i], n, reference[i], width, q))
            key = key * base + level if exact else fmix(key * G + level)
        keys[w] = key
    return keys


window_keys = compile_kernel(_window_keys)
