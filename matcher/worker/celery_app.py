"""The Celery app: broker on Redis, reliability options, redbeat for schedules.

:func:`make_app` builds an app from :class:`Settings` read at an entry point (``fptrack
worker`` / ``beat``, the admin, a crawl, :mod:`matcher.worker.celery` for ``celery -A``); nothing is
read at import. The tasks (:mod:`matcher.worker.tasks`) are shared tasks: every app has them.
Options (Celery's names):

- ``task_acks_late`` and ``task_reject_on_worker_lost``: a message is acknowledged only after
  its task finished, so a worker that dies mid-task (even by SIGKILL) leaves it to be
  redelivered; every task is idempotent, so a redelivered task converges on the same records.
  The crawls (``crawl_site``, ``recrawl_site``) are the exception: they acknowledge their
  message as they start, and a crawl whose worker died is taken over through its frontier's
  leases (:func:`matcher.worker.jobs.resume_crawls`), never delivered again as a new crawl.
- ``worker_prefetch_multiplier = 1``: a worker holds one unacknowledged message at a time.
- broker and redbeat: the Redis of ``FPTRACK_BROKER_URL`` and ``FPTRACK_REDIS_URL``, a server
  or Sentinel, in kombu's and redbeat's words (:func:`matcher.index.redis_clients.celery_broker`,
  :func:`~matcher.index.redis_clients.redbeat`), with fptrack's timeouts and retries; kombu's
  Redis transports are :mod:`matcher.worker.broker_transport`'s, whose channels a worker closes
  after losing the broker without stopping on an ``AttributeError`` (kombu 5.7).
- ``visibility_timeout`` (``FPTRACK_VISIBILITY_TIMEOUT``, default 120 s): how long after a
  worker's last heartbeat (:mod:`matcher.worker.heartbeat`, every quarter of it) Redis hands the
  messages it holds to another worker; any live worker looks for such messages every
  ``restore_interval`` (a tenth of the timeout, 1 to 10 s). A dead worker's tasks thus come
  back within about the timeout, whatever the longest task.
- queues: ``fptrack`` for pages and works, ``fptrack.crawl`` for crawls, full and
  incremental (long-running),
  so a crawl never holds up page processing on a worker that consumes both.
- beat: :data:`BEAT_SCHEDULER` (redbeat's scheduler, riding out outages), schedules kept
  in Redis under ``<prefix>:redbeat:``, with a lock (60 s) so that exactly one beat runs;
  beat looks at Redis at least every 5 s, so a schedule created or changed at run time takes
  effect within seconds.

- ``max_retries`` of every task: ``FPTRACK_TASK_MAX_RETRIES`` (default 8), through Celery's
  task annotations.

The tasks get their settings and :class:`Engine` from their app's :class:`Runtime`
(``app.fptrack``): the engine is built lazily in each worker process from the app's
settings; tests and the embedded scan hand it a ready one.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from celery import Celery
from celery.signals import worker_process_shutdown, worker_shutdown

from matcher.index import redis_clients
from matcher.keys import Keys
from matcher.settings import Settings
from matcher.worker import broker_transport
from matcher.worker.heartbeat import VisibilityHeartbeat
from matcher.worker.runtime import Runtime

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


def _send_tallies(**_: Any) -> None:
    """A worker process that stops sends the dashboard tallies it gathered
    (:class:`matcher.store.tallies.Sender`)."""
    from matcher.store.tallies import flush_all

    flush_all()


worker_process_shutdown.connect(_send_tallies, weak=False)
worker_shutdown.connect(_send_tallies, weak=False)

PAGE_QUEUE = "fptrack"
BEAT_SCHEDULER = "matcher.worker.beat.ResilientScheduler"
"""redbeat's scheduler, riding out Redis, broker and MongoDB outages
(:mod:`matcher.worker.beat`)."""
BEAT_INTERVAL = 5
CRAWL_QUEUE = "fptrack.crawl"


def transport_options(visibility_timeout: int) -> dict[str, Any]:
    """kombu's Redis transport options for ``visibility_timeout``: abandoned messages are
    looked for every tenth of it (1 to 10 s), on every look (no throttle).

    >>> transport_options(120)
    {'visibility_timeout': 120, 'unacked_restore_interval': 10, 'unacked_restore_throttle': 1}
    """
    return {
        "visibility_timeout": visibility_timeout,
        "unacked_restore_interval": max(1, min(10, visibility_timeout // 10)),
        "unacked_restore_throttle": 1,
    }


def celery_config(
    settings: Settings, patience: redis_clients.Patience = redis_clients.SERVICE
) -> dict[str, Any]:
    """Celery configuration for ``settings`` (see the module docstring); ``patience``: how
    long the broker's and redbeat's clients wait for Redis."""
    broker_url, broker_options = redis_clients.celery_broker(settings.broker_target, patience)
    redbeat_url, redbeat_options = redis_clients.redbeat(settings.redis_target, patience)
    return {
        "broker_url": broker_url,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            **transport_options(settings.visibility_timeout),
            **broker_options,
        },
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_ignore_result": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_default_queue": PAGE_QUEUE,
        "task_routes": {
            "fptrack.crawl_site": {"queue": CRAWL_QUEUE},
            "fptrack.recrawl_site": {"queue": CRAWL_QUEUE},
        },
        "timezone": "UTC",
        "enable_utc": True,
        "beat_scheduler": BEAT_SCHEDULER,
        "redbeat_redis_url": redbeat_url,
        "redbeat_key_prefix": Keys(settings.redis_prefix).redbeat,
        "redbeat_redis_options": redbeat_options,
        "redbeat_lock_timeout": 60,
        "beat_max_loop_interval": BEAT_INTERVAL,
        "worker_hijack_root_logger": False,
        "task_annotations": {"*": {"max_retries": settings.task_max_retries}},
    }


TASK_MODULES = ("matcher.worker.tasks", "crawler.tasks")
"""The modules that define the shared tasks, named for Celery's ``include`` (the crawler's
tasks use the crawler, which the backend does not import)."""


def make_app(
    settings: Settings,
    patience: redis_clients.Patience = redis_clients.SERVICE,
    *,
    tasks: bool = True,
) -> Celery:
    """A configured Celery app with its :class:`Runtime` as ``app.fptrack``; the tasks of
    :data:`TASK_MODULES` are shared (loaded by workers and beat through ``include``).
    ``patience``: :data:`~matcher.index.redis_clients.SERVICE` for workers and beat, ``COMMAND``
    for a CLI command's app. ``tasks``: import them now (default), for an app that runs
    them in this process (eagerly, as the embedded scan does); ``False`` for an app that
    only sends tasks by name, pings workers and edits schedules (a CLI command's, the admin
    web's): it imports no matching code, and its workers and beat still load the tasks."""
    if tasks:
        for module in TASK_MODULES:
            importlib.import_module(module)

    broker_transport.install()
    celery = Celery("fptrack", include=list(TASK_MODULES))
    celery.conf.update(celery_config(settings, patience))
    celery.steps["worker"].add(VisibilityHeartbeat)
    celery.fptrack = Runtime(settings)  # type: ignore[attr-defined]
    return celery
