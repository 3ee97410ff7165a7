"""Segments prepared together equal segments prepared one at a time: what registration
stores and indexes does not depend on the batch (:func:`matcher.matching.prepared.prepare_many`,
:func:`~matcher.matching.prepared.locate_many`, :func:`matcher.matching.near_twins.sketch_many`)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from fingerprint.segments import segment
from matcher.matching import near_twins, prepared
from matcher.matching.prepared import locate, locate_many, prepare, prepare_many
from matcher.matching.registry import SEGMENT_PARAMS
from tests.matcher.conftest import novel

NOISE = "這是繁體字的測試，ＡＢＣ全形。請訪問 http://pirate.example.com 最新章節\n"


def texts() -> list[str]:
    """A novel's segments, a text without headings cut into fixed pieces (ad lines,
    Traditional and full-width characters), and short and empty pieces."""
    text, _ = novel(30, 1500, seed=3)
    rng = random.Random(4)
    plain = "".join(
        (NOISE if i % 5 == 0 else "") + "".join(rng.choices("天下大势分久必合合久必分", k=60))
        + ("。\n" if i % 3 else "，")
        for i in range(600)
    )  # fmt: skip
    parts = [text[s.start : s.stop] for s in segment(text, SEGMENT_PARAMS)]
    parts += [plain[s.start : s.stop] for s in segment(plain, SEGMENT_PARAMS)]
    return [*parts, "", "，。", "短文", NOISE, "天下大势"]


def assert_same(got: prepared.Prepared, want: prepared.Prepared) -> None:
    assert got.normalized.text == want.normalized.text
    assert np.array_equal(got.normalized.offsets, want.normalized.offsets)
    assert np.array_equal(got.positions, want.positions)
    assert got.stored_fingerprints() == want.stored_fingerprints()
    assert np.array_equal(got.window_keys, want.window_keys)
    assert got.blob() == want.blob() and got.content_hash == want.content_hash


@pytest.mark.parametrize("compiled", [True, False])
def test_prepared_together_as_one_at_a_time(compiled: bool, monkeypatch) -> None:
    monkeypatch.setattr(prepared, "use_compiled", lambda: compiled)
    parts = texts()
    together = prepare_many(parts)
    assert len(together) == len(parts)
    for got, part in zip(together, parts, strict=True):
        assert_same(got, prepare(part, len(part) + 1))
    assert prepare_many([]) == []


def test_located_and_sketched_together_as_one_at_a_time() -> None:
    parts = texts()
    together = locate_many(parts)
    for got, part in zip(together, parts, strict=True):
        want = locate(part)
        assert got.normalized.text == want.normalized.text
        assert np.array_equal(got.positions, want.positions)
    one_at_a_time = near_twins.merge(near_twins.segment_sketch(locate(p)) for p in parts)
    assert len(one_at_a_time) == near_twins.SKETCH_SIZE
    assert np.array_equal(near_twins.sketch_many(together), one_at_a_time)
    short = [locate(p) for p in ("", "短文", "天下大势分久必合")]  # shorter than an n-gram
    assert np.array_equal(
        near_twins.sketch_many(short), near_twins.merge(map(near_twins.segment_sketch, short))
    )
    assert locate_many([]) == [] and len(near_twins.sketch_many([])) == 0
