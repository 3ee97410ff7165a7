"""Errors the backend raises, split by what the caller should do about them.

``Retryable`` errors come from an outage (Redis or MongoDB unreachable, timed out): the
operation left nothing half-written and can simply be run again; Celery tasks retry them
with backoff. Everything else is a problem with the input or the configuration and is
reported, never retried.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis


class MatcherError(Exception):
    """Base class of every error raised by :mod:`matcher`."""


class Retryable(MatcherError):
    """A backing service is unavailable; nothing was half-written, so retrying is safe."""


class IndexUnavailable(Retryable):
    """The Redis server holding the indexes did not answer."""


class StoreUnavailable(Retryable):
    """The MongoDB server did not answer."""


class IndexLost(IndexUnavailable):
    """The Redis indexes were lost while a page was being matched (their epoch is gone):
    nothing was written; the page is matched again once they are rebuilt."""


class UnusableText(MatcherError, ValueError):
    """A work or page has no text left to fingerprint after decoding and normalisation."""


class SettingsError(MatcherError, ValueError):
    """A setting (environment variable or argument) has an invalid value."""


OUTAGES = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.SlotNotCoveredError,
    redis.exceptions.TryAgainError,
)
"""What redis-py raises when a server or a cluster's slots cannot be reached, once its own
retries are spent (a cluster client follows MOVED and ASK and waits out failovers itself;
``ClusterError`` covers ``ClusterDownError`` and an exhausted redirection budget)."""


@contextmanager
def redis_errors(what: str) -> Iterator[None]:
    """Turn redis-py connection, timeout and cluster outage errors into
    :class:`IndexUnavailable`.

    A MOVED reply reaching the caller comes from a plain client of one cluster node: a
    :class:`SettingsError` naming the cluster URL to use instead.
    """
    try:
        yield
    except OUTAGES as exc:
        raise IndexUnavailable(f"Redis unavailable while {what}: {exc}") from exc
    except redis.exceptions.RedisClusterException as exc:
        # "Redis Cluster cannot be connected": no node answers while the slot table is
        # reloaded; other RedisClusterExceptions (cross-slot commands) are bugs, raised
        if not isinstance(exc.__cause__, OUTAGES):
            raise
        raise IndexUnavailable(f"Redis Cluster unavailable while {what}: {exc}") from exc
    except redis.exceptions.MovedError as exc:
        raise SettingsError(
            f"the index Redis is a Redis Cluster node (MOVED {exc}); set FPTRACK_INDEX_REDIS_URL"
            " to redis+cluster://host:port[,host:port...]"
        ) from exc
