"""Page locks: the pages a task matches are held under leases in the index storage
(:func:`locked`), so that two workers never write one page's records at once and a worker
that dies holding one frees the page within a lease.

The locks' keys are :meth:`matcher.keys.Keys.page_lock`; each lease is renewed by a
:class:`matcher.index.renewal.Renewal`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import redis

from matcher.errors import IndexUnavailable, redis_errors
from matcher.index.renewal import Renewal
from matcher.index.storage import Storage
from matcher.keys import Keys

log = logging.getLogger(__name__)

LOCK_WAIT_SECONDS = 60


@contextmanager
def locked(
    storage: Storage, keys: Keys, parts: Sequence[dict], lease: float
) -> Iterator[threading.Event]:
    """Hold the locks of ``parts`` (in seq order, so two workers never deadlock) while
    the block runs, each a lease of ``lease`` seconds (``page_lock_seconds``) renewed every
    third of it: a worker that dies holding one frees the page within a lease. Yields an
    event set when a lock could not be renewed (another worker may have the page now)."""
    lost = threading.Event()
    with ExitStack() as stack, redis_errors("locking a page"):
        for seq in sorted({int(p["seq"]) for p in parts}):
            lock = storage.lock(keys.page_lock(seq), lease, LOCK_WAIT_SECONDS)
            if not lock.acquire():
                raise IndexUnavailable(f"page {seq} is being matched elsewhere; try again")
            stack.callback(_release, lock)
            renewal = Renewal(lock, lease, f"page lock {seq}", on_lost=lost.set).start()
            stack.callback(renewal.stop)
        yield lost


def _release(lock: Any) -> None:
    """Release a page lock; one that expired meanwhile, or a server that does not answer,
    leaves nothing to do (the lock expires on its own)."""
    try:
        with redis_errors("releasing a page lock"):
            lock.release()
    except redis.exceptions.LockError:
        pass
    except IndexUnavailable as exc:
        log.warning("could not release %s (it expires on its own): %s", lock.name, exc)
