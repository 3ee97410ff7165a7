"""The compiled normalisation passes (fingerprint.normalize_kernels) equal the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint import kernels, normalize_kernels
from fingerprint.batch import SEPARATOR, normalize_many
from fingerprint.normalize import NormalizeConfig, map_chars, normalize

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba cannot compile here")

# Deleted (zero-width, control), expanded (… ﬁ ㈱ ½), astral (emoji, CJK extension B),
# whitespace of every kind, Traditional characters, links, ads and microblog noise.
PIECES = [
    *"這是繁體字天下大势分久必合ＡＢＣabc１２3,，。！？…ﬁ㈱½😀𠀋\u200b\x00\t\r\n \u3000\u2028",
    "www.abc.com",
    "http://x.cn/a",
    "最新章节",
    "//@某人:转发",
    "#话题#",
    "[微笑]",
    "@用户",
    SEPARATOR,
    # OpenCC converts these phrases otherwise than the t2s table would character by
    # character (fingerprint.t2s_table.PHRASES); 乾隆 and 鍾 alone it converts as the table.
    "錢鍾書",
    "回覆",
    "哪吒",
    "乾",
    "鍾",
    "隆",
    "本章未完",
    "txt下载",
    "加入书签",
]
text = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)
texts = st.lists(text, max_size=8)


@settings(max_examples=80, deadline=None)
@given(text, st.booleans())
def test_map_chars_equals_the_reference(sample, lowercase):
    got_codes, got_offsets = normalize_kernels.map_chars(sample, lowercase)
    want_codes, want_offsets = map_chars(sample, lowercase)
    assert np.array_equal(got_codes, want_codes)
    assert np.array_equal(got_offsets, want_offsets)


@settings(max_examples=80, deadline=None)
@given(texts, st.booleans(), st.booleans(), st.booleans())
def test_normalize_many_equals_normalize(docs, lowercase, t2s, microblog):
    config = NormalizeConfig(t2s=t2s, lowercase=lowercase, microblog=microblog)
    fast = normalize_many(docs, config, compiled=True)
    slow = normalize_many(docs, config, compiled=False)
    for doc, a, b in zip(docs, fast, slow, strict=True):
        want = normalize(doc, config)
        for got in (a, b):
            assert got.text == want.text, repr(doc)
            assert np.array_equal(got.offsets, want.offsets)


def test_real_text(classical):
    docs = [*classical.values(), "", "  ", "\n\n", "a\n \n b"]
    for got, doc in zip(normalize_many(docs, compiled=True), docs, strict=True):
        want = normalize(doc)
        assert got.text == want.text
        assert np.array_equal(got.offsets, want.offsets)
