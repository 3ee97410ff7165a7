"""Anchors and passage alignment: spans, serialisation, containment under real edits."""

from __future__ import annotations

import random

import numpy as np
import pytest

from fingerprint.align import AlignParams, align, covered, occurrence_pairs
from fingerprint.anchors import AnchorParams, Anchors, Channel, anchors
from fingerprint.base import CorruptFingerprint, IncompatibleFingerprints
from fingerprint.normalize import normalize
from fingerprint.tokens import content_codes, from_codepoints
from tests.support.texts import SANGUO, SHUIHU, SIMPLIFIED, TRADITIONAL, XIYOU

LONG = SANGUO + XIYOU + SHUIHU


def anchors_of(text: str, params: AnchorParams | None = None) -> Anchors:
    return anchors(normalize(text).text, params)


def test_char_anchor_spans_cover_the_hashed_characters() -> None:
    text = normalize(LONG).text
    a = anchors(text)
    content = from_codepoints(content_codes(text)[0])
    assert a.length == len(content)
    assert (a.chars.ends - a.chars.starts == 8).all()
    # Equal hashes mean equal k-grams (no collision on this text).
    grams: dict[int, str] = {}
    for h, s, e in zip(a.chars.hashes, a.chars.starts, a.chars.ends, strict=True):
        assert grams.setdefault(int(h), content[s:e]) == content[s:e]


def test_pinyin_anchors_span_twelve_han_characters() -> None:
    a = anchors_of("注：" + SIMPLIFIED)
    content = from_codepoints(content_codes(normalize("注：" + SIMPLIFIED).text)[0])
    for s, e in zip(a.pinyin.starts, a.pinyin.ends, strict=True):
        assert sum("\u4e00" <= ch <= "\u9fff" for ch in content[s:e]) == 12


def test_traditional_text_has_the_same_anchors() -> None:
    a, b = anchors_of(SIMPLIFIED), anchors_of(TRADITIONAL)
    assert np.array_equal(a.pinyin.hashes, b.pinyin.hashes)
    assert align(a, b).containment_a > 0.95


def test_round_trip_and_bad_blobs() -> None:
    a = anchors_of(LONG)
    b = Anchors.from_bytes(a.to_bytes())
    for name in ("chars", "pinyin"):
        for field in ("hashes", "starts", "ends"):
            assert np.array_equal(
                getattr(getattr(a, name), field), getattr(getattr(b, name), field)
            )
    assert b.length == a.length
    with pytest.raises(CorruptFingerprint):
        Anchors.from_bytes(a.to_bytes()[:-4])
    with pytest.raises(CorruptFingerprint):
        Anchors.from_bytes(b"XYZ" + a.to_bytes()[3:])
    with pytest.raises(IncompatibleFingerprints):
        Anchors.from_bytes(a.to_bytes(), AnchorParams(char_k=6))
    with pytest.raises(IncompatibleFingerprints):
        align(a, anchors_of(LONG, AnchorParams(pinyin_k=10)))


def test_empty_and_short_texts() -> None:
    empty = anchors("")
    assert empty.length == 0 and len(empty.chars) == 0 and len(empty.pinyin) == 0
    short = anchors("你好")
    assert short.length == 2 and len(short.chars) == 0
    al = align(empty, short)
    assert al.passages == () and al.containment_a == 0.0 and al.containment_b == 0.0


def test_occurrence_pairs_pair_repeats_in_order() -> None:
    u = lambda *v: np.array(v, dtype=np.uint32)  # noqa: E731
    a = Channel(u(1, 2, 2, 3, 2), u(0, 10, 20, 30, 40), u(1, 11, 21, 31, 41))
    b = Channel(u(3, 2, 1, 9, 2), u(0, 10, 20, 30, 40), u(1, 11, 21, 31, 41))
    i, j = occurrence_pairs(a, b)
    pairs = sorted(zip(a.starts[i].tolist(), b.starts[j].tolist(), strict=True))
    assert pairs == [(0, 20), (10, 10), (20, 40), (30, 0)]
    i, j = occurrence_pairs(a, b, max_repeat=1)
    assert sorted(a.hashes[i].tolist()) == [1, 3]


def test_covered_counts_the_union() -> None:
    assert covered(np.array([0, 5, 3, 20]), np.array([4, 10, 6, 21])) == 11
    assert covered(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == 0


def test_exact_copy_inside_chrome_is_contained() -> None:
    work = anchors_of(LONG)
    page = anchors_of("首页 | 小说 | 排行榜\n" + LONG + "\n版权所有 © 某网站 联系我们")
    al = align(work, page)
    assert al.containment_a > 0.97
    assert 0.5 < al.containment_b < 0.99


def test_excerpt_containment_matches_its_share() -> None:
    work_text = normalize(LONG).text
    work = anchors(work_text)
    third = len(work_text) // 3
    page = anchors_of("无关的内容" * 10 + work_text[third : 2 * third] + "更多无关文字" * 10)
    assert abs(align(work, page).containment_a - 1 / 3) < 0.06


def test_shuffled_paragraphs_keep_containment_and_give_passages() -> None:
    paragraphs = [SIMPLIFIED[i : i + 40] for i in range(0, len(SIMPLIFIED), 40)]
    work = anchors_of("\n".join(paragraphs))
    shuffled = paragraphs[:]
    random.Random(3).shuffle(shuffled)
    al = align(work, anchors_of("\n".join(shuffled)))
    assert al.containment_a > 0.8
    assert len(al.passages) >= 3


def test_typos_leave_gaps_that_chaining_bridges() -> None:
    rng = random.Random(5)
    chars = list(LONG)
    han = [i for i, ch in enumerate(chars) if "\u4e00" <= ch <= "\u9fff"]
    for i in rng.sample(han, len(han) * 3 // 100):
        chars[i] = "鑫"
    al = align(anchors_of(LONG), anchors_of("".join(chars)))
    assert al.containment_a > 0.85


def test_unrelated_texts_share_nothing() -> None:
    other = "今天天气很好，我们一起去公园散步，看见很多人在放风筝，孩子们笑得很开心。" * 4
    al = align(anchors_of(LONG), anchors_of(other))
    assert al.passages == () and al.containment_a == 0.0


def test_min_chars_filters_short_passages() -> None:
    work = anchors_of(LONG)
    page = anchors_of("不相干的开头文字" + normalize(LONG).text[40:100] + "不相干的结尾文字")
    assert align(work, page, AlignParams(min_chars=24)).passages
    assert align(work, page, AlignParams(min_chars=80)).passages == ()
