"""Every Redis client of fptrack, built from a parsed :class:`~matcher.settings.RedisTarget`.

One place decides how fptrack talks to Redis, whatever the server:

- :func:`connect`: the client of a target: ``redis.Redis`` of one server (a redis-py URL),
  ``redis.cluster.RedisCluster`` with every startup node (``redis+cluster://``), or the
  client of the primary that Redis Sentinel watches (``redis+sentinel://``:
  ``redis.sentinel.Sentinel(...).master_for(service)``, which asks the sentinels where the
  primary is, and asks again after a failover). :func:`connect_server` is the same for the
  Redis of ``FPTRACK_REDIS_URL`` (the crawl frontiers, leases and locks), which cannot be a
  cluster.
- :func:`celery_broker` and :func:`redbeat`: the same target in the words of kombu
  (``sentinel://host:port;sentinel://...`` with the ``master_name`` transport option) and
  of celery-redbeat (``redis-sentinel://`` with ``sentinels`` and ``service_name``).

Every client gets the same options (:class:`Patience`): a connect timeout, a socket timeout
(:data:`SOCKET_TIMEOUT_S`), a health check of connections idle for
:data:`HEALTH_CHECK_INTERVAL_S`, and redis-py's ``Retry`` of connection errors and timeouts
with exponential backoff (:data:`BACKOFF_BASE_S` doubling up to :data:`BACKOFF_CAP_S`, with
jitter), so a client rides out a restart or a failover: :data:`SERVICE` (workers, beat,
crawlers, the admin web) waits at least 13 s, :data:`COMMAND` (a CLI command) about a second,
to name the server that is down at once. The sentinels themselves are asked once each, with
the same timeouts: one that is down is skipped, not waited for.

>>> from matcher.settings import RedisTarget
>>> type(connect(RedisTarget.parse("redis://127.0.0.1:1/0"))).__name__  # connects lazily
'Redis'
>>> celery_broker(RedisTarget.parse("redis+sentinel://:pw@10.0.0.1,10.0.0.2:26380/fp/1"))[0]
'sentinel://:pw@10.0.0.1:26379/1;sentinel://:pw@10.0.0.2:26380/1'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias
from urllib.parse import quote

import redis
from redis.backoff import EqualJitterBackoff, NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisClusterException
from redis.retry import Retry
from redis.sentinel import Sentinel

from matcher.errors import IndexUnavailable, SettingsError, redis_errors
from matcher.settings import RedisTarget

IndexClient: TypeAlias = redis.Redis | RedisCluster

SOCKET_TIMEOUT_S = 10.0
"""Seconds a command may wait for its reply (no fptrack command blocks on the server)."""
HEALTH_CHECK_INTERVAL_S = 15
"""A connection idle this long is checked (PING) before it is used again."""
BACKOFF_BASE_S = 0.1
BACKOFF_CAP_S = 3.0


@dataclass(frozen=True)
class Patience:
    """How long a client waits for Redis: per connection attempt, and how many times it
    retries a command that met a connection error or a timeout (backing off in between)."""

    connect_timeout: float
    retries: int

    def retry(self) -> Retry:
        return Retry(EqualJitterBackoff(cap=BACKOFF_CAP_S, base=BACKOFF_BASE_S), self.retries)


SERVICE = Patience(connect_timeout=5.0, retries=12)
"""Long-running processes: 12 retries back off 13.5-27 s in all, enough for a Redis restart
or a Sentinel failover (down-after-milliseconds of 5 s, then the election)."""
COMMAND = Patience(connect_timeout=1.0, retries=1)
"""A CLI command: an outage is reported in about a second (:mod:`admin.context`)."""


def client_options(patience: Patience = SERVICE) -> dict[str, Any]:
    """The keyword arguments every fptrack client of a Redis server gets."""
    return {
        "socket_connect_timeout": patience.connect_timeout,
        "socket_timeout": SOCKET_TIMEOUT_S,
        "health_check_interval": HEALTH_CHECK_INTERVAL_S,
        "retry": patience.retry(),
    }


def sentinel_options(patience: Patience = SERVICE) -> dict[str, Any]:
    """The keyword arguments of a client of one sentinel: asked once, the next one tried."""
    return {
        "socket_connect_timeout": patience.connect_timeout,
        "socket_timeout": SOCKET_TIMEOUT_S,
        "retry": Retry(NoBackoff(), 0),
    }


def connect(target: RedisTarget, patience: Patience = SERVICE) -> IndexClient:
    """The client of ``target``: a server's or the Sentinel-watched primary's (connecting on
    first use), or a cluster client with all its startup nodes.

    A cluster client asks its startup nodes for the slot table at once: none answering is
    :class:`~matcher.errors.IndexUnavailable`, an outage to retry like any other.
    """
    if target.cluster:
        return _cluster(target, patience)
    return connect_server(target, patience)


def connect_url(url: str, patience: Patience = SERVICE) -> IndexClient:
    """:func:`connect` of a URL (:meth:`RedisTarget.parse`): the benchmarks' clients."""
    return connect(RedisTarget.parse(url), patience)


def connect_server(target: RedisTarget, patience: Patience = SERVICE) -> redis.Redis:
    """The client of one server or of the primary Sentinel watches (never a cluster)."""
    options = client_options(patience)
    if target.sentinel:
        sentinel = Sentinel(
            list(target.nodes), sentinel_kwargs=sentinel_options(patience), **options
        )
        return sentinel.master_for(
            target.service,
            db=target.database,
            username=target.username,
            password=target.password,
        )
    if target.cluster:
        raise SettingsError(f"a Redis Cluster cannot be used here: {target.url}")
    return redis.Redis.from_url(target.url, **options)


def _cluster(target: RedisTarget, patience: Patience) -> RedisCluster:
    options = client_options(patience)
    nodes = [ClusterNode(host, port) for host, port in target.nodes]
    try:
        with redis_errors("connecting to the Redis Cluster"):
            return RedisCluster(startup_nodes=nodes, retry=options.pop("retry"), **options)
    except RedisClusterException as exc:  # no startup node reachable
        raise IndexUnavailable(f"Redis Cluster unavailable at {target.url}: {exc}") from exc


def celery_broker(target: RedisTarget, patience: Patience = SERVICE) -> tuple[str, dict[str, Any]]:
    """Celery's ``broker_url`` for ``target`` and the ``broker_transport_options`` it needs
    (kombu's Redis transport; for Sentinel, one ``sentinel://`` URL per sentinel, the
    password and database in each, and ``master_name``)."""
    options: dict[str, Any] = {
        "socket_connect_timeout": patience.connect_timeout,
        "socket_timeout": SOCKET_TIMEOUT_S,
    }
    if not target.sentinel:
        return target.url, options
    auth = ""
    if target.username or target.password:
        auth = f"{quote(target.username or '', safe='')}:{quote(target.password or '', safe='')}@"
    url = ";".join(f"sentinel://{auth}{_address(h, p)}/{target.database}" for h, p in target.nodes)
    options |= {"master_name": target.service, "sentinel_kwargs": sentinel_options(patience)}
    return url, options


def redbeat(target: RedisTarget, patience: Patience = SERVICE) -> tuple[str, dict[str, Any]]:
    """celery-redbeat's ``redbeat_redis_url`` and ``redbeat_redis_options`` for ``target``
    (for Sentinel: ``redis-sentinel://`` and the first sentinel, which beat's banner shows;
    redbeat connects through the ``sentinels`` and ``service_name`` options)."""
    if not target.sentinel:
        return target.url, client_options(patience)
    options: dict[str, Any] = {
        "sentinels": list(target.nodes),
        "service_name": target.service,
        "db": target.database,
        "password": target.password,
        "socket_timeout": SOCKET_TIMEOUT_S,
        "sentinel_kwargs": sentinel_options(patience),
    }
    if target.username:
        options["username"] = target.username
    return f"redis-sentinel://{_address(*target.nodes[0])}/{target.database}", options


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
