"""fingerprint.pinyin: initials, Daguan window dnas (fixed and anchored), invariances, storage."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from functools import cache

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pypinyin import Style, lazy_pinyin

from fingerprint.base import CorruptFingerprint, IncompatibleFingerprints
from fingerprint.normalize import normalize, to_simplified
from fingerprint.pinyin import (
    ALPHABET,
    PinyinFingerprint,
    PinyinParams,
    anchored_bounds,
    dna,
    dna_keys,
    fixed_bounds,
    initials,
    initials_hash,
    initials_string,
    pinyin_fingerprint,
    window_levels,
)
from fingerprint.reference_frequencies import REFERENCE_FREQUENCIES

HAN = re.compile(r"[\u4e00-\u9fff]")
UNIFORM = (1 / 23,) * 23


def first_letter(ch: str) -> str:
    """pypinyin's first letter of one character by itself ('' when it has no reading)."""
    letter = lazy_pinyin(ch, style=Style.FIRST_LETTER)[0]
    return letter if letter in ALPHABET and letter != ch else ""


def letters_of(text: str) -> list[int]:
    return [ALPHABET.index(letter) for ch in text if (letter := first_letter(ch))]


def fixed_bounds_ref(count: int, m: int, overlap: float) -> list[tuple[int, int]]:
    """Windows [0, m), [s, s + m), [2s, 2s + m) ... inside the text, then [count - m, count)
    if the tail is not covered yet; a short text is one window."""
    if count == 0:
        return []
    if count <= m:
        return [(0, count)]
    step = max(1, round(m * (1 - overlap)))
    windows = [(s, s + m) for s in range(0, count - m + 1, step)]
    if windows[-1][1] < count:
        windows.append((count - m, count))
    return windows


def levels_ref(letters: list[int], q: int, width: float, reference) -> list[int]:
    """clamp(floor(z / w) + q // 2, 0, q - 1) per letter, z the binomial z-score."""
    n = len(letters)
    out = []
    for i, p in enumerate(reference):
        c = letters.count(i)
        z = (c / n - p) / math.sqrt(p * (1 - p) / n)
        out.append(min(max(math.floor(z / width) + q // 2, 0), q - 1))
    return out


@cache
def _s2t():
    import opencc

    return opencc.OpenCC("s2t")


class TestInitials:
    def test_doc_example(self):
        letters, positions = initials("中文，abc 拼音")
        assert "".join(ALPHABET[i] for i in letters) == "zwpy"
        assert positions.tolist() == [0, 1, 7, 8]

    def test_alphabet_is_the_23_syllable_initials(self):
        assert len(ALPHABET) == 23
        assert set(ALPHABET) == set("abcdefghijklmnopqrstuvwxyz") - set("iuv")

    def test_agrees_with_pypinyin_on_every_frequent_character(self, common_simplified):
        text = "".join(common_simplified)
        expected = "".join(first_letter(c) for c in common_simplified)
        assert len(expected) == len(common_simplified)
        assert initials_string(text) == expected

    def test_agrees_with_lazy_pinyin_in_context(self, classical):
        text = "".join(classical.values())
        han = "".join(HAN.findall(text))
        theirs = lazy_pinyin(han, style=Style.FIRST_LETTER)
        ours = initials_string(han)
        assert len(ours) == len(theirs) == len(han)
        agree = sum(a == b for a, b in zip(ours, theirs, strict=True))
        assert agree / len(han) >= 0.99

    def test_only_han_characters_have_initials(self):
        assert initials_string("abc 123，。！😀 ＡＢＣ") == ""
        letters, positions = initials("")
        assert letters.size == 0 and positions.size == 0

    def test_astral_han_character(self):
        assert initials_string("𠀀") == first_letter("𠀀") == "h"

    def test_accepts_code_point_arrays(self):
        codes = np.array([ord(c) for c in "天下大势"], dtype=np.uint32)
        assert initials(codes)[0].tolist() == initials("天下大势")[0].tolist()


class TestWindows:
    @settings(max_examples=100, deadline=None)
    @given(st.integers(0, 400), st.integers(4, 64), st.sampled_from([0.0, 0.25, 0.5, 0.75]))
    def test_fixed_bounds_definition(self, count, m, overlap):
        params = PinyinParams(granule=m, overlap=overlap, reference=UNIFORM)
        got = [tuple(b) for b in fixed_bounds(count, params).tolist()]
        assert got == fixed_bounds_ref(count, m, overlap)

    def test_fifty_percent_overlap(self):
        got = fixed_bounds(100, PinyinParams(granule=48, reference=UNIFORM)).tolist()
        assert got == [[0, 48], [24, 72], [48, 96], [52, 100]]

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.integers(0, 22), min_size=1, max_size=200),
        st.sampled_from([2, 4, 8, 10]),
        st.sampled_from([0.0, 0.3, 1.0]),
        st.booleans(),
    )
    def test_window_levels_definition(self, letters, q, bin_width, uniform):
        reference = UNIFORM if uniform else REFERENCE_FREQUENCIES
        params = PinyinParams(granule=16, levels=q, bin_width=bin_width, reference=reference)
        arr = np.array(letters, dtype=np.uint8)
        bounds = np.array(fixed_bounds_ref(len(letters), 16, 0.5), dtype=np.int64)
        got = window_levels(arr, bounds, params)
        assert got.shape == (len(bounds), 23)
        for row, (a, b) in zip(got.tolist(), bounds.tolist(), strict=True):
            assert row == levels_ref(letters[a:b], q, params.width, reference)

    def test_default_bin_widths(self):
        widths = {q: PinyinParams(levels=q).width for q in (2, 4, 8, 10)}
        assert widths == {2: 1.0, 4: 1.0, 8: 0.5, 10: 0.4}
        assert PinyinParams(levels=4, bin_width=0.7).width == 0.7

    @settings(max_examples=60, deadline=None)
    @given(
        st.sampled_from([2, 4, 8, 10]).flatmap(
            lambda q: st.tuples(
                st.just(q), st.lists(st.integers(0, q - 1), min_size=23, max_size=23)
            )
        )
    )
    def test_dna_is_a_base_q_number(self, case):
        q, levels = case
        assert dna(np.array(levels), q) == sum(lv * q ** (22 - i) for i, lv in enumerate(levels))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.lists(st.integers(0, 3), min_size=23, max_size=23), min_size=1, max_size=8))
    def test_dna_keys_are_exact_for_four_levels(self, rows):
        keys = dna_keys(np.array(rows, dtype=np.uint8), 4)
        assert keys.dtype == np.uint64
        assert keys.tolist() == [dna(np.array(r), 4) for r in rows]

    def test_dna_keys_are_hashed_for_eight_and_ten_levels(self):
        rows = np.array([[1] * 23, [2] * 23, [1] * 23, [1] * 22 + [9]], dtype=np.uint8)
        for q in (8, 10):
            keys = dna_keys(rows, q).tolist()
            assert keys[0] == keys[2]
            assert len({keys[0], keys[1], keys[3]}) == 3

    def test_anchored_windows_cover_the_text_and_chain(self, classical):
        letters, _ = initials("".join(classical.values()))
        bounds = anchored_bounds(letters, PinyinParams(anchored=True))
        assert bounds[0, 0] == 0 and bounds[-1, 1] == len(letters)
        # window i spans cuts i..i+2, so window i+1 starts where window i's middle cut is
        assert np.all(bounds[1:, 0] > bounds[:-1, 0])
        assert np.all(bounds[2:, 0] == bounds[:-2, 1])
        mean = float(np.mean(bounds[:, 1] - bounds[:, 0]))
        assert 48 / 4 <= mean <= 48  # about granule / 2 letters

    def test_anchored_short_text_is_one_window(self):
        letters, _ = initials("天下大势")
        assert anchored_bounds(letters, PinyinParams(anchored=True)).tolist() == [[0, 4]]


class TestFingerprint:
    def test_keys_match_a_pypinyin_computation(self, classical):
        text = classical["sanguo"]
        params = PinyinParams()
        fp = pinyin_fingerprint(text, params)
        letters = letters_of(text)
        bounds = fixed_bounds_ref(len(letters), params.granule, params.overlap)
        expected = [
            dna(np.array(levels_ref(letters[a:b], 4, 1.0, params.reference)), 4) for a, b in bounds
        ]
        assert fp.keys.tolist() == expected

    def test_spans_point_at_han_characters(self, classical):
        text = classical["xiyou"] + "\nabc，" + classical["honglou"]
        for params in (PinyinParams(), PinyinParams(anchored=True)):
            fp = pinyin_fingerprint(text, params)
            assert len(fp) == len(fp.starts) == len(fp.ends) > 1
            for a, b in zip(fp.starts.tolist(), fp.ends.tolist(), strict=True):
                assert HAN.match(text[a]) and HAN.match(text[b - 1])
            assert fp.starts[0] == 0
            assert fp.ends[-1] <= len(text)

    def test_doc_example_and_methods(self):
        poem = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
        fp = pinyin_fingerprint(poem)
        assert (len(fp), fp.method) == (1, "pinyin")
        assert pinyin_fingerprint(poem, PinyinParams(anchored=True)).method == "pinyin-anchored"

    def test_no_han_gives_an_empty_fingerprint(self):
        fp = pinyin_fingerprint("no chinese here 123")
        assert len(fp) == 0 and fp.keyset().size == 0
        assert fp.containment_in(fp) == 0.0
        assert fp.resemblance(fp) == 0.0

    def test_anchored_windows_survive_an_inserted_line(self, classical):
        base = "".join(classical.values())
        inserted = base[:700] + "\n这是插入的一行文字大家多多支持谢谢\n" + base[700:]
        fixed = PinyinParams()
        anchored = PinyinParams(anchored=True)
        kept_anchored = pinyin_fingerprint(base, anchored).containment_in(
            pinyin_fingerprint(inserted, anchored)
        )
        kept_fixed = pinyin_fingerprint(base, fixed).containment_in(
            pinyin_fingerprint(inserted, fixed)
        )
        assert kept_anchored >= 0.9
        assert kept_anchored > kept_fixed

    @settings(max_examples=100, deadline=None)
    @given(
        st.lists(st.integers(0, 30), max_size=30),
        st.lists(st.integers(0, 30), max_size=30),
    )
    def test_containment_and_resemblance_are_set_measures(self, a, b):
        params = PinyinParams(reference=UNIFORM)

        def fp(keys):
            arr = np.array(keys, dtype=np.uint64)
            pos = np.arange(len(keys), dtype=np.int64)
            return PinyinFingerprint(params, arr, pos, pos + 1)

        sa, sb = set(a), set(b)
        assert fp(a).containment_in(fp(b)) == pytest.approx(len(sa & sb) / len(sa) if sa else 0.0)
        assert fp(a).resemblance(fp(b)) == pytest.approx(
            len(sa & sb) / len(sa | sb) if sa | sb else 0.0
        )
        assert fp(a).keyset().tolist() == sorted(sa)


class TestParams:
    @pytest.mark.parametrize(
        "kwargs",
        [
            {"levels": 3},
            {"granule": 3},
            {"overlap": 1.0},
            {"overlap": -0.1},
            {"reference": (0.5,) * 22},
            {"reference": (0.0,) + (1 / 22,) * 22},
            {"bin_width": -1.0},
            {"anchor_k": 0},
        ],
    )
    def test_invalid_params_raise(self, kwargs):
        with pytest.raises(ValueError):
            PinyinParams(**kwargs)


class TestCompatibilityAndStorage:
    @pytest.mark.parametrize(
        ("a", "b"),
        [
            (PinyinParams(), PinyinParams(anchored=True)),
            (PinyinParams(), PinyinParams(granule=32)),
            (PinyinParams(), PinyinParams(levels=2)),
            (PinyinParams(), PinyinParams(reference=UNIFORM)),
        ],
    )
    def test_different_params_cannot_be_compared(self, sample_texts, a, b):
        text = sample_texts["simplified"]
        fa, fb = pinyin_fingerprint(text, a), pinyin_fingerprint(text, b)
        with pytest.raises(IncompatibleFingerprints):
            fa.containment_in(fb)
        with pytest.raises(IncompatibleFingerprints):
            fa.resemblance(fb)

    def test_different_versions_cannot_be_compared(self, sample_texts):
        fp = pinyin_fingerprint(sample_texts["simplified"])
        other = PinyinFingerprint(fp.params, fp.keys, fp.starts, fp.ends, version=fp.version + 1)
        with pytest.raises(IncompatibleFingerprints):
            fp.containment_in(other)

    @pytest.mark.parametrize("anchored", [False, True])
    @pytest.mark.parametrize("name", ["simplified", "mixed", "empty"])
    def test_round_trip(self, sample_texts, name, anchored):
        import json

        fp = pinyin_fingerprint(sample_texts[name] * 3, PinyinParams(anchored=anchored))
        back = PinyinFingerprint.from_dict(json.loads(json.dumps(fp.to_dict())))
        assert back.method == fp.method and back.version == fp.version
        assert back.params == fp.params
        assert back.keys.tolist() == fp.keys.tolist()
        assert back.starts.tolist() == fp.starts.tolist()
        assert back.ends.tolist() == fp.ends.tolist()
        assert back.to_dict() == fp.to_dict()

    def _stored(self, sample_texts):
        return pinyin_fingerprint(sample_texts["simplified"] * 3).to_dict()

    @pytest.mark.parametrize(
        "corrupt",
        [
            lambda d: d.update(keys=d["keys"][:-16]),
            lambda d: d.update(keys="zz" + d["keys"][2:]),
            lambda d: d.update(keys=d["keys"][:-1]),
            lambda d: d.update(starts=None),
            lambda d: d.pop("ends"),
            lambda d: d.update(params=None),
            lambda d: d["params"].update(levels=3),
            lambda d: d["params"].update(reference=[0.5]),
            lambda d: d["params"].update(bogus=1),
            lambda d: d.update(method="simhash"),
            lambda d: d.update(method="pinyin-anchored"),
        ],
    )
    def test_corrupt_values_raise_corrupt_fingerprint(self, sample_texts, corrupt):
        stored = self._stored(sample_texts)
        corrupt(stored)
        with pytest.raises(CorruptFingerprint):
            PinyinFingerprint.from_dict(stored)

    def test_other_version_raises_incompatible(self, sample_texts):
        stored = self._stored(sample_texts)
        stored["version"] += 1
        with pytest.raises(IncompatibleFingerprints):
            PinyinFingerprint.from_dict(stored)

    def test_not_a_mapping(self):
        with pytest.raises(CorruptFingerprint):
            PinyinFingerprint.from_dict(["pinyin"])


# ---------------------------------------------------------------- invariance properties


@cache
def homophone_groups(pool: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """char -> the other frequent characters with the same toneless reading (by pypinyin)."""
    by_syllable: dict[str, list[str]] = defaultdict(list)
    for ch in pool:
        by_syllable[lazy_pinyin(ch)[0]].append(ch)
    return {
        ch: tuple(c for c in group if c != ch)
        for group in by_syllable.values()
        if len(group) > 1
        for ch in group
    }


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["sanguo", "xiyou", "honglou", "shuihu", "rulin"]), st.randoms())
def test_homophone_substitution_keeps_initials(common_simplified, classical, name, rnd):
    groups = homophone_groups(common_simplified)
    text = classical[name]
    chars = list(text)
    replaceable = [i for i, c in enumerate(chars) if c in groups]
    for i in rnd.sample(replaceable, max(1, len(chars) // 10)):
        chars[i] = rnd.choice(groups[chars[i]])
    edited = "".join(chars)
    assert edited != text
    assert initials_string(edited) == initials_string(text)
    assert initials_hash(edited) == initials_hash(text)
    assert initials(edited)[1].tolist() == initials(text)[1].tolist()
    for params in (PinyinParams(), PinyinParams(anchored=True)):
        a, b = pinyin_fingerprint(text, params), pinyin_fingerprint(edited, params)
        assert a.to_dict() == b.to_dict()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_simplified_and_traditional_give_the_same_pinyin(common_simplified, data):
    """A Simplified text and OpenCC's Traditional version normalise alike, so pinyin agrees."""
    pieces = data.draw(
        st.lists(
            st.one_of(st.sampled_from(common_simplified), st.sampled_from(list("，。！？\n "))),
            min_size=1,
            max_size=150,
        )
    )
    simplified = "".join(pieces)
    traditional = _s2t().convert(simplified)
    assume(to_simplified(traditional) == simplified)
    a, b = normalize(simplified), normalize(traditional)
    assert a.text == b.text
    for params in (PinyinParams(), PinyinParams(anchored=True)):
        fa, fb = pinyin_fingerprint(a.text, params), pinyin_fingerprint(b.text, params)
        assert fa.to_dict() == fb.to_dict()
