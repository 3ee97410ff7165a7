"""The one-machine deployment (``honcho start`` of the repository's Procfile) keeps running
when one of its processes dies: the worker and the admin server, killed with SIGKILL, come
back by themselves (``deploy/local/respawn.py``), and the rest never stopped.

As the README's quick start runs it: SecantusDB started by the ``mongodb`` process on a free
local port, its data in the test's folder; Redis is the session's.
"""

from __future__ import annotations

import os
import signal
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.servers.outage import children, command_line
from tests.support.cli import fptrack
from tests.support.one_machine import honcho_start
from tests.support.waits import eventually


@pytest.fixture
def deployment(tmp_path: Path, redis_client: redis.Redis) -> Iterator[tuple[dict[str, str], int]]:
    """``honcho start`` on empty stores; yields its environment and honcho's pid (and stops
    it afterwards, every process with it)."""
    with honcho_start(
        tmp_path,
        FPTRACK_MONGO_DB="one-machine",
        FPTRACK_ADMIN_SECRET="a-test-secret-of-enough-length",
    ) as deployed:
        yield deployed


def service(honcho: int, command: str) -> int | None:
    """The pid of the process running ``command`` under respawn, below honcho."""
    todo = [honcho]
    while todo:
        pid = todo.pop()
        line = command_line(pid)
        if command in line and "respawn.py" not in line:
            return pid
        todo.extend(children(pid))
    return None


def healthz(env: dict[str, str]) -> bool:
    try:
        url = f"http://{env['FPTRACK_ADMIN_BIND']}/healthz"
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False


def test_a_killed_process_comes_back_by_itself(
    deployment: tuple[dict[str, str], int], tmp_path: Path
) -> None:
    env, honcho = deployment
    eventually(lambda: fptrack("check", env=env).status == 0, 120, "fptrack check to pass")
    assert healthz(env)
    for command in ("fptrack worker", "fptrack admin serve"):
        killed = service(honcho, command)
        assert killed is not None, command
        os.kill(killed, signal.SIGKILL)

        def back(command: str = command, killed: int = killed) -> bool:
            pid = service(honcho, command)
            return pid is not None and pid != killed

        eventually(back, 60, f"{command} to be started again")
    eventually(lambda: fptrack("check", "workers", env=env).status == 0, 90, "a worker again")
    eventually(lambda: healthz(env), 90, "the admin to serve again")
    assert fptrack("check", env=env).status == 0  # MongoDB and beat never stopped
    log = (tmp_path / "honcho.log").read_text(encoding="utf-8", errors="replace")
    assert "respawn: `fptrack worker --wait 60s` was killed by SIGKILL" in log
    assert "respawn: `fptrack admin serve --wait 60s --bind" in log
    assert "stopped (rc=" not in log  # honcho stopped nothing
