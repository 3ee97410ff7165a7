"""Registering works in overlapping batches: the store before the index, errors surfaced."""

from __future__ import annotations

import pytest

from matcher.errors import StoreUnavailable
from matcher.keys import segment_owner
from matcher.matching import registry
from matcher.matching.engine import Engine
from tests.matcher.conftest import crawl, matched, novel, page_of

CHAPTERS = 3 * registry.BATCH_SEGMENTS + 5
CHAPTER_CHARS = 1500  # above the segmenter's 1,000-character minimum: a segment each


def test_a_long_work_in_many_batches_matches_every_chapter(engine: Engine) -> None:
    text, chapters = novel(CHAPTERS, CHAPTER_CHARS, seed=11)
    work_id = engine.add_work(text, title="长篇")
    seq = engine.store.works.get_work(work_id)["seq"]
    assert engine.store.count("work_segments") == len(chapters)
    refs = [engine.keys.segment(segment_owner(seq, i)) for i in range(len(chapters))]
    assert all(engine.redis.exists(k) for k in refs)
    for n in (0, registry.BATCH_SEGMENTS, len(chapters) - 1):  # first, second and last batch
        assert matched(crawl(engine, f"http://p/{n}", page_of(chapters[n]))) == {work_id}


def test_a_failing_store_write_fails_the_registration_and_indexes_nothing_unstored(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, chapters = novel(CHAPTERS, CHAPTER_CHARS, seed=12)
    save = engine.store.fingerprints.save_fingerprints_many
    calls: list[int] = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise StoreUnavailable("MongoDB is unavailable while storing fingerprints")
        return save(*args, **kwargs)

    monkeypatch.setattr(engine.store.fingerprints, "save_fingerprints_many", failing)
    with pytest.raises(StoreUnavailable):
        engine.add_work(text, title="长篇", key="novel")
    [work] = engine.store.works.find_works("novel")
    indexed = [
        i
        for i in range(len(chapters))
        if engine.redis.exists(engine.keys.segment(segment_owner(work["seq"], i)))
    ]
    # The first batch reached the index; nothing of the batch whose store write failed did,
    # and whatever is indexed has its verification data in the store.
    assert set(range(registry.BATCH_SEGMENTS)) <= set(indexed)
    assert not set(range(registry.BATCH_SEGMENTS, 2 * registry.BATCH_SEGMENTS)) & set(indexed)
    stored = engine.store.fingerprints.work_fingerprints(
        [(work["_id"], i) for i in indexed], "anchors"
    )
    assert sorted(fp["segment"] for fp in stored) == indexed
    monkeypatch.undo()
    work_id = engine.add_work(text, title="长篇", key="novel")  # a retry completes it
    assert str(work["_id"]) == work_id
    assert matched(crawl(engine, "http://p/x", page_of(chapters[-1]))) == {work_id}
