"""The indexes and the engine on a real 3-master Redis Cluster: spread, equal answers,
redirections (MOVED, ASK) and the client factory.

The suites of the engine and of the storage contract (``test_packed.py``) run on the cluster
too (their ``INDEX_BACKENDS``); this module checks what only a cluster has.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import numpy as np
import pymongo
import pytest
import redis
from redis.cluster import RedisCluster

from matcher.errors import IndexUnavailable, SettingsError
from matcher.index.maintenance import drop_indexes
from matcher.index.redis_io import connect, is_cluster, mget
from matcher.index.simhash_index import SimhashIndex, SimhashIndexParams
from matcher.index.storage import RedisStorage
from matcher.keys import TAG_GROUPS, group_tags, key_slot, simhash_keys
from matcher.matching.engine import Engine
from matcher.settings import IndexRedis, Settings
from tests.matcher.conftest import crawl, matched, novel, page_of, sample
from tests.servers.local_cluster import LocalCluster

PREFIX = "fptrack-test"
NAMES = ["lighthouse.txt", "river-town.txt", "tea-history.txt", "star-voyage.txt"]


@pytest.fixture
def engine_on(mongo_client: pymongo.MongoClient) -> Iterator[Callable[..., Engine]]:
    """Engines on an index client, each with a fresh database of the test MongoDB server."""
    names: list[str] = []

    def make(client) -> Engine:
        names.append(f"fptrack_test_{uuid.uuid4().hex[:12]}")
        settings = Settings(redis_prefix=PREFIX, mongo_db=names[-1])
        return Engine.open(settings, mongo_client=mongo_client, redis_client=client)

    yield make
    for name in names:
        mongo_client.drop_database(name)


def _load(engine: Engine) -> dict[str, str]:
    works = {n: engine.add_work(sample(n), title=n, source=n) for n in NAMES}
    works["novel"] = engine.add_work(novel(30, 1500)[0], title="novel", source="novel")
    crawl(engine, "http://x/a", page_of(sample("lighthouse.txt")))
    crawl(engine, "http://x/b", page_of(sample("river-town.txt")[:800], sample("tea-history.txt")))
    return works


def test_group_tags_sit_at_evenly_spaced_slots(redis_cluster: LocalCluster) -> None:
    tags = group_tags()
    assert len(set(tags)) == TAG_GROUPS
    node = redis_cluster.node(redis_cluster.ports[0])
    for g, tag in enumerate(tags):
        slot = int(node.cluster("KEYSLOT", f"fptrack:works:sh:{tag}:b:0:beef"))
        assert slot == key_slot(f"x{tag}y".encode())  # the server's CRC16 is ours
        assert g * 16384 // TAG_GROUPS <= slot < (g + 1) * 16384 // TAG_GROUPS
    # contiguous slot ranges give each of three masters its share of the groups
    owners = [redis_cluster.owner(key_slot(t.encode())) for t in tags]
    assert sorted(owners.count(p) for p in redis_cluster.ports) == [10, 11, 11]


def test_keys_spread_over_every_master_and_answers_equal_one_server(
    redis_client: redis.Redis,
    cluster_client: RedisCluster,
    redis_cluster: LocalCluster,
    engine_on: Callable[..., Engine],
) -> None:
    on_server, on_cluster = engine_on(redis_client), engine_on(cluster_client)
    works = {name: _load(e) for name, e in (("server", on_server), ("cluster", on_cluster))}
    per_master = {
        port: [k for k in node.scan_iter(f"{PREFIX}:*", count=1000)]
        for port, node in redis_cluster.primaries().items()
    }
    total = sum(len(keys) for keys in per_master.values())
    assert sorted(k for keys in per_master.values() for k in keys) == sorted(
        redis_client.scan_iter(f"{PREFIX}:*", count=1000)
    )  # the same keys as on one server
    for port, keys in per_master.items():
        assert len(keys) > total / 5, (port, len(keys), total)  # each holds its share
        kinds = {k.split(b":")[2] for k in keys if b":sh:" in k or b":win:" in k}
        assert kinds == {b"sh", b"win"}, port  # buckets of both indexes everywhere
        assert any(b":anchors:" in k for k in keys), port  # 34 segments' data
    texts = [page_of(sample(n)) for n in NAMES] + [page_of(sample("river-town.txt")[:900])]
    for text in texts:
        a, b = on_server.match_text(text), on_cluster.match_text(text)
        assert [(r["work_title"], r["score"], r["evidence"]) for r in a] == [
            (r["work_title"], r["score"], r["evidence"]) for r in b
        ]
    ids = works["cluster"]
    lone = on_cluster.add_work(sample("chef-diary.txt"), title="chef")
    crawl(on_cluster, "http://x/c", page_of(sample("chef-diary.txt")))
    assert [r["url"] for r in on_cluster.match_work_against_pages(lone)] == ["http://x/c"]
    assert on_cluster.remove_work(ids["lighthouse.txt"])
    assert matched(crawl(on_cluster, "http://x/d", page_of(sample("lighthouse.txt")))) == set()


def test_one_startup_node_is_enough(
    cluster_client: RedisCluster, redis_cluster: LocalCluster, engine_on: Callable[..., Engine]
) -> None:
    """Pointed at any single node, the client learns the slot table and follows it."""
    for port in redis_cluster.ports:
        # A fresh index for each fresh database: entries left by the previous round would
        # be other works holding the same text (boilerplate once three do).
        cluster_client.flushdb(target_nodes=RedisCluster.PRIMARIES)
        client = connect(IndexRedis.parse(f"redis+cluster://127.0.0.1:{port}"))
        engine = engine_on(client)
        engine.add_work(sample(NAMES[port % 4]), title="w", source=f"s{port}")
        records = crawl(engine, f"http://x/{port}", page_of(sample(NAMES[port % 4])))
        assert len(records) == 1


def test_a_plain_client_of_one_node_gets_moved(redis_cluster: LocalCluster) -> None:
    """What the issue measured: a non-cluster client of one node; the factory avoids it."""
    node = redis_cluster.node(redis_cluster.ports[0])
    index = SimhashIndex(RedisStorage(node), "t")
    with pytest.raises(SettingsError, match=r"MOVED.*redis\+cluster://"):
        index.add(np.arange(100), np.arange(100, dtype=np.uint64) << np.uint64(40))


def test_slot_migration_is_followed_through_ask_and_moved(
    cluster_client: RedisCluster, redis_cluster: LocalCluster
) -> None:
    """A slot moved while the index is in use (as ``redis-cli --cluster reshard`` does).

    While its keys sit on the new master and the slot is still MIGRATING, the old master
    answers ASK: a read of existing keys follows it; a multi-key command that names an
    absent key gets TRYAGAIN from the new master until the move ends (Redis Cluster's rule),
    which is a retryable IndexUnavailable, never a wrong answer. Once the move ends, the
    client's stale slot table meets MOVED and follows it, for reads and scripts alike.
    """
    rng = np.random.default_rng(3)
    values = rng.integers(0, 2**64, 4000, dtype=np.uint64)
    ids = np.arange(4000, dtype=np.uint32)
    index = SimhashIndex(RedisStorage(cluster_client), "t", SimhashIndexParams(split_floor=16))
    index.add(ids[:3000], values[:3000])
    queries = values[::40] ^ np.uint64(0b1011)
    expected = index.query_many(queries)
    keys = simhash_keys("t")
    slot = key_slot(keys.params(5).encode())  # tag group 5's slot
    source = redis_cluster.owner(slot)
    target = next(p for p in redis_cluster.ports if p != source)
    bucket = next(iter(redis_cluster.node(source).scan_iter(keys.tagged(5) + ":b:*")))
    payload = redis_cluster.node(source).get(bucket)
    assert redis_cluster.migrate_slot(slot, target, finish=False) > 0
    with pytest.raises(redis.exceptions.AskError):  # the old master sends readers on
        redis_cluster.node(source).get(bucket)
    got, _ = mget(cluster_client, [bucket, keys.params(5)], "testing")
    assert got == [payload, index._params_json.encode()]  # ASK followed to the new master
    with pytest.raises(IndexUnavailable, match=r"TRYAGAIN|TTL exhausted"):
        index.query_many(queries)  # group 5's MGET names absent buckets: TRYAGAIN
    redis_cluster.migrate_slot(slot, target)  # finished: the old master answers MOVED
    assert redis_cluster.owner(slot) == target
    assert index.query_many(queries) == expected
    index.add(ids[3000:], values[3000:])  # scripts of every group, group 5's on its new master
    assert index.stats()["entries"] == 4000
    fresh_client = connect(IndexRedis.parse(redis_cluster.url))
    fresh = SimhashIndex(RedisStorage(fresh_client), "t", index.params)
    assert fresh.query_many(queries) == index.query_many(queries)
    for q, got_q in zip(queries[:20].tolist(), index.query_many(queries[:20]), strict=True):
        dist = np.bitwise_count(values ^ np.uint64(q))
        near = [(int(i), int(d)) for i, d in zip(ids, dist, strict=True) if d <= 3]
        assert got_q == sorted(near, key=_by_d)
    redis_cluster.migrate_slot(slot, source)  # leave the session's cluster as it was


def _by_d(pair: tuple[int, int]) -> tuple[int, int]:
    return pair[1], pair[0]


def test_settings_and_factory() -> None:
    s = Settings.from_env(
        {
            "FPTRACK_REDIS_URL": "redis://broker:6379/0",
            "FPTRACK_INDEX_REDIS_URL": "redis+cluster://10.0.0.1:7000,10.0.0.2:7001",
        }
    )
    assert s.index_redis.nodes == (("10.0.0.1", 7000), ("10.0.0.2", 7001))
    assert s.celery_broker == "redis://broker:6379/0"
    assert Settings.from_env({}).index_redis == IndexRedis("redis://127.0.0.1:6379/0")
    for env in (
        {"FPTRACK_INDEX_REDIS_URL": "redis+cluster://h:port"},
        {"FPTRACK_INDEX_REDIS_URL": "http://h"},
        {"FPTRACK_REDIS_URL": "redis+cluster://h:7000"},  # Celery cannot use a cluster
        {"FPTRACK_REDIS_PREFIX": "a{b}"},  # braces would be a hash tag
    ):
        with pytest.raises(SettingsError):
            Settings.from_env(env)
    assert not is_cluster(connect(IndexRedis.parse("redis://127.0.0.1:1/0")))
    with pytest.raises(IndexUnavailable, match="Redis Cluster unavailable"):
        connect(IndexRedis.parse("redis+cluster://127.0.0.1:1"))


def test_indexes_of_the_untagged_layout_are_reported(
    redis_client: redis.Redis, caplog, engine_on: Callable[..., Engine]
) -> None:
    redis_client.set(f"{PREFIX}:works:sh:params", '{"layout":1}')  # as layout 1 left it
    engine = engine_on(redis_client)
    assert any("older key layout" in p for p in engine.problems)
    assert "fptrack index rebuild" in caplog.text
    drop_indexes(engine)  # what a rebuild starts with: the old keys go too
    assert not engine_on(redis_client).problems
