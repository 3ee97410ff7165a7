"""fingerprint.similarity: the microblog Sim = 1/(H+1) + K Dup rule and the document score."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint.base import IncompatibleFingerprints
from fingerprint.minhash import MinHash, MinHashParams, minhash
from fingerprint.simhash import Simhash, SimhashParams, simhash
from fingerprint.similarity import document_score, dup, microblog_sim, microblog_similar
from fingerprint.tokens import words

TOKENS = st.lists(st.sampled_from(["天下", "大势", "分久", "必合", "周末", "七国", "a", "b"]))


@settings(max_examples=100, deadline=None)
@given(TOKENS, TOKENS)
def test_dup_is_jaccard_of_token_sets(a, b):
    sa, sb = set(a), set(b)
    expected = len(sa & sb) / len(sa | sb) if sa | sb else 0.0
    assert dup(a, b) == pytest.approx(expected)
    assert dup(iter(a), iter(b)) == pytest.approx(expected)  # any iterables


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 64), st.floats(0, 1), st.floats(2, 8))
def test_microblog_sim_formula(h, d, k):
    assert microblog_sim(h, d, k) == pytest.approx(1 / (h + 1) + k * d)


def test_microblog_sim_doc_example():
    assert microblog_sim(0, 0.5, k=4.0) == 3.0


@pytest.mark.parametrize(
    ("h", "d", "k"), [(-1, 0.5, 4.0), (0, -0.1, 4.0), (0, 1.1, 4.0), (0, 0.5, 1.9), (0, 0.5, 8.1)]
)
def test_microblog_sim_rejects_bad_input(h, d, k):
    with pytest.raises(ValueError):
        microblog_sim(h, d, k)


def test_microblog_similar_threshold():
    # K = 4: similar when Sim >= 1.8
    a = Simhash(0)
    # H = 0: Sim = 1 + 4 Dup; Dup = 1/4 gives 2.0, Dup = 1/6 gives 1.67
    assert microblog_similar(a, Simhash(0), ["a", "b", "c", "d"], ["a"])
    assert not microblog_similar(a, Simhash(0), ["a", "b", "c", "d", "e", "f"], ["a"])
    # H = 1: Sim = 0.5 + 4 Dup; Dup = 1/3 gives 1.83..., Dup = 1/4 gives 1.5
    assert microblog_similar(a, Simhash(1), ["a", "b"], ["a", "c"])
    assert not microblog_similar(a, Simhash(1), ["a", "b", "c"], ["a", "d"])


def test_microblog_similar_on_real_posts(classical):
    post = classical["rulin"][:80]
    repost = post.replace("功名", "功明", 1)
    other = classical["shuihu"][:80]
    assert microblog_similar(simhash(post), simhash(repost), words(post), words(repost))
    assert not microblog_similar(simhash(post), simhash(other), words(post), words(other))


def test_microblog_similar_rejects_incompatible_simhashes():
    with pytest.raises(IncompatibleFingerprints):
        microblog_similar(Simhash(0), Simhash(0, SimhashParams(ngram=2)), ["a"], ["a"])


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, (1 << 64) - 1),
    st.integers(0, (1 << 64) - 1),
    st.lists(st.integers(0, 3), min_size=8, max_size=8),
    st.lists(st.integers(0, 3), min_size=8, max_size=8),
    st.floats(0.8, 0.9),
)
def test_document_score_formula(a, b, va, vb, mu):
    params = MinHashParams(num_perm=8)
    ma = MinHash(np.array(va, dtype=np.uint32), 10, params)
    mb = MinHash(np.array(vb, dtype=np.uint32), 10, params)
    hamming = bin(a ^ b).count("1")
    jaccard = sum(x == y for x, y in zip(va, vb, strict=True)) / 8
    expected = mu * (1 - hamming / 64) + (1 - mu) * jaccard
    assert document_score(Simhash(a), Simhash(b), ma, mb, mu) == pytest.approx(expected)


@pytest.mark.parametrize("mu", [0.79, 0.91, 0.0, 1.0])
def test_document_score_rejects_mu_outside_range(mu):
    m = minhash("天下")
    with pytest.raises(ValueError):
        document_score(Simhash(0), Simhash(0), m, m, mu)


def test_document_score_rejects_incompatible_fingerprints():
    m = minhash("天下")
    with pytest.raises(IncompatibleFingerprints):
        document_score(Simhash(0), Simhash(0, SimhashParams(seed=1)), m, m)
    with pytest.raises(IncompatibleFingerprints):
        document_score(Simhash(0), Simhash(0), m, minhash("天下", MinHashParams(seed=2)))
