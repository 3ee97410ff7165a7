"""Errors the backend raises, split by what the caller should do about them.

``Retryable`` errors come from an outage (Redis or MongoDB unreachable, timed out, or a
MongoDB that answers with internal errors, its disk full): the operation left nothing
half-written and can simply be run again; Celery tasks retry them with backoff. Everything
else is a problem with the input or the configuration and is reported, never retried.

Importing this module loads no driver: the tuples of redis-py, pymongo and kombu classes
(:data:`OUTAGES`, :data:`PERMANENT_REDIS`, :data:`TRANSIENT_TYPES`) are built when first
asked for, and :func:`redis_errors` names redis-py's classes only once an error is raised
(``fptrack --help`` and the command-line parser need :class:`SettingsError` alone).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import Any

ONE_LINE_CHARS = 300
"""The most a :class:`OneLineError`'s detail keeps."""


class OneLineError(Exception):
    """A failure told in one line: ``detail``, its whitespace folded, at most
    :data:`ONE_LINE_CHARS` characters (a remote answer may be long and hostile)."""

    def __init__(self, detail: str) -> None:
        detail = " ".join(detail.split())[:ONE_LINE_CHARS]
        super().__init__(detail)
        self.detail = detail


class MatcherError(Exception):
    """Base class of every error raised by :mod:`matcher`."""


class Retryable(MatcherError):
    """A backing service is unavailable; nothing was half-written, so retrying is safe."""


class IndexUnavailable(Retryable):
    """The Redis server holding the indexes did not answer."""


class StoreUnavailable(Retryable):
    """The MongoDB server did not answer."""


class StoreFailing(StoreUnavailable):
    """The MongoDB server answers, but with internal errors (:func:`store_failing`): its
    storage failed, a full disk for one; an outage like any other, until it is freed and the
    server restarted."""


class IndexLost(IndexUnavailable):
    """The Redis indexes were lost while a page was being matched (their epoch is gone):
    nothing was written; the page is matched again once they are rebuilt."""


class UnusableText(MatcherError, ValueError):
    """A work or page has no text left to fingerprint after decoding and normalisation."""


class SettingsError(MatcherError, ValueError):
    """A setting (environment variable or argument) has an invalid value."""


@cache
def _outages() -> tuple[type[BaseException], ...]:
    """What redis-py raises when a server or a cluster's slots cannot be reached, once its
    own retries are spent (a cluster client follows MOVED and ASK and waits out failovers
    itself; ``ClusterError`` covers ``ClusterDownError`` and an exhausted redirection budget;
    ``ReadOnlyError``: a write reached a primary demoted to a replica by a failover;
    ``BusyLoadingError``, a server still loading its data, is a ``ConnectionError``)."""
    import redis

    return (
        redis.ConnectionError,
        redis.TimeoutError,
        redis.exceptions.ClusterError,
        redis.exceptions.SlotNotCoveredError,
        redis.exceptions.TryAgainError,
        redis.exceptions.ReadOnlyError,
    )


@cache
def _permanent_redis() -> tuple[type[BaseException], ...]:
    """Connection errors that waiting does not cure: wrong credentials or rights."""
    import redis

    return (redis.exceptions.AuthenticationError, redis.exceptions.AuthorizationError)


TRANSIENT_MONGO_CODES = frozenset(
    {6, 7, 89, 91, 133, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150, 13388}
)
"""MongoDB server errors that an election, a restart or a chunk migration causes and that
go away by themselves: HostUnreachable, HostNotFound, NetworkTimeout, ShutdownInProgress,
FailedToSatisfyReadPreference, PrimarySteppedDown, ExceededTimeLimit, SocketException,
NotWritablePrimary, InterruptedAtShutdown, InterruptedDueToReplStateChange,
NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary, StaleShardVersion, StaleEpoch, StaleConfig
(the codes pymongo's own retryable-write logic knows)."""


INTERNAL_MONGO_CODES = frozenset({1, 14031})
"""MongoDB server errors of a server that runs but cannot use its storage: InternalError
(SecantusDB, whose WiredTiger panicked, on a full disk for one, answers every command but
``ping`` and ``hello`` so until it is restarted) and OutOfDiskSpace."""

INTERNAL_ERRORS = "answers with internal errors (disk full?)"
"""What is said of a MongoDB server whose errors are :func:`store_failing`."""


def store_failing(exc: BaseException | None) -> bool:
    """True when ``exc``, or an error it was raised from, is a MongoDB server's internal
    error (:data:`INTERNAL_MONGO_CODES`; a bulk write's when each of its errors is one).

    >>> import pymongo.errors
    >>> store_failing(pymongo.errors.OperationFailure("internal server error", code=1))
    True
    >>> store_failing(pymongo.errors.OperationFailure("not primary", code=10107))
    False
    """
    import pymongo.errors

    while exc is not None:
        if isinstance(exc, StoreFailing):
            return True
        if isinstance(exc, pymongo.errors.BulkWriteError):
            codes = {e.get("code") for e in (exc.details or {}).get("writeErrors", ())}
            if codes and codes <= INTERNAL_MONGO_CODES:
                return True
        elif isinstance(exc, pymongo.errors.OperationFailure) and exc.code in INTERNAL_MONGO_CODES:
            return True
        exc = exc.__cause__
    return False


@cache
def _transient_types() -> tuple[type[BaseException], ...]:
    """Every class :func:`transient` may say yes to (what a Celery task hands to it)."""
    import pymongo.errors
    import redis
    from kombu.exceptions import OperationalError

    return (
        Retryable,
        redis.RedisError,
        redis.exceptions.RedisClusterException,
        pymongo.errors.PyMongoError,
        OperationalError,
    )


_LAZY = {
    "OUTAGES": _outages,
    "PERMANENT_REDIS": _permanent_redis,
    "TRANSIENT_TYPES": _transient_types,
}


def __getattr__(name: str) -> Any:
    """``OUTAGES``, ``PERMANENT_REDIS`` and ``TRANSIENT_TYPES``, built on first use (PEP 562)."""
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def transient(exc: BaseException) -> bool:
    """True when ``exc`` comes from an outage that passes by itself (retry with backoff),
    False when it is a problem to report once (bad input, configuration, a bug).

    >>> import pymongo.errors, redis
    >>> transient(redis.ConnectionError("Connection refused"))
    True
    >>> transient(redis.exceptions.AuthenticationError("invalid password"))
    False
    >>> transient(pymongo.errors.OperationFailure("not primary", code=10107))
    True
    >>> transient(pymongo.errors.DuplicateKeyError("E11000", code=11000))
    False
    >>> transient(pymongo.errors.OperationFailure("internal server error", code=1))
    True
    """
    import pymongo.errors
    import redis
    from kombu.exceptions import OperationalError

    if isinstance(exc, Retryable):
        return True
    if isinstance(exc, _permanent_redis()):
        return False
    if isinstance(exc, _outages()):
        return True
    if isinstance(exc, redis.exceptions.RedisClusterException):
        return isinstance(exc.__cause__, _outages()) or "cannot be connected" in str(exc)
    if isinstance(exc, pymongo.errors.ConnectionFailure):  # AutoReconnect, NotPrimaryError...
        return True
    if isinstance(exc, pymongo.errors.PyMongoError):
        if exc.has_error_label("RetryableWriteError") or exc.has_error_label(
            "TransientTransactionError"
        ):
            return True
        code = getattr(exc, "code", None)
        return code in TRANSIENT_MONGO_CODES or store_failing(exc)
    return isinstance(exc, OperationalError)  # kombu: the broker did not answer


def _redis_exceptions() -> Any:
    """redis-py's exceptions module (loaded by then: its client raised what is caught)."""
    import redis.exceptions

    return redis.exceptions


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
    except _permanent_redis() as exc:
        raise SettingsError(f"Redis refused this client while {what}: {exc}") from exc
    except _outages() as exc:
        raise IndexUnavailable(f"Redis unavailable while {what}: {exc}") from exc
    except _redis_exceptions().RedisClusterException as exc:
        # "Redis Cluster cannot be connected": no node answers while the slot table is
        # reloaded; other RedisClusterExceptions (cross-slot commands) are bugs, raised
        if not isinstance(exc.__cause__, _outages()):
            raise
        raise IndexUnavailable(f"Redis Cluster unavailable while {what}: {exc}") from exc
    except _redis_exceptions().MovedError as exc:
        raise SettingsError(
            f"the index Redis is a Redis Cluster node (MOVED {exc}); set FPTRACK_INDEX_REDIS_URL"
            " to redis+cluster://host:port[,host:port...]"
        ) from exc
    finally:
        _GUARDS.reset(token)
