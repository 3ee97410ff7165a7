"""fingerprint.decode: BOMs, UTF-8, GB18030/GBK vs Big5, and clear errors for binary input."""

from __future__ import annotations

import codecs
import random
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint.base import FingerprintError
from fingerprint.decode import Decoded, UndecodableText, common_share, decode


@cache
def _s2t():
    import opencc

    return opencc.OpenCC("s2t")


def s2t(text: str) -> str:
    return _s2t().convert(text)


def test_empty_bytes_are_empty_utf8_text():
    assert decode(b"") == Decoded("", "utf-8")


def test_plain_utf8(sample_texts):
    for text in sample_texts.values():
        assert decode(text.encode("utf-8")) == Decoded(text, "utf-8")


def test_utf8_bom_is_stripped(sample_texts):
    text = sample_texts["simplified"]
    assert decode(codecs.BOM_UTF8 + text.encode()) == Decoded(text, "utf-8")


@pytest.mark.parametrize(
    ("bom", "codec"),
    [(codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")],
)
def test_utf16_with_bom(sample_texts, bom, codec):
    # mixed text: ASCII letters put NUL bytes in the stream, which the BOM must excuse
    for name in ("simplified", "mixed", "emoji"):
        text = sample_texts[name]
        decoded = decode(bom + text.encode(codec))
        assert decoded.text == text
        assert decoded.encoding == "utf-16"


@pytest.mark.parametrize(
    ("bom", "codec"),
    [(codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be")],
)
def test_utf32_with_bom(sample_texts, bom, codec):
    text = sample_texts["mixed"]
    assert decode(bom + text.encode(codec)) == Decoded(text, "utf-32")


def test_gbk(sample_texts):
    text = sample_texts["simplified"]
    data = text.encode("gbk")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")  # the test is meaningful only if UTF-8 fails
    assert decode(data) == Decoded(text, "gb18030")


def test_gbk_mixed_with_ascii(sample_texts):
    text = sample_texts["mixed"]
    assert decode(text.encode("gbk")) == Decoded(text, "gb18030")


def test_gb18030_four_byte_character(sample_texts):
    text = "𠀀" + sample_texts["simplified"] + "€"
    data = text.encode("gb18030")
    assert b"\x95\x32\x82\x36" in data  # U+20000 is a four-byte sequence
    assert decode(data) == Decoded(text, "gb18030")


def test_big5_traditional(sample_texts):
    text = sample_texts["traditional"]
    data = text.encode("big5")
    assert decode(data) == Decoded(text, "big5hkscs")


@pytest.mark.parametrize(
    "text",
    ["中文", "你好", "今天天氣很好", "話說天下大勢，分久必合，合久必分。", "三國演義", "電腦"],
)
def test_short_big5(text):
    assert decode(text.encode("big5")) == Decoded(text, "big5hkscs")


@pytest.mark.parametrize("text", ["中文", "你好世界", "天下大势", "简体中文测试", "电脑"])
def test_short_gbk(text):
    assert decode(text.encode("gbk")) == Decoded(text, "gb18030")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_gbk_and_big5_round_trip(common_simplified, data):
    """Frequent characters in either national encoding decode back to themselves.

    Distinct characters: one character repeated is genuinely ambiguous (Big5 '啊' is GBK '摆',
    both frequent) and the decoder then prefers GB18030 by design. At least 30 of them: a
    dozen random frequent characters can be frequent characters in the other encoding too
    (hypothesis found '蝉鼻鄙碍瓣癌鞍敖镑蔼矮啊'), which no decoder can tell apart.
    """
    chars = data.draw(
        st.lists(st.sampled_from(common_simplified), min_size=30, max_size=60, unique=True)
    )
    simplified = "".join(chars)
    assert decode(simplified.encode("gbk")).text == simplified
    traditional = s2t(simplified)
    try:
        big5 = traditional.encode("big5")
    except UnicodeEncodeError:
        return
    assert decode(big5).text == traditional


class TestCommonShare:
    def test_ascii_only_is_fully_plausible(self):
        assert common_share("hello") == 1.0

    def test_frequent_han_and_cjk_punctuation(self):
        assert common_share("中文，你好。") == 1.0

    def test_kana_and_private_use_are_implausible(self):
        assert common_share("いゅ\ue000") == 0.0


class TestErrors:
    def test_undecodable_is_a_fingerprint_error(self):
        assert issubclass(UndecodableText, FingerprintError)

    @pytest.mark.parametrize(
        "data",
        [
            b"\x00",
            b"PK\x03\x04\x14\x00\x00\x00\x08\x00",  # zip header
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",  # png header
            "中文".encode() + b"\x00" + "内容".encode(),
        ],
    )
    def test_nul_bytes_without_bom_are_binary(self, data):
        with pytest.raises(UndecodableText, match="binary"):
            decode(data)

    def test_truncated_utf16_after_bom(self):
        with pytest.raises(UndecodableText):
            decode(codecs.BOM_UTF16_BE + b"\xd8\x00")

    def test_invalid_utf8_after_bom(self):
        with pytest.raises(UndecodableText):
            decode(codecs.BOM_UTF8 + b"\xff\xfe\xfd")

    @pytest.mark.parametrize("seed", range(4))
    def test_random_bytes_are_undecodable(self, seed):
        rng = random.Random(seed)
        data = bytes(rng.randrange(1, 256) for _ in range(512))
        with pytest.raises(UndecodableText):
            decode(data)
