"""The one-machine deployment (supervisord with ``deploy/local/supervisord.conf``) keeps
running through faults, with real processes: the worker and the admin server, killed with
SIGKILL, are started again within seconds by supervisord while the rest never stopped; a
restart of Redis is waited out by every program, none of which exits for it. ``supervisorctl
status`` reports each program, and each writes its own log.

As the README's quick start runs it: SecantusDB started by the ``mongodb`` program on a free
local port, its data in the test's folder; Redis is the session's, or, for the outage, a
``redis-server`` of the test's own.
"""

from __future__ import annotations

import os
import signal
import time
import urllib.request
from pathlib import Path

import redis

from tests.servers.outage import children, command_line, own_redis, redis_url
from tests.support.cli import fptrack
from tests.support.one_machine import supervisorctl, supervisord_start
from tests.support.waits import eventually

PROGRAMS = ("admin", "beat", "mongodb", "worker")
SECRET = {"FPTRACK_MONGO_DB": "one-machine", "FPTRACK_ADMIN_SECRET": "a-test-secret-of-length"}
RESTARTED_WITHIN_S = 5.0
"""From SIGKILL until supervisord runs the program again (it restarts at once)."""


def status(folder: Path, env: dict[str, str]) -> dict[str, tuple[str, int | None]]:
    """``supervisorctl status``: each program's state and pid (while it has one)."""
    lines = supervisorctl(folder, env, "status").stdout.splitlines()
    found: dict[str, tuple[str, int | None]] = {}
    for line in lines:
        name, state, *rest = line.split()
        pid = int(rest[1].rstrip(",")) if rest[:1] == ["pid"] else None
        found[name] = (state, pid)
    return found


def running(folder: Path, env: dict[str, str]) -> dict[str, int]:
    """The pid of each program, once every one is RUNNING (else empty)."""
    now = status(folder, env)
    if sorted(now) != sorted(PROGRAMS) or any(state != "RUNNING" for state, _ in now.values()):
        return {}
    return {name: pid for name, (_, pid) in now.items() if pid is not None}


def healthz(env: dict[str, str]) -> bool:
    try:
        url = f"http://{env['FPTRACK_ADMIN_BIND']}/healthz"
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False


def log(folder: Path, program: str) -> str:
    path = folder / "fptrack-data" / "logs" / f"{program}.log"
    return path.read_text(encoding="utf-8", errors="replace")


def test_a_killed_process_is_started_again_within_seconds(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    with supervisord_start(tmp_path, **SECRET) as (env, supervisord):
        eventually(lambda: fptrack("check", env=env).status == 0, 120, "fptrack check to pass")
        assert healthz(env)
        eventually(lambda: running(tmp_path, env), 60, "supervisorctl status: all RUNNING")
        before = running(tmp_path, env)  # RUNNING once up for startsecs (5 s)
        assert sorted(before) == sorted(PROGRAMS), status(tmp_path, env)
        for program, command in (("worker", "fptrack worker"), ("admin", "fptrack admin serve")):
            killed = before[program]
            assert command in command_line(killed)  # the real process, not a wrapper
            os.kill(killed, signal.SIGKILL)
            fault = time.monotonic()

            def back(command: str = command, killed: int = killed) -> bool:
                return any(
                    command in command_line(pid) and pid != killed for pid in children(supervisord)
                )

            eventually(back, 30, f"{program} to be started again")
            assert time.monotonic() - fault <= RESTARTED_WITHIN_S, program
        eventually(lambda: running(tmp_path, env), 60, "supervisorctl status: all RUNNING")
        eventually(lambda: fptrack("check", "workers", env=env).status == 0, 90, "a worker again")
        eventually(lambda: healthz(env), 90, "the admin to serve again")
        after = running(tmp_path, env)
        assert {name: after.get(name) for name in ("mongodb", "beat")} == {
            name: before[name] for name in ("mongodb", "beat")
        }  # never stopped
        assert fptrack("check", env=env).status == 0
    said = log(tmp_path, "supervisord")
    assert "exited: worker (terminated by SIGKILL; not expected)" in said
    assert "exited: admin (terminated by SIGKILL; not expected)" in said
    assert " ready." in log(tmp_path, "worker") and "Starting gunicorn" in log(tmp_path, "admin")


def test_a_redis_restart_is_waited_out_by_every_program(tmp_path: Path) -> None:
    server = own_redis(tmp_path / "redis", keeps_data=True)
    server.start()
    try:
        own = {"FPTRACK_REDIS_URL": redis_url(server), "FPTRACK_BROKER_URL": redis_url(server)}
        with supervisord_start(tmp_path, **SECRET, **own) as (env, _):
            eventually(lambda: fptrack("check", env=env).status == 0, 120, "fptrack check")
            eventually(lambda: running(tmp_path, env), 60, "supervisorctl status: all RUNNING")
            before = running(tmp_path, env)
            assert sorted(before) == sorted(PROGRAMS), status(tmp_path, env)
            server.stop()
            for program in ("worker", "beat", "admin"):
                eventually(lambda p=program: "waiting for Redis" in log(tmp_path, p), 60, program)
            server.start()
            eventually(lambda: fptrack("check", env=env).status == 0, 120, "fptrack check again")
            assert running(tmp_path, env) == before  # no program exited
            for program in ("worker", "beat", "admin"):
                eventually(lambda p=program: "answers again" in log(tmp_path, p), 60, program)
    finally:
        server.stop()
