"""fingerprint.shingles: Broder's shingles and sketches, and winnowing (Schleimer et al.)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint.base import CorruptFingerprint, IncompatibleFingerprints
from fingerprint.shingles import (
    WinnowFingerprint,
    WinnowParams,
    containment,
    mins,
    mins_resemblance,
    minwise,
    minwise_resemblance,
    modm,
    modm_containment,
    modm_resemblance,
    resemblance,
    shingles,
    sliding_min,
    winnow,
    winnow_keys,
    winnow_positions,
)
from fingerprint.tokens import ngram_hash_array

M64 = (1 << 64) - 1
SETS = st.sets(st.integers(0, 40), max_size=30)
HASH_LISTS = st.lists(st.integers(0, M64), max_size=60)


def winnow_ref(hashes: list[int], window: int) -> list[int]:
    """Positions of the minimum (top 32 bits, rightmost on ties) of every window of hashes."""
    if not hashes:
        return []
    top = [h >> 32 for h in hashes]

    def rightmost_min(lo: int, hi: int) -> int:
        best = lo
        for i in range(lo, hi):
            if top[i] <= top[best]:
                best = i
        return best

    if len(hashes) <= window:
        return [rightmost_min(0, len(hashes))]
    chosen = {rightmost_min(i, i + window) for i in range(len(hashes) - window + 1)}
    return sorted(chosen)


class TestSets:
    def test_shingles_doc_example(self):
        assert sorted(shingles("abcd", 2)) == ["ab", "bc", "cd"]

    def test_shingles_skip_punctuation(self):
        assert shingles("天下，大势。", 2) == {"天下", "下大", "大势"}

    @settings(max_examples=100, deadline=None)
    @given(SETS, SETS)
    def test_resemblance_and_containment(self, a, b):
        union = a | b
        assert resemblance(a, b) == (len(a & b) / len(union) if union else 0.0)
        assert containment(a, b) == (len(a & b) / len(a) if a else 0.0)
        arr_a, arr_b = np.array(sorted(a), dtype=np.uint64), np.array(sorted(b), dtype=np.uint64)
        assert resemblance(arr_a, arr_b) == resemblance(a, b)
        assert containment(arr_a, arr_b) == containment(a, b)

    def test_text_shingles_resemblance(self):
        a = shingles("天下大势分久必合", 3)
        b = shingles("天下大势合久必分", 3)
        assert resemblance(a, b) == pytest.approx(2 / 10)
        assert containment(a, b) == pytest.approx(2 / 6)


class TestSketches:
    @settings(max_examples=100, deadline=None)
    @given(HASH_LISTS, st.integers(1, 20))
    def test_mins_is_the_s_smallest_distinct(self, hashes, s):
        got = mins(np.array(hashes, dtype=np.uint64), s).tolist()
        assert got == sorted(set(hashes))[:s]

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.integers(0, 40), max_size=300), st.integers(1, 45))
    def test_mins_of_many_repeated_hashes(self, hashes, s):
        got = mins(np.array(hashes, dtype=np.int64), s)
        assert got.dtype == np.int64 and got.tolist() == sorted(set(hashes))[:s]

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.integers(0, 10_000), max_size=60), st.integers(1, 7))
    def test_modm_keeps_multiples_of_m(self, hashes, m):
        got = modm(np.array(hashes, dtype=np.uint64), m).tolist()
        assert got == sorted({h for h in hashes if h % m == 0})

    @settings(max_examples=100, deadline=None)
    @given(HASH_LISTS, HASH_LISTS, st.integers(1, 20))
    def test_mins_resemblance_is_broders_estimate(self, a, b, s):
        sa = sorted(set(a))[:s]
        sb = sorted(set(b))[:s]
        union = sorted(set(sa) | set(sb))[:s]
        expected = len(set(union) & set(sa) & set(sb)) / len(union) if union else 0.0
        got = mins_resemblance(np.array(sa, dtype=np.uint64), np.array(sb, dtype=np.uint64), s)
        assert got == pytest.approx(expected)

    @settings(max_examples=100, deadline=None)
    @given(SETS, SETS)
    def test_modm_estimates_are_set_measures_of_the_sketches(self, a, b):
        ma = np.array(sorted(x for x in a if x % 3 == 0), dtype=np.uint64)
        mb = np.array(sorted(x for x in b if x % 3 == 0), dtype=np.uint64)
        sa, sb = set(ma.tolist()), set(mb.tolist())
        union = sa | sb
        assert modm_resemblance(ma, mb) == (len(sa & sb) / len(union) if union else 0.0)
        assert modm_containment(ma, mb) == (len(sa & sb) / len(sa) if sa else 0.0)

    def test_mins_estimate_is_close_on_large_sets(self):
        rng = np.random.default_rng(0)
        universe = rng.choice(M64 // 2, 6000, replace=False).astype(np.uint64)
        a, b = universe[:4000], universe[2000:]  # Jaccard 1/3
        estimate = mins_resemblance(mins(a, 400), mins(b, 400), 400)
        assert abs(estimate - 1 / 3) < 0.1


class TestWinnowing:
    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.integers(0, 1000), min_size=1, max_size=60), st.integers(1, 12))
    def test_sliding_min(self, values, window):
        if len(values) < window:
            return
        arr = np.array(values, dtype=np.uint64)
        expected = [min(values[i : i + window]) for i in range(len(values) - window + 1)]
        assert sliding_min(arr, window).tolist() == expected

    def test_winnow_keys_order_by_top_bits_then_rightmost(self):
        hashes = np.array([5 << 32 | 7, 5 << 32 | 1, 9 << 32, 5 << 32 | 99], dtype=np.uint64)
        keys = winnow_keys(hashes)
        assert int(np.argmin(keys)) == 3  # equal top bits: the rightmost wins
        assert keys[2] > keys[0]

    @settings(max_examples=150, deadline=None)
    @given(
        st.lists(
            st.integers(0, 3).map(lambda top: top << 32) | st.integers(0, M64),
            max_size=80,
        ).map(lambda xs: [x | (i * 7919 & 0xFFFF) for i, x in enumerate(xs)]),
        st.integers(1, 12),
    )
    def test_winnow_positions_match_definition(self, hashes, window):
        # few distinct top halves: ties are frequent, so the tie rule is exercised
        got = winnow_positions(np.array(hashes, dtype=np.uint64), window).tolist()
        assert got == winnow_ref(hashes, window)

    def test_short_sequence_selects_its_rightmost_minimum(self):
        hashes = np.array([3 << 32, 1 << 32, 2 << 32, 1 << 32 | 5], dtype=np.uint64)
        assert winnow_positions(hashes, 8).tolist() == [3]
        assert winnow_positions(np.empty(0, dtype=np.uint64), 4).size == 0

    def test_winnow_selects_from_content_kgrams(self, classical):
        text = classical["shuihu"]
        params = WinnowParams()
        fp = winnow(text, params)
        hashes, starts = ngram_hash_array(text, params.k)
        chosen = winnow_ref(hashes.tolist(), params.window)
        assert fp.hashes.tolist() == hashes[chosen].tolist()
        assert fp.positions.tolist() == starts[chosen].tolist()
        assert len(fp) == len(chosen)
        # density about 2 / (w + 1)
        assert 0.1 < len(fp) / len(hashes) < 0.4

    def test_doc_example(self):
        fp = winnow("天下大势，分久必合，合久必分。周末七国分争，并入于秦。")
        assert len(fp) > 0 and fp.method == "winnow"

    @settings(max_examples=60, deadline=None)
    @given(st.data())
    def test_any_shared_run_of_t_characters_is_found(self, common_simplified, data):
        """Guarantee threshold t = w + k - 1: a shared run that long shares a selected hash."""
        k = data.draw(st.integers(2, 8))
        w = data.draw(st.integers(1, 8))
        params = WinnowParams(k=k, window=w)
        chars = st.sampled_from(common_simplified)
        shared = "".join(data.draw(st.lists(chars, min_size=w + k - 1, max_size=w + k + 5)))
        before_a, after_a, before_b, after_b = (
            "".join(data.draw(st.lists(chars, max_size=40))) for _ in range(4)
        )
        a = winnow(before_a + "，" + shared + "。" + after_a, params)
        b = winnow(before_b + shared + after_b, params)
        assert set(a.hashes.tolist()) & set(b.hashes.tolist())
        assert a.containment_in(b) > 0

    def test_containment_of_an_excerpt(self, classical):
        whole = "".join(classical.values())
        excerpt = classical["honglou"][40:200]
        assert winnow(excerpt).containment_in(winnow(whole)) >= 0.9
        assert winnow(classical["xiyou"]).containment_in(winnow(classical["rulin"])) < 0.1

    @pytest.mark.parametrize("kwargs", [{"k": 0}, {"window": 0}])
    def test_invalid_params(self, kwargs):
        with pytest.raises(ValueError):
            WinnowParams(**kwargs)


class TestWinnowStorage:
    @pytest.mark.parametrize("text", ["", "天", "天下大势，分久必合，合久必分。" * 5])
    def test_round_trip(self, text):
        fp = winnow(text, WinnowParams(k=5, window=4, seed=2))
        back = WinnowFingerprint.from_dict(json.loads(json.dumps(fp.to_dict())))
        assert back.params == fp.params and back.method == fp.method
        assert back.version == fp.version
        assert back.hashes.tolist() == fp.hashes.tolist()
        assert back.positions.tolist() == fp.positions.tolist()

    @pytest.mark.parametrize(
        ("corrupt", "error"),
        [
            (lambda d: d.update(hashes=d["hashes"][:-16]), CorruptFingerprint),
            (lambda d: d.update(hashes=d["hashes"][:-1]), CorruptFingerprint),
            (lambda d: d.update(positions="zz"), CorruptFingerprint),
            (lambda d: d.pop("positions"), CorruptFingerprint),
            (lambda d: d.update(params=None), CorruptFingerprint),
            (lambda d: d["params"].update(k=0), CorruptFingerprint),
            (lambda d: d.update(method="simhash"), CorruptFingerprint),
            (lambda d: d.update(version=99), IncompatibleFingerprints),
        ],
    )
    def test_corrupt(self, corrupt, error):
        stored = winnow("天下大势，分久必合，合久必分。周末七国分争").to_dict()
        corrupt(stored)
        with pytest.raises(error):
            WinnowFingerprint.from_dict(stored)

    def test_different_params_cannot_be_compared(self):
        text = "天下大势，分久必合，合久必分。周末七国分争"
        a, b = winnow(text), winnow(text, WinnowParams(k=5))
        with pytest.raises(IncompatibleFingerprints):
            a.containment_in(b)
        with pytest.raises(IncompatibleFingerprints):
            a.resemblance(b)


def test_minwise_sampling_estimates_resemblance():
    rng = np.random.default_rng(7)
    universe = rng.integers(0, 2**63, 3000, dtype=np.uint64)
    a, b = universe[:2000], universe[1000:]
    true = resemblance(a, b)
    estimate = minwise_resemblance(minwise(a, 256), minwise(b, 256))
    assert abs(estimate - true) < 0.1
    assert minwise_resemblance(minwise(a, 64), minwise(a, 64)) == 1.0
    with pytest.raises(ValueError):
        minwise_resemblance(minwise(a, 64), minwise(a, 32))
