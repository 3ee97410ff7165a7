"""fingerprint.hashing: XXH3 scalars, MurmurHash3's fmix64, packed n-gram and row hashes."""

from __future__ import annotations

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint.hashing import fmix64, hash32, hash64, hash_rows, ngram_hashes
from tests.support.reference_hashing import M64, fmix64_ref

GOLDEN = 0x9E3779B97F4A7C15


def ngram_hashes_ref(codes: list[int], n: int, seed: int = 0, bits: int = 21) -> list[int]:
    """The docstring's definition, one n-gram at a time in pure Python."""
    per_word = 64 // bits
    out = []
    for i in range(len(codes) - n + 1):
        gram = codes[i : i + n]
        h = None
        for first in range(0, n, per_word):
            word = 0
            for c in gram[first : first + per_word]:
                word = (word << bits) | c
            if h is None:
                h = fmix64_ref((seed * GOLDEN + word) & M64)
            else:
                h = fmix64_ref((h * GOLDEN + word) & M64)
        out.append(h)
    return out


settings_fast = settings(max_examples=80, deadline=None)


class TestScalarHashes:
    def test_hash64_is_xxh3_of_utf8(self):
        assert hash64("中文") == xxhash.xxh3_64_intdigest("中文".encode())
        assert hash64(b"abc", seed=5) == xxhash.xxh3_64_intdigest(b"abc", 5)

    def test_hash64_known_vector(self):
        # XXH3_64bits("") from the xxHash specification's test vectors.
        assert hash64("") == 0x2D06800538D394C2

    def test_str_and_its_utf8_bytes_hash_alike(self):
        assert hash64("天下大势") == hash64("天下大势".encode())

    def test_seed_changes_the_value(self):
        assert hash64("天下", seed=0) != hash64("天下", seed=1)

    def test_lone_surrogate_hashes_without_error(self):
        assert hash64("\ud800") == xxhash.xxh3_64_intdigest(b"\xed\xa0\x80")

    @settings_fast
    @given(st.text(max_size=50), st.integers(0, 2**32))
    def test_hash32_is_low_half_of_hash64(self, text, seed):
        assert hash32(text, seed) == hash64(text, seed) & 0xFFFFFFFF
        assert 0 <= hash32(text, seed) < 1 << 32


class TestFmix64:
    def test_reference_value_of_one(self):
        assert int(fmix64(np.array([1], dtype=np.uint64))[0]) == fmix64_ref(1)

    def test_zero_is_a_fixed_point(self):
        assert int(fmix64(np.array([0], dtype=np.uint64))[0]) == 0

    @settings_fast
    @given(st.lists(st.integers(0, M64), min_size=1, max_size=40))
    def test_matches_reference(self, values):
        got = fmix64(np.array(values, dtype=np.uint64)).tolist()
        assert got == [fmix64_ref(v) for v in values]

    def test_bijective_on_a_sample(self):
        x = np.arange(100_000, dtype=np.uint64)
        assert len(np.unique(fmix64(x))) == len(x)


class TestNgramHashes:
    def test_doc_value_matches_reference(self):
        got = int(ngram_hashes(np.array([20013, 25991], dtype=np.uint32), 2)[0])
        assert got == ngram_hashes_ref([20013, 25991], 2)[0]

    @settings(max_examples=100, deadline=None)
    @given(
        st.integers(1, 32).flatmap(
            lambda bits: st.tuples(
                st.just(bits),
                st.lists(st.integers(0, (1 << bits) - 1), max_size=30),
                st.integers(1, 12),
                st.integers(0, 2**40),
            )
        )
    )
    def test_matches_definition(self, case):
        bits, codes, n, seed = case
        got = ngram_hashes(np.array(codes, dtype=np.uint64), n, seed=seed, bits=bits)
        assert got.dtype == np.uint64
        assert got.tolist() == ngram_hashes_ref(codes, n, seed, bits)

    def test_count_and_short_input(self):
        codes = np.arange(10, dtype=np.uint32)
        assert len(ngram_hashes(codes, 3)) == 8
        assert len(ngram_hashes(codes, 10)) == 1
        assert len(ngram_hashes(codes, 11)) == 0
        assert len(ngram_hashes(np.empty(0, dtype=np.uint32), 1)) == 0

    def test_equal_grams_hash_equal_and_order_matters(self):
        codes = np.array([ord(c) for c in "天下大势天下大势下天"], dtype=np.uint32)
        h = ngram_hashes(codes, 2)
        assert h[0] == h[4]  # 天下 twice
        assert h[0] != h[8]  # 下天
        assert len(set(h.tolist())) == len(
            set(zip(codes[:-1].tolist(), codes[1:].tolist(), strict=True))
        )

    def test_seed_changes_every_hash(self):
        codes = np.arange(1, 30, dtype=np.uint32)
        a, b = ngram_hashes(codes, 3, seed=0), ngram_hashes(codes, 3, seed=1)
        assert not np.any(a == b)

    @pytest.mark.parametrize("n", [0, -1])
    def test_rejects_bad_n(self, n):
        with pytest.raises(ValueError):
            ngram_hashes(np.arange(5), n)

    @pytest.mark.parametrize("bits", [0, 33])
    def test_rejects_bad_symbol_width(self, bits):
        with pytest.raises(ValueError):
            ngram_hashes(np.arange(5), 2, bits=bits)


class TestHashRows:
    @settings_fast
    @given(
        st.integers(1, 6).flatmap(
            lambda width: st.lists(
                st.lists(st.integers(0, 2**32 - 1), min_size=width, max_size=width),
                min_size=1,
                max_size=12,
            )
        ),
        st.integers(0, 1000),
    )
    def test_a_row_hash_depends_only_on_the_row(self, rows, seed):
        arr = np.array(rows, dtype=np.uint64)
        whole = hash_rows(arr, seed)
        for i, row in enumerate(rows):
            assert whole[i] == hash_rows(np.array([row], dtype=np.uint64), seed)[0]
        by_row: dict[tuple, int] = {}
        for row, h in zip(rows, whole.tolist(), strict=True):
            assert by_row.setdefault(tuple(row), h) == h

    def test_distinct_rows_and_seeds_differ(self):
        rows = np.array([[1, 2, 3], [3, 2, 1], [1, 2, 4], [0, 0, 0]], dtype=np.uint64)
        h = hash_rows(rows)
        assert len(set(h.tolist())) == 4
        assert not np.any(h == hash_rows(rows, seed=1))

    def test_width_is_part_of_the_hash(self):
        assert hash_rows(np.array([[0]]))[0] != hash_rows(np.array([[0, 0]]))[0]

    def test_rejects_one_dimensional_input(self):
        with pytest.raises(ValueError):
            hash_rows(np.arange(4))
