"""OpenCC's Traditional to Simplified conversion (``t2s``) by a code-point table, where exact.

OpenCC cuts a text into the longest keys of its dictionaries (phrases of two characters or
more, and single characters), writes each key's first value, and copies a character no key
begins with; ``t2s`` first normalises CJK compatibility ideographs by a dictionary of single
characters. So OpenCC's result is the character-by-character conversion, by the table of
what OpenCC makes of each code point alone (:mod:`fingerprint.t2s_table`, ``SOURCE`` ->
``TARGET``), *unless* it uses a key whose value differs from that, or normalises a
character: ``PHRASES`` lists those keys, and every key of the normalisation. A text in
which none of ``PHRASES`` occurs is converted by the table exactly as by OpenCC; a text
holding one is left to OpenCC. The table and the list are derived from the installed
OpenCC by ``bench/make_t2s_table.py``; :func:`tables` uses them only with the OpenCC
version they come from (else every text goes to OpenCC), and
``tests/fingerprint/test_t2s.py`` checks them against OpenCC on every code point, every
phrase and generated text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from fingerprint import t2s_table
from fingerprint.tokens import codepoints

_BMP = 0x10000


@dataclass(frozen=True)
class T2sTables:
    """The table and the phrases as arrays for :func:`fingerprint.normalize_kernels.join_t2s`.

    ``bmp``: BMP code point -> converted code point. ``astral`` / ``astral_to``: the astral
    code points converted (ascending) and what they become. ``heads``: the first characters
    of the phrases (ascending), ``head_starts``: where each head's phrases begin in
    ``phrase_starts`` (one more entry), ``phrase_starts`` / ``phrase_codes``: the phrases'
    code points end to end. ``is_head``: BMP code point -> whether it is a head.
    """

    bmp: np.ndarray
    astral: np.ndarray
    astral_to: np.ndarray
    is_head: np.ndarray
    heads: np.ndarray
    head_starts: np.ndarray
    phrase_starts: np.ndarray
    phrase_codes: np.ndarray


def build_tables(source: str, target: str, phrases: tuple[str, ...]) -> T2sTables:
    """The arrays of a table (``source[i]`` -> ``target[i]``) and its phrases."""
    src, dst = codepoints(source), codepoints(target)
    bmp = np.arange(_BMP, dtype=np.uint32)
    low = src < _BMP
    bmp[src[low]] = dst[low]
    order = np.argsort(src[~low], kind="stable")
    ordered = sorted(phrases, key=lambda p: (ord(p[0]), p))
    heads = sorted({ord(p[0]) for p in ordered})
    head_starts = np.searchsorted([ord(p[0]) for p in ordered], [*heads, 0x110000])
    lengths = [len(p) for p in ordered]
    phrase_starts = np.zeros(len(ordered) + 1, dtype=np.int64)
    np.cumsum(lengths, out=phrase_starts[1:])
    is_head = np.zeros(_BMP, dtype=np.bool_)
    is_head[[h for h in heads if h < _BMP]] = True
    out = T2sTables(
        bmp=bmp,
        astral=np.ascontiguousarray(src[~low][order]),
        astral_to=np.ascontiguousarray(dst[~low][order]),
        is_head=is_head,
        heads=np.array(heads, dtype=np.uint32),
        head_starts=head_starts.astype(np.int64),
        phrase_starts=phrase_starts,
        phrase_codes=codepoints("".join(ordered)).copy(),
    )
    for array in vars(out).values():
        array.setflags(write=False)
    return out


@cache
def tables() -> T2sTables | None:
    """The tables of :mod:`fingerprint.t2s_table`, or None when the installed OpenCC is not
    the version they were derived from or converts a character of ``SOURCE`` otherwise."""
    import opencc

    from fingerprint.normalize import opencc_t2s

    if getattr(opencc, "__version__", None) != t2s_table.OPENCC_VERSION:
        return None
    probe = opencc_t2s().convert("\n".join(t2s_table.SOURCE))
    if probe != "\n".join(t2s_table.TARGET):
        return None
    return build_tables(t2s_table.SOURCE, t2s_table.TARGET, t2s_table.PHRASES)
