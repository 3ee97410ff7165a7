"""The packed-record layer: record codecs, the bucket scripts and the chunked helpers."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from redis.backoff import NoBackoff
from redis.retry import Retry

from matcher.errors import IndexUnavailable
from matcher.index.packed import (
    MISMATCH,
    STALE,
    BucketScripts,
    RecordFormat,
    as_ids,
    as_values,
    expand_ranges,
    group_bytes,
    payload_buffer,
    script_args,
)
from matcher.index.redis_io import (
    IndexClient,
    bucket_sizes,
    delete_matching,
    is_cluster,
    mget,
    set_buckets,
)
from matcher.keys import glob_escape
from tests.conftest import all_keys

PARAMS = '{"test":1}'
T = "{t}"
"""A script's keys share one hash slot, as an index's tag group does."""
INDEX_BACKENDS = ("server", "cluster")


@given(
    st.integers(0, 8),
    st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**32 - 1)), max_size=40),
)
def test_records_round_trip(value_bytes: int, rows: list[tuple[int, int]]) -> None:
    fmt = RecordFormat(value_bytes)
    values = np.array([v for v, _ in rows], dtype=np.uint64)
    ids = np.array([i for _, i in rows], dtype=np.uint32)
    blob = fmt.pack(values, ids)
    assert len(blob) == len(rows) * fmt.width
    got_values, got_ids = fmt.unpack(blob)
    mask = (1 << (8 * value_bytes)) - 1
    assert got_values.tolist() == [v & mask for v, _ in rows]
    assert got_ids.tolist() == ids.tolist()


def test_record_bytes_are_little_endian_value_then_id() -> None:
    blob = RecordFormat(6).pack(np.array([0x0102030405], np.uint64), np.array([7], np.uint32))
    assert blob == bytes([5, 4, 3, 2, 1, 0, 7, 0, 0, 0])


def test_expand_ranges_and_group_bytes() -> None:
    assert expand_ranges(np.array([4, 0, 9]), np.array([2, 0, 1])).tolist() == [4, 5, 9]
    assert expand_ranges(np.array([], np.int64), np.array([], np.int64)).tolist() == []
    fmt = RecordFormat(1)
    records = fmt.records(np.array([1, 2, 3], np.uint64), np.array([10, 20, 30], np.uint32))
    groups, payloads = group_bytes(records, np.array([5, 2, 5]))
    assert groups.tolist() == [2, 5]
    assert [fmt.unpack(p)[1].tolist() for p in payloads] == [[20], [10, 30]]
    lengths, buffer = payload_buffer([b"ab", None, b"c"])
    assert lengths.tolist() == [2, 0, 1] and buffer == b"abc"


def test_input_validation() -> None:
    assert as_values([2**64 - 1, 0]).tolist() == [2**64 - 1, 0]
    assert as_ids(np.array([0, 2**32 - 1], np.int64)).dtype == np.uint32
    for bad in ([-1], np.array([-1]), [1.5], [2**64]):
        with pytest.raises(ValueError):
            as_values(bad)
    with pytest.raises(ValueError):
        as_values([256], bits=8)
    with pytest.raises(ValueError):
        as_ids([2**32])
    assert glob_escape("a*b?[c]\\") == "a\\*b\\?\\[c\\]\\\\"


def _call(script, keys, payloads, version=None, flags=None):
    flags = flags or "1" * len(keys)
    args = script_args(PARAMS, version, 5, flags, payloads)
    return script(keys=[T + "p", T + "n", T + "v", *keys], args=args)


def test_add_script_is_idempotent_and_exact_size(index_client: IndexClient) -> None:
    scripts = BucketScripts(index_client)
    fmt = RecordFormat(1)
    for i in range(300):  # grown one record at a time, as incremental adds do
        rec = fmt.pack(np.array([i % 256], np.uint64), np.array([i], np.uint32))
        assert _call(scripts.add, [T + "b"], [rec])[1] == 1
        assert _call(scripts.add, [T + "b"], [rec])[1] == 0  # the same record again
    assert index_client.strlen(T + "b") == 300 * fmt.width
    assert int(index_client.get(T + "n")) == 300
    # SET of the whole value, never APPEND: no greedy preallocation (APPEND would double)
    assert index_client.memory_usage(T + "b") < 300 * fmt.width * 1.15 + 100
    assert index_client.get(T + "p") == PARAMS.encode()


def test_add_script_finds_records_only_at_record_boundaries(index_client: IndexClient) -> None:
    scripts = BucketScripts(index_client)
    index_client.set(T + "b", b"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09")
    # b"\x01\x02\x03\x04\x05" occurs in the bucket, but straddling two records
    assert _call(scripts.add, [T + "b"], [b"\x01\x02\x03\x04\x05"])[1] == 1
    assert index_client.strlen(T + "b") == 15


def test_remove_script(index_client: IndexClient) -> None:
    scripts = BucketScripts(index_client)
    a, b = b"AAAAA", b"BBBBB"
    _call(scripts.add, [T + "x", T + "y"], [a + b, b])
    assert (
        _call(scripts.remove, [T + "x", T + "y"], [a, b + a])[1] == 2
    )  # a from x; b (not a) from y
    assert index_client.get(T + "x") == b
    assert not index_client.exists(T + "y")  # emptied buckets are deleted
    assert _call(scripts.remove, [T + "x"], [a])[1] == 0
    assert int(index_client.get(T + "n")) == 1


def test_count_flags_and_split_report(index_client: IndexClient) -> None:
    scripts = BucketScripts(index_client)
    recs = b"".join(bytes([i]) * 5 for i in range(6))
    args = script_args(PARAMS, None, 5, "10", [recs, recs], split=(4, 1.0, 1000))
    status, counted, over = scripts.add(
        keys=[T + "p", T + "n", T + "v", T + "x", T + "y"], args=args
    )
    assert (status, counted) == (0, 6)  # only x counts
    assert over == [1, 6, 2, 6]  # both hold 6 > max(4, 2 * 6 / 1000) records


def test_scripts_refuse_stale_version_and_other_params(index_client: IndexClient) -> None:
    scripts = BucketScripts(index_client)
    assert _call(scripts.add, [T + "b"], [b"AAAAA"], version=b"")[0] == 0
    index_client.set(T + "v", "t1")
    assert _call(scripts.add, [T + "b"], [b"BBBBB"], version=b"")[0] == STALE
    assert _call(scripts.remove, [T + "b"], [b"AAAAA"], version=b"t0")[0] == STALE
    assert _call(scripts.add, [T + "b"], [b"BBBBB"], version=b"t1")[0] == 0
    other = script_args('{"other":1}', None, 5, "1", [b"CCCCC"])
    status, stored = scripts.add(keys=[T + "p", T + "n", T + "v", T + "b"], args=other)
    assert status == MISMATCH and stored == PARAMS.encode()
    assert index_client.strlen(T + "b") == 10


def test_set_fetch_sizes_and_delete(index_client: IndexClient) -> None:
    items = [(f"q:b:{i}".encode(), bytes(i % 7 + 1)) for i in range(2500)]
    assert set_buckets(index_client, iter(items), "testing") == (
        2500,
        sum(i % 7 + 1 for i in range(2500)),
    )
    index_client.set("other", "kept")
    payloads, _ = mget(index_client, [b"q:b:3", b"q:b:none", "other"], "testing")
    assert payloads == [bytes(4), None, b"kept"]
    sizes = bucket_sizes(index_client, "q:b:*", "testing")
    assert len(sizes) == 2500 and sizes[b"q:b:6"] == 7
    assert delete_matching(index_client, "q:*", "testing") == 2500
    assert all_keys(index_client, "*") == [b"other"]
    # the keys spread over every slot: on a cluster every master held some, and was scanned
    if is_cluster(index_client):
        assert set_buckets(index_client, items, "testing")[0] == 2500
        assert all(node.dbsize() > 100 for node in _masters(index_client))
        assert delete_matching(index_client, "q:*", "testing") == 2500
        assert all(node.dbsize() <= 1 for node in _masters(index_client))


def _masters(client: IndexClient) -> list[redis.Redis]:
    return [client.get_redis_connection(n) for n in client.get_primaries()]


def test_outage_is_index_unavailable(dead_redis: redis.Redis) -> None:
    dead_redis.set_retry(Retry(NoBackoff(), 0))  # fail at once instead of backing off 10 times
    with pytest.raises(IndexUnavailable, match="Redis unavailable while testing"):
        mget(dead_redis, [b"a"], "testing")
    with pytest.raises(IndexUnavailable):
        set_buckets(dead_redis, [(b"a", b"b")], "testing")
    with pytest.raises(IndexUnavailable):
        delete_matching(dead_redis, "a*", "testing")
