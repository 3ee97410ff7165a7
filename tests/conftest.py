"""Fixtures shared by every suite: the real Redis server, one flushed database per test,
and a real 3-master Redis Cluster for the index suites.

``FPTRACK_TEST_REDIS_URL`` picks the database (default ``redis://127.0.0.1:6379/15``); it is
flushed before and after each test that asks for it, so never point it at data you keep.
The Celery broker of the tests is database 14 of the same server
(``FPTRACK_TEST_BROKER_URL``), set before :mod:`matcher.celery_app` is first imported.

The cluster (:class:`bench.local_cluster.LocalCluster`: three ``redis-server
--cluster-enabled yes`` on free ports of 127.0.0.1, joined by ``redis-cli --cluster
create``) starts the first time a test asks for it and stops at the end of the session.
``index_client`` is the index client a test runs on: the server, or the cluster flushed
before and after the test; a module sets ``INDEX_BACKENDS = ("server", "cluster")`` to run
its tests on both (default: the server only).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from bench.local_cluster import LocalCluster
from matcher.redis_io import IndexClient, connect, scan
from matcher.settings import IndexRedis

TEST_REDIS_URL = os.environ.get("FPTRACK_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
TEST_BROKER_URL = os.environ.get("FPTRACK_TEST_BROKER_URL", "redis://127.0.0.1:6379/14")
os.environ["FPTRACK_BROKER_URL"] = TEST_BROKER_URL
os.environ["FPTRACK_REDIS_URL"] = TEST_REDIS_URL
os.environ["FPTRACK_REDIS_PREFIX"] = "fptrack-test"
os.environ.pop("FPTRACK_MONGO_URI", None)


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    """A client of the real Redis server on a database flushed before and after the test."""
    client = redis.Redis.from_url(TEST_REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError as exc:  # pragma: no cover - CI always starts one
        pytest.fail(f"the tests need a Redis server at {TEST_REDIS_URL}: {exc}")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def dead_redis() -> redis.Redis:
    """A client of a port where nothing listens: every command fails to connect."""
    return redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[LocalCluster]:
    """A 3-master Redis Cluster of this test session."""
    with LocalCluster(masters=3) as cluster:
        yield cluster


@pytest.fixture
def cluster_client(redis_cluster: LocalCluster) -> Iterator[RedisCluster]:
    """A cluster client (every master as a startup node), every master flushed around it."""
    client = connect(IndexRedis.parse(redis_cluster.url))
    assert isinstance(client, RedisCluster)
    client.flushdb(target_nodes=RedisCluster.PRIMARIES)
    yield client
    client.flushdb(target_nodes=RedisCluster.PRIMARIES)
    client.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "index_backend" in metafunc.fixturenames:
        backends = getattr(metafunc.module, "INDEX_BACKENDS", ("server",))
        metafunc.parametrize("index_backend", backends)


@pytest.fixture
def index_client(index_backend: str, request: pytest.FixtureRequest) -> IndexClient:
    """The index client of the test's backend: ``redis_client`` or ``cluster_client``."""
    name = {"server": "redis_client", "cluster": "cluster_client"}[index_backend]
    return request.getfixturevalue(name)


@pytest.fixture
def dead_index_client(index_backend: str, dead_redis: redis.Redis) -> IndexClient:
    """An index client whose server (or whole cluster) is gone: every command fails."""
    if index_backend == "server":
        return dead_redis
    with LocalCluster(masters=1) as cluster:  # a cluster of its own, stopped on leaving
        client = connect(IndexRedis.parse(cluster.url))
    return client


def another_client(client: IndexClient) -> IndexClient:
    """A second, independent client of the same server or cluster."""
    if isinstance(client, RedisCluster):
        nodes = [ClusterNode(n.host, n.port) for n in client.get_primaries()]
        return RedisCluster(startup_nodes=nodes)
    kw = client.connection_pool.connection_kwargs
    return redis.Redis(host=kw["host"], port=kw["port"], db=kw["db"])


def all_keys(client: IndexClient, pattern: str = "*") -> list[bytes]:
    """Every key matching ``pattern``, sorted (SCAN of every master of a cluster)."""
    return sorted(scan(client, pattern))
