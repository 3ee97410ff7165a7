"""The t2s table (fingerprint.t2s, fingerprint.t2s_table) converts as OpenCC does.

Checked against the installed OpenCC: the table on every code point, the list of phrases
against OpenCC's dictionaries (regenerating the module gives the committed one), and the
compiled normalisation and fingerprints with the table against the same with OpenCC, on a
generated text holding every code point the table converts and every key of OpenCC's
phrase dictionary in context, and on the benchmarks' corpus when it is on this machine.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint import batch, kernels, literal_scan, t2s, t2s_table
from fingerprint.batch import normalize_many
from fingerprint.document import fingerprint_documents
from fingerprint.normalize import DEFAULT_AD_PATTERNS, literal_alternatives, opencc_t2s

opencc = pytest.importorskip("opencc")
compiled_only = pytest.mark.skipif(not kernels.available(), reason="numba cannot compile here")
make = pytest.importorskip("bench.make_t2s_table")


@pytest.fixture(scope="module")
def phrase_keys() -> list[str]:
    """Every key of OpenCC's t2s phrase dictionaries (read with OpenCC's opencc_dict)."""
    if not make._tool().exists():
        pytest.skip("OpenCC's opencc_dict tool is not installed")
    _, chain = make.dictionary_files(json.loads((make._share() / "t2s.json").read_text("utf-8")))
    return [k for name in chain for k in make.dictionary_keys(name) if len(k) > 1]


def test_tables_fit_the_installed_opencc():
    assert opencc.__version__ == t2s_table.OPENCC_VERSION
    assert t2s.tables() is not None


@pytest.fixture(scope="module")
def table() -> dict[int, int]:
    """What OpenCC converts each code point to, alone, where it changes it."""
    return make.char_table(opencc_t2s())


def test_table_is_opencc_on_every_code_point(table):
    assert "".join(map(chr, sorted(table))) == t2s_table.SOURCE
    assert "".join(chr(table[c]) for c in sorted(table)) == t2s_table.TARGET


def test_module_is_what_the_generator_writes(table, phrase_keys):
    phrases = make.irregular_phrases(opencc_t2s(), table)
    source = make.render_module(table, phrases, t2s_table.OPENCC_VERSION)
    assert source == Path(t2s_table.__file__).read_text(encoding="utf-8")


def _generated_text(phrase_keys: list[str], seed: int = 0) -> list[str]:
    """Documents holding every converted code point, and every phrase key between random
    converted characters (and next to each other), in lines of a few dozen characters."""
    rng = random.Random(seed)
    chars = list(t2s_table.SOURCE) + list("天下大势，分久必合。\n ")
    pieces = list(t2s_table.SOURCE)
    for key in phrase_keys:
        pieces.append(rng.choice(chars) + key + rng.choice(chars))
    pieces += phrase_keys
    rng.shuffle(pieces)
    docs, doc = [], []
    for piece in pieces:
        doc.append(piece)
        if rng.random() < 0.05:
            doc.append("\n")
        if len(doc) > 200:
            docs.append("".join(doc))
            doc = []
    docs.append("".join(doc))
    return docs


def _same_normalized(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.text == y.text
        assert np.array_equal(x.offsets, y.offsets)


@compiled_only
def test_generated_text_normalises_as_with_opencc(phrase_keys, monkeypatch):
    docs = _generated_text(phrase_keys)
    with_table = normalize_many(docs, compiled=True)
    _same_normalized(with_table, normalize_many(docs, compiled=False))
    prints = [fp.to_dict() for fp in fingerprint_documents(docs, compiled=True)]
    monkeypatch.setattr(batch, "t2s_tables", lambda: None)  # the compiled path with OpenCC
    _same_normalized(with_table, normalize_many(docs, compiled=True))
    assert prints == [fp.to_dict() for fp in fingerprint_documents(docs, compiled=True)]


@compiled_only
def test_texts_holding_a_phrase_are_converted_by_opencc():
    docs = ["他說錢鍾書回覆了", "鍾書", "哪吒鬧海", "乾隆"]
    got = [n.text for n in normalize_many(docs, compiled=True)]
    assert got == [opencc_t2s().convert(d) for d in docs]


@compiled_only
def test_corpus_normalises_as_with_opencc():
    corpus = pytest.importorskip("tests.sites.corpus")
    if not corpus._complete(corpus.bench_cache_dir(None)):
        pytest.skip("the benchmarks' corpus is not on this machine (python -m tests.sites.corpus)")
    docs = corpus.documents(float("inf"))
    for i in range(0, len(docs), 256):
        chunk = docs[i : i + 256]
        _same_normalized(normalize_many(chunk, compiled=True), normalize_many(chunk, False))


AD_LITERALS = literal_alternatives(DEFAULT_AD_PATTERNS[0])
PIECES = [*AD_LITERALS, *"请记住本站最新章节月票求推荐手机\nab", "请访", "txt", "本章未"]


@compiled_only
@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_literal_scanner_is_re(sample):
    codes = np.frombuffer(sample.encode("utf-32-le"), dtype=np.uint32)
    want = [m.span() for m in re.finditer(DEFAULT_AD_PATTERNS[0], sample)]
    assert literal_scan.literal_matches(codes, AD_LITERALS) == want
    # Alternatives that are prefixes of each other: the pattern's order decides, as in re.
    for literals in (("本章", "本章未完"), ("本章未完", "本章")):
        want = [m.span() for m in re.finditer("|".join(literals), sample)]
        assert literal_scan.literal_matches(codes, literals) == want


def test_literal_alternatives():
    assert literal_alternatives("ab|广告|txt下载") == ("ab", "广告", "txt下载")
    for pattern in ("a.b|c", "ab|", "(ab)|c", r"a\d", "a+", "[ab]"):
        assert literal_alternatives(pattern) is None
