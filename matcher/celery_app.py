"""The Celery app: broker on Redis, reliability options, redbeat for schedules.

This module is the workers' and beat's entry point (``celery -A matcher.celery_app worker``,
or ``fptrack worker`` / ``fptrack beat``), so it reads :class:`Settings` from the
environment once, here. Options (Celery's names):

- ``task_acks_late`` and ``task_reject_on_worker_lost``: a message is acknowledged only after
  its task finished, so a worker that dies mid-task (even by SIGKILL) leaves it to be
  redelivered; every task is idempotent, so a redelivered task converges on the same records.
- ``worker_prefetch_multiplier = 1``: a worker holds one unacknowledged message at a time.
- ``visibility_timeout`` (``FPTRACK_VISIBILITY_TIMEOUT``, default 7200 s): how long Redis
  waits for an acknowledgement before redelivering; longer than the longest crawl
  (``FPTRACK_CRAWL_TIMEOUT``, default 6000 s).
- queues: ``fptrack`` for pages and works, ``fptrack.crawl`` for crawls (long-running),
  so a crawl never holds up page processing on a worker that consumes both.
- beat: ``redbeat.RedBeatScheduler``, schedules kept in Redis under ``<prefix>:redbeat:``,
  with a lock (60 s) so that exactly one beat runs; beat looks at Redis at least every
  5 s, so a schedule created or changed at run time takes effect within seconds.

The tasks get their :class:`Engine` from :data:`runtime`: built lazily in each worker
process from the same settings; tests and the embedded scan hand it a ready one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from celery import Celery

from matcher.engine import Engine
from matcher.keys import Keys
from matcher.settings import Settings

PAGE_QUEUE = "fptrack"
BEAT_INTERVAL = 5
CRAWL_QUEUE = "fptrack.crawl"


def celery_config(settings: Settings) -> dict[str, Any]:
    """Celery configuration for ``settings`` (see the module docstring)."""
    return {
        "broker_url": settings.celery_broker,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {"visibility_timeout": settings.visibility_timeout},
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_ignore_result": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_default_queue": PAGE_QUEUE,
        "task_routes": {"fptrack.crawl_site": {"queue": CRAWL_QUEUE}},
        "timezone": "UTC",
        "enable_utc": True,
        "beat_scheduler": "redbeat.RedBeatScheduler",
        "redbeat_redis_url": settings.redis_url,
        "redbeat_key_prefix": Keys(settings.redis_prefix).redbeat,
        "redbeat_redis_options": {},
        "redbeat_lock_timeout": 60,
        "beat_max_loop_interval": BEAT_INTERVAL,
        "worker_hijack_root_logger": False,
    }


class Runtime:
    """The settings and engine of this process, for the tasks (built on first use)."""

    def __init__(self, settings_factory: Callable[[], Settings] = Settings.from_env) -> None:
        self._settings_factory = settings_factory
        self._settings: Settings | None = None
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = self._settings_factory()
        return self._settings

    def engine(self) -> Engine:
        with self._lock:
            if self._engine is None:
                self._engine = Engine.open(self.settings)
            return self._engine

    def use(self, engine: Engine | None, settings: Settings | None = None) -> None:
        """Make the tasks of this process use ``engine`` (``None``: build one again)."""
        with self._lock:
            self._engine = engine
            self._settings = settings or (engine.settings if engine is not None else None)


def make_app(settings: Settings) -> Celery:
    """A configured Celery app; its tasks are in :mod:`matcher.tasks` (loaded by workers)."""
    celery = Celery("fptrack", include=["matcher.tasks"])
    celery.conf.update(celery_config(settings))
    return celery


runtime = Runtime()
app = make_app(runtime.settings)
