"""API requests per user per minute (all of the user's tokens together), counted in Redis
in a fixed one-minute window.

Each request increments the counter of its user and minute (``INCR``, expiring after two
minutes); past ``limit`` the request is refused with 429 and ``Retry-After`` (the seconds
left in the minute). A window is shared by every admin process, so the limit holds however
many gunicorn workers serve the API.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from matcher.errors import redis_errors
from matcher.keys import Keys

WINDOW_SECONDS = 60


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    remaining: int
    retry_after: int
    """Seconds until the window ends (0 when allowed)."""


def spend(redis: Any, keys: Keys, who: str, limit: int, clock: float | None = None) -> Verdict:
    """Count one request of ``who`` and say whether it is within ``limit`` per minute."""
    stamp = time.time() if clock is None else clock
    window = int(stamp // WINDOW_SECONDS)
    key = keys.api_rate(who, window)
    with redis_errors("counting API requests"):
        pipe = redis.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, 2 * WINDOW_SECONDS)
        count = int(pipe.execute()[0])
    left = WINDOW_SECONDS - int(stamp % WINDOW_SECONDS)
    if count > limit:
        return Verdict(False, 0, max(left, 1))
    return Verdict(True, limit - count, 0)
