"""Store writes of a crawl off the reactor thread, in order per page.

A page's ingest is a few MongoDB round trips (its read, its upsert, its tallies) and a task
sent to the broker. Made in the reactor thread, one page at a time (as in-process crawls on
a mongomock store still do), those round trips bound the crawl's rate whatever the site
answers. :class:`IngestLanes` runs them in ``lanes`` threads instead: each key (a page's
URL) always goes to the same lane (:func:`xxhash.xxh3_64_intdigest` of it, never Python's
``hash()``), and a lane runs its calls one after another, so the writes about one page
(its item, then its aliases, a 304 or a removal) keep their order while pages of other
lanes are written at the same time. The caller awaits each call: Scrapy keeps a page's
request in progress until its item went through, so a frontier acknowledges a request only
once its page is stored (:mod:`crawler.frontier`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import xxhash


class IngestLanes:
    """``lanes`` single-threaded executors; calls on one key run in order on one of them."""

    def __init__(self, lanes: int) -> None:
        if lanes < 1:
            raise ValueError(f"an ingest needs at least one lane, got {lanes}")
        self._lanes = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"fptrack-ingest-{n}")
            for n in range(lanes)
        ]

    def submit(self, key: str, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run ``fn(*args)`` on ``key``'s lane, after the calls submitted on it before."""
        lane = xxhash.xxh3_64_intdigest(key.encode("utf-8", "surrogatepass")) % len(self._lanes)
        return self._lanes[lane].submit(fn, *args)

    def close(self) -> None:
        """Wait for the calls submitted, then stop the threads."""
        for lane in self._lanes:
            lane.shutdown(wait=True)
