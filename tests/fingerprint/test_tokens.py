"""fingerprint.tokens: code points, content characters, character n-grams and words."""

from __future__ import annotations

import unicodedata

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint.hashing import hash64, ngram_hashes
from fingerprint.tokens import (
    STOPWORDS,
    char_ngrams,
    codepoints,
    content_codes,
    content_mask,
    from_codepoints,
    ngram_hash_array,
    word_hashes,
    words,
)

SURROGATE = st.integers(0xD800, 0xDFFF).map(chr)
ANY_TEXT = st.text(alphabet=st.one_of(st.characters(), SURROGATE), max_size=60)
CHINESE_TEXT = st.text(alphabet="天下大势，分久必合。 周末七国ABc12！😀\n", max_size=60)


def is_content(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LN"


@settings(max_examples=100, deadline=None)
@given(ANY_TEXT)
def test_codepoints_round_trip_including_surrogates(text):
    codes = codepoints(text)
    assert codes.dtype == np.uint32
    assert codes.tolist() == [ord(c) for c in text]
    assert from_codepoints(codes) == text


def test_lone_surrogates_survive():
    assert codepoints("a\ud800b").tolist() == [0x61, 0xD800, 0x62]
    assert from_codepoints(codepoints("\udfff")) == "\udfff"


@settings(max_examples=100, deadline=None)
@given(ANY_TEXT)
def test_content_mask_is_letters_and_digits(text):
    mask = content_mask(codepoints(text))
    assert mask.tolist() == [is_content(c) for c in text]


def test_content_mask_astral():
    # U+20000 (a CJK Extension B letter), U+1F600 (emoji, a symbol), U+1D7CE (a digit)
    assert content_mask(codepoints("𠀀😀𝟎")).tolist() == [True, False, True]


@settings(max_examples=100, deadline=None)
@given(ANY_TEXT)
def test_content_codes_and_positions(text):
    codes, positions = content_codes(text)
    expected = [i for i, c in enumerate(text) if is_content(c)]
    assert positions.tolist() == expected
    assert codes.tolist() == [ord(text[i]) for i in expected]


def test_content_codes_doc_example():
    assert from_codepoints(content_codes("你好，世界! ok")[0]) == "你好世界ok"


@settings(max_examples=100, deadline=None)
@given(CHINESE_TEXT, st.integers(1, 6))
def test_char_ngrams_definition(text, n):
    content = "".join(c for c in text if is_content(c))
    grams = char_ngrams(text, n)
    if not content:
        assert grams == []
    elif len(content) <= n:
        assert grams == [content]
    else:
        assert grams == [content[i : i + n] for i in range(len(content) - n + 1)]


@settings(max_examples=100, deadline=None)
@given(CHINESE_TEXT, st.integers(1, 6), st.integers(0, 5))
def test_ngram_hash_array_hashes_content_ngrams(text, n, seed):
    hashes, starts = ngram_hash_array(text, n, seed)
    codes, positions = content_codes(text)
    grams = char_ngrams(text, n)
    assert len(hashes) == len(starts) == len(grams)
    if not grams:
        return
    if len(codes) < n:
        assert hashes.tolist() == ngram_hashes(codes, len(codes), seed).tolist()
        assert starts.tolist() == [positions[0]]
        return
    # each start is the position (in text) of the n-gram's first content character
    for gram, start in zip(grams, starts.tolist(), strict=True):
        assert text[start] == gram[0]
    # equal n-grams hash equal, different ones differ
    seen: dict[str, int] = {}
    for gram, h in zip(grams, hashes.tolist(), strict=True):
        assert seen.setdefault(gram, h) == h
    assert len(set(seen.values())) == len(seen)


def test_ngram_hashes_ignore_punctuation_and_spacing():
    a = ngram_hash_array("天下大势，分久必合，合久必分。", 3)[0]
    b = ngram_hash_array("天下 大势 分久必合——合久必分!!", 3)[0]
    assert a.tolist() == b.tolist()


def test_short_text_gets_one_hash():
    hashes, starts = ngram_hash_array("，天下！", 5)
    assert len(hashes) == 1
    assert starts.tolist() == [1]
    assert ngram_hash_array("，。！", 3)[0].size == 0


class TestWords:
    def test_doc_example(self):
        assert words("我们在北京大学学习") == ["北京大学", "学习"]

    def test_no_stopwords_or_punctuation(self):
        tokens = words("话说天下大势，分久必合，合久必分。我们的 the book 是 好的！")
        assert tokens
        assert not set(tokens) & STOPWORDS
        assert all(any(ch.isalnum() for ch in t) for t in tokens)
        assert all(t == t.strip() for t in tokens)

    def test_custom_stopwords(self):
        assert "北京大学" not in words("我们在北京大学学习", frozenset({"北京大学"}))

    def test_word_hashes_are_hash64(self):
        tokens = ["天下", "大势", "天下"]
        hashes = word_hashes(tokens, seed=3)
        assert hashes.dtype == np.uint64
        assert hashes.tolist() == [hash64(t, 3) for t in tokens]
        assert word_hashes([]).size == 0
