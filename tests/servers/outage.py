"""Servers a test restarts, and the fptrack services it runs on them, as real processes.

:func:`own_redis` and :func:`own_mongodb` start a ``redis-server`` and a SecantusDB of the
test's own on free ports of 127.0.0.1 (never the session's, which other tests share), with
their data in the test's folder, so that stopping and starting one again is a real restart:
Redis with its append-only file (it comes back with its data) or with none (it comes back
empty), SecantusDB on disk. :class:`Service` is one ``fptrack`` command in a process group of
its own, its output in a file the test reads.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from tests.servers import session
from tests.servers.net import free_port
from tests.support.e2e import ROOT


def own_redis(folder: Path, keeps_data: bool) -> session.Server:
    """A ``redis-server`` (not started yet); ``keeps_data``: with an append-only file."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [
        shutil.which("redis-server") or "redis-server",
        *("--bind", "127.0.0.1", "--port", str(port), "--dir", str(folder), "--save", ""),
        *("--appendonly", "yes" if keeps_data else "no"),
    ]
    return session.Server("redis-server", argv, "127.0.0.1", port)


def own_mongodb(folder: Path) -> session.Server:
    """SecantusDB (not started yet), its data on disk in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [
        shutil.which("secantusd-py") or "secantusd-py",
        *("--host", "127.0.0.1", "--port", str(port), "--storage-path", str(folder)),
        *("--standalone", "--log-level", "WARNING"),
    ]
    return session.Server("secantusd-py", argv, "127.0.0.1", port)


def redis_url(server: session.Server) -> str:
    return f"redis://{server.host}:{server.port}/0"


def mongo_uri(server: session.Server) -> str:
    return f"mongodb://{server.host}:{server.port}"


def answers(url: str) -> bool:
    """Whether ``url`` answers 200 within 5 s."""
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False


class Service:
    """``fptrack ARGS`` running in a process group of its own, its output in ``log``."""

    def __init__(self, args: list[str], env: Mapping[str, str], log: Path) -> None:
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "admin.cli", *args],
                cwd=ROOT,
                env={**env, "PYTHONPATH": str(ROOT)},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """SIGTERM to the whole group, SIGKILL after 30 s."""
        if self.running:
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def command_line(pid: int) -> str:
    """``pid``'s command line, its arguments joined by spaces ("" once it is gone)."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
