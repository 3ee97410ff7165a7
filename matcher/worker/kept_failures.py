"""Failure records that MongoDB could not take, kept in Redis until it can.

A task that fails for good leaves a record in ``failures``
(:meth:`matcher.worker.tasks.FptrackTask.record_failure`). When MongoDB is what fails (down, or
answering with internal errors, its disk full), the record cannot be written there: it is
pushed instead, as JSON with the time it failed, on the list ``Keys.kept_failures`` of the
indexes' Redis, and written to ``failures`` by the first task that finds MongoDB answering
again (:meth:`KeptFailures.write`: after a failure record was written, after a task that
retried succeeded, and at each run of beat's ``pages:requeue-pending``, every minute).

Each kept record is taken off the list once (``LPOP``) and written with the time it failed;
one MongoDB still refuses goes back to the head of the list and the writing stops there. A
worker killed between the two loses that one record (its failure is in the worker's log).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from matcher.index.redis_clients import IndexClient

log = logging.getLogger(__name__)

WRITE_AT_MOST = 1000
"""Records one :meth:`KeptFailures.write` writes at most (the next one goes on)."""


class KeptFailures:
    """The list of failure records waiting for MongoDB (see the module docstring)."""

    def __init__(self, client: IndexClient, key: str) -> None:
        self.client = client
        self.key = key

    def keep(self, task: str, ref: str, error: str, attempts: int, failed_at: datetime) -> None:
        """Keep the failure record of ``task`` on ``ref`` until MongoDB takes it."""
        record = {
            "task": task,
            "ref": ref,
            "error": error,
            "attempts": attempts,
            "failed_at": failed_at.isoformat(),
        }
        self.client.rpush(self.key, json.dumps(record, ensure_ascii=False))

    def count(self) -> int:
        """Records kept."""
        return int(self.client.llen(self.key))

    def write(self, record: Callable[..., Any], limit: int = WRITE_AT_MOST) -> int:
        """Hand each kept record to ``record(task, ref, error, attempts, at=failed_at)``
        (``store.failure_log.record_failure``), oldest first; how many were written. What
        ``record`` raises is raised, its record kept."""
        written = 0
        while written < limit:
            raw = self.client.lpop(self.key)
            if raw is None:
                break
            kept = json.loads(raw)
            try:
                record(
                    kept["task"],
                    kept["ref"],
                    kept["error"],
                    int(kept["attempts"]),
                    at=datetime.fromisoformat(kept["failed_at"]),
                )
            except BaseException:
                self.client.lpush(self.key, raw)
                raise
            written += 1
        if written:
            log.warning("wrote %d failure record(s) kept while MongoDB was down", written)
        return written
