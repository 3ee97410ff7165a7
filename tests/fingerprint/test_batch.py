"""The batch path (fingerprint.batch) equals the per-document path exactly."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint import kernels
from fingerprint.batch import SEPARATOR, normalize_many
from fingerprint.document import DocumentParams, fingerprint_document, fingerprint_documents
from fingerprint.minhash import MinHashParams
from fingerprint.normalize import normalize

NOISY = list(
    "這是繁體字測試ＡＢＣ　\u200b\n\n  www.abc.com 最新章节 //@某:x #话题# [微笑] 😀 ﬁ㈱"
    "\x00\t。！？"
)
EDGE_CASES = [
    "",
    " ",
    "a",
    "中",
    "，。",
    "短文本",
    "http://x.com\n正文",
    "第一行\n\n\n第二行  ",
    "\ufffe\uffff",
    f"前{SEPARATOR}后",
    "請訪問 m.biquge.com\n" + "长" * 70 + " www.x.cn 尾",
]


def assert_same(docs: list[str], params: DocumentParams | None = None) -> None:
    """Batch equals per document, in the numpy reference and in the compiled path."""
    for compiled in (False, True) if kernels.available() else (False,):
        assert_same_path(docs, params, compiled)


def assert_same_path(docs: list[str], params: DocumentParams | None, compiled: bool) -> None:
    batch = fingerprint_documents(docs, params, compiled=compiled)
    assert len(batch) == len(docs)
    for doc, got in zip(docs, batch, strict=True):
        want = fingerprint_document(doc, params, compiled=False)
        assert got.normalized.text == want.normalized.text
        assert np.array_equal(got.normalized.offsets, want.normalized.offsets)
        assert json.dumps(got.to_dict(), sort_keys=True) == json.dumps(
            want.to_dict(), sort_keys=True
        ), repr(doc[:80])


def random_docs(seed: int, pool: list[str], count: int) -> list[str]:
    rng = random.Random(seed)
    sizes = [0, 1, 2, 3, 5, 8, 20, 50, 200, 1000, 3000]
    return ["".join(rng.choice(pool) for _ in range(rng.choice(sizes))) for _ in range(count)]


def test_edge_cases_and_real_text(classical):
    texts = list(classical.values())
    assert_same(EDGE_CASES + texts + [t[:7] for t in texts])


@pytest.mark.parametrize("seed", range(4))
def test_random_batches(classical, seed):
    pool = list("".join(classical.values())) + NOISY
    assert_same(random_docs(seed, pool, 120))


def test_empty_batch():
    assert fingerprint_documents([]) == []
    assert normalize_many([]) == []


def test_bytes_are_decoded():
    docs = ["中文测试文本，简体。".encode("gbk"), "繁體中文測試".encode("big5"), "plain"]
    assert_same(docs)


def test_non_default_minhash_scheme(classical):
    params = DocumentParams(minhash=MinHashParams(scheme="affine32"))
    assert_same([*classical.values(), "", "短"], params)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(NOISY + list("天下大势分久必合")), max_size=80)))
def test_any_batch_normalises_like_each_document(docs):
    for doc, got in zip(docs, normalize_many(docs), strict=True):
        want = normalize(doc)
        assert got.text == want.text
        assert np.array_equal(got.offsets, want.offsets)
