"""IngestLanes: items of one key in order on one thread, what waits handed over at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from crawler.ingest_lanes import IngestLanes


class Handler:
    """Answers each item with ``(lane thread, item)``; the first call waits for ``go``."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.started = threading.Event()
        self.batches: list[list[Any]] = []

    def __call__(self, items: Sequence[Any]) -> list[Any]:
        self.started.set()
        self.go.wait(10)
        self.batches.append(list(items))
        return [(threading.current_thread().name, item) for item in items]


def test_what_waits_while_a_lane_is_busy_goes_as_one_batch_in_order() -> None:
    handler = Handler()
    lanes = IngestLanes(1, handler, batch=4)
    first = lanes.submit("http://a.test/", 0)
    assert handler.started.wait(10)  # the lane holds item 0 alone
    futures = [lanes.submit(f"http://a.test/{n}", n) for n in range(1, 7)]
    handler.go.set()
    assert [f.result(10)[1] for f in [first, *futures]] == list(range(7))
    lanes.close()
    assert handler.batches == [[0], [1, 2, 3, 4], [5, 6]]  # at most 4 at once


def test_a_lane_waits_a_moment_for_the_items_that_follow() -> None:
    handler = Handler()
    handler.go.set()
    lanes = IngestLanes(1, handler, batch=3, linger=30)
    futures = []
    for n in range(3):  # a crawl's pages, a few milliseconds apart
        futures.append(lanes.submit("k", n))
        time.sleep(0.02)
    assert [f.result(10)[1] for f in futures] == [0, 1, 2]  # the batch full: no wait
    lanes.close()
    assert handler.batches == [[0, 1, 2]]


def test_flush_hands_over_what_waits_without_waiting_out_the_linger() -> None:
    handler = Handler()
    handler.go.set()
    lanes = IngestLanes(2, handler, batch=10, linger=30)
    futures = [lanes.submit(f"http://a.test/{n}", n) for n in range(4)]
    lanes.flush()  # returns once handled, well before the 30 s linger
    assert all(f.done() for f in futures)
    assert sorted(n for batch in handler.batches for n in batch) == [0, 1, 2, 3]
    lanes.flush()  # nothing waits: nothing handed over
    assert len(handler.batches) <= 2
    later = lanes.submit("http://a.test/9", 9)  # the lanes go on after a flush
    lanes.close()
    assert later.result(0)[1] == 9


def test_one_key_one_lane_and_every_item_answered_before_close() -> None:
    handler = Handler()
    handler.go.set()
    lanes = IngestLanes(3, handler)
    keys = [f"http://a.test/{n % 5}" for n in range(60)]
    futures = [lanes.submit(key, (key, n)) for n, key in enumerate(keys)]
    lanes.close()
    threads: dict[str, set[str]] = {}
    for future in futures:
        thread, (key, _) = future.result(0)
        threads.setdefault(key, set()).add(thread)
    assert all(len(names) == 1 for names in threads.values())  # a key never changes lane
    handled = [key_n for batch in handler.batches for key_n in batch]
    for key in set(keys):
        assert [n for k, n in handled if k == key] == [n for n, k in enumerate(keys) if k == key]


def test_a_failing_batch_fails_each_of_its_items_and_the_lane_goes_on() -> None:
    calls: list[list[int]] = []

    def handle(items: Sequence[int]) -> list[int]:
        calls.append(list(items))
        if 13 in items:
            raise RuntimeError("store down")
        return [n * 2 for n in items]

    lanes = IngestLanes(1, handle)
    bad = lanes.submit("k", 13)
    with pytest.raises(RuntimeError, match="store down"):
        bad.result(10)
    assert lanes.submit("k", 4).result(10) == 8
    lanes.close()


def test_no_lane_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one lane"):
        IngestLanes(0, lambda items: items)
