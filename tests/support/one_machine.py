"""The one-machine deployment as the README's quick start runs it: ``honcho start`` of the
repository's Procfile (SecantusDB started by its ``mongodb`` process on a free local port,
its data in the test's folder; a worker, beat and the admin server), on the session's Redis.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from tests.servers import session
from tests.servers.net import free_port, port_open

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def honcho_start(folder: Path, **changes: str | None) -> Iterator[tuple[dict[str, str], int]]:
    """``honcho start`` in the repository on empty stores (the broker's database flushed
    before and after); yields the environment of the commands, with ``changes`` (``None``
    removes a variable), and honcho's pid. On leaving, honcho is stopped (SIGTERM, then
    SIGKILL of its process group after 40 s) and every process must have stopped with it:
    the MongoDB and admin ports no longer answer."""
    broker = redis.Redis.from_url(session.session().redis_url(1))
    broker.flushdb()
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "FPTRACK_MONGO_URI": f"mongodb://127.0.0.1:{free_port()}",
        "FPTRACK_DATA_DIR": str(folder / "data"),
        "FPTRACK_ADMIN_BIND": f"127.0.0.1:{free_port()}",
    }
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    log = (folder / "honcho.log").open("w")
    honcho = subprocess.Popen(
        [str(Path(bin_dir) / "honcho"), "start"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield env, honcho.pid
    finally:
        honcho.send_signal(signal.SIGTERM)
        try:
            honcho.wait(40)
        finally:
            if honcho.poll() is None:
                os.killpg(honcho.pid, signal.SIGKILL)
                honcho.wait(10)
            log.close()
            broker.flushdb()
            broker.close()
    for address in (env["FPTRACK_MONGO_URI"].rpartition("/")[2], env["FPTRACK_ADMIN_BIND"]):
        host, _, port = address.rpartition(":")
        assert not port_open(host, int(port), timeout=1), address  # stopped with honcho
