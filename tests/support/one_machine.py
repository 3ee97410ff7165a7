"""The one-machine deployment as the README's quick start runs it: supervisord with
``deploy/local/supervisord.conf`` (SecantusDB started by its ``mongodb`` program on a free
local port, its data in the test's folder; a worker, beat and the admin server), on the
session's Redis unless the test names another. supervisord is started in the test's folder,
so its control socket and the programs' logs are there (``fptrack-data/``).
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
CONF = ROOT / "deploy" / "local" / "supervisord.conf"


def supervisorctl(folder: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    """``supervisorctl -c deploy/local/supervisord.conf ARGV`` in ``folder``."""
    command = [str(Path(sys.executable).parent / "supervisorctl"), "-c", str(CONF), *argv]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=60)


@contextmanager
def supervisord_start(folder: Path, **changes: str | None) -> Iterator[tuple[dict[str, str], int]]:
    """``supervisord -c deploy/local/supervisord.conf`` in ``folder`` (in the foreground,
    ``-n``) on empty stores (the broker's database flushed before and after); yields the
    environment of the commands, with ``changes`` (``None`` removes a variable), and
    supervisord's pid. On leaving, supervisord is stopped (SIGTERM, then SIGKILL of its
    process group after 60 s) and every program must have stopped with it: the MongoDB and
    admin ports no longer answer."""
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "FPTRACK_MONGO_URI": f"mongodb://127.0.0.1:{free_port()}",
        "FPTRACK_DATA_DIR": str(folder / "fptrack-data"),
        "FPTRACK_ADMIN_BIND": f"127.0.0.1:{free_port()}",
    }
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    broker_url = env.get("FPTRACK_BROKER_URL") or env.get("FPTRACK_REDIS_URL")
    broker = redis.Redis.from_url(broker_url or session.session().redis_url(1))
    broker.flushdb()
    (folder / "fptrack-data" / "logs").mkdir(parents=True, exist_ok=True)
    supervisord = subprocess.Popen(
        [str(Path(bin_dir) / "supervisord"), "-n", "-c", str(CONF)],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield env, supervisord.pid
    finally:
        supervisord.send_signal(signal.SIGTERM)
        try:
            supervisord.wait(60)
        finally:
            if supervisord.poll() is None:
                os.killpg(supervisord.pid, signal.SIGKILL)
                supervisord.wait(10)
            broker.flushdb()
            broker.close()
    for address in (env["FPTRACK_MONGO_URI"].rpartition("/")[2], env["FPTRACK_ADMIN_BIND"]):
        host, _, port = address.rpartition(":")
        assert not port_open(host, int(port), timeout=1), address  # stopped with supervisord
