"""fingerprint.document: every default fingerprint at once, equal to the methods one by one."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from fingerprint.base import IncompatibleFingerprints
from fingerprint.bloom import BloomSignature
from fingerprint.document import (
    DocumentParams,
    fingerprint_document,
    fingerprint_documents,
    fingerprint_normalized,
)
from fingerprint.minhash import MinHash, MinHashParams, minhash
from fingerprint.normalize import normalize
from fingerprint.pinyin import PinyinFingerprint, PinyinParams, pinyin_fingerprint
from fingerprint.sentences import SentenceSignature, sentence_signature
from fingerprint.shingles import WinnowFingerprint, WinnowParams, winnow
from fingerprint.simhash import Simhash, SimhashParams, simhash
from fingerprint.tokens import content_codes

METHODS = {"pinyin", "pinyin-anchored", "simhash", "minhash", "winnow", "sentences"}
LOADERS = {
    "pinyin": PinyinFingerprint.from_dict,
    "pinyin-anchored": PinyinFingerprint.from_dict,
    "simhash": Simhash.from_dict,
    "minhash": MinHash.from_dict,
    "winnow": WinnowFingerprint.from_dict,
    "sentences": SentenceSignature.from_dict,
    "bloom": BloomSignature.from_dict,
}


@pytest.fixture(scope="module")
def document(classical):
    text = "\n".join(classical.values())
    return text, fingerprint_document(text)


def test_members_equal_the_methods_on_normalised_text(document):
    text, fp = document
    norm = normalize(text).text
    assert fp.normalized.text == norm
    assert fp.simhash == simhash(norm)
    oph = minhash(norm, MinHashParams(scheme="oph"))
    assert fp.minhash.hashvalues.tolist() == oph.hashvalues.tolist()
    assert (fp.minhash.size, fp.minhash.params) == (oph.size, oph.params)
    w = winnow(norm)
    assert fp.winnow.hashes.tolist() == w.hashes.tolist()
    assert fp.winnow.positions.tolist() == w.positions.tolist()
    assert fp.pinyin.to_dict() == pinyin_fingerprint(norm).to_dict()
    anchored = pinyin_fingerprint(norm, PinyinParams(anchored=True))
    assert fp.pinyin_anchored.to_dict() == anchored.to_dict()
    assert fp.sentences.to_dict() == sentence_signature(norm).to_dict()


def test_custom_params_reach_every_member(classical):
    params = DocumentParams(
        pinyin=PinyinParams(granule=24),
        simhash=SimhashParams(ngram=4, seed=3),
        minhash=MinHashParams(num_perm=64, ngram=2, scheme="affine32"),
        winnow=WinnowParams(k=5, window=4),
    )
    text = classical["rulin"]
    fp = fingerprint_document(text, params)
    norm = fp.normalized.text
    assert fp.simhash == simhash(norm, params.simhash)
    assert fp.minhash.hashvalues.tolist() == minhash(norm, params.minhash).hashvalues.tolist()
    assert fp.winnow.hashes.tolist() == winnow(norm, params.winnow).hashes.tolist()
    assert fp.pinyin.to_dict() == pinyin_fingerprint(norm, params.pinyin).to_dict()


def test_document_params_need_char_tf_simhash():
    with pytest.raises(ValueError):
        DocumentParams(simhash=SimhashParams(features="word"))
    with pytest.raises(ValueError):
        DocumentParams(simhash=SimhashParams(weighting="tfidf", idf_table="x"))


def test_to_dict_is_json_and_every_member_round_trips(document):
    _, fp = document
    stored = json.loads(json.dumps(fp.to_dict()))
    assert set(stored) == METHODS
    for method, data in stored.items():
        assert data["method"] == method
        back = LOADERS[method](data)
        assert back.to_dict() == data


def test_bytes_are_decoded(classical):
    text = classical["sanguo"]
    expected = fingerprint_document(text).to_dict()
    assert fingerprint_document(text.encode("gbk")).to_dict() == expected
    assert fingerprint_document(text.encode("utf-16")).to_dict() == expected


def test_many_documents(classical):
    texts = list(classical.values())
    many = fingerprint_documents(texts)
    assert [fp.to_dict() for fp in many] == [fingerprint_document(t).to_dict() for t in texts]


def test_traditional_copy_has_identical_fingerprints(sample_texts):
    a = fingerprint_document(sample_texts["simplified"])
    b = fingerprint_document(sample_texts["traditional"])
    assert a.to_dict() == b.to_dict()
    # but evidence is quoted from each original
    start, end = a.sentences.spans[0]
    assert a.normalized.quote(start, end) != b.normalized.quote(start, end)
    assert b.normalized.quote(start, end) in sample_texts["traditional"]


def test_edited_copy_is_found_by_each_method(classical):
    original = classical["sanguo"] + "\n" + classical["xiyou"]
    copy = (
        "最新章节请访问 www.biquge.com\n"
        + original.replace("，", ", ").replace("天下", "天 下")
        + "\n本章未完，点击下一页继续阅读"
    )
    a, b = fingerprint_document(original), fingerprint_document(copy)
    other = fingerprint_document(classical["honglou"] + classical["rulin"])
    assert a.simhash.distance(b.simhash) <= 3
    assert a.minhash.jaccard(b.minhash) >= 0.9
    assert a.winnow.containment_in(b.winnow) >= 0.95
    assert a.pinyin.containment_in(b.pinyin) >= 0.9
    assert a.sentences.similarity(b.sentences) == 1.0
    assert a.simhash.distance(other.simhash) > 10
    assert a.minhash.jaccard(other.minhash) < 0.1
    assert a.winnow.containment_in(other.winnow) < 0.1


def test_members_of_different_documents_params_are_incompatible(classical):
    text = classical["shuihu"]
    a = fingerprint_document(text)
    b = fingerprint_document(text, DocumentParams(minhash=MinHashParams(scheme="affine32")))
    with pytest.raises(IncompatibleFingerprints):
        a.minhash.jaccard(b.minhash)
    with pytest.raises(IncompatibleFingerprints):
        a.pinyin.containment_in(a.pinyin_anchored)


def test_fingerprint_normalized_takes_prenormalised_text(classical):
    n = normalize(classical["honglou"])
    assert (
        fingerprint_normalized(n).to_dict() == fingerprint_document(classical["honglou"]).to_dict()
    )


_CHILD = """
import json, sys
from fingerprint.document import fingerprint_document
texts = json.loads(sys.stdin.read())
print(json.dumps([fingerprint_document(t).to_dict() for t in texts], sort_keys=True))
"""


def _random_texts(seed: int, count: int) -> list[str]:
    rnd = random.Random(seed)
    pieces = (
        list("天下大势分久必合周末七国秦汉滾長江東逝水這是繁體")
        + list("ＡＢＣ１２３abcXYZ 0123，。！？\n")
        + ["😀", "🎉", "\u200b", "\u3000", "[微笑]", "@某人 ", "#话题#", "http://t.cn/x "]
    )
    return ["".join(rnd.choice(pieces) for _ in range(rnd.randint(20, 400))) for _ in range(count)]


def test_same_fingerprints_in_a_fresh_process(sample_texts, classical):
    """Stable hashing: another interpreter, with another str-hash salt, computes the same."""
    texts = [t for t in sample_texts.values() if t] + list(classical.values())
    texts += _random_texts(2024, 6)
    # texts with content characters only (see test_bad_input for those without)
    texts = [t for t in texts if content_codes(normalize(t).text)[0].size]
    assert len(texts) >= 12
    here = json.dumps([fingerprint_document(t).to_dict() for t in texts], sort_keys=True)
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert child.stdout.strip() == here
