"""``deploy/local/respawn.py``, the loop each Procfile line runs under: a command that exits
is started again (one line each time), a bad configuration (exit status 2) is not, and a
stop signal reaches the command once and ends the loop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.e2e import ROOT
from tests.support.waits import eventually

RESPAWN = ROOT / "deploy" / "local" / "respawn.py"

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
