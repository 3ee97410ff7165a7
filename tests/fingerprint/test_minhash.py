"""fingerprint.minhash: datasketch-compatible affine32, one-permutation hashing, LSH, storage."""

from __future__ import annotations

import json
import math

import datasketch
import numpy as np
import pytest
from datasketch.lsh import _optimal_param
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint.base import CorruptFingerprint, IncompatibleFingerprints
from fingerprint.minhash import (
    MinHash,
    MinHashParams,
    band_keys,
    collision_probability,
    lsh_params,
    minhash,
    minhash_of_hashes,
    oph_signature,
    permutations,
    signature,
)
from fingerprint.tokens import ngram_hash_array

U32 = (1 << 32) - 1
M64 = (1 << 64) - 1


def datasketch_values(values32: list[int], num_perm: int, seed: int) -> np.ndarray:
    m = datasketch.MinHash(num_perm=num_perm, seed=seed, hashfunc=lambda x: x)
    m.update_batch(values32)
    return m.hashvalues


def sets_with_jaccard(rng: np.random.Generator, n: int, shared: int):
    """Two sets of n distinct 64-bit values sharing ``shared``: J = shared / (2n - shared)."""
    universe = rng.choice(1 << 62, size=2 * n, replace=False).astype(np.uint64)
    a = universe[:n]
    b = np.concatenate([universe[:shared], universe[n : 2 * n - shared]])
    return a, b, shared / (2 * n - shared)


class TestDatasketchAgreement:
    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.integers(0, U32), min_size=1, max_size=300),
        st.sampled_from([1, 16, 128, 200]),
        st.integers(0, 2**31),
    )
    def test_signature_equals_datasketch(self, values, num_perm, seed):
        expected = datasketch_values(values, num_perm, seed)
        got = signature(np.array(values, dtype=np.uint64), num_perm, seed)
        assert got.dtype == np.uint32
        assert got.tolist() == expected.tolist()

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.integers(0, M64), min_size=1, max_size=300), st.integers(0, 1000))
    def test_minhash_of_hashes_uses_the_low_32_bits(self, hashes, seed):
        params = MinHashParams(num_perm=64, seed=seed, scheme="affine32")
        mh = minhash_of_hashes(np.array(hashes, dtype=np.uint64), params)
        low = sorted({h & U32 for h in hashes})
        assert mh.hashvalues.tolist() == datasketch_values(low, 64, seed).tolist()
        assert mh.size == len(low)

    def test_large_set_in_chunks(self):
        values = np.random.default_rng(1).integers(0, U32, 10_000, dtype=np.uint64)
        got = signature(values, 128, 1)
        assert got.tolist() == datasketch_values(values.tolist(), 128, 1).tolist()

    def test_permutations_are_datasketchs(self):
        a, b = permutations(128, 42)
        theirs = datasketch.MinHash(num_perm=128, seed=42).permutations
        assert a.tolist() == theirs[0].tolist()
        assert b.tolist() == theirs[1].tolist()

    def test_text_minhash_equals_datasketch_on_its_trigrams(self, classical):
        text = classical["sanguo"]
        hashes, _ = ngram_hash_array(text, 3)
        low = sorted({h & U32 for h in hashes.tolist()})
        assert minhash(text).hashvalues.tolist() == datasketch_values(low, 128, 1).tolist()

    def test_empty_set(self):
        assert signature(np.empty(0, dtype=np.uint64), 8).tolist() == [U32] * 8


@pytest.mark.parametrize("scheme", ["affine32", "oph"])
def test_jaccard_estimates_within_expected_error(scheme):
    """|est - J| <= 4 sqrt(J (1 - J) / k) + 0.02 on random sets with known Jaccard, k = 128."""
    rng = np.random.default_rng(2024)
    params = MinHashParams(num_perm=128, scheme=scheme)
    errors = []
    for _ in range(60):
        n = int(rng.integers(5, 2500))
        a, b, j = sets_with_jaccard(rng, n, int(rng.integers(0, n + 1)))
        est = minhash_of_hashes(a, params).jaccard(minhash_of_hashes(b, params))
        assert abs(est - j) <= 4 * math.sqrt(j * (1 - j) / 128) + 0.02, (n, j, est)
        errors.append(est - j)
    assert abs(float(np.mean(errors))) < 0.02  # no bias


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 3000),
    st.floats(0, 1),
    st.integers(0, 2**32),
    st.sampled_from(["affine32", "oph"]),
)
def test_jaccard_error_property(n, share, seed, scheme):
    rng = np.random.default_rng(seed)
    a, b, j = sets_with_jaccard(rng, n, round(share * n))
    params = MinHashParams(num_perm=128, seed=seed % 1000, scheme=scheme)
    est = minhash_of_hashes(a, params).jaccard(minhash_of_hashes(b, params))
    # 5 sigma here: hypothesis hunts for the tail that a fixed sample would not reach
    assert abs(est - j) <= 5 * math.sqrt(j * (1 - j) / 128) + 0.03


class TestOnePermutation:
    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.integers(0, M64), min_size=1, max_size=400, unique=True), st.integers(1, 256)
    )
    def test_every_bin_is_filled_from_an_element(self, hashes, num_perm):
        arr = np.array(hashes, dtype=np.uint64)
        values = oph_signature(arr, num_perm)
        assert values.dtype == np.uint32 and len(values) == num_perm
        # densification copies values between bins: no more distinct values than elements
        assert len(set(values.tolist())) <= min(len(hashes), num_perm)
        # a set, not a sequence: order and repeats do not matter
        shuffled = np.concatenate([arr[::-1], arr[: len(arr) // 2]])
        assert oph_signature(shuffled, num_perm).tolist() == values.tolist()
        # one element fills every bin with its value
        assert len(set(oph_signature(arr[:1], num_perm).tolist())) == 1

    def test_identical_sets_have_identical_signatures(self, classical):
        params = MinHashParams(scheme="oph")
        a = minhash(classical["rulin"], params)
        b = minhash(classical["rulin"].replace("，", " ").replace("。", "！"), params)
        assert a.size == b.size
        assert a.jaccard(b) == 1.0

    def test_empty_set(self):
        values = oph_signature(np.empty(0, dtype=np.uint64), 16)
        assert values.tolist() == [U32] * 16
        empty = minhash("，。", MinHashParams(scheme="oph"))
        assert empty.size == 0
        assert empty.jaccard(empty) == 0.0

    def test_seed_matters(self):
        hashes = np.arange(1000, dtype=np.uint64)
        assert oph_signature(hashes, 64, 1).tolist() != oph_signature(hashes, 64, 2).tolist()


class TestMinHashObject:
    def test_jaccard_of_text_variants(self, classical):
        for scheme in ("affine32", "oph"):
            params = MinHashParams(scheme=scheme)
            a = minhash(classical["sanguo"], params)
            b = minhash(classical["sanguo"].replace("天下", "天上"), params)
            c = minhash(classical["honglou"], params)
            assert a.jaccard(a) == 1.0
            assert a.jaccard(b) > 0.8
            assert a.jaccard(c) < 0.1

    def test_empty_sets_affine32(self):
        empty = minhash("")
        assert empty.size == 0
        assert empty.jaccard(empty) == 0.0
        assert empty.containment_in(minhash("天下大势")) == 0.0

    def test_containment_estimate(self):
        rng = np.random.default_rng(7)
        universe = rng.choice(1 << 62, 3000, replace=False).astype(np.uint64)
        q, x = universe[:500], universe[300:3000]  # C(Q, X) = 200 / 500
        params = MinHashParams(num_perm=256)
        got = minhash_of_hashes(q, params).containment_in(minhash_of_hashes(x, params))
        assert abs(got - 0.4) < 0.15

    def test_containment_formula(self):
        # identical signatures: J = 1 and C = min(1, (|Q| + |X|) / (2 |Q|))
        values = np.arange(8, dtype=np.uint32)
        params = MinHashParams(num_perm=8)
        q, x = MinHash(values, 10, params), MinHash(values.copy(), 30, params)
        assert q.containment_in(x) == 1.0
        half = MinHash(np.array([0, 1, 2, 3, 9, 9, 9, 9], dtype=np.uint32), 40, params)
        j = 0.5
        assert half.containment_in(x) == pytest.approx(j * (40 + 30) / ((1 + j) * 40))

    @pytest.mark.parametrize(
        "other",
        [
            MinHashParams(num_perm=64),
            MinHashParams(seed=2),
            MinHashParams(scheme="oph"),
            MinHashParams(ngram=4),
        ],
    )
    def test_different_params_cannot_be_compared(self, other):
        a = minhash("天下大势，分久必合")
        b = minhash("天下大势，分久必合", other)
        with pytest.raises(IncompatibleFingerprints):
            a.jaccard(b)
        with pytest.raises(IncompatibleFingerprints):
            a.containment_in(b)

    def test_different_versions_cannot_be_compared(self):
        a = minhash("天下大势")
        b = MinHash(a.hashvalues, a.size, a.params, version=a.version + 1)
        with pytest.raises(IncompatibleFingerprints):
            a.jaccard(b)

    @pytest.mark.parametrize(
        "kwargs", [{"num_perm": 0}, {"num_perm": 4097}, {"ngram": 0}, {"scheme": "legacy"}]
    )
    def test_invalid_params(self, kwargs):
        with pytest.raises(ValueError):
            MinHashParams(**kwargs)

    def test_wrong_number_of_values(self):
        with pytest.raises(CorruptFingerprint):
            MinHash(np.zeros(5, dtype=np.uint32), 1, MinHashParams(num_perm=6))


class TestStorage:
    @pytest.mark.parametrize("scheme", ["affine32", "oph"])
    @pytest.mark.parametrize("text", ["天下大势，分久必合，合久必分。", "x"])
    def test_round_trip(self, scheme, text):
        params = MinHashParams(num_perm=32, seed=5, scheme=scheme)
        mh = minhash(text, params)
        back = MinHash.from_dict(json.loads(json.dumps(mh.to_dict())))
        assert back.hashvalues.tolist() == mh.hashvalues.tolist()
        assert back.hashvalues.dtype == np.uint32
        assert (back.size, back.params, back.version) == (mh.size, mh.params, mh.version)
        hexed = MinHash.from_hex(mh.to_hex(), mh.size, params)
        assert hexed.hashvalues.tolist() == mh.hashvalues.tolist()
        assert len(mh.to_hex()) == 32 * 8

    @pytest.mark.parametrize(
        ("corrupt", "error"),
        [
            (lambda d: d.update(value=d["value"][:-8]), CorruptFingerprint),
            (lambda d: d.update(value=d["value"][:-1]), CorruptFingerprint),
            (lambda d: d.update(value="zz" + d["value"][2:]), CorruptFingerprint),
            (lambda d: d.pop("value"), CorruptFingerprint),
            (lambda d: d.pop("size"), CorruptFingerprint),
            (lambda d: d.update(params=None), CorruptFingerprint),
            (lambda d: d["params"].update(num_perm=64), CorruptFingerprint),
            (lambda d: d["params"].update(bogus=1), CorruptFingerprint),
            (lambda d: d.update(method="simhash"), CorruptFingerprint),
            (lambda d: d.update(version=0), IncompatibleFingerprints),
        ],
    )
    def test_corrupt(self, corrupt, error):
        stored = minhash("天下大势，分久必合").to_dict()
        corrupt(stored)
        with pytest.raises(error):
            MinHash.from_dict(stored)

    @pytest.mark.parametrize(
        "corrupt",
        [
            lambda d: d.update(size="many"),
            lambda d: d["params"].update(scheme="legacy"),
            lambda d: d["params"].update(num_perm=0),
        ],
    )
    def test_corrupt_values_inside_fields(self, corrupt):
        stored = minhash("天下大势，分久必合").to_dict()
        corrupt(stored)
        with pytest.raises(CorruptFingerprint):
            MinHash.from_dict(stored)


class TestLSH:
    def test_band_keys(self):
        values = np.arange(16, dtype=np.uint32)
        keys = band_keys(values, 4, 4)
        assert keys.dtype == np.uint64 and len(keys) == 4
        other = values.copy()
        other[5] = 99  # only band 1 changes
        changed = band_keys(other, 4, 4) != keys
        assert changed.tolist() == [False, True, False, False]
        # the same rows in a different band give a different key
        same_rows = np.tile(np.arange(4, dtype=np.uint32), 4)
        assert len(set(band_keys(same_rows, 4, 4).tolist())) == 4

    def test_band_keys_method_and_limits(self):
        mh = minhash("天下大势，分久必合")
        assert mh.band_keys(16, 8).tolist() == band_keys(mh.hashvalues, 16, 8).tolist()
        with pytest.raises(ValueError):
            band_keys(mh.hashvalues, 17, 8)

    @settings(max_examples=60, deadline=None)
    @given(st.floats(0, 1), st.integers(1, 64), st.integers(1, 32))
    def test_collision_probability(self, s, b, r):
        assert collision_probability(s, b, r) == pytest.approx(1 - (1 - s**r) ** b)

    @pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7, 0.8, 0.9])
    def test_lsh_params_equal_datasketch(self, threshold):
        assert lsh_params(threshold, 128) == _optimal_param(threshold, 128, 0.5, 0.5)

    @pytest.mark.parametrize(
        ("threshold", "num_perm", "weights"),
        [(0.5, 64, (0.2, 0.8)), (0.75, 256, (0.8, 0.2)), (0.1, 32, (0.5, 0.5))],
    )
    def test_lsh_params_equal_datasketch_other_settings(self, threshold, num_perm, weights):
        assert lsh_params(threshold, num_perm, *weights) == _optimal_param(
            threshold, num_perm, *weights
        )

    @pytest.mark.parametrize("threshold", [0.0, 1.0, -0.5, 2.0])
    def test_lsh_params_reject_bad_threshold(self, threshold):
        with pytest.raises(ValueError):
            lsh_params(threshold)
