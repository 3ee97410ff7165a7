"""MongoDB for the one-machine deployment (the ``mongodb`` program of supervisord.conf).

The server of ``FPTRACK_MONGO_URI`` (default ``mongodb://127.0.0.1:27017``) is used when it
answers; this process then only waits, so that supervisord shows it running.
When nothing answers there and the URI names a port of this machine (no user, no password),
SecantusDB is started on that port, its data on disk under ``FPTRACK_DATA_DIR`` (default
``./fptrack-data``) in ``mongodb/``: a MongoDB-wire server on WiredTiger, installed by the
``local`` extra (``pip install -e '.[local]'``), a separate program that fptrack talks to
over the wire like any MongoDB. Otherwise it exits 1 with one line saying what to do.

SecantusDB runs as this process's child, watched: it is asked for its databases every
:data:`PROBE_EVERY_S`, and once it has answered only internal errors
:data:`FAILING_PROBES` times in a row (its storage engine panicked, on a full disk for one:
it then answers every command but ``ping`` so, for good) it is stopped, with one line, and
this process exits 1: supervisord starts it again (with back-off while it fails), and it comes
back once space was freed (WiredTiger recovers what was acknowledged from its journal; on a
disk still full it cannot start, exits 1, and is tried again). It also exits with
SecantusDB's status when SecantusDB stops by itself (1 if that was 0), and 0 when stopped
(SIGTERM, Ctrl-C: passed to SecantusDB, which is waited for).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

from matcher.errors import store_failing

DEFAULT_URI = "mongodb://127.0.0.1:27017"
DEFAULT_DATA_DIR = "fptrack-data"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
PROBE_EVERY_S = 1.0
"""How often the SecantusDB started here is asked for its databases."""
FAILING_PROBES = 15
"""Answers made only of internal errors, in a row, after which it is restarted (about 15 s:
what a passing fault of the server, or an operator freeing space, may take)."""
STOP_GRACE_S = 20.0
"""How long a SecantusDB asked to stop may take before it is killed."""
SIGNALLED_WAIT_S = 5.0
"""How long a SecantusDB that got the stop signal with this process is left to stop by
itself before it is asked again (a second signal would interrupt its stopping)."""
PR_SET_PDEATHSIG = 1


def answers(host: str, port: int, timeout: float = 2.0) -> bool:
    """Whether a MongoDB server answers a ping at ``host:port``."""
    import pymongo
    import pymongo.errors

    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError:
        return False
    client: pymongo.MongoClient = pymongo.MongoClient(
        host, port, serverSelectionTimeoutMS=int(timeout * 1000), directConnection=True
    )
    try:
        client.admin.command("ping")
        return True
    except pymongo.errors.PyMongoError:
        return False
    finally:
        client.close()


def wait_for_stop() -> None:
    """Idle until supervisord stops the program (SIGTERM) or Ctrl-C; exit 0 then."""

    def stop(signum: int, frame: object) -> None:
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()


def fail(message: str) -> int:
    print(f"mongodb: error: {message}", file=sys.stderr, flush=True)
    return 1


def main() -> int:
    uri = os.environ.get("FPTRACK_MONGO_URI") or DEFAULT_URI
    parts = urlsplit(uri)
    try:
        host, port = parts.hostname or "", parts.port or 27017
    except ValueError:
        return fail(f"FPTRACK_MONGO_URI {uri!r} has no valid port")
    if "," not in parts.netloc and host and answers(host, port):
        print(f"mongodb: using the server at {host}:{port} (FPTRACK_MONGO_URI)", flush=True)
        wait_for_stop()
    if host not in LOCAL_HOSTS or parts.username or parts.password or "," in parts.netloc:
        return fail(f"nothing answers at {uri} (FPTRACK_MONGO_URI): start that server")
    binary = shutil.which("secantusd-py")
    if binary is None:
        return fail(
            f"nothing answers at {uri} and SecantusDB is not installed: "
            "pip install -e '.[local]', or start a MongoDB there"
        )
    data = Path(os.environ.get("FPTRACK_DATA_DIR") or DEFAULT_DATA_DIR).resolve() / "mongodb"
    data.mkdir(parents=True, exist_ok=True)
    print(f"mongodb: starting SecantusDB on 127.0.0.1:{port}, data in {data}", flush=True)
    argv = [binary, "--host", "127.0.0.1", "--port", str(port), "--storage-path", str(data)]
    return Watched([*argv, "--standalone", "--log-level", "WARNING"], port, data).run()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, before exec
    """Linux: SecantusDB gets SIGTERM when this process dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Watched:
    """SecantusDB as this process's child, restarted (by exiting 1) when it answers only
    internal errors (see the module docs)."""

    def __init__(self, argv: list[str], port: int, data: Path) -> None:
        self.argv = argv
        self.port = port
        self.data = data
        self.stopping = False

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def run(self) -> int:
        import pymongo

        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        server = subprocess.Popen(
            self.argv, preexec_fn=_die_with_parent if sys.platform == "linux" else None
        )
        client: pymongo.MongoClient = pymongo.MongoClient(
            "127.0.0.1",
            self.port,
            directConnection=True,
            serverSelectionTimeoutMS=1000,
            connectTimeoutMS=1000,
            socketTimeoutMS=5000,
        )
        try:
            return self._watch(server, client)
        finally:
            client.close()

    def _watch(self, server: subprocess.Popen[bytes], client: Any) -> int:
        failing = 0
        while server.poll() is None and not self.stopping:
            time.sleep(PROBE_EVERY_S)
            failing = failing + 1 if _internal_errors(client) else 0
            if failing >= FAILING_PROBES:
                free = shutil.disk_usage(self.data).free / 2**20
                print(
                    f"mongodb: SecantusDB answers only internal errors (disk full? {free:.0f} MB "
                    f"free for {self.data}): stopping it, to be started again",
                    file=sys.stderr,
                    flush=True,
                )
                _end(server)
                return 1
        if self.stopping:  # the signal reached SecantusDB too (supervisord signals the group)
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(SIGNALLED_WAIT_S)
            return 0 if _end(server) in (0, -signal.SIGTERM) else 1
        return server.returncode or 1


def _internal_errors(client: Any) -> bool:
    """Whether the server answers its databases' list with an internal error (not when it
    does not answer at all: starting, or stopping)."""
    import pymongo.errors

    try:
        client.admin.command("listDatabases", nameOnly=True)
        return False
    except pymongo.errors.PyMongoError as exc:
        return store_failing(exc)


def _end(server: subprocess.Popen[bytes]) -> int:
    """Ask ``server`` to stop (SIGTERM) unless it has, kill it after :data:`STOP_GRACE_S`;
    its status."""
    if server.poll() is not None:
        return server.returncode
    with contextlib.suppress(ProcessLookupError):
        server.terminate()
    try:
        return server.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        server.kill()
        return server.wait()


if __name__ == "__main__":
    sys.exit(main())
