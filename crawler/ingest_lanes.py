"""Store writes of a crawl off the reactor thread, in order per page, in batches.

A page's ingest is a few MongoDB round trips (its read, its upsert, its tallies) and a task
sent to the broker. Made in the reactor thread, one page at a time (as in-process crawls on
a mongomock store still do), those round trips bound the crawl's rate whatever the site
answers. :class:`IngestLanes` runs them in ``lanes`` threads instead: each key (a page's
URL) always goes to the same lane (:func:`xxhash.xxh3_64_intdigest` of it, never Python's
``hash()``), and a lane handles its items one after another, so the writes about one page
(its item, then its aliases, a 304 or a removal) keep their order while pages of other
lanes are written at the same time. A lane that takes an item waits :data:`LINGER` for
more (at most :data:`BATCH` in all) and hands them to its handler together, which stores
their pages in one batch (:meth:`matcher.store.pages.Pages.store_pages_to_send`): a few
commands per batch instead of a few per page. The caller awaits
each item: Scrapy keeps a page's request in progress until its item went through, so a
frontier acknowledges a request only once its page is stored (:mod:`crawler.frontier`).

An ingest that must stay in one thread (the embedded scan's, on an in-memory store) gets
:class:`ReactorBatches` instead: the same batches of what waits, handed over in the reactor
thread.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import xxhash

BATCH = 32
"""At most this many waiting items are handed to the handler at once."""
LINGER = 0.05
"""Seconds a lane that took an item waits for more before it hands them over: a crawl's
pages come a few at a time, and a batch of one costs what one page alone does."""

_STOP = object()
_FLUSH = object()


class IngestLanes:
    """``lanes`` threads; the items of one key are handled in order by one of them, in
    batches of what waits: ``handle(items)`` answers each item, in order."""

    def __init__(
        self,
        lanes: int,
        handle: Callable[[Sequence[Any]], Sequence[Any]],
        batch: int = BATCH,
        linger: float = LINGER,
    ) -> None:
        if lanes < 1:
            raise ValueError(f"an ingest needs at least one lane, got {lanes}")
        self._handle = handle
        self._batch = max(1, batch)
        self._linger = max(0.0, linger)
        self._queues: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue() for _ in range(lanes)]
        self._threads = [
            threading.Thread(target=self._run, args=(q,), name=f"fptrack-ingest-{n}", daemon=True)
            for n, q in enumerate(self._queues)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, key: str, item: Any) -> Future[Any]:
        """Handle ``item`` on ``key``'s lane, after the items submitted on it before; the
        future holds its answer."""
        lane = xxhash.xxh3_64_intdigest(key.encode("utf-8", "surrogatepass")) % len(self._queues)
        future: Future[Any] = Future()
        self._queues[lane].put((item, future))
        return future

    def flush(self) -> None:
        """Handle the items submitted so far now, without waiting out the linger; return
        once they are handled."""
        done: list[Future[Any]] = []
        for q in self._queues:
            future: Future[Any] = Future()
            q.put((_FLUSH, future))
            done.append(future)
        for future in done:
            future.result()

    def close(self) -> None:
        """Handle the items submitted, then stop the threads."""
        for q in self._queues:
            q.put(_STOP)
        for thread in self._threads:
            thread.join()

    def _run(self, lane: queue.SimpleQueue[Any]) -> None:
        stopping = False
        while not stopping:
            first = lane.get()
            if first is _STOP:
                return
            batch: list[tuple[Any, Future[Any]]] = []
            flushed: Future[Any] | None = None
            if first[0] is _FLUSH:
                flushed = first[1]
            else:
                batch.append(first)
            until = time.monotonic() + self._linger
            while flushed is None and len(batch) < self._batch:
                try:
                    waiting = lane.get(timeout=max(0.0, until - time.monotonic()))
                except queue.Empty:
                    break
                if waiting is _STOP:
                    stopping = True
                    break
                if waiting[0] is _FLUSH:
                    flushed = waiting[1]
                else:
                    batch.append(waiting)
            if batch:
                _answer(self._handle, batch)
            if flushed is not None:
                flushed.set_result(None)


def _answer(
    handle: Callable[[Sequence[Any]], Sequence[Any]], batch: list[tuple[Any, Future[Any]]]
) -> None:
    """Settle each item's future with ``handle``'s answer to it (its error to all)."""
    try:
        answers = list(handle([item for item, _ in batch]))
        if len(answers) != len(batch):
            raise RuntimeError(f"{len(answers)} answers to {len(batch)} items")
    except Exception as exc:  # the caller awaiting each item sees the error
        for _, future in batch:
            future.set_exception(exc)
        return
    for (_, future), answer in zip(batch, answers, strict=True):
        future.set_result(answer)


class ReactorBatches:
    """Items handled in the reactor thread, in batches of what waits (an ingest that is not
    ``thread_safe``, such as the embedded scan's on mongomock): the first item waits
    ``linger`` seconds for more, and the batch goes at once when it holds ``batch`` items or
    when ``full()`` says so (the crawl's page budget). The handler runs in the reactor
    thread, like every other call of the store, and answers each item in order."""

    def __init__(
        self,
        handle: Callable[[Sequence[Any]], Sequence[Any]],
        batch: int = BATCH,
        linger: float = LINGER,
        full: Callable[[int], bool] = lambda waiting: False,
    ) -> None:
        self._handle = handle
        self._batch = max(1, batch)
        self._linger = max(0.0, linger)
        self._full = full
        self._waiting: list[tuple[Any, Future[Any]]] = []
        self._timer: Any = None

    def submit(self, item: Any) -> Future[Any]:
        """Queue ``item`` (in the reactor thread); the future holds its answer."""
        future: Future[Any] = Future()
        self._waiting.append((item, future))
        if len(self._waiting) >= self._batch or self._full(len(self._waiting)):
            self.flush()
        elif self._timer is None:
            from twisted.internet import reactor

            self._timer = reactor.callLater(self._linger, self.flush)
        return future

    def flush(self) -> None:
        """Hand the waiting items over now."""
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        batch, self._waiting = self._waiting, []
        if batch:
            _answer(self._handle, batch)
