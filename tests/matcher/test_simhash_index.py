"""The Redis simhash index against brute force (every stored value's Hamming distance).

Data sets are small so the suite stays fast; low split floors make hot buckets split at
these sizes, so the split paths are exercised as at full scale. The logic runs on the
in-memory twin of Redis (``tests/matcher/test_packed.py`` holds it to what Redis does); the
outage test runs on a server that is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from fingerprint.base import IncompatibleFingerprints
from fingerprint.simhash import hamming_many
from matcher.errors import IndexUnavailable
from matcher.index.simhash_index import SimhashIndex, SimhashIndexParams
from matcher.index.simhash_layout import blocks, gather, take
from matcher.index.storage import RedisStorage, Storage

INDEX_BACKENDS = ("memory",)
DEFAULT = SimhashIndexParams()
PERMUTED = SimhashIndexParams(permuted=True, bucket_bits=12)
LOW_FLOOR = SimhashIndexParams(split_floor=16)
COARSE = SimhashIndexParams(bucket_bits=8)  # the work segments' tables (segment_simhash_bits)
PARAMS = {"default": DEFAULT, "permuted": PERMUTED, "low_floor": LOW_FLOOR, "coarse": COARSE}
TOP16 = np.uint64(0xFFFF << 48)


def random_values(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, n, dtype=np.uint64)


def skewed_values(n: int, seed: int) -> np.ndarray:
    """Half the values share their top block; a tenth are near one centre; some repeat."""
    rng = np.random.default_rng(seed)
    values = random_values(n, seed)
    half = n // 2
    values[:half] = (values[:half] & ~TOP16) | np.uint64(0xBEEF << 48)
    centre = int(values[0])
    for i in range(half, half + n // 10):
        flips = rng.choice(64, rng.integers(0, 6), replace=False)
        values[i] = centre ^ sum(1 << int(b) for b in flips)
    values[-20:] = values[-21]
    return values


def queries(values: np.ndarray, count: int, seed: int) -> np.ndarray:
    """Stored values with 0..4 bits flipped, and fresh random values."""
    rng = np.random.default_rng(seed)
    picked = values[rng.integers(0, len(values), count)].copy()
    for i in range(count):
        for bit in rng.choice(64, rng.integers(0, 5), replace=False):
            picked[i] ^= np.uint64(1) << np.uint64(bit)
    return np.concatenate([picked, random_values(count // 4, seed + 1)])


def brute(ids: np.ndarray, values: np.ndarray, query: int, k: int) -> list[tuple[int, int]]:
    dist = hamming_many(query, values)
    best: dict[int, int] = {}
    for i in np.flatnonzero(dist <= k).tolist():
        owner, d = int(ids[i]), int(dist[i])
        best[owner] = min(d, best.get(owner, 64))
    return sorted(best.items(), key=lambda item: (item[1], item[0]))


def assert_exact(index, ids, values, qs, ks=(0, 1, 2, 3)) -> None:
    for k in ks:
        answers = index.query_many(qs, k)
        assert len(answers) == len(qs)
        for q, got in zip(qs.tolist(), answers, strict=True):
            assert got == brute(ids, values, q, k), (k, hex(q))


@pytest.mark.parametrize("name", PARAMS)
@pytest.mark.parametrize("make", [random_values, skewed_values])
def test_bulk_load_is_exact(storage: Storage, name: str, make) -> None:
    values = make(3000, seed=1)
    ids = np.arange(len(values), dtype=np.uint32) + 7
    index = SimhashIndex(storage, "t", PARAMS[name])
    index.bulk_load(ids, values)
    assert index.stats()["entries"] == len(values)
    assert_exact(index, ids, values, queries(values, 120, seed=2))


@pytest.mark.parametrize("name", ["default", "low_floor"])
def test_incremental_adds_split_hot_buckets_and_stay_exact(storage: Storage, name: str) -> None:
    values = skewed_values(2000, seed=3)
    ids = np.arange(len(values), dtype=np.uint32)
    index = SimhashIndex(storage, "t", PARAMS[name])
    for start in range(0, len(values), 250):
        index.add(ids[start : start + 250], values[start : start + 250])
    stats = index.stats()
    assert stats["entries"] == len(values)
    assert stats["split_buckets"] > 0  # the shared block 0xBEEF holds 1000 > 256 records
    assert_exact(index, ids, values, queries(values, 100, seed=4))


def test_split_bounds_the_scan_of_a_hot_bucket(storage: Storage) -> None:
    values = random_values(4000, seed=5)
    values[:3000] = (values[:3000] & ~TOP16) | np.uint64(0xBEEF << 48)  # 3/4 in one bucket
    index = SimhashIndex(storage, "t", SimhashIndexParams(split_floor=64))
    index.bulk_load(np.arange(4000), values)
    stats = index.stats()
    assert stats["split_buckets"] >= 1
    assert stats["largest_bucket"] <= 64  # no leaf a query reads is over the limit
    assert_exact(index, np.arange(4000), values, queries(values, 60, seed=6), ks=(3,))


def test_one_repeated_value_is_not_split(storage: Storage) -> None:
    values = np.full(300, 0x0123456789ABCDEF, dtype=np.uint64)
    index = SimhashIndex(storage, "t", SimhashIndexParams(split_floor=16))
    index.add(np.arange(300), values)
    index.add([300], [0x0123456789ABCDEE])
    assert index.stats()["split_buckets"] == 0  # splitting could not shorten any scan
    got = index.query(0x0123456789ABCDEF, 1)
    assert got == [(i, 0) for i in range(300)] + [(300, 1)]


def test_add_is_idempotent(storage: Storage) -> None:
    values = random_values(500, seed=7)
    index = SimhashIndex(storage, "t", LOW_FLOOR)
    index.add(np.arange(500), values)
    before = index.stats()
    index.add(np.arange(500), values)
    index.add(np.r_[np.arange(10), np.arange(10)], np.r_[values[:10], values[:10]])
    assert index.stats() == before
    assert index.query(int(values[3]), 0) == [(3, 0)]


def test_remove(storage: Storage) -> None:
    values = skewed_values(1200, seed=8)
    ids = np.arange(1200, dtype=np.uint32)
    index = SimhashIndex(storage, "t", LOW_FLOOR)
    index.add(ids, values)
    gone = np.arange(0, 1200, 3)
    index.remove(ids[gone], values[gone])
    index.remove(ids[gone], values[gone])  # absent now: no-op
    index.remove([5000], [123])  # never there
    keep = np.setdiff1d(ids, gone)
    assert index.stats()["entries"] == len(keep)
    assert_exact(index, ids[keep], values[keep], queries(values, 80, seed=9))


def test_several_values_per_id_report_the_nearest(storage: Storage) -> None:
    index = SimhashIndex(storage, "t")
    index.add([1, 1, 2], [0b1111, 0b0111, 0b1011_0000])
    assert index.query(0b0011) == [(1, 1)]
    assert index.query(0b0011, 0) == []
    assert index.query(0b1011_0111) == [(1, 3), (2, 3)]


def test_bulk_load_then_edits_agree_with_brute_force(storage: Storage) -> None:
    values = skewed_values(3000, seed=10)
    ids = np.arange(3000, dtype=np.uint32)
    index = SimhashIndex(storage, "t", LOW_FLOOR)
    index.bulk_load(ids[:2000], values[:2000])
    index.add(ids[2000:], values[2000:])
    index.remove(ids[:500], values[:500])
    with pytest.raises(ValueError, match="empty index"):
        index.bulk_load(ids[:1], values[:1])
    assert_exact(index, ids[500:], values[500:], queries(values, 100, seed=11))


@pytest.mark.parametrize("name", ["low_floor", "permuted"])
def test_rebuild_answers_like_incremental_adds(storage: Storage, name: str) -> None:
    values = skewed_values(1500, seed=12)
    ids = np.arange(1500, dtype=np.uint32)
    index = SimhashIndex(storage, "t", PARAMS[name])
    for start in range(0, 1500, 300):
        index.add(ids[start : start + 300], values[start : start + 300])
    qs = queries(values, 150, seed=13)
    incremental = index.query_many(qs)
    index.clear()
    assert storage.scan("t:sh:*") == []
    index.bulk_load(ids, values)
    assert index.query_many(qs) == incremental


def test_a_second_client_follows_splits(storage: Storage) -> None:
    """Two index objects (two processes) on the same keys: each caches its own directory."""
    values = skewed_values(1000, seed=14)
    ids = np.arange(1000, dtype=np.uint32)
    writer = SimhashIndex(storage, "t", LOW_FLOOR)
    reader = SimhashIndex(storage, "t", LOW_FLOOR)
    writer.add(ids[:10], values[:10])
    qs = queries(values, 40, seed=15)
    reader.query_many(qs)  # caches the (empty) split directory
    writer.add(ids[10:600], values[10:600])  # splits buckets: the directory changes
    reader.add(ids[600:], values[600:])  # stale directory: refused, reloaded, redone
    assert_exact(reader, ids, values, qs, ks=(3,))
    assert_exact(writer, ids, values, qs, ks=(3,))


def test_a_query_routed_before_a_split_of_another_thread_is_routed_again(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The threads of an admin worker share one index object: a query routed by the
    directory it had is answered only if the buckets read carry that directory's tokens,
    never those another thread cached meanwhile (after its own split)."""
    values = skewed_values(1000, seed=14)
    ids = np.arange(1000, dtype=np.uint32)
    index = SimhashIndex(storage, "t", LOW_FLOOR)
    index.add(ids[:10], values[:10])
    qs = queries(values, 40, seed=15)
    index.query_many(qs)  # caches the (empty) split directory
    read = storage.mget
    split: list[bool] = []

    def split_first(keys: Sequence[bytes], what: str, *args: Any, **kwargs: Any) -> Any:
        """The query is routed: now another thread splits buckets and caches the new
        directory, before the query reads its buckets."""
        if not split and what == "querying the simhash index":
            split.append(True)
            index.add(ids[10:], values[10:])
            assert index.stats()["split_buckets"] > 0
        return read(keys, what, *args, **kwargs)

    monkeypatch.setattr(storage, "mget", split_first)
    assert_exact(index, ids, values, qs, ks=(3,))
    assert split


def test_clear_leaves_other_prefixes(storage: Storage) -> None:
    storage.set_many([("t2:sh:params", "x"), ("other", "y")], "testing")
    index = SimhashIndex(storage, "t")
    index.add([1], [42])
    index.clear()
    assert sorted(storage.scan("*")) == [b"other", b"t2:sh:params"]
    assert index.query(42) == []


def test_parameters_are_checked(storage: Storage) -> None:
    SimhashIndex(storage, "t").add([1], [42])
    other = SimhashIndex(storage, "t", SimhashIndexParams(k=2))
    for call in (
        lambda: other.query(42),
        lambda: other.add([2], [43]),
        lambda: other.remove([1], [42]),
        lambda: other.bulk_load([2], [43]),
    ):
        with pytest.raises(IncompatibleFingerprints, match="was built with"):
            call()
    index = SimhashIndex(storage, "t")
    with pytest.raises(ValueError):
        index.query(42, k=4)
    with pytest.raises(ValueError):
        index.add([1, 2], [3])
    with pytest.raises(ValueError):
        SimhashIndex(storage, "s", SimhashIndexParams(bits=32)).add([1], [2**32])
    with pytest.raises(ValueError):
        SimhashIndexParams(bits=3, k=3)


def test_empty_inputs(storage: Storage) -> None:
    index = SimhashIndex(storage, "t")
    assert index.query_many([]) == []
    assert index.query(5) == []
    index.add([], [])
    index.remove([], [])
    index.bulk_load([], [])
    assert index.stats()["entries"] == 0


def test_short_fingerprints(storage: Storage) -> None:
    params = SimhashIndexParams(bits=32, k=2, split_floor=8)
    values = random_values(800, seed=16) >> np.uint64(32)
    values[:300] &= np.uint64(0xFFFF)  # 300 share a zero top block
    ids = np.arange(800, dtype=np.uint32)
    index = SimhashIndex(storage, "t", params)
    index.add(ids, values)
    qs = values[:50] ^ np.uint64(0b101)
    assert_exact(index, ids, values, qs, ks=(0, 2))


def test_outage_is_index_unavailable(dead_redis: redis.Redis) -> None:
    dead_redis.set_retry(Retry(NoBackoff(), 0))  # fail at once instead of backing off
    index = SimhashIndex(RedisStorage(dead_redis), "t")
    with pytest.raises(IndexUnavailable, match="Redis unavailable while querying"):
        index.query(42)
    for call in (
        lambda: index.add([1], [42]),
        lambda: index.remove([1], [42]),
        lambda: index.bulk_load([1], [42]),
        index.clear,
        index.stats,
    ):
        with pytest.raises(IndexUnavailable):
            call()


def test_bit_helpers() -> None:
    assert blocks(64, 4) == [(48, 16), (32, 16), (16, 16), (0, 16)]
    assert take([(48, 16), (0, 8)], 20) == ([(48, 16), (4, 4)], [(0, 4)])
    v = np.array([0xABCD_0000_0000_1234], dtype=np.uint64)
    assert gather(v, [(48, 16), (0, 8)]).tolist() == [0xABCD34]


def test_bulk_load_of_nothing_writes_nothing(storage: Storage) -> None:
    """A new deployment's rebuild: no fingerprint at all is a no-op, and the index still works."""
    index = SimhashIndex(storage, "t", PARAMS["default"])
    index.bulk_load(np.empty(0, np.uint32), np.empty(0, np.uint64))
    assert storage.scan("*") == []
    assert index.query(0xDEADBEEF, 3) == []
    index.add([9], [0xDEADBEEF])
    assert index.query(0xDEADBEEF, 3) == [(9, 0)]
