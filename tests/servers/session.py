"""The servers a test session talks to: Redis and a MongoDB-wire server, as separate processes.

Redis: ``FPTRACK_TEST_REDIS_URL`` (``redis://HOST:PORT/N``) names a server and the first of
the four databases the tests flush (N to N+3: indexes, broker, and the pipeline benchmark's
broker and index); when it is unset the session starts its own ``redis-server`` on a free
port of 127.0.0.1 (databases 0 to 3) and no other Redis is touched.

MongoDB: ``FPTRACK_TEST_MONGO_URI`` names a server; when it is unset the session starts
SecantusDB (``secantusd-py --storage-path :memory: --standalone``, PyPI ``secantusdb``, in
the ``test`` extra) on a free port. Each test that asks for a database gets a fresh one,
dropped afterwards. fptrack itself never imports SecantusDB: it is a server, reached over the
wire by pymongo like any MongoDB.
"""

from __future__ import annotations

import contextlib
import ctypes
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from tests.servers.net import free_port, wait_for_port

REDIS_DATABASES = 4
"""Databases from the first one: indexes, broker, pipeline benchmark broker, its index."""
START_TIMEOUT_S = 20.0


class ServerUnavailable(RuntimeError):
    """A server the tests need could not be found or started (one line, what to do)."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, before exec
    """Linux: the child gets SIGTERM when the test session dies, even by SIGKILL."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class Server:
    """A server process started for the session (or ``None`` when one was given)."""

    name: str
    argv: Sequence[str]
    host: str
    port: int
    process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            list(self.argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        if wait_for_port(self.host, self.port, START_TIMEOUT_S, process=self.process):
            return
        if self.process.poll() is not None:
            err = self.process.stderr.read().decode(errors="replace").strip()[-300:]
            raise ServerUnavailable(f"{self.name} exited at start: {err or 'no message'}")
        self.stop()
        raise ServerUnavailable(f"{self.name} did not listen within {START_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


@dataclass
class TestServers:
    """Where the session's Redis and MongoDB are, and the processes it started for them."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    redis_base: str
    """``redis://HOST:PORT`` of the Redis server."""
    redis_first_db: int
    mongo_uri: str
    started: list[Server]

    def redis_url(self, offset: int) -> str:
        """The URL of the tests' database ``offset`` (0 to 3)."""
        if not 0 <= offset < REDIS_DATABASES:
            raise ValueError(f"the tests use {REDIS_DATABASES} Redis databases, not {offset + 1}")
        return f"{self.redis_base}/{self.redis_first_db + offset}"

    def start(self) -> None:
        for server in self.started:
            server.start()

    def stop(self) -> None:
        for server in reversed(self.started):
            server.stop()


def own_redis() -> Server:
    """A ``redis-server`` of one test's own, on a free port, keeping nothing on disk: the
    test stops it and starts it again (empty), as a server restarted without persistence."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServerUnavailable("the tests need redis-server (apt-get install redis-server)")
    port = free_port()
    argv = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    return Server("redis-server", argv, "127.0.0.1", port)


SESSION: TestServers | None = None
"""The servers of the running test session (set by ``tests/conftest.py``)."""


def session() -> TestServers:
    """The servers of the running test session."""
    if SESSION is None:
        raise ServerUnavailable("no test session has planned its servers (tests/conftest.py)")
    return SESSION


def plan(environ: Mapping[str, str]) -> TestServers:
    """Where the servers will be: the given URLs, else free ports for servers to start."""
    started: list[Server] = []
    given_redis = environ.get("FPTRACK_TEST_REDIS_URL", "")
    if given_redis:
        parts = urlsplit(given_redis)
        db = parts.path.strip("/")
        if parts.scheme not in ("redis", "rediss") or not db.isdigit():
            raise ServerUnavailable(
                f"FPTRACK_TEST_REDIS_URL={given_redis!r}: give redis://HOST:PORT/N (the tests "
                f"flush databases N to N+{REDIS_DATABASES - 1})"
            )
        redis_base, first_db = f"{parts.scheme}://{parts.netloc}", int(db)
        if first_db + REDIS_DATABASES > 16:
            raise ServerUnavailable(
                f"FPTRACK_TEST_REDIS_URL: databases {first_db} to "
                f"{first_db + REDIS_DATABASES - 1} do not all exist on a default Redis (0-15)"
            )
    else:
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServerUnavailable(
                "the tests need redis-server on PATH (apt-get install redis-server) or "
                "FPTRACK_TEST_REDIS_URL=redis://HOST:PORT/N naming databases they may flush"
            )
        port = free_port()
        argv = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly"]
        started.append(Server("redis-server", [*argv, "no"], "127.0.0.1", port))
        redis_base, first_db = f"redis://127.0.0.1:{port}", 0
    mongo_uri = environ.get("FPTRACK_TEST_MONGO_URI", "")
    if not mongo_uri:
        binary = shutil.which("secantusd-py")
        if binary is None:
            raise ServerUnavailable(
                "the tests need secantusd-py (pip install -e '.[test]' brings it) or "
                "FPTRACK_TEST_MONGO_URI=mongodb://HOST:PORT naming a MongoDB server"
            )
        port = free_port()
        argv = [binary, "--host", "127.0.0.1", "--port", str(port), "--storage-path", ":memory:"]
        started.append(
            Server(
                "secantusd-py", [*argv, "--standalone", "--log-level", "WARNING"], "127.0.0.1", port
            )
        )
        mongo_uri = f"mongodb://127.0.0.1:{port}"
    return TestServers(redis_base, first_db, mongo_uri, started)
