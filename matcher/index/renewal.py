"""A thread that renews a redis-py :class:`~redis.lock.Lock` while its holder works: a lease.

A lock held for a long job (a crawler's slot, a page being matched) gets a short timeout and
this renewal, rather than a timeout as long as the longest job: when the holder dies, its
lock expires within one lease and another process takes over.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import redis
from redis.exceptions import LockError

logger = logging.getLogger(__name__)


class Renewal:
    """A thread renewing a redis-py ``Lock`` every third of its lease until :meth:`stop`.

    ``after`` runs after each renewal; ``on_lost`` once if the lock cannot be renewed (it
    expired: Redis was unreachable longer than the lease), which ends the thread. A Redis
    error is logged and the renewal tried again at the next third."""

    def __init__(
        self,
        lock: Any,
        lease_seconds: float,
        name: str,
        on_lost: Callable[[], None],
        after: Callable[[], None] = lambda: None,
    ) -> None:
        self.lock, self.lease_seconds, self.name = lock, lease_seconds, name
        self.on_lost, self.after = on_lost, after
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Renewal:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.lease_seconds / 3):
            try:
                self.lock.reacquire()
            except LockError:
                self.on_lost()
                return
            except redis.RedisError as exc:
                logger.warning("could not renew %s (will retry): %s", self.name, exc)
                continue
            self.after()
