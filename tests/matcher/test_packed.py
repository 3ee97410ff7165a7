"""The packed-record layer: record codecs, the bucket scripts and the chunked helpers.

The storage tests are the contract of :class:`matcher.index.storage.Storage`: the same
assertions on a Redis server, on a 3-master Redis Cluster (:class:`RedisStorage`) and on the
in-memory twin the index tests run on (:class:`MemoryStorage`); what only Redis can tell
(memory use, the spread over the masters) is checked on the real backends alone."""

from __future__ import annotations

import time

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
    delete_matching,
    is_cluster,
    mget,
    set_buckets,
)
from matcher.index.storage import RedisStorage, Script, Storage
from matcher.keys import glob_escape, group_slot, group_tags, key_slot

PARAMS = '{"test":1}'
T = "{t}"
"""A script's keys share one hash slot, as an index's tag group does."""
INDEX_BACKENDS = ("server", "cluster", "memory")


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


def _call(storage: Storage, script: Script, keys, payloads, version=None, flags=None):
    flags = flags or "1" * len(keys)
    args = script_args(PARAMS, version, 5, flags, payloads)
    return _run(storage, script, [T + "p", T + "n", T + "v", *keys], args)


def _run(storage: Storage, script: Script, keys, args):
    (reply,) = storage.edit_buckets(script, [(keys, args)], "testing")
    return reply


def _get(storage: Storage, key: str) -> bytes | None:
    return storage.mget([key], "testing")[0][0]


def _redis(storage: Storage) -> IndexClient | None:
    """The Redis client behind ``storage``; None for the in-memory twin."""
    return storage.client if isinstance(storage, RedisStorage) else None


def test_add_script_is_idempotent_and_exact_size(storage: Storage) -> None:
    fmt = RecordFormat(1)
    for i in range(300):  # grown one record at a time, as incremental adds do
        rec = fmt.pack(np.array([i % 256], np.uint64), np.array([i], np.uint32))
        assert _call(storage, "add", [T + "b"], [rec])[1] == 1
        assert _call(storage, "add", [T + "b"], [rec])[1] == 0  # the same record again
    assert storage.sizes(T + "b", "testing") == {(T + "b").encode(): 300 * fmt.width}
    assert int(_get(storage, T + "n")) == 300
    assert _get(storage, T + "p") == PARAMS.encode()
    if client := _redis(storage):
        # SET of the whole value, never APPEND: no greedy preallocation (APPEND would double)
        assert client.memory_usage(T + "b") < 300 * fmt.width * 1.15 + 100


def test_append_script_appends_without_looking(storage: Storage) -> None:
    assert _call(storage, "append", [T + "b", T + "c"], [b"AAAAA", b"BBBBBCCCCC"])[1] == 3
    assert _call(storage, "append", [T + "b"], [b"AAAAA"], flags="0")[1] == 0
    assert _get(storage, T + "b") == b"AAAAA" * 2  # not idempotent: the caller sends once
    assert _get(storage, T + "c") == b"BBBBBCCCCC"
    assert int(_get(storage, T + "n")) == 3


def test_add_script_finds_records_only_at_record_boundaries(storage: Storage) -> None:
    storage.set_many([(T + "b", b"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09")], "testing")
    # b"\x01\x02\x03\x04\x05" occurs in the bucket, but straddling two records
    assert _call(storage, "add", [T + "b"], [b"\x01\x02\x03\x04\x05"])[1] == 1
    assert len(_get(storage, T + "b")) == 15
    assert _call(storage, "remove", [T + "b"], [b"\x02\x03\x04\x05\x06"])[1] == 0


def test_remove_script(storage: Storage) -> None:
    a, b = b"AAAAA", b"BBBBB"
    _call(storage, "add", [T + "x", T + "y"], [a + b, b])
    assert (
        _call(storage, "remove", [T + "x", T + "y"], [a, b + a])[1] == 2
    )  # a from x; b (not a) from y
    assert _get(storage, T + "x") == b
    assert storage.scan(T + "y") == []  # emptied buckets are deleted
    assert _call(storage, "remove", [T + "x"], [a])[1] == 0
    assert int(_get(storage, T + "n")) == 1
    assert _run(
        storage, "remove", ["{u}p", "{u}n", "{u}v", "{u}b"], script_args(PARAMS, None, 5, "1", [a])
    ) == [0, 0, []]  # an index never written: nothing to remove, nothing written
    assert storage.scan("{u}*") == []


def test_count_flags_and_split_report(storage: Storage) -> None:
    recs = b"".join(bytes([i]) * 5 for i in range(6))
    args = script_args(PARAMS, None, 5, "10", [recs, recs], split=(4, 1.0, 1000))
    status, counted, over = _run(
        storage, "add", [T + "p", T + "n", T + "v", T + "x", T + "y"], args
    )
    assert (status, counted) == (0, 6)  # only x counts
    assert over == [1, 6, 2, 6]  # both hold 6 > max(4, 2 * 6 / 1000) records
    args = script_args(PARAMS, None, 5, "1", [bytes([9]) * 5], split=(7, 1.0, 1000))
    assert _run(storage, "add", [T + "p", T + "n", T + "v", T + "x"], args) == [0, 1, []]


def test_scripts_refuse_stale_version_and_other_params(storage: Storage) -> None:
    assert _call(storage, "add", [T + "b"], [b"AAAAA"], version=b"")[0] == 0
    storage.set_many([(T + "v", "t1")], "testing")
    assert _call(storage, "add", [T + "b"], [b"BBBBB"], version=b"")[0] == STALE
    assert _call(storage, "remove", [T + "b"], [b"AAAAA"], version=b"t0")[0] == STALE
    assert _call(storage, "append", [T + "b"], [b"AAAAA"], version=b"t0")[0] == STALE
    assert _call(storage, "add", [T + "b"], [b"BBBBB"], version=b"t1")[0] == 0
    other = script_args('{"other":1}', None, 5, "1", [b"CCCCC"])
    for script in ("add", "append", "remove"):
        status, stored = _run(storage, script, [T + "p", T + "n", T + "v", T + "b"], other)
        assert status == MISMATCH and stored == PARAMS.encode()
    assert len(_get(storage, T + "b")) == 10


def test_set_fetch_sizes_and_delete(storage: Storage) -> None:
    items = [(f"q:b:{i}".encode(), bytes(i % 7 + 1)) for i in range(2500)]
    assert storage.set_many(iter(items), "testing") == (2500, sum(i % 7 + 1 for i in range(2500)))
    storage.set_many([("other", "kept")], "testing")
    payloads, _ = storage.mget([b"q:b:3", b"q:b:none", "other"], "testing")
    assert payloads == [bytes(4), None, b"kept"]
    sizes = storage.sizes("q:b:*", "testing")
    assert len(sizes) == 2500 and sizes[b"q:b:6"] == 7
    assert storage.delete_matching("q:*", "testing") == 2500
    assert storage.scan("*") == [b"other"]
    storage.unlink(["other", b"never"], "testing")
    assert storage.scan("*") == []
    # the keys spread over every slot: on a cluster every master held some, and was scanned
    client = _redis(storage)
    if client is not None and is_cluster(client):
        assert storage.set_many(items, "testing")[0] == 2500
        assert all(node.dbsize() > 100 for node in _masters(client))
        assert storage.delete_matching("q:*", "testing") == 2500
        assert all(node.dbsize() == 0 for node in _masters(client))


def test_mget_reads_each_groups_extra_keys(storage: Storage) -> None:
    storage.set_many([("{a}1", "a1"), ("{a}meta", "A"), ("{b}1", "b1")], "testing")
    keys = ["{a}1", "{b}1", "{b}2", "{a}2"]
    extra = ("{a}meta", "{b}meta")
    values, meta = storage.mget(keys, "testing", np.array([0, 1, 1, 0]), lambda g: [extra[g]])
    assert values == [b"a1", b"b1", None, None]
    assert meta == {0: [b"A"], 1: [None]}
    values, meta = storage.mget(keys[:2], "testing")  # groups: each key's slot
    assert values == [b"a1", b"b1"]
    assert sorted(meta) == sorted({key_slot(b"a"), key_slot(b"b")})


def test_claim_and_commands(storage: Storage) -> None:
    names = [T + "p", "{u}p"]
    storage.set_many([(names[1], "theirs")], "testing")
    assert storage.claim(names, "mine", "testing") == [None, b"theirs"]
    assert storage.claim(names, "again", "testing") == [b"mine", b"theirs"]
    replies = storage.commands(
        [
            ("SET", T + "v", "t1"),
            ("GET", T + "v"),
            ("HSET", T + "split", b"x", 3, b"y", 4),
            ("HSET", T + "split", b"y", 5),
            ("HGETALL", T + "split"),
            ("HLEN", T + "split"),
            ("HLEN", T + "none"),
            ("GET", T + "none"),
            ("UNLINK", T + "v"),
            ("GET", T + "v"),
            ("SET", T + "m", "first", "NX"),
            ("SET", T + "m", "second", "NX"),
            ("GET", T + "m"),
        ],
        "testing",
    )
    assert [bool(replies[0]), *replies[1:]] == [
        True, b"t1", 2, 0, {b"x": b"3", b"y": b"5"}, 2, 0, None, 1, None, True, None, b"first",
    ]  # fmt: skip


def test_delete_heads_deletes_the_keys_of_some_groups(storage: Storage) -> None:
    tags = group_tags()
    keys = [f"h:{tags[g]}:{kind}:{i}" for g in (1, 2) for kind in ("a", "b") for i in range(3)]
    storage.set_many([(k, "1") for k in keys] + [("other", "x")], "testing")
    heads = [f"h:{tags[1]}:a:", f"h:{tags[2]}:"]
    slots = [group_slot(1), group_slot(2)]
    assert storage.delete_heads("h:*{????}*", heads, slots, "testing") == 9
    kept = [b"other", *(f"h:{tags[1]}:b:{i}".encode() for i in range(3))]
    assert sorted(storage.scan("*")) == sorted(kept)


def test_locks(storage: Storage) -> None:
    """A page lock: held by one at a time, renewed by its holder, gone after its timeout."""
    first = storage.lock(T + "lock", 0.5, 0.1)
    assert first.acquire()
    second = storage.lock(T + "lock", 0.5, 0.1)
    assert not second.acquire()  # waits 0.1 s, then gives up
    assert first.reacquire()
    first.release()
    with pytest.raises(redis.exceptions.LockError):
        first.release()
    assert second.acquire()
    time.sleep(0.7)  # not renewed: the lock expires
    assert first.acquire()
    with pytest.raises(redis.exceptions.LockError):
        second.reacquire()
    first.release()
    assert storage.scan(T + "*") == []


def test_transact_writes_only_what_was_decided_on_unchanged_values(storage: Storage) -> None:
    watched = [T + "b", T + "v"]
    storage.set_many([(T + "b", "old"), (T + "v", "t1")], "testing")
    seen: list[list[bytes | None]] = []

    def decide(values: list[bytes | None]):
        seen.append(values)
        if len(seen) == 1:  # another writer changes a watched key before the writes
            storage.set_many([(T + "v", "t2")], "testing")
        return [("UNLINK", T + "b"), ("SET", T + "b/0:1", values[1])], len(seen)

    assert storage.transact(watched, decide, "testing") == 2  # decided again, once
    assert seen == [[b"old", b"t1"], [b"old", b"t2"]]
    assert sorted(storage.scan(T + "*")) == [(T + "b/0:1").encode(), (T + "v").encode()]
    assert _get(storage, T + "b/0:1") == b"t2"
    nothing = storage.transact(watched, lambda values: ([], values), "testing")
    assert nothing == [None, b"t2"]


def test_scan_patterns_escape_glob_characters(storage: Storage) -> None:
    keys = ["a*b:{000d}:1", "axb:{000d}:1", "a?b:{000d}:2", "a[b]:{000d}:3"]
    storage.set_many([(k, "1") for k in keys], "testing")
    assert storage.scan(glob_escape("a*b") + ":*") == [b"a*b:{000d}:1"]
    assert sorted(storage.scan("a?b:*")) == [b"a*b:{000d}:1", b"a?b:{000d}:2", b"axb:{000d}:1"]
    assert storage.scan(glob_escape("a[b]") + ":*") == [b"a[b]:{000d}:3"]
    assert storage.scan("*:{???}*") == []
    assert sorted(storage.scan("*:{????}*")) == sorted(k.encode() for k in keys)


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
