"""n-gram hashes, winnowing, and the simhash and one-permutation MinHash of n-grams."""

from __future__ import annotations

import numpy as np

from fingerprint.kernels.jit import LO32, ONE, S32, G, compile_kernel, fmix

_EMPTY32 = np.uint32(0xFFFFFFFF)


def _gram(codes, at, n, bits, offset):
    """The hash of ``codes[at : at + n]`` (``hashing.ngram_hashes``, one n-gram)."""
    per_word = 64 // bits
    shift = np.uint64(bits)
    h = np.uint64(0)
    first = 0
    while first < n:
        word = np.uint64(codes[at + first])
        for j in range(first + 1, min(first + per_word, n)):
            word = (word << shift) | np.uint64(codes[at + j])
        h = fmix(word + offset) if first == 0 else fmix(h * G + word)
        first += per_word
    return h


_gram = compile_kernel(_gram)


def _packs(codes, a, b, length, bits, out):
    """``out[i]``: the ``length`` symbols from ``a + i`` packed ``bits`` to a symbol, as
    ``hashing.ngram_hashes`` packs a word; rolled along, which needs symbols < 2**bits."""
    shift = np.uint64(bits)
    mask = ~np.uint64(0) if length * bits >= 64 else (ONE << np.uint64(length * bits)) - ONE
    word = np.uint64(0)
    for i in range(a, min(a + length - 1, b)):
        word = (word << shift) | np.uint64(codes[i])
    for i in range(a + length - 1, b):
        word = ((word << shift) | np.uint64(codes[i])) & mask
        out[i - a - length + 1] = word


_packs = compile_kernel(_packs)


def _ngrams(codes, starts, n, bits, offset, short_whole):
    """n-gram hashes inside each document and the index of each n-gram's first symbol.

    ``batch._doc_grams``: a document shorter than ``n`` (not empty) gives one hash of all
    its symbols when ``short_whole``, else none. Returns (hashes, first, gram starts).
    Where every symbol fits in ``bits``, the words of each n-gram are rolled along the
    document instead of packed afresh at every position.
    """
    count = len(starts) - 1
    total = 0
    longest = 0
    for d in range(count):
        size = starts[d + 1] - starts[d]
        longest = max(longest, size)
        if size >= n:
            total += size - n + 1
        elif size > 0 and short_whole:
            total += 1
    hashes = np.empty(total, np.uint64)
    first = np.empty(total, np.int64)
    out = np.empty(count + 1, np.int64)
    per_word = 64 // bits
    words = (n + per_word - 1) // per_word
    rest = n - (words - 1) * per_word  # symbols in the last word
    full_packs = np.empty(longest, np.uint64)
    rest_packs = np.empty(longest, np.uint64)
    k = 0
    for d in range(count):
        out[d] = k
        a, b = starts[d], starts[d + 1]
        if b - a >= n:
            wide = np.uint32(0)
            for i in range(a, b):
                wide |= np.uint32(codes[i])
            if bits < 32 and wide >> np.uint32(bits) != 0:  # symbols wider than bits
                for i in range(a, b - n + 1):
                    hashes[k] = _gram(codes, i, n, bits, offset)
                    first[k] = i
                    k += 1
                continue
            if words > 1:
                _packs(codes, a, b, per_word, bits, full_packs)
            _packs(codes, a, b, rest, bits, rest_packs)
            for i in range(b - a - n + 1):
                if words == 1:
                    h = fmix(rest_packs[i] + offset)
                else:
                    h = fmix(full_packs[i] + offset)
                    for w in range(1, words - 1):
                        h = fmix(h * G + full_packs[i + w * per_word])
                    h = fmix(h * G + rest_packs[i + (words - 1) * per_word])
                hashes[k] = h
                first[k] = a + i
                k += 1
        elif b > a and short_whole:
            hashes[k] = _gram(codes, a, b - a, bits, offset)
            first[k] = a
            k += 1
    out[count] = k
    return hashes, first, out


ngrams = compile_kernel(_ngrams)


# --- winnowing ------------------------------------------------------------------------------
def _winnow(hashes, starts, window):
    """Winnowing per document (``shingles.winnow_positions``): in every window of ``window``
    hashes the smallest top 32 bits, the rightmost on ties; a document of at most ``window``
    hashes selects its minimum. Returns (index within the document, selection starts)."""
    count = len(starts) - 1
    chosen = np.empty(len(hashes), np.int64)
    out = np.empty(count + 1, np.int64)
    k = 0
    for d in range(count):
        out[d] = k
        a, b = starts[d], starts[d + 1]
        if b == a:
            continue
        last_start = max(a, b - window)
        best = a - 1
        low = np.uint64(0)
        previous = -1
        for s in range(a, last_start + 1):
            end = min(s + window, b) - 1
            if best < s:
                best = s
                low = hashes[s] >> S32
                for j in range(s + 1, end + 1):
                    v = hashes[j] >> S32
                    if v <= low:
                        low = v
                        best = j
            else:
                v = hashes[end] >> S32
                if v <= low:
                    low = v
                    best = end
            if best != previous:
                chosen[k] = best - a
                k += 1
                previous = best
    out[count] = k
    return chosen[:k].copy(), out


winnow = compile_kernel(_winnow)


# --- simhash and one-permutation MinHash of the n-grams -------------------------------------
def _simhash_oph(grams, starts, num_perm, mix, seed):
    """Per document: the tf-weighted simhash of its n-gram hashes, their one-permutation
    MinHash with optimal densification, and how many distinct hashes there are.

    The reference (``simhash.simhash_of_hashes`` and ``minhash.oph_signature`` over
    ``np.unique``) works on distinct hashes with their counts; here every occurrence is
    added once, which gives the same integer sums, and a bin keeps the minimum of all of
    them, which is the minimum over the distinct ones; distinct hashes are counted in an
    open-addressing table. In the reference a bin whose minimum is 2**32 - 1 counts as
    empty when densifying, so here too.
    """
    count = len(starts) - 1
    simhashes = np.zeros(count, np.uint64)
    values = np.full((count, num_perm), _EMPTY32, np.uint32)
    sizes = np.zeros(count, np.int64)
    longest = 0
    for d in range(count):
        longest = max(longest, starts[d + 1] - starts[d])
    capacity = 16
    while capacity < 2 * longest:
        capacity *= 2
    table = np.empty(capacity, np.uint64)
    owner = np.full(capacity, -1, np.int64)
    sums = np.zeros(64, np.int64)
    filled = np.zeros(num_perm, np.bool_)
    bins = np.uint64(num_perm)
    probe_seed = np.uint64(seed)
    for d in range(count):
        a, b = starts[d], starts[d + 1]
        if a == b:
            continue
        slots = 16
        while slots < 2 * (b - a):
            slots *= 2
        slot_mask = np.uint64(slots - 1)
        sums[:] = 0
        row = values[d]
        distinct = 0
        for i in range(a, b):
            h = grams[i]
            for bit in range(64):
                sums[bit] += np.int64((h >> np.uint64(bit)) & ONE)
            slot = np.int64(h & slot_mask)
            while owner[slot] == d and table[slot] != h:
                slot = np.int64((np.uint64(slot) + ONE) & slot_mask)
            if owner[slot] != d:
                owner[slot] = d
                table[slot] = h
                distinct += 1
            x = fmix(h ^ mix)
            low = np.uint32(x & LO32)
            target = ((x >> S32) * bins) >> S32
            if low < row[target]:
                row[target] = low
        sizes[d] = distinct
        value = np.uint64(0)
        for bit in range(64):
            if 2 * sums[bit] - (b - a) > 0:
                value |= ONE << np.uint64(bit)
        simhashes[d] = value
        full = 0
        for j in range(num_perm):
            filled[j] = row[j] != _EMPTY32
            full += filled[j]
        if full == 0 or full == num_perm:
            continue
        for j in range(num_perm):
            if filled[j]:
                continue
            attempt = np.uint64(0)
            while True:
                p = fmix((np.uint64(j) << S32) + attempt + probe_seed)
                source = ((p >> S32) * bins) >> S32
                if filled[source]:
                    row[j] = row[source]
                    break
                attempt += ONE
    return simhashes, values, sizes


simhash_oph = compile_kernel(_simhash_oph)
