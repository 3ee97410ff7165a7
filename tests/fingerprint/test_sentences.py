"""fingerprint.sentences: sentence spans and the top-k longest-sentence signature."""

from __future__ import annotations

import json
import re
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint.base import CorruptFingerprint, IncompatibleFingerprints
from fingerprint.hashing import hash64
from fingerprint.sentences import (
    SentenceParams,
    SentenceSignature,
    sentence_signature,
    sentences,
)

SENTENCE = re.compile(r"[^。！？!?；;…\n]+")
TEXT = st.text(alphabet="天下大势分久必合周末七国ab1 ，。！？!?；;…\n😀", max_size=80)


def content(text: str) -> str:
    return "".join(c for c in text if unicodedata.category(c)[0] in "LN")


def signature_ref(text: str, k: int, min_chars: int) -> list[tuple[int, int]]:
    """The k longest sentences by content characters, earlier first on ties."""
    spans = [m.span() for m in SENTENCE.finditer(text)]
    ranked = sorted(spans, key=lambda s: (-len(content(text[s[0] : s[1]])), s[0]))
    return [s for s in ranked if len(content(text[s[0] : s[1]])) >= min_chars][:k]


@settings(max_examples=150, deadline=None)
@given(TEXT)
def test_sentence_spans(text):
    assert sentences(text) == [m.span() for m in SENTENCE.finditer(text)]


def test_sentence_spans_example():
    assert sentences("甲乙。丙！！丁\n\n戊…") == [(0, 2), (3, 4), (6, 7), (9, 10)]
    assert sentences("") == []
    assert sentences("。\n！") == []


@settings(max_examples=150, deadline=None)
@given(TEXT, st.integers(1, 6), st.integers(1, 6))
def test_signature_definition(text, k, min_chars):
    sig = sentence_signature(text, SentenceParams(k=k, min_chars=min_chars))
    expected = signature_ref(text, k, min_chars)
    assert list(sig.spans) == expected
    assert sig.hashes.tolist() == [hash64(content(text[a:b])) for a, b in expected]


def test_doc_example():
    sig = sentence_signature("短句。这是一个相当长的句子，用来做签名！又一句比较长的话在这里。")
    assert len(sig.spans) == 2
    assert sig.spans[0] == (3, 19)  # the longest first


def test_defaults_take_five_sentences_of_eight_characters(classical):
    text = classical["sanguo"]
    sig = sentence_signature(text)
    assert len(sig.spans) == 5
    lengths = [len(content(text[a:b])) for a, b in sig.spans]
    assert lengths == sorted(lengths, reverse=True)
    assert min(lengths) >= 8


def test_punctuation_and_spacing_do_not_matter(classical):
    text = classical["honglou"]
    changed = text.replace("，", " ").replace("：", "、")
    a, b = sentence_signature(text), sentence_signature(changed)
    assert a.hashes.tolist() == b.hashes.tolist()
    assert a.similarity(b) == 1.0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=5), st.lists(st.integers(0, 6), max_size=5))
def test_similarity_formula(a, b):
    def sig(values):
        return SentenceSignature(
            np.array(values, dtype=np.uint64), tuple((i, i + 1) for i in range(len(values)))
        )

    sa, sb = set(a), set(b)
    expected = len(sa & sb) / min(len(sa), len(sb)) if sa and sb else 0.0
    assert sig(a).similarity(sig(b)) == pytest.approx(expected)


def test_copy_with_shuffled_sentences_is_fully_similar(classical):
    original = classical["shuihu"]
    parts = re.findall(r"[^。！？；]+[。！？；]?", original)
    copy = "短句。\n".join(reversed(parts))
    part = sentence_signature(original)
    assert part.similarity(sentence_signature(copy)) == 1.0
    assert part.similarity(sentence_signature(classical["xiyou"])) == 0.0


@pytest.mark.parametrize("kwargs", [{"k": 0}, {"min_chars": 0}])
def test_invalid_params(kwargs):
    with pytest.raises(ValueError):
        SentenceParams(**kwargs)


def test_incompatible():
    a = sentence_signature("天下大势，分久必合，合久必分。")
    b = sentence_signature("天下大势，分久必合，合久必分。", SentenceParams(k=3))
    with pytest.raises(IncompatibleFingerprints):
        a.similarity(b)


class TestStorage:
    @pytest.mark.parametrize(
        "text", ["", "短。", "天下大势，分久必合，合久必分。周末七国分争，并入于秦。"]
    )
    def test_round_trip(self, text):
        sig = sentence_signature(text, SentenceParams(k=3, min_chars=2))
        back = SentenceSignature.from_dict(json.loads(json.dumps(sig.to_dict())))
        assert back.hashes.tolist() == sig.hashes.tolist()
        assert back.spans == sig.spans
        assert (back.params, back.version, back.method) == (sig.params, sig.version, sig.method)

    @pytest.mark.parametrize(
        ("corrupt", "error"),
        [
            (lambda d: d.update(hashes=["zz"]), CorruptFingerprint),
            (lambda d: d.update(spans=d["spans"][:-1]), CorruptFingerprint),
            (lambda d: d.update(spans=[[1]]), CorruptFingerprint),
            (lambda d: d.pop("hashes"), CorruptFingerprint),
            (lambda d: d.update(params=None), CorruptFingerprint),
            (lambda d: d["params"].update(k=0), CorruptFingerprint),
            (lambda d: d.update(method="simhash"), CorruptFingerprint),
            (lambda d: d.update(version=3), IncompatibleFingerprints),
        ],
    )
    def test_corrupt(self, corrupt, error):
        stored = sentence_signature(
            "天下大势，分久必合，合久必分。周末七国分争，并入于秦。"
        ).to_dict()
        corrupt(stored)
        with pytest.raises(error):
            SentenceSignature.from_dict(stored)

    @pytest.mark.parametrize("bad", ["1" + "0" * 16, "-1"])
    def test_hash_out_of_range(self, bad):
        stored = sentence_signature("天下大势，分久必合，合久必分。").to_dict()
        stored["hashes"] = [bad]
        with pytest.raises(CorruptFingerprint):
            SentenceSignature.from_dict(stored)
