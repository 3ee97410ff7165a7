"""The compiled kernels (fingerprint.kernels, fingerprint.compiled) equal the numpy reference.

Each kernel is compared with the numpy function its docstring names, on segmented inputs
drawn by hypothesis (empty documents, documents shorter than n, ties in the hashes); then
whole fingerprints and anchors of random texts, with default and other parameters.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint import kernels
from fingerprint.anchors import AnchorParams, anchors_from_codes
from fingerprint.batch import normalize_many
from fingerprint.compiled import _levels
from fingerprint.document import (
    DocumentParams,
    fingerprint_and_anchors,
    fingerprint_document,
    fingerprint_documents,
)
from fingerprint.hashing import ngram_hashes
from fingerprint.kernels import use_compiled
from fingerprint.minhash import MinHashParams, oph_signature
from fingerprint.normalize import normalize
from fingerprint.pinyin import (
    ALPHABET,
    PinyinParams,
    anchored_bounds,
    dna_keys,
    fixed_bounds,
    window_levels,
)
from fingerprint.sentences import SentenceParams, sentence_end_table, signature_from_codes
from fingerprint.shingles import WinnowParams, winnow_positions
from fingerprint.simhash import simhash_of_hashes
from fingerprint.tokens import codepoints, content_mask

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba cannot compile here")

SLOW = settings(max_examples=60, deadline=None)


def segments(sizes: list[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)


def split(values: np.ndarray, starts: np.ndarray) -> list[np.ndarray]:
    return [values[starts[d] : starts[d + 1]] for d in range(len(starts) - 1)]


# Symbols from a small alphabet make equal n-grams, and ties in winnowing, common.
# A few symbols wider than ``bits`` take the packing path that does not roll.
symbol_lists = st.lists(
    st.lists(st.integers(0, 6) | st.integers(0, 2**22), max_size=40), max_size=6
)


@SLOW
@given(symbol_lists, st.integers(1, 9), st.sampled_from([5, 21]), st.integers(0, 3))
def test_ngrams_equal_ngram_hashes(docs, n, bits, seed):
    starts = segments([len(d) for d in docs])
    codes = np.array([c for d in docs for c in d], dtype=np.uint32)
    for whole in (True, False):
        hashes, first, gram_starts = kernels.ngrams(
            codes, starts, n, bits, kernels.seed_offset(seed), whole
        )
        for d, doc in enumerate(docs):
            doc = np.array(doc, dtype=np.uint32)
            want = ngram_hashes(doc, n, seed, bits)
            if whole and 0 < len(doc) < n:
                want = ngram_hashes(doc, len(doc), seed, bits)
            got = hashes[gram_starts[d] : gram_starts[d + 1]]
            assert np.array_equal(got, want)
            assert np.array_equal(
                first[gram_starts[d] : gram_starts[d + 1]] - starts[d], np.arange(len(want))
            )


hash_lists = st.lists(
    st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 3).map(lambda x: x << 32), max_size=50),
    max_size=6,
)


@SLOW
@given(hash_lists, st.integers(1, 12))
def test_winnow_equals_winnow_positions(docs, window):
    starts = segments([len(d) for d in docs])
    hashes = np.array([h for d in docs for h in d], dtype=np.uint64)
    chosen, chosen_starts = kernels.winnow(hashes, starts, window)
    for d, doc in enumerate(docs):
        want = winnow_positions(np.array(doc, dtype=np.uint64), window)
        assert np.array_equal(chosen[chosen_starts[d] : chosen_starts[d + 1]], want)


@SLOW
@given(hash_lists, st.integers(1, 300), st.integers(0, 5))
def test_simhash_oph_equal_the_reference(docs, num_perm, seed):
    starts = segments([len(d) for d in docs])
    hashes = np.array([h for d in docs for h in d], dtype=np.uint64)
    mix = kernels.seed_offset(seed)
    simhashes, values, sizes = kernels.simhash_oph(hashes, starts, num_perm, mix, seed)
    for d, doc in enumerate(docs):
        distinct, tf = np.unique(np.array(doc, dtype=np.uint64), return_counts=True)
        assert sizes[d] == len(distinct)
        assert int(simhashes[d]) == simhash_of_hashes(distinct, tf)
        assert np.array_equal(values[d], oph_signature(distinct, num_perm, seed))


def test_simhash_oph_of_many_repeated_hashes():
    rng = np.random.default_rng(5)
    pool = rng.integers(0, 2**64 - 1, 700, dtype=np.uint64)
    docs = [rng.choice(pool, size) for size in (0, 1, 5000, 3, 2000)]
    starts = segments([len(d) for d in docs])
    simhashes, values, sizes = kernels.simhash_oph(
        np.concatenate(docs), starts, 128, kernels.seed_offset(1), 1
    )
    for d, doc in enumerate(docs):
        distinct, tf = np.unique(doc, return_counts=True)
        assert sizes[d] == len(distinct)
        assert int(simhashes[d]) == simhash_of_hashes(distinct, tf)
        assert np.array_equal(values[d], oph_signature(distinct, 128, 1))


def test_oph_bin_minimum_of_all_ones_counts_as_empty():
    """A bin whose minimum is 2**32 - 1 is densified, in the reference and here alike."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        hashes = np.unique(rng.integers(0, 2**63, 3, dtype=np.uint64))
        want = oph_signature(hashes, 4, 1)
        got = kernels.simhash_oph(hashes, np.array([0, len(hashes)]), 4, kernels.seed_offset(1), 1)
        assert np.array_equal(got[1][0], want)


letter_lists = st.lists(st.lists(st.integers(0, len(ALPHABET) - 1), max_size=400), max_size=4)


@SLOW
@given(
    letter_lists,
    st.sampled_from([2, 4, 8, 10]),
    st.integers(4, 60) | st.sampled_from([127, 128, 129, 150]),
    st.sampled_from([0.0, 0.25, 0.5, 0.75]),
    st.sampled_from([0.0, 0.3, 1.7]),
    st.integers(1, 7),
)
def test_pinyin_windows_equal_the_reference(docs, levels, granule, overlap, width, anchor_k):
    starts = segments([len(d) for d in docs])
    letters = np.array([c for d in docs for c in d], dtype=np.uint8)
    for anchored in (False, True):
        params = PinyinParams(granule, overlap, levels, width, anchored, anchor_k)
        if anchored:
            hashes, first, gram_starts = kernels.ngrams(
                letters, starts, anchor_k, 5, kernels.seed_offset(7), False
            )
            chosen, chosen_starts = kernels.winnow(hashes, gram_starts, max(2, granule // 2))
            owner = np.repeat(np.arange(len(docs)), np.diff(chosen_starts))
            anchors = first[gram_starts[owner] + chosen] - starts[owner]
            bounds, window_starts = kernels.anchored_windows(starts, anchors, chosen_starts)
        else:
            step = max(1, round(granule * (1.0 - overlap)))
            bounds, window_starts = kernels.fixed_windows(starts, granule, step)
        exact = levels ** len(ALPHABET) < 2**64
        keys = kernels.window_keys(
            letters,
            bounds,
            np.asarray(params.reference),
            params.width,
            levels,
            exact,
            kernels.seed_offset(levels),
            _levels(params.reference, params.width, levels),
        )
        for d, doc in enumerate(docs):
            doc = np.array(doc, dtype=np.uint8)
            want = anchored_bounds(doc, params) if anchored else fixed_bounds(len(doc), params)
            got = bounds[window_starts[d] : window_starts[d + 1]] - starts[d]
            assert np.array_equal(got.reshape(-1, 2), want.reshape(-1, 2))
            if len(want):
                want_keys = dna_keys(window_levels(doc, want, params), levels)
                assert np.array_equal(keys[window_starts[d] : window_starts[d + 1]], want_keys)


SENTENCE_ALPHABET = list("天下大势分久必合,，。！？!?；;…\n a1😀")


@SLOW
@given(
    st.lists(st.text(alphabet=st.sampled_from(SENTENCE_ALPHABET), max_size=80), max_size=5),
    st.integers(1, 6),
    st.integers(1, 10),
)
def test_sentences_equal_signature_from_codes(texts, k, min_chars):
    params = SentenceParams(k, min_chars)
    all_codes = codepoints("".join(texts))
    mask = content_mask(all_codes)
    starts = segments([len(t) for t in texts])
    spans, span_starts, content, begins = kernels.sentences(
        all_codes, mask, starts, sentence_end_table(), k, min_chars
    )
    for d, text in enumerate(texts):
        codes = codepoints(text)
        want = signature_from_codes(codes, content_mask(codes), params)
        got = spans[span_starts[d] : span_starts[d + 1]] - starts[d]
        assert [tuple(s) for s in got.tolist()] == list(want.spans)
        for r in range(span_starts[d], span_starts[d + 1]):
            a, b = spans[r]
            assert np.array_equal(content[begins[r] : begins[r + 1]], all_codes[a:b][mask[a:b]])


# --- whole fingerprints ---------------------------------------------------------------------
NOISY = list(
    "這是繁體字測試ＡＢＣ　\u200b\n\n  www.abc.com 最新章节 //@某:x #话题# [微笑] 😀 ﬁ㈱"
    "\x00\t。！？"
)


def dumped(fp) -> str:
    return json.dumps(fp.to_dict(), sort_keys=True)


def assert_equal_both_ways(docs: list[str], params: DocumentParams | None = None) -> None:
    fast = fingerprint_documents(docs, params, compiled=True)
    slow = fingerprint_documents(docs, params, compiled=False)
    for doc, a, b in zip(docs, fast, slow, strict=True):
        assert dumped(a) == dumped(b), repr(doc[:80])
        assert np.array_equal(a.winnow.positions, b.winnow.positions)
    for doc in docs[:10]:
        one = fingerprint_document(doc, params, compiled=True)
        assert dumped(one) == dumped(fingerprint_document(doc, params, compiled=False))


def random_docs(seed: int, pool: list[str], count: int) -> list[str]:
    rng = random.Random(seed)
    sizes = [0, 1, 2, 3, 5, 7, 8, 9, 20, 50, 200, 1000, 3000]
    return ["".join(rng.choice(pool) for _ in range(rng.choice(sizes))) for _ in range(count)]


@pytest.mark.parametrize("seed", range(3))
def test_documents_equal_the_reference(classical, seed):
    pool = list("".join(classical.values())) + NOISY
    texts = list(classical.values())
    assert_equal_both_ways(random_docs(seed, pool, 100) + texts + ["", "短", "，。"])


@pytest.mark.parametrize(
    "params",
    [
        DocumentParams(minhash=MinHashParams(scheme="affine32")),
        DocumentParams(minhash=MinHashParams(scheme="oph", ngram=4, num_perm=64, seed=9)),
        DocumentParams(
            pinyin=PinyinParams(granule=20, overlap=0.25, levels=8),
            pinyin_anchored=PinyinParams(granule=16, levels=10, anchored=True, anchor_k=3),
        ),
        DocumentParams(winnow=WinnowParams(k=4, window=3, seed=2), sentences=SentenceParams(2, 3)),
    ],
)
def test_other_parameters_equal_the_reference(classical, params):
    pool = list("".join(classical.values())) + NOISY
    assert_equal_both_ways(random_docs(7, pool, 40) + list(classical.values()), params)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(NOISY + list("天下大势分久必合")), max_size=60)))
def test_any_text_equals_the_reference(docs):
    assert_equal_both_ways(docs)


@pytest.mark.parametrize(
    "anchor_params",
    [AnchorParams(), AnchorParams(char_k=5, char_window=4, pinyin_k=3, pinyin_window=2, seed=4)],
)
def test_fingerprint_and_anchors_equal_the_separate_functions(classical, anchor_params):
    pool = list("".join(classical.values())) + NOISY
    for text in random_docs(11, pool, 60) + list(classical.values()):
        normalized = normalize(text)
        want_fp = fingerprint_document(text, compiled=False)
        want_anchors = anchors_from_codes(codepoints(normalized.text), None, anchor_params)
        want_positions = np.flatnonzero(content_mask(codepoints(normalized.text)))
        for compiled in (True, False):
            got = fingerprint_and_anchors(normalized, None, anchor_params, compiled=compiled)
            assert dumped(got.fingerprint) == dumped(want_fp)
            assert got.anchors.to_bytes() == want_anchors.to_bytes()
            assert np.array_equal(got.positions, want_positions)


def test_batches_of_normalised_texts(classical):
    from fingerprint.compiled import fingerprint_many

    texts = [*classical.values(), "", "a", "天下"]
    fps, anchors, positions = fingerprint_many(
        normalize_many(texts), DocumentParams(), AnchorParams()
    )
    for text, fp, anchor, pos in zip(texts, fps, anchors, positions, strict=True):
        want = fingerprint_and_anchors(normalize(text), compiled=False)
        assert dumped(fp) == dumped(want.fingerprint)
        assert anchor.to_bytes() == want.anchors.to_bytes()
        assert np.array_equal(pos, want.positions)


def test_without_the_kernels_the_reference_runs(classical, monkeypatch):
    texts = list(classical.values())
    want = [dumped(f) for f in fingerprint_documents(texts, compiled=True)]
    monkeypatch.setattr(kernels, "available", lambda: False)
    assert not use_compiled()
    assert [dumped(f) for f in fingerprint_documents(texts)] == want
    with pytest.raises(RuntimeError):
        use_compiled(True)


@pytest.mark.parametrize("seed", range(2))
def test_single_methods_equal_their_modules(classical, seed):
    from fingerprint import compiled, minhash, pinyin, sentences, shingles, simhash

    pool = list("".join(classical.values())) + NOISY
    for text in random_docs(seed, pool, 40) + list(classical.values()):
        text = normalize(text).text
        for params in (PinyinParams(), PinyinParams(anchored=True)):
            got = compiled.pinyin_fingerprint(text, params)
            assert dumped(got) == dumped(pinyin.pinyin_fingerprint(text, params))
        assert compiled.simhash(text) == simhash.simhash(text)
        for params in (MinHashParams(scheme="oph"), MinHashParams()):
            assert dumped(compiled.minhash(text, params)) == dumped(minhash.minhash(text, params))
        got, want = compiled.winnow(text), shingles.winnow(text)
        assert dumped(got) == dumped(want)
        assert dumped(compiled.sentence_signature(text)) == dumped(
            sentences.sentence_signature(text)
        )
