"""fingerprint.bloom: m-bit Bloom signatures with two hashes per shingle, and five measures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint.base import CorruptFingerprint, IncompatibleFingerprints
from fingerprint.bloom import (
    BloomParams,
    BloomSignature,
    bloom,
    bloom_of_hashes,
    bloom_positions,
)
from fingerprint.tokens import ngram_hash_array
from tests.support.reference_hashing import M64, fmix64_ref


def positions_ref(h: int, bits: int, seed: int) -> tuple[int, int]:
    """Low and high 32 bits of the (seed-mixed) shingle hash, each modulo m."""
    if seed:
        h = fmix64_ref(h ^ seed)
    return (h & 0xFFFFFFFF) % bits, (h >> 32) % bits


def signature_of(bit_set: set[int], bits: int = 64) -> BloomSignature:
    arr = np.zeros(bits, dtype=bool)
    arr[list(bit_set)] = True
    return BloomSignature(arr, BloomParams(bits=bits))


BIT_SETS = st.sets(st.integers(0, 63), max_size=64)


class TestConstruction:
    @settings(max_examples=100, deadline=None)
    @given(
        st.lists(st.integers(0, M64), max_size=40),
        st.sampled_from([8, 64, 1000, 1024]),
        st.integers(0, 2**40),
    )
    def test_positions_definition(self, hashes, bits, seed):
        got = bloom_positions(np.array(hashes, dtype=np.uint64), bits, seed)
        assert got.shape == (len(hashes), 2)
        assert [tuple(p) for p in got.tolist()] == [positions_ref(h, bits, seed) for h in hashes]

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.integers(0, M64), max_size=40), st.integers(0, 5))
    def test_bits_are_the_union_of_positions(self, hashes, seed):
        params = BloomParams(bits=256, seed=seed)
        sig = bloom_of_hashes(np.array(hashes, dtype=np.uint64), params)
        expected = {p for h in hashes for p in positions_ref(h, 256, seed)}
        assert set(np.flatnonzero(sig.bits).tolist()) == expected
        assert sig.weight == len(expected)

    def test_text_bloom_uses_content_trigrams(self, classical):
        text = classical["rulin"]
        hashes, _ = ngram_hash_array(text, 3)
        expected = {p for h in hashes.tolist() for p in positions_ref(h, 1024, 0)}
        sig = bloom(text)
        assert set(np.flatnonzero(sig.bits).tolist()) == expected
        assert sig.params == BloomParams()

    def test_empty_text(self):
        sig = bloom("")
        assert sig.weight == 0
        assert sig.cosine(sig) == sig.overlap(sig) == sig.dice(sig) == sig.jaccard(sig) == 0.0
        assert sig.hamming(sig) == 0

    @pytest.mark.parametrize("kwargs", [{"bits": 0}, {"bits": 12}, {"bits": 4}, {"ngram": 0}])
    def test_invalid_params(self, kwargs):
        with pytest.raises(ValueError):
            BloomParams(**kwargs)


class TestMeasures:
    @settings(max_examples=150, deadline=None)
    @given(BIT_SETS, BIT_SETS)
    def test_five_measures(self, x, y):
        a, b = signature_of(x), signature_of(y)
        dot = len(x & y)
        assert a.hamming(b) == len(x ^ y)
        assert a.cosine(b) == pytest.approx(dot / math.sqrt(len(x) * len(y)) if x and y else 0.0)
        assert a.overlap(b) == pytest.approx(dot / min(len(x), len(y)) if x and y else 0.0)
        assert a.dice(b) == pytest.approx(2 * dot / (len(x) + len(y)) if x or y else 0.0)
        denominator = len(x) + len(y) - dot
        assert a.jaccard(b) == pytest.approx(dot / denominator if denominator else 0.0)

    def test_similar_texts_score_higher(self, classical):
        a = bloom(classical["sanguo"])
        near = bloom(classical["sanguo"].replace("天下", "天上"))
        far = bloom(classical["honglou"])
        for measure in ("cosine", "overlap", "dice", "jaccard"):
            assert getattr(a, measure)(near) > getattr(a, measure)(far)
        assert a.hamming(near) < a.hamming(far)

    @pytest.mark.parametrize("measure", ["hamming", "cosine", "overlap", "dice", "jaccard"])
    def test_incompatible(self, measure):
        a = bloom("天下大势")
        for other in (
            bloom("天下大势", BloomParams(bits=512)),
            bloom("天下大势", BloomParams(seed=3)),
            bloom("天下大势", BloomParams(ngram=2)),
            BloomSignature(a.bits, a.params, version=a.version + 1),
        ):
            with pytest.raises(IncompatibleFingerprints):
                getattr(a, measure)(other)


class TestStorage:
    @pytest.mark.parametrize("bits", [8, 64, 1024])
    def test_round_trip(self, classical, bits):
        sig = bloom(classical["xiyou"], BloomParams(bits=bits, seed=4))
        hexed = sig.to_hex()
        assert len(hexed) == bits // 4
        back = BloomSignature.from_hex(hexed, sig.params)
        assert back.bits.tolist() == sig.bits.tolist()
        stored = BloomSignature.from_dict(json.loads(json.dumps(sig.to_dict())))
        assert stored.bits.tolist() == sig.bits.tolist()
        assert (stored.params, stored.version, stored.method) == (
            sig.params,
            sig.version,
            sig.method,
        )

    def test_hex_bit_order_is_little_endian(self):
        bits = np.zeros(16, dtype=bool)
        bits[0] = bits[9] = True
        assert BloomSignature(bits, BloomParams(bits=16)).to_hex() == "0102"

    @pytest.mark.parametrize(
        ("corrupt", "error"),
        [
            (lambda d: d.update(value=d["value"][:-2]), CorruptFingerprint),
            (lambda d: d.update(value=d["value"] + "00"), CorruptFingerprint),
            (lambda d: d.update(value="zz" + d["value"][2:]), CorruptFingerprint),
            (lambda d: d.update(value=d["value"][:-1]), CorruptFingerprint),
            (lambda d: d.pop("value"), CorruptFingerprint),
            (lambda d: d.update(params=None), CorruptFingerprint),
            (lambda d: d["params"].update(bits=512), CorruptFingerprint),
            (lambda d: d.update(method="minhash"), CorruptFingerprint),
            (lambda d: d.update(version=2), IncompatibleFingerprints),
        ],
    )
    def test_corrupt(self, corrupt, error):
        stored = bloom("天下大势，分久必合").to_dict()
        corrupt(stored)
        with pytest.raises(error):
            BloomSignature.from_dict(stored)

    def test_invalid_stored_params(self):
        stored = bloom("天下大势，分久必合").to_dict()
        stored["params"]["bits"] = 7
        with pytest.raises(CorruptFingerprint):
            BloomSignature.from_dict(stored)

    def test_wrong_shape_or_dtype(self):
        with pytest.raises(CorruptFingerprint):
            BloomSignature(np.zeros(1024, dtype=np.uint8))
        with pytest.raises(CorruptFingerprint):
            BloomSignature(np.zeros(1000, dtype=bool))
