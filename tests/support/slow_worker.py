"""A worker process whose first page task takes a long time (test helper).

Run by the redelivery tests as ``python slow_worker.py LOG SECONDS``: an ordinary ``fptrack``
worker (solo pool) on the test broker and store (``FPTRACK_*`` variables). Every
``process_page`` it starts appends a line (its pid and page id) to LOG; the first one of all
the workers sharing LOG sleeps SECONDS before it matches its page.

``python slow_worker.py LOG SECONDS worker ARG...`` runs ``fptrack worker ARG...`` itself (the
command, its prefork pool's children doing the same) and exits with its status.
"""

from __future__ import annotations

import fcntl
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matcher.worker import jobs
from matcher.worker.celery import app


def logging_starts(function: Callable[..., Any], log: Path, seconds: float) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(engine: Any, page_id: str, *args: Any, **kwargs: Any) -> Any:
        with log.open("a+", encoding="utf-8") as out:
            fcntl.flock(out, fcntl.LOCK_EX)
            out.seek(0)
            first = not out.read()
            out.write(f"{os.getpid()} {page_id}\n")
        if first:
            time.sleep(seconds)
        return function(engine, page_id, *args, **kwargs)

    return wrapper


if __name__ == "__main__":
    jobs.process_page = logging_starts(jobs.process_page, Path(sys.argv[1]), float(sys.argv[2]))
    if sys.argv[3:]:
        from admin.cli import main

        sys.exit(main(sys.argv[3:]))
    app.worker_main(
        [
            "worker",
            "--pool=solo",
            "--queues=fptrack",
            "--loglevel=WARNING",
            f"--hostname=slow-{os.getpid()}@%h",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
        ]
    )
