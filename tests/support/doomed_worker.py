"""A worker process that stops dead at a chosen point of ``process_page`` (test helper).

Run by the worker tests as ``python doomed_worker.py MARKER POINT POOL``: an ordinary
``fptrack`` worker on the test broker and store (``FPTRACK_*`` variables), with ``POOL``
``solo`` or ``prefork`` (one child). The first page task to reach ``POINT`` writes the pid of
the process running it to MARKER and sleeps, so that the test can kill that process (or the
whole worker) with SIGKILL there; once MARKER exists, tasks run through. Points:

- ``start``: before anything is written;
- ``index``: after the page's entries are written to the Redis pages index;
- ``match``: after the first of the page's match records is written;
- ``marked``: after the page's processed mark (with its fingerprints) is written, before
  the task is acknowledged;
- ``batch``: after the first page of a ``process_pages`` batch is matched, its records
  written and its processed mark gathered, not yet written (the batch's other pages not
  matched yet).
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matcher.index.indexes import Side
from matcher.matching.engine import Engine
from matcher.store.matches import Matches
from matcher.store.page_marks import PageMarks
from matcher.worker import jobs
from matcher.worker.celery import app


def stop_here() -> None:
    marker = Path(sys.argv[1])
    if marker.exists():
        return
    written = marker.with_suffix(f".{os.getpid()}")
    written.write_text(str(os.getpid()), encoding="utf-8")
    written.replace(marker)  # the test reads the pid as soon as the marker exists
    time.sleep(600)
    raise AssertionError("the test should have killed this process")


def stopping_after(method: Callable[..., Any], wanted: Callable[..., bool]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        if wanted(*args, **kwargs):
            stop_here()
        return result

    return wrapper


def stopping_before(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        stop_here()
        return function(*args, **kwargs)

    return wrapper


if __name__ == "__main__":
    POINT, POOL = sys.argv[2], sys.argv[3]
    if POINT == "start":
        jobs.process_page = stopping_before(jobs.process_page)
    elif POINT == "marked":
        PageMarks.mark_processed = stopping_after(PageMarks.mark_processed, lambda *a, **k: True)
    elif POINT == "index":
        Side.add = stopping_after(Side.add, lambda *a, **k: True)
    elif POINT == "batch":
        Engine.process_stored_page = stopping_after(
            Engine.process_stored_page, lambda *a, **k: True
        )
    elif POINT == "match":
        Matches.upsert_match = stopping_after(Matches.upsert_match, lambda *a, **k: True)
    else:
        raise SystemExit(f"unknown point {POINT!r}")
    pool = ["--pool=solo"] if POOL == "solo" else ["--pool=prefork", "--concurrency=1"]
    app.worker_main(
        [
            "worker",
            *pool,
            "--queues=fptrack",
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
        ]
    )
