"""What one Celery app's tasks use in this process (``app.fptrack``,
:mod:`matcher.worker.celery_app`):
their settings, their :class:`~matcher.matching.engine.Engine` (built on first use, in the worker
process, or handed in by tests and the embedded scan), the counter of task events that
the admin's ``/metrics`` reads, and the failure records kept while MongoDB could not take
them."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from matcher.index import redis_clients
from matcher.keys import Keys
from matcher.matching.recent import Recent
from matcher.settings import Settings
from matcher.worker.kept_failures import KeptFailures

if TYPE_CHECKING:
    from matcher.matching.engine import Engine

log = logging.getLogger(__name__)


class Runtime:
    """The settings and engine of one app's tasks in this process (the engine built on
    first use)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._engine: Engine | None = None
        self._given: Engine | None = None
        self._counter: redis_clients.IndexClient | None = None
        self._counting: ThreadPoolExecutor | None = None
        self._alerting: Recent[bool] | None = None
        self._lock = threading.Lock()

    def engine(self) -> Engine:
        with self._lock:
            if self._engine is None:
                from matcher.matching.engine import Engine  # the matching code, in workers only

                self._engine = Engine.open(self.settings)
                if self.settings.tally_seconds:
                    self._engine.store.tallies.gather(self.settings.tally_seconds)
            return self._engine

    def use(self, engine: Engine | None) -> None:
        """Make the tasks use ``engine`` (``None``: build one from the settings again)."""
        with self._lock:
            self._engine = self._given = engine
            self._alerting = None

    def alert_rules_enabled(self) -> bool:
        """Whether an alert rule is enabled, as read at most
        :data:`~matcher.matching.recent.KEEP_SECONDS` ago (:mod:`matcher.matching.recent`)."""
        from matcher.store.alerts import AlertStore

        store = self.engine().store
        with self._lock:
            if self._alerting is None:
                self._alerting = Recent(AlertStore(store).any_enabled)
            alerting = self._alerting
        return alerting.get()

    def _redis(self) -> tuple[redis_clients.IndexClient, Keys]:
        """The indexes' Redis client of the task events and kept failures, and its keys:
        a handed-in engine's, else a client that gives up at once (made on first use; the
        caller holds the lock)."""
        if self._given is not None:
            return self._given.redis, self._given.keys
        if self._counter is None:
            self._counter = redis_clients.connect(self.settings.index_redis, redis_clients.COMMAND)
        return self._counter, Keys(self.settings.redis_prefix)

    def kept_failures(self) -> KeptFailures:
        """The failure records kept in the indexes' Redis while MongoDB could not take them
        (:mod:`matcher.worker.kept_failures`), on the client :meth:`count` uses."""
        with self._lock:
            client, keys = self._redis()
        return KeptFailures(client, keys.kept_failures)

    def count(self, event: str, task: str) -> Future[None]:
        """Add 1 to ``<event>|<task>`` in the hash ``Keys.task_events`` of the indexes' Redis,
        which the admin's ``/metrics`` reads (:mod:`admin.metrics`), in this process's
        counting thread: the task never waits for it. The client gives up at once
        (:data:`~matcher.index.redis_clients.COMMAND`), unlike the engine's; an engine handed in by
        :meth:`use` counts with its own client. A count Redis refuses is logged and lost."""
        with self._lock:
            client, keys = self._redis()
            if self._counting is None:  # made on first use: in the worker process, not before
                self._counting = ThreadPoolExecutor(1, thread_name_prefix="fptrack-count")
            field = f"{event}|{task}"
            return self._counting.submit(_count, client, keys.task_events, field)


def _count(client: redis_clients.IndexClient, key: str, field: str) -> None:
    try:
        client.hincrby(key, field, 1)
    except Exception as exc:  # Redis may be what made the task retry or fail
        log.warning("could not count %s in Redis: %s", field, exc)
        raise
