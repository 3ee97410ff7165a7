"""``deploy/local/respawn.py``, the loop each Procfile line runs under: a command that exits
is started again (one line each time), a bad configuration (exit status 2) is not, and a
stop signal reaches the command once and ends the loop. A real ``fptrack worker`` that an
error stops exits 1, and is started again."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import redis
from pymongo.database import Database

from matcher.celery_app import PAGE_QUEUE
from tests.e2e.test_service_units import restarts
from tests.support.cli import fptrack
from tests.support.e2e import ROOT
from tests.support.waits import eventually

RESPAWN = ROOT / "deploy" / "local" / "respawn.py"
WORKER = (sys.executable, "-m", "admin.cli", "worker")

FLAKY = """
import signal, sys, time
from pathlib import Path
runs = Path(sys.argv[1])
runs.write_text(runs.read_text() + "run\\n")
if runs.read_text().count("run") < 3:
    sys.exit(1)
def stop(signum, frame):
    runs.write_text(runs.read_text() + "term\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
while True:
    time.sleep(0.1)
"""


def loop(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(RESPAWN), *argv],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_a_command_that_exits_is_started_again_until_it_is_stopped(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.write_text("")
    (tmp_path / "flaky.py").write_text(FLAKY)
    respawn = loop(sys.executable, str(tmp_path / "flaky.py"), str(runs))
    try:
        eventually(lambda: runs.read_text().count("run") == 3, 30, "the third start")
        assert respawn.poll() is None
        os.killpg(respawn.pid, signal.SIGTERM)  # as honcho stops a process
        assert respawn.wait(20) == 0
    finally:
        if respawn.poll() is None:
            os.killpg(respawn.pid, signal.SIGKILL)
    _, err = respawn.communicate()
    assert runs.read_text().split() == ["run", "run", "run", "term"]  # the signal came once
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith("respawn: `") and "exited with status 1 after 0 s" in lines[0]
    assert lines[0].endswith("starting it again in 1 s")
    assert lines[1].endswith("starting it again in 2 s")  # the wait doubles


def test_a_bad_configuration_is_not_retried(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    respawn = loop(sys.executable, "-c", f"open({str(runs)!r}, 'a').write('run'); exit(2)")
    assert respawn.wait(20) == 2
    assert runs.read_text() == "run"
    assert "exited with status 2 (bad arguments or settings): not retried" in respawn.stderr.read()


def test_a_command_killed_outright_is_started_again_and_its_leftovers_stopped(
    tmp_path: Path,
) -> None:
    """A killed server's own children (gunicorn's workers, holding its port) are stopped
    before it starts again."""
    pids = tmp_path / "pids"
    parent = (
        "import os, subprocess, sys, time;"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']);"
        f"open({str(pids)!r}, 'a').write(f'{{os.getpid()}} {{child.pid}}\\n');"
        "time.sleep(600)"
    )
    respawn = loop(sys.executable, "-c", parent)
    try:
        eventually(lambda: pids.exists() and pids.read_text().count("\n") == 1, 30, "a start")
        first, leftover = (int(p) for p in pids.read_text().split())
        os.kill(first, signal.SIGKILL)
        eventually(lambda: pids.read_text().count("\n") == 2, 30, "the command to start again")
        assert not Path(f"/proc/{leftover}").exists()  # stopped, and reaped by init
    finally:
        os.killpg(respawn.pid, signal.SIGTERM)
        respawn.wait(20)
    assert "was killed by SIGKILL" in respawn.stderr.read()


def test_a_worker_stopped_by_an_error_exits_1_and_is_started_again(
    broker: redis.Redis, mongo_db: Database, tmp_path: Path
) -> None:
    """The broker answers the worker's read of its queue with an error (the queue's key holds
    a string: WRONGTYPE), which Celery cannot recover from: ``fptrack worker`` exits 1 (it
    exited 0), which the worker's systemd unit restarts and the respawn loop starts again;
    once the key is repaired, the new worker answers."""
    log = tmp_path / "respawn.log"
    with log.open("wb") as out:
        respawn = subprocess.Popen(
            [sys.executable, str(RESPAWN), *WORKER, "--concurrency", "1", "--loglevel", "WARNING"],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        eventually(lambda: fptrack("check", "workers").status == 0, 90, "the worker to answer")
        broker.delete(PAGE_QUEUE)
        broker.set(PAGE_QUEUE, "not a queue")
        said = re.compile(r"respawn: `.*admin\.cli worker .*` exited with status (\d+) after")
        eventually(lambda: said.search(log.read_text()), 60, "the worker to stop")
        broker.delete(PAGE_QUEUE)
        match = said.search(log.read_text())
        assert match is not None
        assert int(match[1]) == 1 and restarts("worker", int(match[1]))
        said_by_worker = "fptrack worker: stopped on an error, not asked to"
        assert "Unrecoverable error" in log.read_text() and said_by_worker in log.read_text()
        eventually(lambda: fptrack("check", "workers").status == 0, 90, "the new worker")
    finally:
        os.killpg(respawn.pid, signal.SIGTERM)
        respawn.wait(60)
    assert respawn.returncode == 0  # the worker stopped by SIGTERM: 0, and the loop with it
