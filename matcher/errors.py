"""Errors the backend raises, split by what the caller should do about them.

``Retryable`` errors come from an outage (Redis or MongoDB unreachable, timed out): the
operation left nothing half-written and can simply be run again; Celery tasks retry them
with backoff. Everything else is a problem with the input or the configuration and is
reported, never retried.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import pymongo.errors
import redis
from kombu.exceptions import OperationalError


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
    redis.exceptions.ReadOnlyError,
)
"""What redis-py raises when a server or a cluster's slots cannot be reached, once its own
retries are spent (a cluster client follows MOVED and ASK and waits out failovers itself;
``ClusterError`` covers ``ClusterDownError`` and an exhausted redirection budget;
``ReadOnlyError``: a write reached a primary demoted to a replica by a failover;
``BusyLoadingError``, a server still loading its data, is a ``ConnectionError``)."""

PERMANENT_REDIS = (redis.exceptions.AuthenticationError, redis.exceptions.AuthorizationError)
"""Connection errors that waiting does not cure: wrong credentials or rights."""

TRANSIENT_MONGO_CODES = frozenset(
    {6, 7, 89, 91, 133, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150, 13388}
)
"""MongoDB server errors that an election, a restart or a chunk migration causes and that
go away by themselves: HostUnreachable, HostNotFound, NetworkTimeout, ShutdownInProgress,
FailedToSatisfyReadPreference, PrimarySteppedDown, ExceededTimeLimit, SocketException,
NotWritablePrimary, InterruptedAtShutdown, InterruptedDueToReplStateChange,
NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary, StaleShardVersion, StaleEpoch, StaleConfig
(the codes pymongo's own retryable-write logic knows)."""

TRANSIENT_TYPES = (
    Retryable,
    redis.RedisError,
    redis.exceptions.RedisClusterException,
    pymongo.errors.PyMongoError,
    OperationalError,
)
"""Every class :func:`transient` may say yes to (what a Celery task hands to it)."""


def transient(exc: BaseException) -> bool:
    """True when ``exc`` comes from an outage that passes by itself (retry with backoff),
    False when it is a problem to report once (bad input, configuration, a bug).

    >>> transient(redis.ConnectionError("Connection refused"))
    True
    >>> transient(redis.exceptions.AuthenticationError("invalid password"))
    False
    >>> transient(pymongo.errors.OperationFailure("not primary", code=10107))
    True
    >>> transient(pymongo.errors.DuplicateKeyError("E11000", code=11000))
    False
    """
    if isinstance(exc, Retryable):
        return True
    if isinstance(exc, PERMANENT_REDIS):
        return False
    if isinstance(exc, OUTAGES):
        return True
    if isinstance(exc, redis.exceptions.RedisClusterException):
        return isinstance(exc.__cause__, OUTAGES) or "cannot be connected" in str(exc)
    if isinstance(exc, pymongo.errors.ConnectionFailure):  # AutoReconnect, NotPrimaryError...
        return True
    if isinstance(exc, pymongo.errors.PyMongoError):
        if exc.has_error_label("RetryableWriteError") or exc.has_error_label(
            "TransientTransactionError"
        ):
            return True
        code = getattr(exc, "code", None)
        return code in TRANSIENT_MONGO_CODES
    return isinstance(exc, OperationalError)  # kombu: the broker did not answer


_GUARDS: ContextVar[int] = ContextVar("fptrack_redis_guards", default=0)


def guarded() -> bool:
    """True inside :func:`redis_errors` (the Redis call-site audit of the tests reads it)."""
    return _GUARDS.get() > 0


@contextmanager
def redis_errors(what: str) -> Iterator[None]:
    """Turn redis-py connection, timeout and cluster outage errors into
    :class:`IndexUnavailable`.

    A MOVED reply reaching the caller comes from a plain client of one cluster node: a
    :class:`SettingsError` naming the cluster URL to use instead.
    """
    token = _GUARDS.set(_GUARDS.get() + 1)
    try:
        yield
    except PERMANENT_REDIS as exc:
        raise SettingsError(f"Redis refused this client while {what}: {exc}") from exc
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
    finally:
        _GUARDS.reset(token)
