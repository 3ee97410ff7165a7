"""The per-element loops of the fingerprints, compiled with numba; numpy stays the reference.

Each kernel loops over a *segmented* array: ``starts`` (int64, one more entry than there
are documents) says where each document's elements begin, so one call serves one text or a
batch. Each computes exactly what the numpy code of its module computes (named in its
docstring); ``tests/fingerprint/test_kernels.py`` asserts equality, values and order.
Integer arithmetic wraps at 64 bits as numpy's does; the floating point of the window
levels uses the same operations in the same order, without fast-math, so it rounds the
same.

Compiled code is cached (numba ``cache=True``): next to this file when that folder is
writable, else in the user's cache folder (``NUMBA_CACHE_DIR`` overrides both); a process
that can write neither compiles in memory. :func:`available` says whether the kernels can
run: False without numba, with ``NUMBA_DISABLE_JIT`` set, or when compiling fails, and
then callers use the numpy reference.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; this is the fallback
    numba = None

_G = np.uint64(0x9E3779B97F4A7C15)
_C1 = np.uint64(0xFF51AFD7ED558CCD)
_C2 = np.uint64(0xC4CEB9FE1A85EC53)
_S32 = np.uint64(32)
_S33 = np.uint64(33)
_ONE = np.uint64(1)
_LO32 = np.uint64(0xFFFFFFFF)
_EMPTY32 = np.uint32(0xFFFFFFFF)
_MASK64 = (1 << 64) - 1
_LETTERS = 23
_MEMO = 128  # window lengths whose levels window_keys tabulates


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


# --- the characters of a text -------------------------------------------------------------
def _split_text(all_codes, starts, content_table, astral, astral_content, initial_table):
    """Content characters and pinyin initials of texts laid end to end, in one pass.

    ``tokens.content_mask`` (BMP characters by ``content_table``, the ``astral`` ones, sorted,
    by ``astral_content``) and ``pinyin.initials`` (``initial_table``; 255: none). Returns
    the mask, the content characters' positions, code points and starts per text, the
    initials, their positions and starts per text, and for each initial the number of
    content characters before it (its index among them, since initials are Han).
    """
    n = len(all_codes)
    count = len(starts) - 1
    mask = np.empty(n, np.bool_)
    positions = np.empty(n, np.int64)
    codes = np.empty(n, np.uint32)
    letters = np.empty(n, np.uint8)
    letter_pos = np.empty(n, np.int64)
    letter_index = np.empty(n, np.int64)
    content_starts = np.empty(count + 1, np.int64)
    letter_starts = np.empty(count + 1, np.int64)
    k = 0
    m = 0
    for d in range(count):
        content_starts[d] = k
        letter_starts[d] = m
        for i in range(starts[d], starts[d + 1]):
            c = all_codes[i]
            bmp = c < 0x10000
            content = content_table[c] if bmp else astral_content[np.searchsorted(astral, c)]
            letter = initial_table[c] if c < len(initial_table) else 255
            if letter != 255:
                letters[m] = letter
                letter_pos[m] = i
                letter_index[m] = k
                m += 1
            mask[i] = content
            if content:
                positions[k] = i
                codes[k] = c
                k += 1
    content_starts[count] = k
    letter_starts[count] = m
    return (
        mask,
        positions[:k].copy(),
        codes[:k].copy(),
        content_starts,
        letters[:m].copy(),
        letter_pos[:m].copy(),
        letter_starts,
        letter_index[:m].copy(),
    )


split_text = compile_kernel(_split_text)


# --- hashing --------------------------------------------------------------------------------
def _fmix(x):
    x ^= x >> _S33
    x *= _C1
    x ^= x >> _S33
    x *= _C2
    return x ^ (x >> _S33)


_fmix = compile_kernel(_fmix)


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
        h = _fmix(word + offset) if first == 0 else _fmix(h * _G + word)
        first += per_word
    return h


_gram = compile_kernel(_gram)


def _packs(codes, a, b, length, bits, out):
    """``out[i]``: the ``length`` symbols from ``a + i`` packed ``bits`` to a symbol, as
    ``hashing.ngram_hashes`` packs a word; rolled along, which needs symbols < 2**bits."""
    shift = np.uint64(bits)
    mask = ~np.uint64(0) if length * bits >= 64 else (_ONE << np.uint64(length * bits)) - _ONE
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
                    h = _fmix(rest_packs[i] + offset)
                else:
                    h = _fmix(full_packs[i] + offset)
                    for w in range(1, words - 1):
                        h = _fmix(h * _G + full_packs[i + w * per_word])
                    h = _fmix(h * _G + rest_packs[i + (words - 1) * per_word])
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
                low = hashes[s] >> _S32
                for j in range(s + 1, end + 1):
                    v = hashes[j] >> _S32
                    if v <= low:
                        low = v
                        best = j
            else:
                v = hashes[end] >> _S32
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
                sums[bit] += np.int64((h >> np.uint64(bit)) & _ONE)
            slot = np.int64(h & slot_mask)
            while owner[slot] == d and table[slot] != h:
                slot = np.int64((np.uint64(slot) + _ONE) & slot_mask)
            if owner[slot] != d:
                owner[slot] = d
                table[slot] = h
                distinct += 1
            x = _fmix(h ^ mix)
            low = np.uint32(x & _LO32)
            target = ((x >> _S32) * bins) >> _S32
            if low < row[target]:
                row[target] = low
        sizes[d] = distinct
        value = np.uint64(0)
        for bit in range(64):
            if 2 * sums[bit] - (b - a) > 0:
                value |= _ONE << np.uint64(bit)
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
                p = _fmix((np.uint64(j) << _S32) + attempt + probe_seed)
                source = ((p >> _S32) * bins) >> _S32
                if filled[source]:
                    row[j] = row[source]
                    break
                attempt += _ONE
    return simhashes, values, sizes


simhash_oph = compile_kernel(_simhash_oph)


# --- pinyin windows -------------------------------------------------------------------------
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
            key = key * base + level if exact else _fmix(key * _G + level)
        keys[w] = key
    return keys


window_keys = compile_kernel(_window_keys)


# --- sentences ------------------------------------------------------------------------------
def _sentences(codes, mask, starts, ends_table, k, min_chars):
    """The ``k`` longest sentences (content characters, at least ``min_chars``; earlier first
    on ties) of each document, best first (``sentences.signature_from_codes``).

    Returns (spans as global [start, end), selection starts, the content code points of the
    chosen sentences one after another, where each sentence's begin in them)."""
    count = len(starts) - 1
    n_codes = len(codes)
    chosen = np.empty((count * k, 2), np.int64)
    chosen_len = np.empty(count * k, np.int64)
    out = np.empty(count + 1, np.int64)
    found_a = np.empty(n_codes + 1, np.int64)
    found_b = np.empty(n_codes + 1, np.int64)
    found_len = np.empty(n_codes + 1, np.int64)
    m = 0
    for d in range(count):
        out[d] = m
        n = 0
        i = starts[d]
        while i < starts[d + 1]:
            c = min(codes[i], 0xFFFF)
            if ends_table[c]:
                i += 1
                continue
            a, length = i, 0
            while i < starts[d + 1] and not ends_table[min(codes[i], 0xFFFF)]:
                length += mask[i]
                i += 1
            if length >= min_chars:
                found_a[n], found_b[n], found_len[n] = a, i, length
                n += 1
        for r in range(n):  # the k longest, longest first, the earlier first on ties
            if r < k:
                chosen_at = m + r
            elif found_len[r] > chosen_len[m + k - 1]:
                chosen_at = m + k - 1
            else:
                continue
            while chosen_at > m and found_len[r] > chosen_len[chosen_at - 1]:
                chosen[chosen_at, 0] = chosen[chosen_at - 1, 0]
                chosen[chosen_at, 1] = chosen[chosen_at - 1, 1]
                chosen_len[chosen_at] = chosen_len[chosen_at - 1]
                chosen_at -= 1
            chosen[chosen_at, 0], chosen[chosen_at, 1] = found_a[r], found_b[r]
            chosen_len[chosen_at] = found_len[r]
        m += min(k, n)
    out[count] = m
    spans = chosen[:m].copy()
    size = 0
    for r in range(m):
        for i in range(spans[r, 0], spans[r, 1]):
            size += mask[i]
    text = np.empty(size, np.uint32)
    begins = np.empty(m + 1, np.int64)
    t = 0
    for r in range(m):
        begins[r] = t
        for i in range(spans[r, 0], spans[r, 1]):
            if mask[i]:
                text[t] = codes[i]
                t += 1
    begins[m] = t
    return spans, out, text, begins


sentences = compile_kernel(_sentences)


def _utf8_offsets(codes, begins):
    """Byte offset in the UTF-8 encoding of ``codes`` (surrogates as 3 bytes, as with
    ``surrogatepass``) of each index in ``begins``."""
    out = np.empty(len(begins), np.int64)
    size = 0
    at = 0
    for r in range(len(begins)):
        while at < begins[r]:
            c = codes[at]
            size += 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4
            at += 1
        out[r] = size
    return out


utf8_offsets = compile_kernel(_utf8_offsets)


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
