"""A value read from the store, answered for a few seconds without reading it again.

Each match a worker writes asks which sites are licensed (its status is ``authorised`` on
theirs) and whether an alert rule is enabled (a ``deliver_alerts`` task is sent then): one
read each per page otherwise, for values an operator changes a few times a year.
:class:`Recent` answers from the last read for :data:`KEEP_SECONDS`. A change takes that
much longer to reach the workers: a match written meanwhile on a site just marked licensed
is ``new`` (registering the site classifies the unreviewed ones, and an operator can), and
a rule just enabled takes the new matches at beat's next sweep
(:data:`matcher.worker.alert_delivery.SWEEP_SECONDS`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

KEEP_SECONDS = 5.0
"""How long a value read is answered without reading it again."""


class Recent(Generic[T]):
    """``read()``'s value as of at most ``keep`` seconds ago.

    >>> reads = []
    >>> clock = iter([0.0, 1.0, 6.0]).__next__
    >>> licensed = Recent(lambda: reads.append(1) or len(reads), keep=5.0, clock=clock)
    >>> licensed.get(), licensed.get(), licensed.get()
    (1, 1, 2)
    """

    def __init__(
        self,
        read: Callable[[], T],
        keep: float = KEEP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._keep = keep
        self._clock = clock
        self._lock = threading.Lock()
        self._value: tuple[float, T] | None = None

    def get(self) -> T:
        """The value, read again when the last read is older than ``keep`` (a failed read
        raises and keeps nothing)."""
        now = self._clock()
        with self._lock:
            if self._value is not None and now - self._value[0] < self._keep:
                return self._value[1]
        value = self._read()
        with self._lock:
            self._value = (now, value)
        return value
