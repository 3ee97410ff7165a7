"""A compiled scanner for an alternation of plain literals (the default ad pattern of
normalisation step 3, :func:`fingerprint.normalize.noise_mask`): the same matches as
Python's ``re`` finds for ``"|".join(map(re.escape, literals))`` (leftmost, first
alternative at a position; ``tests/fingerprint/test_t2s.py`` asserts it), without ``re``.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from fingerprint.kernels import compile_kernel
from fingerprint.tokens import codepoints

_BMP = 0x10000
"""Characters below this are looked up as heads in a table (those above, by search)."""


def _first_literal_at(codes, p, end, h, head_starts, alt_starts, alt_codes):
    """The length of the first literal of head group ``h`` (in the pattern's order) that
    ``codes`` holds at ``p`` and that ends by ``end``; -1 when none does."""
    for q in range(head_starts[h], head_starts[h + 1]):
        a, b = alt_starts[q], alt_starts[q + 1]
        if p + (b - a) > end:
            continue
        same = True
        for i in range(b - a):
            if codes[p + i] != alt_codes[a + i]:
                same = False
                break
        if same:
            return b - a
    return -1


first_literal_at = compile_kernel(_first_literal_at)


def _literal_matches(codes, is_head, heads, head_starts, alt_starts, alt_codes):
    """``re.finditer`` of an alternation of literals (``normalize.literal_alternatives``):
    scanning left to right, at each position the first alternative (in the pattern's order,
    kept within each head's group) that matches there, and the scan resumes after it.
    Returns the matches' starts and ends."""
    starts = []
    ends = []
    n = len(codes)
    p = 0
    while p < n:
        c = codes[p]
        if c < 0x10000:
            head = is_head[c]
        else:
            j = np.searchsorted(heads, c)
            head = j < len(heads) and heads[j] == c
        if head:
            h = np.searchsorted(heads, c)
            found = first_literal_at(codes, p, n, h, head_starts, alt_starts, alt_codes)
            if found > 0:
                starts.append(p)
                ends.append(p + found)
                p += found
                continue
        p += 1
    return np.array(starts, np.int64), np.array(ends, np.int64)


literal_matches_kernel = compile_kernel(_literal_matches)


@cache
def _alternatives(literals: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """The arrays of :func:`_literal_matches` for an alternation of ``literals``: grouped by
    first character (ascending), the pattern's order kept within a group."""
    ordered = sorted(literals, key=lambda a: ord(a[0]))  # stable: order kept per head
    heads = sorted({ord(a[0]) for a in ordered})
    head_starts = np.searchsorted([ord(a[0]) for a in ordered], [*heads, 0x110000])
    alt_starts = np.zeros(len(ordered) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in ordered], out=alt_starts[1:])
    is_head = np.zeros(_BMP, dtype=np.bool_)
    is_head[[h for h in heads if h < _BMP]] = True
    return (
        is_head,
        np.array(heads, dtype=np.uint32),
        head_starts.astype(np.int64),
        alt_starts,
        codepoints("".join(ordered)).copy(),
    )


def literal_matches(codes: np.ndarray, literals: tuple[str, ...]) -> list[tuple[int, int]]:
    """Spans of ``re.finditer("|".join(map(re.escape, literals)), text)``, ``codes`` being
    ``text``'s code points; ``literals`` non-empty strings."""
    starts, ends = literal_matches_kernel(codes, *_alternatives(literals))
    return list(zip(starts.tolist(), ends.tolist(), strict=True))
