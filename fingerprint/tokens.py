"""Tokens of normalised text: code points, content characters, character n-grams and words.

Fingerprints are taken over *content characters*: letters (Han or any other script) and
digits. Punctuation, whitespace and symbols are skipped, so a copy that only re-punctuates
or re-spaces the text keeps its n-grams. Words come from jieba's algorithm (the Rust port,
rjieba) with a small stop-word list.
"""

from __future__ import annotations

import unicodedata
from functools import cache

import numpy as np

from fingerprint.hashing import hash64, ngram_hashes

_BMP = 0x10000

STOPWORDS: frozenset[str] = frozenset(
    "的 了 是 在 和 与 及 或 就 都 而 也 又 并 很 还 把 被 让 给 对 从 向 往 于 以 为 之 其 这 那 "
    "此 个 些 着 过 吗 呢 吧 啊 呀 嘛 么 哦 嗯 我 你 他 她 它 我们 你们 他们 她们 它们 自己 "
    "一个 没有 不是 什么 怎么 这个 那个 这样 那样 因为 所以 但是 如果 虽然 然后 可以 已经 "
    "a an the of to in on and or is are was were be it this that".split()
)
"""Default stop words: the most frequent Chinese function words and a few English ones."""


def codepoints(text: str) -> np.ndarray:
    """The code points of ``text`` as a uint32 array (lone surrogates kept as their values)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def from_codepoints(codes: np.ndarray) -> str:
    """Inverse of :func:`codepoints`."""
    return np.asarray(codes, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")


@cache
def content_table() -> np.ndarray:
    """BMP code point -> True for letters and digits (Unicode categories L* and N*)."""
    table = np.zeros(_BMP, dtype=bool)
    for cp in range(_BMP):
        table[cp] = unicodedata.category(chr(cp))[0] in "LN"
    table.setflags(write=False)
    return table


def content_mask(codes: np.ndarray) -> np.ndarray:
    """True where a code point is a content character (letter or digit of any script)."""
    codes = np.asarray(codes, dtype=np.uint32)
    mask = content_table()[np.minimum(codes, _BMP - 1)]
    astral = np.flatnonzero(codes >= _BMP)
    for i in astral:
        mask[i] = unicodedata.category(chr(int(codes[i])))[0] in "LN"
    return mask


def content_codes(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Content characters of ``text`` as code points, with their positions in ``text``.

    >>> from_codepoints(content_codes("你好，世界! ok")[0])
    '你好世界ok'
    """
    codes = codepoints(text)
    positions = np.flatnonzero(content_mask(codes))
    return codes[positions], positions


def char_ngrams(text: str, n: int) -> list[str]:
    """Character n-grams over the content characters of ``text`` (a short text gives one)."""
    content = from_codepoints(content_codes(text)[0])
    if not content:
        return []
    if len(content) <= n:
        return [content]
    return [content[i : i + n] for i in range(len(content) - n + 1)]


def ngram_hash_array(text: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Stable 64-bit hashes of the content-character n-grams of ``text``, with start positions.

    A text with fewer than ``n`` content characters (but at least one) gives one hash, of
    all of them, so short texts still have a fingerprint.
    """
    codes, positions = content_codes(text)
    return ngram_hashes_at(codes, positions, n, seed)


def ngram_hashes_at(
    codes: np.ndarray, positions: np.ndarray, n: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """n-gram hashes of content code points and the position where each n-gram starts."""
    if 0 < len(codes) < n:
        return ngram_hashes(codes, len(codes), seed), positions[:1]
    return ngram_hashes(codes, n, seed), positions[: max(0, len(codes) - n + 1)]


def words(text: str, stopwords: frozenset[str] = STOPWORDS) -> list[str]:
    """Words of ``text`` by jieba's algorithm (rjieba), without stop words or non-content tokens.

    >>> words("我们在北京大学学习")
    ['北京大学', '学习']
    """
    import rjieba

    out = []
    for token in rjieba.cut(text):
        token = token.strip()
        if token and token not in stopwords and any(ch.isalnum() for ch in token):
            out.append(token)
    return out


def word_hashes(tokens: list[str], seed: int = 0) -> np.ndarray:
    """Stable 64-bit hash of each token."""
    return np.fromiter((hash64(t, seed) for t in tokens), dtype=np.uint64, count=len(tokens))
