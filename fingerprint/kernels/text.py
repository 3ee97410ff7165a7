"""A text's characters: content characters and initials, sentences, UTF-8 offsets."""

from __future__ import annotations

import numpy as np

from fingerprint.kernels.jit import compile_kernel


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
