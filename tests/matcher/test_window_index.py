"""Window postings against brute force: per owner, the distinct query keys it holds.

The logic runs on the in-memory twin of Redis (``tests/matcher/test_packed.py`` holds it to
what Redis does); the outage test runs on a server that is gone."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from fingerprint.base import IncompatibleFingerprints
from matcher.errors import IndexUnavailable
from matcher.index.storage import RedisStorage, Storage
from matcher.index.window_index import DNA_BELOW, WindowIndex, stored_postings

INDEX_BACKENDS = ("memory",)
MAX_DF = 25


def documents(count: int, seed: int) -> dict[int, np.ndarray]:
    """Owners' distinct keys, drawn from a small vocabulary so that keys are shared."""
    rng = np.random.default_rng(seed)
    vocab = rng.integers(0, 2**64, 4000, dtype=np.uint64)
    return {owner * 3 + 1: np.unique(rng.choice(vocab, 150)) for owner in range(count)}


def brute(docs: dict[int, np.ndarray], query: np.ndarray, max_df: int) -> dict[int, int]:
    df: dict[int, int] = {}
    for keys in docs.values():
        for key in keys.tolist():
            df[key] = df.get(key, 0) + 1
    wanted = {key for key in query.tolist() if df.get(key, 0) <= max_df}
    out = {owner: len(wanted & set(keys.tolist())) for owner, keys in docs.items()}
    return {owner: n for owner, n in out.items() if n}


def as_dict(hits: tuple[np.ndarray, np.ndarray]) -> dict[int, int]:
    owners, counts = hits
    assert owners.dtype == np.uint32 and list(owners) == sorted(owners)
    return dict(zip(owners.tolist(), counts.tolist(), strict=True))


def query_keys(docs: dict[int, np.ndarray], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    held = np.concatenate(list(docs.values()))
    fresh = rng.integers(0, 2**64, 50, dtype=np.uint64)
    return np.concatenate([rng.choice(held, 300), fresh, held[:5]])  # repeats count once


@pytest.mark.parametrize("load", ["add", "bulk", "add_many", "fresh"])
def test_hits_match_brute_force(storage: Storage, load: str) -> None:
    docs = documents(120, seed=1)
    index = WindowIndex(storage, "w", bucket_bits=10, max_df=MAX_DF)
    if load == "add":
        for owner, keys in docs.items():
            index.add(owner, keys)
    elif load in ("add_many", "fresh"):  # in batches of owners, as a work's segments are
        items = list(docs.items())
        for i in range(0, len(items), 16):
            batch = items[i : i + 16]
            owners = np.concatenate([np.full(len(k), o) for o, k in batch])
            keys = np.concatenate([k for _, k in batch])
            index.add_many(owners, keys, fresh=load == "fresh")
    else:
        owners = np.concatenate([np.full(len(k), o) for o, k in docs.items()])
        index.bulk_load(owners, np.concatenate(list(docs.values())))
    for seed in (2, 3):
        query = query_keys(docs, seed)
        assert as_dict(index.hits(query)) == brute(docs, query, MAX_DF)


def test_stop_keys_are_ignored(storage: Storage) -> None:
    index = WindowIndex(storage, "w", max_df=3)
    for owner in range(4):
        index.add(owner, np.array([100, 200 + owner], np.uint64))  # 100: held by 4 > 3 owners
    for owner in range(3):
        index.add(owner, np.array([7], np.uint64))  # 7: held by exactly 3
    got = as_dict(index.hits(np.array([100, 7, 201], np.uint64)))
    assert got == {0: 1, 1: 2, 2: 1}


def test_fresh_records_are_the_records_an_add_writes(storage: Storage) -> None:
    docs = documents(40, seed=4)
    owners = np.concatenate([np.full(len(k), o) for o, k in docs.items()])
    keys = np.concatenate(list(docs.values()))
    searched = WindowIndex(storage, "a", bucket_bits=8, max_df=MAX_DF)
    appended = WindowIndex(storage, "b", bucket_bits=8, max_df=MAX_DF)
    searched.add_many(owners, keys)
    appended.add_many(owners[::-1], keys[::-1], fresh=True)  # in any order
    assert searched.records() == appended.records() == len(keys)
    query = query_keys(docs, seed=5)
    assert as_dict(searched.hits(query)) == as_dict(appended.hits(query))
    # Removing an owner added fresh removes all of its postings.
    first = next(iter(docs))
    appended.remove(first, docs[first])
    assert appended.records() == len(keys) - len(docs[first])
    assert first not in as_dict(appended.hits(docs[first]))


def test_add_is_idempotent_and_remove_works(storage: Storage) -> None:
    docs = documents(40, seed=4)
    index = WindowIndex(storage, "w", bucket_bits=8, max_df=MAX_DF)
    for owner, keys in docs.items():
        index.add(owner, keys)
        index.add(owner, np.r_[keys, keys[:3]])
    query = query_keys(docs, seed=5)
    assert as_dict(index.hits(query)) == brute(docs, query, MAX_DF)
    assert index.records() == sum(len(k) for k in docs.values())
    for owner in list(docs)[::2]:
        index.remove(owner, docs[owner][:100])
        index.remove(owner, docs[owner][:100])  # absent now: no-op
        docs[owner] = docs[owner][100:]
    index.remove(999, np.array([1, 2, 3], np.uint64))
    assert as_dict(index.hits(query)) == brute(docs, query, MAX_DF)
    with pytest.raises(ValueError, match="empty index"):
        index.bulk_load(np.array([1]), np.array([5], np.uint64))


def test_clear_empty_and_bad_input(storage: Storage) -> None:
    storage.set_many([("w2:win:records", "9")], "testing")
    index = WindowIndex(storage, "w")
    assert as_dict(index.hits(np.array([1, 2], np.uint64))) == {}
    index.add(5, np.array([1, 2], np.uint64))
    index.add(5, np.array([], np.uint64))
    assert as_dict(index.hits(np.array([], np.uint64))) == {}
    index.clear()
    assert storage.scan("*") == [b"w2:win:records"]
    with pytest.raises(ValueError):
        index.add(-1, np.array([1], np.uint64))
    with pytest.raises(ValueError):
        index.bulk_load(np.array([1, 2]), np.array([1], np.uint64))
    with pytest.raises(ValueError):
        WindowIndex(storage, "w", bucket_bits=40)


def test_parameters_are_checked(storage: Storage) -> None:
    WindowIndex(storage, "w", bucket_bits=20).add(1, np.array([5], np.uint64))
    other = WindowIndex(storage, "w", bucket_bits=16)
    for call in (
        lambda: other.hits(np.array([5], np.uint64)),
        lambda: other.add(2, np.array([5], np.uint64)),
        lambda: other.bulk_load(np.array([2]), np.array([5], np.uint64)),
    ):
        with pytest.raises(IncompatibleFingerprints, match="was built with"):
            call()
    # max_df is a query-time setting, not part of the layout
    assert as_dict(WindowIndex(storage, "w", max_df=1).hits(np.array([5], np.uint64))) == {1: 1}


def test_outage_is_index_unavailable(dead_redis: redis.Redis) -> None:
    dead_redis.set_retry(Retry(NoBackoff(), 0))  # fail at once instead of backing off
    index = WindowIndex(RedisStorage(dead_redis), "w")
    with pytest.raises(IndexUnavailable, match="Redis unavailable while reading the window"):
        index.hits(np.array([1], np.uint64))
    for call in (
        lambda: index.add(1, np.array([1], np.uint64)),
        lambda: index.remove(1, np.array([1], np.uint64)),
        lambda: index.bulk_load(np.array([1]), np.array([1], np.uint64)),
        index.clear,
    ):
        with pytest.raises(IndexUnavailable):
            call()


def test_bulk_load_of_nothing_writes_nothing(storage: Storage) -> None:
    """A new deployment's rebuild: no postings at all is a no-op, and the index still works."""
    index = WindowIndex(storage, "w", bucket_bits=8)
    index.bulk_load(np.empty(0, np.uint32), np.empty(0, np.uint64))
    assert storage.scan("*") == []
    assert as_dict(index.hits(np.array([1, 2], np.uint64))) == {}
    index.add(5, np.array([1, 2], np.uint64))
    assert as_dict(index.hits(np.array([1, 2, 3], np.uint64))) == {5: 2}


def test_keys_stored_by_an_earlier_version_are_sampled_as_a_lookup_asks() -> None:
    """An index rebuilt from keys stored before the dnas were sampled (version 1 kept every
    fixed and anchored window's dna) holds every key a text's lookup now asks for, and about
    half the dnas it held."""
    from fingerprint.base import array_to_hex
    from matcher.matching.prepared import prepare, sampled
    from matcher.store.field_names import INDEX_KEYS_VERSION

    text = "".join(
        f"第{i}章 江湖夜雨十年灯，桃李春风一杯酒。少年听雨歌楼上，红烛昏罗帐。\n" for i in range(60)
    )
    page = prepare(text)
    fp = page.fingerprint
    dnas = np.concatenate([fp.pinyin.keys, fp.pinyin_anchored.keys]).astype(np.uint64)
    old = np.unique(np.concatenate([dnas, sampled(page.anchors).keys]))
    stored = {"windows": array_to_hex(old, "<u8")}
    kept = stored_postings(stored, 1)
    assert set(page.window_keys.tolist()) <= set(kept.tolist())
    old_dnas, kept_dnas = old[old < DNA_BELOW], kept[kept < DNA_BELOW]
    assert 0.3 < len(kept_dnas) / len(old_dnas) < 0.7
    assert set(kept[kept >= DNA_BELOW].tolist()) == set(old[old >= DNA_BELOW].tolist())
    current = {"windows": array_to_hex(page.window_keys, "<u8")}
    assert np.array_equal(stored_postings(current, INDEX_KEYS_VERSION), page.window_keys)
