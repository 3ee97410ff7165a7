"""fingerprint.simhash: Charikar's simhash, its weightings, Hamming distance and storage."""

from __future__ import annotations

import json
import math
import random
import re
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint.base import CorruptFingerprint, IncompatibleFingerprints
from fingerprint.simhash import (
    IdfTable,
    Simhash,
    SimhashParams,
    feature_weights,
    hamming,
    hamming_many,
    length_weight,
    simhash,
    simhash_of_hashes,
)
from fingerprint.tokens import ngram_hash_array, word_hashes, words

M64 = (1 << 64) - 1


def simhash_ref(hashes: list[int], weights: list[float]) -> int:
    """Charikar: V_j sums +w where bit j of the hash is 1 and -w where it is 0; bit j = V_j > 0."""
    value = 0
    for j in range(64):
        v = sum(w if (h >> j) & 1 else -w for h, w in zip(hashes, weights, strict=True))
        if v > 0:
            value |= 1 << j
    return value


def split_sentences(text: str) -> list[str]:
    return [s for s in re.findall(r"[^。！？；\n]+[。！？；]?", text) if s.strip()]


class TestDefinition:
    @settings(max_examples=100, deadline=None)
    @given(
        st.lists(
            st.tuples(st.integers(0, M64), st.integers(1, 50)),
            max_size=30,
            unique_by=lambda t: t[0],
        )
    )
    def test_simhash_of_hashes_matches_charikar(self, features):
        hashes = [h for h, _ in features]
        weights = [float(w) for _, w in features]
        got = simhash_of_hashes(np.array(hashes, dtype=np.uint64), np.array(weights))
        assert got == simhash_ref(hashes, weights)

    def test_tf_weights_of_char_trigrams(self, classical):
        text = classical["rulin"]
        hashes, _ = ngram_hash_array(text, 3)
        counts: dict[int, int] = {}
        for h in hashes.tolist():
            counts[h] = counts.get(h, 0) + 1
        expected = simhash_ref(list(counts), [float(c) for c in counts.values()])
        assert simhash(text).value == expected

    def test_word_features(self, classical):
        text = classical["honglou"]
        params = SimhashParams(features="word")
        tokens = words(text)
        counts: dict[int, int] = {}
        for h in word_hashes(tokens).tolist():
            counts[h] = counts.get(h, 0) + 1
        assert simhash(text, params).value == simhash_ref(list(counts), list(counts.values()))

    def test_empty_text_is_zero(self):
        assert simhash("").value == 0
        assert simhash("，。！ ").value == 0

    def test_only_content_characters_count(self, classical):
        text = classical["shuihu"]
        respaced = re.sub(r"[，。；：！？]", " ", text).replace("但见", "但 见")
        assert simhash(respaced) == simhash(text)

    def test_seed_and_ngram_change_the_value(self, classical):
        text = classical["xiyou"]
        assert simhash(text, SimhashParams(seed=1)).value != simhash(text).value
        assert simhash(text, SimhashParams(ngram=2)).value != simhash(text).value


class TestWeights:
    def _idf(self, classical) -> IdfTable:
        docs = [ngram_hash_array(t, 3)[0] for t in classical.values()]
        return IdfTable.from_documents("classics", docs)

    def test_idf_formula(self, classical):
        docs = [ngram_hash_array(t, 3)[0] for t in classical.values()]
        table = IdfTable.from_documents("classics", docs)
        n = len(docs)
        df: dict[int, int] = {}
        for d in docs:
            for h in set(d.tolist()):
                df[h] = df.get(h, 0) + 1
        probe = [*list(df)[:50], 12345]
        got = table.lookup(np.array(probe, dtype=np.uint64)).tolist()
        expected = [math.log((1 + n) / (1 + df[h])) + 1 for h in probe[:-1]]
        expected.append(math.log(1 + n) + 1)  # unseen feature: df = 0
        assert got == pytest.approx(expected)

    def test_empty_idf_table_gives_default(self):
        table = IdfTable.from_documents("none", [np.empty(0, dtype=np.uint64)])
        assert table.lookup(np.array([1, 2], dtype=np.uint64)).tolist() == pytest.approx(
            [math.log(2) + 1] * 2
        )

    def test_tfidf_weights(self, classical):
        table = self._idf(classical)
        text = classical["sanguo"]
        params = SimhashParams(weighting="tfidf", idf_table="classics")
        hashes, weights = feature_weights(text, params, table)
        tf_hashes, tf = feature_weights(text, SimhashParams())
        assert hashes.tolist() == tf_hashes.tolist()
        assert weights.tolist() == pytest.approx((tf * table.lookup(hashes)).tolist())
        assert simhash(text, params, table).value == simhash_ref(hashes.tolist(), weights.tolist())

    def test_tfidf_len_weights(self, classical):
        table = IdfTable.from_documents(
            "words", [word_hashes(words(t)) for t in classical.values()]
        )
        text = classical["honglou"]
        params = SimhashParams(features="word", weighting="tfidf_len", idf_table="words")
        hashes, weights = feature_weights(text, params, table)
        tokens = words(text)
        by_hash = {int(h): t for h, t in zip(word_hashes(tokens).tolist(), tokens, strict=True)}
        for h, w in zip(hashes.tolist(), weights.tolist(), strict=True):
            token = by_hash[h]
            tf = tokens.count(token)
            density = math.exp(-((len(token) - 4.51) ** 2) / (2 * 2.207**2))
            idf = float(table.lookup(np.array([h], dtype=np.uint64))[0])
            assert w == pytest.approx(tf * idf * (1 + density))

    def test_length_weight_is_one_at_the_mean(self):
        got = length_weight(np.array([4.51, 4.51 + 2.207, 0.0]), 4.51, 2.207)
        assert got.tolist() == pytest.approx(
            [1.0, math.exp(-0.5), math.exp(-(4.51**2) / (2 * 2.207**2))]
        )

    def test_tfidf_needs_its_table(self, classical):
        params = SimhashParams(weighting="tfidf", idf_table="classics")
        with pytest.raises(ValueError):
            simhash("天下大势", params)
        wrong = IdfTable.from_documents("other", [np.array([1], dtype=np.uint64)])
        with pytest.raises(ValueError):
            simhash("天下大势", params, wrong)

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"features": "bytes"},
            {"weighting": "bm25"},
            {"weighting": "tfidf"},
            {"ngram": 0},
            {"length_sd": 0.0},
        ],
    )
    def test_invalid_params(self, kwargs):
        with pytest.raises(ValueError):
            SimhashParams(**kwargs)


class TestDistance:
    @settings(max_examples=100, deadline=None)
    @given(st.integers(0, M64), st.integers(0, M64))
    def test_hamming(self, a, b):
        expected = bin(a ^ b).count("1")
        assert hamming(a, b) == expected
        assert Simhash(a).distance(Simhash(b)) == expected
        assert Simhash(a).is_near_duplicate(Simhash(b)) == (expected <= 3)

    @settings(max_examples=60, deadline=None)
    @given(st.integers(0, M64), st.lists(st.integers(0, M64), max_size=20))
    def test_hamming_many(self, value, values):
        got = hamming_many(value, np.array(values, dtype=np.uint64)).tolist()
        assert got == [bin(value ^ v).count("1") for v in values]

    def test_doc_example(self):
        assert Simhash(0xFF, SimhashParams()).distance(Simhash(0x0F, SimhashParams())) == 4

    def test_near_duplicate_threshold(self):
        assert Simhash(0b111).is_near_duplicate(Simhash(0))
        assert not Simhash(0b1111).is_near_duplicate(Simhash(0))
        assert Simhash(0b1111).is_near_duplicate(Simhash(0), k=4)

    def test_one_percent_edit_is_near_unrelated_is_far(self, classical, common_simplified):
        """Median distance of a 1% character edit <= 10, of unrelated texts >= 22.

        Measured on 300 seeds of 9 pairs of 20 shuffled sentences (about 320 characters):
        the edited medians were at most 7, the unrelated ones at least 29.
        """
        pool_a = [s for k in ("sanguo", "xiyou") for s in split_sentences(classical[k])]
        pool_b = [s for k in ("honglou", "shuihu", "rulin") for s in split_sentences(classical[k])]
        for seed in range(3):
            rnd = random.Random(seed)
            edited, unrelated = [], []
            for _ in range(9):
                a = "".join(rnd.sample(pool_a, 20))
                b = "".join(rnd.sample(pool_b, 20))
                chars = list(a)
                han = [i for i, c in enumerate(chars) if "\u4e00" <= c <= "\u9fff"]
                for i in rnd.sample(han, max(1, len(chars) // 100)):
                    chars[i] = rnd.choice(common_simplified)
                edited.append(simhash(a).distance(simhash("".join(chars))))
                unrelated.append(simhash(a).distance(simhash(b)))
            assert statistics.median(edited) <= 10
            assert statistics.median(unrelated) >= 22


class TestStorage:
    @settings(max_examples=60, deadline=None)
    @given(st.integers(0, M64))
    def test_hex_round_trip(self, value):
        fp = Simhash(value)
        assert len(fp.to_hex()) == 16
        assert int(fp.to_hex(), 16) == value
        assert Simhash.from_hex(fp.to_hex()) == fp

    def test_dict_round_trip_keeps_params(self, classical):
        params = SimhashParams(ngram=4, seed=9)
        fp = simhash(classical["rulin"], params)
        back = Simhash.from_dict(json.loads(json.dumps(fp.to_dict())))
        assert back == fp
        assert back.params == params

    @pytest.mark.parametrize("value", [-1, 1 << 64])
    def test_out_of_range_value(self, value):
        with pytest.raises(CorruptFingerprint):
            Simhash(value)

    @pytest.mark.parametrize("text", ["zz" * 8, "ff", "f" * 17, "", None, 12])
    def test_bad_hex(self, text):
        with pytest.raises(CorruptFingerprint):
            Simhash.from_hex(text)

    @pytest.mark.parametrize(
        "text", ["0x" + "f" * 14, "+" + "f" * 15, " " + "f" * 15, "ff_" + "f" * 13]
    )
    def test_sixteen_characters_that_are_not_hex_digits(self, text):
        with pytest.raises(CorruptFingerprint):
            Simhash.from_hex(text)

    @pytest.mark.parametrize(
        ("corrupt", "error"),
        [
            (lambda d: d.update(method="minhash"), CorruptFingerprint),
            (lambda d: d.pop("method"), CorruptFingerprint),
            (lambda d: d.update(version=2), IncompatibleFingerprints),
            (lambda d: d.pop("value"), CorruptFingerprint),
            (lambda d: d.update(value="xyz"), CorruptFingerprint),
            (lambda d: d.update(params=None), CorruptFingerprint),
            (lambda d: d["params"].update(bogus=1), CorruptFingerprint),
            (lambda d: d["params"].update(weighting="bm25"), CorruptFingerprint),
            (lambda d: d.pop("params"), CorruptFingerprint),
        ],
    )
    def test_corrupt_dicts(self, corrupt, error):
        stored = simhash("天下大势，分久必合").to_dict()
        corrupt(stored)
        with pytest.raises(error):
            Simhash.from_dict(stored)

    def test_not_a_mapping(self):
        with pytest.raises(CorruptFingerprint):
            Simhash.from_dict("0123456789abcdef")

    def test_different_params_cannot_be_compared(self):
        with pytest.raises(IncompatibleFingerprints):
            Simhash(1).distance(Simhash(1, SimhashParams(ngram=4)))
        with pytest.raises(IncompatibleFingerprints):
            Simhash(1).distance(Simhash(1, version=2))
