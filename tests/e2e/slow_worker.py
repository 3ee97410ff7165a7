"""A worker process whose ``process_page`` blocks after taking its message (test helper).

Run by ``test_worker.py`` as ``python slow_worker.py MARKER``: the worker consumes from the
test broker (``FPTRACK_BROKER_URL``) and reaches the test's store through
``FPTRACK_MONGO_URI`` and ``FPTRACK_MONGO_DB``, as any worker does; the first task it starts
writes MARKER and sleeps, so that the test can kill it with SIGKILL while the message is
unacknowledged.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from matcher import jobs
from matcher.worker import app


def blocking_process_page(engine: object, page_id: str) -> dict:
    Path(sys.argv[1]).write_text(page_id, encoding="utf-8")
    time.sleep(600)
    raise AssertionError("the test should have killed this worker")


if __name__ == "__main__":
    jobs.process_page = blocking_process_page
    app.worker_main(
        [
            "worker",
            "--pool=solo",
            "--queues=fptrack",
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
        ]
    )
