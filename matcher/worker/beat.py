"""beat that outlives Redis, broker and MongoDB restarts: redbeat's scheduler, made to wait.

redbeat's :class:`~redbeat.RedBeatScheduler` (entries in Redis under ``<prefix>:redbeat:``,
one lock so that exactly one beat sends) lets any Redis error out of its tick, and Celery's
beat then exits with a traceback: a 2-second Redis restart stopped the scheduling. Its
subclass :class:`ResilientScheduler` waits instead:

- A server that does not answer (Redis, the Celery broker, or MongoDB while the entries are
  saved again) is named in one line, ``beat: waiting for Redis at URL (cause)``, at the first
  tick that meets it; beat ticks again after a backoff (:data:`BACKOFF_S`, doubling up to
  :data:`BACKOFF_MAX_S`) and says ``beat: Redis at URL answers again`` when it does. An entry
  that fell due meanwhile is sent at the first tick after.
- A due task is sent before its entry is advanced (Celery advances first, so a send that
  failed lost that run); an outage between the two sends it again at the next tick, which
  every fptrack task tolerates (they are idempotent).
- redbeat's lock is taken without blocking, at every tick: a beat that lost it (Redis
  restarted without it, or it expired while Redis was away) takes it again or, if another
  beat took it meanwhile, waits as a standby and sends nothing.
- Redis that came back without the entries (:meth:`Schedules.lost`) gets them again from the
  store (:meth:`Schedules.save_all`: the fixed jobs and each site's), each counted as last run
  then, so each runs at its next time.

``fptrack beat`` runs it (``-S matcher.worker.beat.ResilientScheduler``); settings come from the
app's :class:`~matcher.worker.runtime.Runtime`.
"""

from __future__ import annotations

import time
from typing import Any

import pymongo.errors
import redis
from celery.beat import Scheduler, SchedulingError
from celery.utils.log import get_logger
from kombu.exceptions import OperationalError
from redbeat import RedBeatScheduler
from redbeat.schedulers import LUA_EXTEND_TO_SCRIPT, get_redis
from redis.exceptions import LockNotOwnedError

from matcher.errors import OUTAGES, IndexUnavailable, MatcherError, StoreUnavailable
from matcher.settings import Settings, redact_url
from matcher.store import Store
from matcher.worker.schedules import Schedules

logger = get_logger("celery.beat")

BACKOFF_S = 1.0
"""Seconds before beat ticks again after a server did not answer, doubled at each try."""
BACKOFF_MAX_S = 10.0

REDIS = "Redis"
BROKER = "the Celery broker"
MONGODB = "MongoDB"

REDIS_OUTAGES = (*OUTAGES, IndexUnavailable)
BROKER_OUTAGES = (OperationalError, *OUTAGES, OSError)
MONGO_OUTAGES = (StoreUnavailable, pymongo.errors.ConnectionFailure)


class ServerDown(Exception):
    """A server beat needs did not answer: which one, where, and why."""

    def __init__(self, server: str, url: str, cause: BaseException) -> None:
        super().__init__(f"{server} at {url}: {cause}")
        self.server = server
        self.url = url
        self.cause = cause


def _origin(exc: BaseException) -> BaseException:
    """The error Celery wrapped in ``exc`` (a ``SchedulingError`` keeps it as its context)."""
    return exc.__cause__ or exc.__context__ or exc


def _cause(exc: BaseException) -> str:
    """The first line of an error, without pymongo's timeouts and topology."""
    text = str(exc).strip() or type(exc).__name__
    for noise in (" (configured timeouts", ", Timeout:"):
        text = text.partition(noise)[0]
    return text.splitlines()[0][:160]


class ResilientScheduler(RedBeatScheduler):
    """redbeat's scheduler that waits out Redis, broker and MongoDB outages (module docs)."""

    _setup_pending = False

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        # redbeat takes its lock in a ``beat_init`` handler, blocking, and renews it in
        # ``tick`` only when ``lock_key`` is set: this class takes and renews it itself.
        self.lock_name: str = self.lock_key
        self.lock_key = None
        self.lock: Any = None
        self.settings: Settings = app.fptrack.settings
        self.schedules = Schedules(app)
        self._store: Store | None = None
        self._standby = False
        self._outage: tuple[str, str] | None = None
        self._outage_since = 0.0
        self._backoff = BACKOFF_S

    # the tick ---------------------------------------------------------------------------

    def setup_schedule(self) -> None:
        """redbeat's static entries (Celery's own); retried at the first tick when Redis is
        down now."""
        try:
            super().setup_schedule()
        except REDIS_OUTAGES:
            self._setup_pending = True

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """Send the due tasks; seconds until the next tick. Never raises for an outage."""
        try:
            interval = self._tick(*args, **kwargs)
        except ServerDown as down:
            return self._waiting(down)
        except REDIS_OUTAGES as exc:
            return self._waiting(ServerDown(REDIS, self._redis_url, exc))
        except MONGO_OUTAGES as exc:
            return self._waiting(ServerDown(MONGODB, self.settings.mongo_uri, exc))
        except OperationalError as exc:  # kombu's, connecting to the broker
            return self._waiting(ServerDown(BROKER, self.settings.celery_broker, exc))
        self._answering()
        return interval

    def _tick(self, *args: Any, **kwargs: Any) -> float:
        if self._setup_pending:
            super().setup_schedule()
            self._setup_pending = False
        if not self._hold_lock():
            return self.max_interval
        if self.schedules.lost():
            self._save_entries()
        return super().tick(*args, **kwargs)

    def maybe_due(self, entry: Any, **kwargs: Any) -> float:
        """Send ``entry``'s task if due, then advance the entry (see the module docs)."""
        is_due, next_time_to_run = entry.is_due()
        if not is_due:
            return next_time_to_run
        logger.info("Scheduler: Sending due task %s (%s)", entry.name, entry.task)
        try:
            self.apply_async(entry, advance=False, **kwargs)
        except SchedulingError as exc:
            cause = _origin(exc)
            if isinstance(cause, BROKER_OUTAGES):
                raise ServerDown(BROKER, self.settings.celery_broker, cause) from exc
            logger.error("beat: %s", _cause(exc))  # a bad entry: this run is skipped
        self.reserve(entry)
        return next_time_to_run

    def _ensure_connected(self) -> Any:
        """The broker connection, tried once: an outage is waited out by :meth:`tick`, which
        keeps the lock renewed meanwhile, rather than inside kombu's retry loop."""
        return self.connection.ensure_connection(max_retries=0)

    # the lock ---------------------------------------------------------------------------

    def _hold_lock(self) -> bool:
        """Renew redbeat's lock, or take it; False while another beat holds it."""
        if self.lock is not None:
            try:
                self.lock.extend(int(self.lock_timeout))  # redbeat's script: TTL set anew
                return True
            except LockNotOwnedError:
                logger.warning(
                    "beat: redbeat's lock %s was lost (Redis restarted without it, or it "
                    "expired while Redis was away); taking it again",
                    self.lock_name,
                )
                self.lock = None
        client = get_redis(self.app)
        lock = client.lock(self.lock_name, timeout=self.lock_timeout, sleep=self.max_interval)
        lock.lua_extend = client.register_script(LUA_EXTEND_TO_SCRIPT)
        if not lock.acquire(blocking=False):
            if not self._standby:
                logger.info(
                    "beat: another beat holds redbeat's lock %s; this one takes over if it stops",
                    self.lock_name,
                )
                self._standby = True
            return False
        logger.info("beat: Acquired lock")
        self._standby = False
        self.lock = lock
        return True

    # entries lost with Redis's data --------------------------------------------------------

    def _save_entries(self) -> None:
        """Save every fptrack entry again from the store, and Celery's static ones."""
        if self._store is None:
            self._store = Store.open(self.settings)
        try:
            sites = self._store.sites.list_sites()
            crawls = self.schedules.save_all(self.settings, sites)
        except (StoreUnavailable, IndexUnavailable):
            raise
        except MatcherError as exc:  # a stored site that no longer reads: say so, go on
            logger.error("beat: the schedules could not be saved again: %s", _cause(exc))
            return
        super().setup_schedule()
        logger.warning(
            "beat: the schedules were gone from Redis; saved again from the store (the daily "
            "jobs and %d site crawl(s))",
            crawls,
        )

    # reporting ------------------------------------------------------------------------

    @property
    def _redis_url(self) -> str:
        return self.settings.redis_url  # redbeat's Redis, as the operator wrote it

    def _waiting(self, down: ServerDown) -> float:
        """Say once that ``down``'s server does not answer; the seconds to wait."""
        where = (down.server, down.url)
        if self._outage != where:
            logger.warning(
                "beat: waiting for %s at %s (%s)",
                down.server,
                redact_url(down.url),
                _cause(down.cause),
            )
            if self._outage is None:
                self._outage_since = time.monotonic()
            self._outage = where
            self._backoff = BACKOFF_S
        else:
            self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)
        return self._backoff

    def _answering(self) -> None:
        if self._outage is None:
            return
        server, url = self._outage
        waited = time.monotonic() - self._outage_since
        logger.warning(
            "beat: %s at %s answers again (after %.0f s)", server, redact_url(url), waited
        )
        self._outage = None
        self._backoff = BACKOFF_S

    def close(self) -> None:
        """Release the lock if this beat still holds it (else it expires by itself)."""
        lock, self.lock = self.lock, None
        if lock is not None:
            try:
                if lock.owned():
                    lock.release()
                    logger.info("beat: Releasing lock")
            except redis.RedisError:
                pass
        if self._store is not None:
            self._store.close()
        Scheduler.close(self)

    @property
    def info(self) -> str:
        return (
            f"       . redis -> {redact_url(self._redis_url)}\n"
            f"       . lock -> `{self.lock_name}` ({self.lock_timeout}s)"
        )
