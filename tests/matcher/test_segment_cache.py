"""Work segments' verification data: references in Redis, blobs in the store, a bounded cache.

The engine runs on the test servers; what Redis and MongoDB hold is read back directly.
"""

from __future__ import annotations

import numpy as np
from bson import ObjectId

from fingerprint.anchors import AnchorParams, Anchors, Channel
from matcher.index.segment_refs import is_segment_ref, segment_ref
from matcher.keys import segment_owner
from matcher.matching.engine import Engine
from matcher.matching.prepared import (
    SegmentHeader,
    segment_blob,
)
from matcher.matching.segment_cache import SegmentCache
from tests.matcher.conftest import crawl, matched, novel, page_of, sample


def segment_keys(engine: Engine, work_id: str, count: int) -> list[str]:
    seq = engine.store.works.get_work(work_id)["seq"]
    return [engine.keys.segment(segment_owner(seq, i)) for i in range(count)]


def fresh(engine: Engine) -> Engine:
    """Another process's engine on the same servers: an empty segment cache."""
    return Engine(engine.settings, engine.store, engine.redis)


def test_redis_holds_a_reference_per_segment_and_the_store_the_blob(engine: Engine) -> None:
    text, chapters = novel(12, 2500, seed=5)
    work_id = engine.add_work(text, title="长篇")
    work = engine.store.works.get_work(work_id)
    stored = engine.store.fingerprints.owner_fingerprints("work", work["_id"], "anchors")
    assert len(stored) == 12
    for key, fp in zip(segment_keys(engine, work_id, 12), stored, strict=True):
        ref = engine.redis.get(key)
        assert is_segment_ref(ref) and len(ref) == 24
        assert ref == segment_ref(bytes(fp["value"]), fp["owner_id"])
        assert len(fp["value"]) > 2500  # the anchors of a whole chapter live in the store
    reader = fresh(engine)
    assert matched(crawl(reader, "http://p/7", page_of(chapters[6]))) == {work_id}
    assert len(reader.segments.cache) >= 1 and not reader.problems


def test_cached_segments_are_not_read_again_and_a_cold_reader_needs_the_store(
    engine: Engine,
) -> None:
    text, chapters = novel(6, 2500, seed=6)
    work_id = engine.add_work(text, title="长篇")
    warm = fresh(engine)
    assert matched(crawl(warm, "http://p/1", page_of(chapters[2]))) == {work_id}
    oid = engine.store.works.get_work(work_id)["_id"]
    engine.store.db.fingerprints.update_many(
        {"owner_kind": "work", "owner_id": oid}, {"$unset": {"methods.anchors": ""}}
    )
    # The warm process verifies from its cache; a cold one reports what the store lacks.
    assert matched(crawl(warm, "http://p/2", page_of(chapters[2]))) == {work_id}
    cold = fresh(engine)
    assert crawl(cold, "http://p/3", page_of(chapters[2])) == []
    assert any("not in the store" in p for p in cold.problems)


def test_a_re_registered_work_is_never_verified_against_its_old_text(engine: Engine) -> None:
    old, old_chapters = novel(4, 2500, seed=7)
    new, new_chapters = novel(4, 2500, seed=8)
    reader = fresh(engine)
    work_id = engine.add_work(old, title="长篇", key="novel")
    assert matched(crawl(reader, "http://p/old", page_of(old_chapters[1]))) == {work_id}
    assert engine.add_work(new, title="长篇", key="novel") == work_id
    # Same owner ids, new digests: the reader's cached old segments are not used.
    assert crawl(reader, "http://p/old2", page_of(old_chapters[1])) == []
    assert matched(crawl(reader, "http://p/new", page_of(new_chapters[1]))) == {work_id}
    assert not reader.problems


def test_a_corrupt_blob_in_the_store_is_reported_not_compared(engine: Engine) -> None:
    work_id = engine.add_work(sample("lighthouse.txt"), title="灯塔")
    oid = engine.store.works.get_work(work_id)["_id"]
    fp = engine.store.fingerprints.owner_fingerprints("work", oid, "anchors")[0]
    engine.store.db.fingerprints.update_one(
        {"owner_kind": "work", "owner_id": oid, "segment": fp["segment"]},
        {"$set": {"methods.anchors.value": bytes(fp["value"])[:-5]}},
    )
    reader = fresh(engine)
    assert crawl(reader, "http://p/1", page_of(sample("lighthouse.txt"))) == []
    assert any("stored fingerprint unusable" in p for p in reader.problems)


def test_an_index_holding_whole_blobs_still_verifies(engine: Engine) -> None:
    """Indexes built before references kept the blob itself under the segment's key."""
    work_id = engine.add_work(sample("lighthouse.txt"), title="灯塔")
    oid = engine.store.works.get_work(work_id)["_id"]
    for fp in engine.store.fingerprints.owner_fingerprints("work", oid, "anchors"):
        engine.redis.set(engine.keys.segment(int(fp["seq"])), bytes(fp["value"]))
    reader = fresh(engine)
    assert matched(crawl(reader, "http://p/1", page_of(sample("lighthouse.txt")))) == {work_id}
    assert len(reader.segments.cache) == 0


def blob(n: int) -> bytes:
    hashes = np.arange(n, dtype=np.uint32)
    channel = Channel(hashes, hashes, hashes + 8)
    anchors = Anchors(AnchorParams(), n + 8, channel, Channel.empty())
    return segment_blob(SegmentHeader(1, 0, 0, n + 8, n + 8, 0, 0), anchors)


def ref(data: bytes) -> bytes:
    return segment_ref(data, ObjectId(b"work-id-0001"))


def test_the_cache_keeps_at_most_its_size_dropping_the_least_recently_used() -> None:
    blobs = [blob(100 + i) for i in range(5)]
    size = len(blobs[0])
    cache = SegmentCache(max_bytes=3 * size + 100)
    for b in blobs[:3]:
        cache.put(ref(b), ("parsed", b), len(b))  # type: ignore[arg-type]
    assert cache.get(ref(blobs[0])) is not None  # now the most recently used
    cache.put(ref(blobs[3]), ("parsed", blobs[3]), len(blobs[3]))  # type: ignore[arg-type]
    assert cache.get(ref(blobs[1])) is None
    assert cache.get(ref(blobs[0])) is not None
    assert cache.size <= cache.max_bytes and len(cache) == 3
    huge = blob(10_000)
    cache.put(ref(huge), ("parsed", huge), len(huge))  # type: ignore[arg-type]
    assert cache.get(ref(huge)) is None and len(cache) == 3
