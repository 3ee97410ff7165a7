"""Fixtures shared by every suite: the session's Redis and MongoDB servers
(:mod:`tests.servers.session`).

- Redis: ``FPTRACK_TEST_REDIS_URL=redis://HOST:PORT/N`` names a server and its databases N to
  N+3, which the tests flush; unset, the session starts its own ``redis-server`` on a free
  port. Database N holds the indexes (``redis_client``, flushed before and after each test
  that asks for it), N+1 is the Celery broker, N+2 and N+3 the pipeline benchmark's.
- MongoDB: ``FPTRACK_TEST_MONGO_URI`` names a server; unset, the session starts SecantusDB
  (``secantusd-py --storage-path :memory: --standalone``). ``mongo_db`` is a fresh database
  per test, dropped afterwards, and ``FPTRACK_MONGO_URI`` / ``FPTRACK_MONGO_DB`` name it
  for the test's subprocesses (workers, crawls, servers).

- The shard-key audit (:mod:`tests.support.command_audit`): every pymongo client of the session
  reports each write it sends; the session fails, listing them, if fptrack's code sent one
  that a sharded MongoDB 7.0 refuses (a single-document write or an upsert whose filter
  does not name the collection's full shard key).

- Redis Cluster: a real 3-master cluster (:class:`tests.servers.local_cluster.LocalCluster`: three
  ``redis-server --cluster-enabled yes`` on free ports of 127.0.0.1, joined by
  ``redis-cli --cluster create``) starts the first time a test asks for it and stops at the
  end of the session. ``index_client`` is the index client a test runs on: the server, or
  the cluster flushed before and after the test; a module sets ``INDEX_BACKENDS =
  ("server", "cluster")`` to run its tests on both (default: the server only).
- Redis Sentinel: ``redis_sentinel`` is a primary, its replica and 3 sentinels of one test
  (:class:`tests.servers.local_sentinel.LocalSentinel`, on free ports), which the test may
  fail over.
- Order: the costly tests (:data:`tests.support.costly.MAIN`, by their measured seconds) head
  the workers' shares, dealt longest first (:func:`tests.support.ordering.spread`), so that
  no long test runs alone at the end.

- The product's objects on those servers, each defined here once: ``store`` (a
  :class:`~matcher.store.Store` of ``mongo_db``, its indexes made; its families ``store.pages``,
  ``store.matches``, ... hold the queries; a module sets ``STORE_BACKENDS = ("server",
  "memory")`` to run its tests that use no ``mongo_db`` of their own on the in-memory store
  too), ``engine`` (an
  :class:`~matcher.matching.engine.Engine` on ``mongo_db`` and ``redis_client``) and ``broker`` (a
  client of the Celery broker's database, flushed before and after the test). A suite may
  override one with a narrower meaning (``tests/matcher`` runs ``engine`` on
  ``index_client``; ``tests/e2e`` makes it the engine of the process's tasks).

The ``FPTRACK_*`` variables of the product are set here, before :mod:`matcher.worker.celery_app` is
first imported (it reads them once): the product's modules are imported inside the fixtures.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pymongo
import pytest
import redis
from pymongo.database import Database
from redis.cluster import ClusterNode, RedisCluster

from matcher.index.redis_io import IndexClient, connect, scan
from matcher.settings import IndexRedis, Settings
from tests.servers import session
from tests.servers.local_cluster import LocalCluster
from tests.servers.local_sentinel import LocalSentinel
from tests.servers.session import ServerUnavailable
from tests.support import command_audit, costly
from tests.support.command_audit import pytest_sessionfinish, pytest_terminal_summary  # noqa: F401
from tests.support.ordering import spread

collect_ignore = ["servers", "sites"]
"""The fixture servers and generated sites (shared with ``bench/``) hold no tests: their
docstring examples stay out of ``--doctest-modules``, as under ``bench/`` (those of the
HTTP servers and ports run in ``tests/bench/test_fixture_servers.py``)."""

if TYPE_CHECKING:
    from matcher.matching.engine import Engine
    from matcher.store import Store

try:  # planned once per session, even if this module is imported again under another name
    SERVERS = session.SESSION = session.SESSION or session.plan(os.environ)
except ServerUnavailable as exc:  # before any test: a clear line, not a traceback
    raise pytest.UsageError(str(exc)) from None

TEST_REDIS_URL = SERVERS.redis_url(0)
TEST_BROKER_URL = SERVERS.redis_url(1)
os.environ["FPTRACK_BROKER_URL"] = TEST_BROKER_URL
os.environ["FPTRACK_REDIS_URL"] = TEST_REDIS_URL
os.environ["FPTRACK_REDIS_PREFIX"] = "fptrack-test"
os.environ["FPTRACK_MONGO_URI"] = SERVERS.mongo_uri
os.environ.pop("FPTRACK_MONGO_DB", None)
command_audit.install()  # before any pymongo client is made


def pytest_configure(config: pytest.Config) -> None:
    try:
        SERVERS.start()
    except ServerUnavailable as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(trylast=True)  # after the markers' deselection: the tests that will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The costly tests (:data:`tests.support.costly.MAIN`) head the workers' shares."""
    spread(config, items, costly.MAIN)


def pytest_unconfigure(config: pytest.Config) -> None:
    SERVERS.stop()


def pytest_report_header(config: pytest.Config) -> list[str]:
    started = ", ".join(s.name for s in SERVERS.started) or "none (both given)"
    return [
        f"fptrack test servers: Redis {TEST_REDIS_URL} (and the next 3 databases), "
        f"MongoDB {SERVERS.mongo_uri}; started for this session: {started}"
    ]


@pytest.fixture(autouse=True)
def celery_current_app() -> Iterator[None]:
    """Celery's current app is given back after each test: an app a test made (each one
    becomes current), on servers the test stopped, would otherwise carry the shared tasks'
    ``delay`` of later tests."""
    from celery import current_app

    previous = current_app._get_current_object()
    yield
    previous.set_current()


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    """A client of the test Redis server on a database flushed before and after the test."""
    client = redis.Redis.from_url(TEST_REDIS_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def dead_redis() -> redis.Redis:
    """A client of a port where nothing listens: every command fails to connect."""
    return redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)


@pytest.fixture(scope="session")
def mongo_client() -> Iterator[pymongo.MongoClient]:
    """A pymongo client of the test MongoDB server (as the product makes them: tz-aware)."""
    client: pymongo.MongoClient = pymongo.MongoClient(
        SERVERS.mongo_uri, tz_aware=True, serverSelectionTimeoutMS=5000
    )
    yield client
    client.close()


@pytest.fixture
def mongo_db(
    mongo_client: pymongo.MongoClient, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Database]:
    """A fresh database of the test server, dropped after the test; the environment names it
    (``FPTRACK_MONGO_URI``, ``FPTRACK_MONGO_DB``) for the test's subprocesses."""
    name = f"fptrack_test_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("FPTRACK_MONGO_URI", SERVERS.mongo_uri)
    monkeypatch.setenv("FPTRACK_MONGO_DB", name)
    yield mongo_client[name]
    mongo_client.drop_database(name)


@pytest.fixture
def store(request: pytest.FixtureRequest) -> Store:
    """A store on the test's fresh database (``mongo_db``), its indexes made; or, in a module
    that sets ``STORE_BACKENDS = ("server", "memory")``, also on a new in-memory database
    (the backend of ``memory://``, the embedded scan's: :mod:`matcher.store.memory`)."""
    from matcher.store import MEMORY_URI, Store

    if getattr(request, "param", "server") == "memory":
        made = Store.connect(MEMORY_URI, "fptrack_test")
    else:
        made = Store(request.getfixturevalue("mongo_db"))
    made.ensure_indexes()
    return made


@pytest.fixture
def engine(redis_client: redis.Redis, mongo_db: Database) -> Engine:
    """An engine on the test's fresh database and the test Redis database (prefix
    ``fptrack-test``)."""
    from matcher.matching.engine import Engine

    settings = Settings.from_env(redis_prefix="fptrack-test", mongo_db=mongo_db.name)
    return Engine.open(settings, mongo_client=mongo_db.client, redis_client=redis_client)


@pytest.fixture
def broker() -> Iterator[redis.Redis]:
    """The Celery broker's Redis database, flushed before and after (no message leaks
    between tests)."""
    client = redis.Redis.from_url(TEST_BROKER_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


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


@pytest.fixture
def redis_sentinel() -> Iterator[LocalSentinel]:
    """A primary, its replica and 3 sentinels watching them, for this test alone."""
    with LocalSentinel() as group:
        yield group


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "index_backend" in metafunc.fixturenames:
        backends = getattr(metafunc.module, "INDEX_BACKENDS", ("server",))
        metafunc.parametrize("index_backend", backends)
    stores = getattr(metafunc.module, "STORE_BACKENDS", None)
    if stores and "store" in metafunc.fixturenames and "mongo_db" not in metafunc.fixturenames:
        metafunc.parametrize("store", stores, indirect=True)


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
