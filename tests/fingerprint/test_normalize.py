"""fingerprint.normalize: NFKC, lower-case, zero-width removal, t2s, noise, whitespace, offsets."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fingerprint.normalize import (
    _LINK_PARTS,
    LINK_PATTERN,
    NormalizeConfig,
    normalize,
    to_simplified,
)

NO_NOISE = NormalizeConfig(ad_patterns=(), links=False, microblog=False)

LONG_BODY = (
    "这是一段很长的正文内容，作者在这里写了很多很多的文字，用来检查长段落里的网址只删除网址本身，"
    "而正文的每一个字都保留下来。"
)


def norm(text: str, config: NormalizeConfig | None = None) -> str:
    return normalize(text, config).text


class TestCharacterMapping:
    def test_full_width_to_half_width(self):
        assert norm("ＡＢＣ１２３　ｘｙｚ！（）") == "abc123 xyz!()"

    def test_lower_case(self):
        assert norm("Hello WORLD ÀÉ") == "hello world àé"

    def test_lower_case_can_be_switched_off(self):
        assert norm("Hello ＷＯＲＬＤ", NormalizeConfig(lowercase=False)) == "Hello WORLD"

    @pytest.mark.parametrize("zw", ["\u200b", "\u200c", "\u200d", "\ufeff", "\u2060", "\xad"])
    def test_zero_width_and_format_characters_removed(self, zw):
        assert norm(f"天{zw}下{zw}大{zw}势") == "天下大势"

    def test_control_characters_removed(self):
        assert norm("天\x00下\x07大\x1b势") == "天下大势"

    def test_compatibility_forms_expand(self):
        n = normalize("ﬁ①")
        assert n.text == "fi1"
        assert n.offsets.tolist() == [0, 0, 1]


class TestTraditional:
    def test_traditional_paragraph_equals_simplified(self, sample_texts):
        assert norm(sample_texts["traditional"]) == norm(sample_texts["simplified"])

    def test_phrase_aware_conversion(self):
        assert norm("頭髮與發展") == "头发与发展"

    def test_t2s_can_be_switched_off(self):
        assert norm("這是繁體字", NormalizeConfig(t2s=False)) == "這是繁體字"

    @settings(max_examples=60, deadline=None)
    @given(
        st.text(
            alphabet="國說話們時間來對學會長見車馬門開關東風雲電頭髮與發這後過還愛書讀寫聽乾著\n",
            max_size=40,
        )
    )
    def test_to_simplified_keeps_length(self, text):
        assert len(to_simplified(text)) == len(text)


class TestAdLines:
    def test_short_ad_line_dropped(self):
        text = "第一章 天下大势\n最新章节请访问本站\n正文继续"
        assert norm(text) == "第一章 天下大势\n正文继续"

    def test_url_line_dropped(self):
        assert norm("正文一\nhttps://www.example.com/book/1.html\n正文二") == "正文一\n正文二"

    def test_bare_domain_line_dropped(self):
        assert norm("第二章\nm.xs.biquge.la\n正文") == "第二章\n正文"

    def test_traditional_and_full_width_ads_are_recognised(self):
        assert norm("正文一\n最新章節請訪問\n正文二") == "正文一\n正文二"
        assert norm("正文一\nｗｗｗ．ＢＩＱＵＧＥ．ＣＯＭ\n正文二") == "正文一\n正文二"

    def test_long_paragraph_keeps_text_but_loses_url(self):
        text = LONG_BODY + "详见 https://example.com/a?b=1 谢谢。"
        assert len(text) > 60
        out = norm(text)
        assert "example" not in out and "http" not in out
        assert out.startswith(norm(LONG_BODY))
        assert out.endswith("详见 谢谢。")

    def test_long_paragraph_loses_only_the_bare_domain(self):
        out = norm(LONG_BODY + "本书网址 biquge.com 欢迎。")
        assert out == norm(LONG_BODY) + "本书网址 欢迎。"

    def test_line_length_limit(self):
        short = "最新章节" + "好" * 56  # 60 characters: an ad line
        long = "最新章节" + "好" * 57  # 61 characters: a paragraph
        assert norm(f"正文\n{short}\n尾") == "正文\n尾"
        assert norm(f"正文\n{long}\n尾") == f"正文\n{long}\n尾"

    def test_custom_limit_and_patterns(self):
        config = NormalizeConfig(ad_patterns=("广告",), links=False, ad_line_max_chars=3)
        assert norm("正文\n广告词\n尾", config) == "正文\n尾"
        assert norm("正文\n这是广告词\n尾", config) == "正文\n这是广告词\n尾"

    def test_ads_can_be_switched_off(self):
        text = "正文\n最新章节 www.biquge.com\n尾"
        assert norm(text, NO_NOISE) == "正文\n最新章节 www.biquge.com\n尾"


class TestMicroblog:
    def test_repost_chain_removed_to_line_end(self):
        assert norm("转发微博 //@小明: 说得好 //@小红:赞\n下一行") == "转发微博\n下一行"

    def test_mention_topic_emoticon(self):
        assert norm("@张三 你好 #话题讨论# 今天天气真好[微笑] 看看") == "你好 今天天气真好 看看"

    def test_links_in_a_post(self):
        post = LONG_BODY + "看这里 http://t.cn/A6xYz 和 t.cn/Rabc12 还有 https://weibo.com/1/2 完"
        assert len(post) > 60
        assert norm(post) == norm(LONG_BODY) + "看这里 和 还有 完"

    def test_microblog_noise_can_be_switched_off(self):
        config = NormalizeConfig(microblog=False)
        assert norm("@张三 你好 #话题# [微笑]", config) == "@张三 你好 #话题# [微笑]"


class TestWhitespace:
    def test_runs_fold_to_one_space(self):
        assert norm("a  \t b\u3000\u3000c") == "a b c"

    def test_runs_with_a_line_break_fold_to_newline(self):
        assert norm("a  \n\n\n  b \r\n c\u2028d") == "a\nb\nc\nd"

    def test_ends_are_stripped(self):
        assert norm("\n\t  前后空白 \u3000\n") == "前后空白"

    def test_whitespace_only_is_empty(self):
        n = normalize(" \t\n\u3000\r\n ")
        assert n.text == ""
        assert len(n.offsets) == 0


class TestOffsets:
    def test_doc_example(self):
        n = normalize("　ＡＢＣ，這是繁體字！")
        assert n.text == "abc,这是繁体字!"
        assert n.quote(4, 6) == "這是"
        assert n.original_span(0, 3) == (1, 4)

    def test_quote_of_text_after_a_dropped_ad_line(self):
        original = "第一回\n最新章节请访问\n\u200b滚滚長江東逝水"
        n = normalize(original)
        assert n.text == "第一回\n滚滚长江东逝水"
        start = n.text.index("长江")
        assert n.quote(start, start + 2) == "長江"

    @pytest.mark.parametrize(("start", "end"), [(0, 0), (-1, 2), (2, 1), (0, 99)])
    def test_bad_spans_raise(self, start, end):
        with pytest.raises(ValueError):
            normalize("天下大势").original_span(start, end)


# Characters for the offset property: full-width, upper-case Latin, Traditional characters
# (checked to convert the same alone as in context), Simplified characters, zero-width and
# control characters, and every kind of whitespace. No '.', '@', '#', '[' and none of the
# characters of the ad phrases, so that the texts carry no noise.
_PIECES = (
    list("ＡＢＣｘｙｚ０１９（）！，")
    + list("ABCxyz019,!?")
    + list("國說話們時間來對學會東風雲電頭與這後過還愛書讀寫聽")
    + list("天下大势分久必合周末七秦汉朝高祖白蛇而起义统")
    + ["\u200b", "\u200d", "\ufeff", "\x00", "\x07"]
    + [" ", "  ", "\u3000", "\t", "\n", "\r\n", "\n\n"]
)
_ORIGINAL_TEXT = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)


def char_image(ch: str) -> str:
    """What one original character becomes by itself: NFKC, lower-case, t2s."""
    return to_simplified(unicodedata.normalize("NFKC", ch).lower())


def _context_free(text: str) -> bool:
    return to_simplified(text) == "".join(to_simplified(c) for c in text)


@settings(max_examples=100, deadline=None)
@given(_ORIGINAL_TEXT)
def test_offsets_point_at_the_source_character(original):
    assume(_context_free(original))
    n = normalize(original, NO_NOISE)
    offsets = n.offsets.tolist()
    assert len(offsets) == len(n.text)
    assert offsets == sorted(set(offsets))  # strictly increasing: no expansions here
    assert all(0 <= o < len(original) for o in offsets)
    for ch, o in zip(n.text, offsets, strict=True):
        source = original[o]
        if ch in " \n":
            assert source.isspace()
        else:
            assert char_image(source) == ch
    # every original character left out is whitespace or a deleted control/format character
    for i in set(range(len(original))) - set(offsets):
        assert original[i].isspace() or unicodedata.category(original[i]) in ("Cc", "Cf")


@settings(max_examples=100, deadline=None)
@given(_ORIGINAL_TEXT, st.data())
def test_quote_returns_the_original_of_any_span(original, data):
    assume(_context_free(original))
    n = normalize(original, NO_NOISE)
    assume(n.text)
    start = data.draw(st.integers(0, len(n.text) - 1))
    end = data.draw(st.integers(start + 1, len(n.text)))
    quote = n.quote(start, end)
    assert quote in original
    assert normalize(quote, NO_NOISE).text == n.text[start:end].strip(" \n")
    a, b = n.original_span(start, end)
    assert original[a:b] == quote


_NOISE = st.sampled_from(["[微笑]", "@user_1 ", "#话题讨论#", " t.cn/Ab12 ", "//@某人:转发\n"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(_ORIGINAL_TEXT, _NOISE), max_size=8).map("".join))
def test_offsets_skip_microblog_noise(original):
    assume(_context_free(original))
    config = NormalizeConfig(ad_patterns=(), links=False)
    n = normalize(original, config)
    offsets = n.offsets
    assert np.all(np.diff(offsets) > 0)
    for ch, o in zip(n.text, offsets.tolist(), strict=True):
        if ch not in " \n":
            assert char_image(original[o]) == ch
    for marker in "[]@#/":
        assert marker not in n.text


def covered(patterns: list[str], sample: str) -> set[int]:
    out: set[int] = set()
    for pattern in patterns:
        for match in re.finditer(pattern, sample):
            out.update(range(match.start(), match.end()))
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["http", "s", "://", "www", ".", "x", " ", "\n", "中"]), max_size=30)
)
def test_link_parts_drop_what_the_link_pattern_drops(pieces):
    sample = "".join(pieces)
    assert covered(list(_LINK_PARTS), sample) == covered([LINK_PATTERN], sample)
