"""A real ``fptrack worker`` that an error stops exits 1, and supervisord, with the one-machine
deployment's restart policy (``deploy/local/supervisord.conf``, through
:mod:`tests.servers.supervised`), starts it again; so would its systemd unit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import redis
from pymongo.database import Database

from matcher.worker.celery_app import PAGE_QUEUE
from tests.e2e.test_service_units import restarts
from tests.servers.supervised import exits, one_program
from tests.support.cli import fptrack
from tests.support.e2e import ROOT
from tests.support.waits import eventually

WORKER = [sys.executable, "-m", "admin.cli", "worker", "--concurrency", "1"]


def test_a_worker_stopped_by_an_error_exits_1_and_is_started_again(
    broker: redis.Redis, mongo_db: Database, tmp_path: Path
) -> None:
    """The broker answers the worker's read of its queue with an error (the queue's key holds
    a string: WRONGTYPE), which Celery cannot recover from: ``fptrack worker`` exits 1 (it
    exited 0), which supervisord and the worker's systemd unit start again; once the key is
    repaired, the new worker answers."""
    argv = one_program(tmp_path, "worker", [*WORKER, "--loglevel", "WARNING"])
    with (tmp_path / "out.log").open("wb") as out:
        supervisord = subprocess.Popen(
            argv,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        eventually(lambda: fptrack("check", "workers").status == 0, 90, "the worker to answer")
        broker.delete(PAGE_QUEUE)
        broker.set(PAGE_QUEUE, "not a queue")
        eventually(lambda: exits(tmp_path, "worker"), 60, "the worker to stop")
        broker.delete(PAGE_QUEUE)
        assert exits(tmp_path, "worker")[0] == "1" and restarts("worker", 1)
        log = (tmp_path / "worker.log").read_text(encoding="utf-8", errors="replace")
        assert "Unrecoverable error" in log
        assert "fptrack worker: stopped on an error, not asked to" in log
        eventually(lambda: fptrack("check", "workers").status == 0, 90, "the new worker")
    finally:
        supervisord.send_signal(signal.SIGTERM)
        supervisord.wait(90)
    assert supervisord.returncode == 0
    assert exits(tmp_path, "worker") == ["1"]  # stopped by supervisord, not an exit of its own
