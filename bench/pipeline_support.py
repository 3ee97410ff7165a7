"""Processes of the pipeline benchmark: the MongoDB server, the site server, the workers.

Run as ``python -m bench.pipeline_support ROLE ...`` (:func:`main`); each role prints one
line ``ready <detail>`` on stdout when it serves, then runs until it is terminated.

``mongo-server``: SecantusDB (``secantusd-py --storage-path :memory: --standalone``, a
MongoDB-wire server on WiredTiger, PyPI ``secantusdb``) on a free port of 127.0.0.1, as a
child of this process, which stops it when terminated. ``ready mongodb://127.0.0.1:PORT``.
The benchmark uses it unless ``--mongo-uri`` names a server.

``site-server DIR``: ``DIR`` over HTTP on 127.0.0.1 (a free port), a
:class:`tests.servers.http_server.FixtureServer` of :class:`http.server.SimpleHTTPRequestHandler`.
``ready http://127.0.0.1:PORT/``.

``beat``: Celery beat with redbeat (the schedules in the Redis of ``FPTRACK_REDIS_URL``), as
``fptrack beat`` runs it; ``ready <pid>`` once beat has started.

``worker [--queues Q]``: a Celery worker (solo pool: one process; queue ``fptrack`` unless
``--queues`` names others, e.g. ``fptrack.crawl``) of the fptrack app on
``FPTRACK_BROKER_URL``, whose tasks use the engine the app builds from the ``FPTRACK_*``
settings: the store of ``FPTRACK_MONGO_URI`` / ``FPTRACK_MONGO_DB`` reached through pymongo,
as a deployed worker's, and the Redis of ``FPTRACK_REDIS_URL`` (prefix
``FPTRACK_REDIS_PREFIX``). It sets the Redis key ``<prefix>:bench-ready:<pid>`` when it is
ready; a task that fails for good leaves its record in the store's ``failures``, as in a
deployment. ``--profile OUT`` writes a cProfile of the whole worker to ``OUT`` when it stops.

:class:`Child` starts a role as a subprocess, waits for its ``ready`` line and stops it
(SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from tests.servers.http_server import FixtureServer
from tests.servers.net import free_port, wait_for_port, wait_until

ROOT = Path(__file__).resolve().parents[1]

READY = "ready"
MONGO_START_TIMEOUT = 30.0


# -- the MongoDB server -------------------------------------------------------------------


def serve_mongo(out: IO[str]) -> None:
    """Run SecantusDB in memory on a free port until terminated (see the module docstring)."""
    binary = shutil.which("secantusd-py")
    if binary is None:
        raise SystemExit("secantusd-py not found: pip install secantusdb, or give --mongo-uri")
    port = free_port()
    argv = [binary, "--host", "127.0.0.1", "--port", str(port), "--storage-path", ":memory:"]
    server = subprocess.Popen([*argv, "--standalone", "--log-level", "WARNING"])

    stopping: list[float] = []

    def stop(*_: Any) -> None:  # only signal here: the loop below reaps it
        stopping.append(time.monotonic())
        server.terminate()

    signal.signal(signal.SIGTERM, stop)
    if not wait_for_port("127.0.0.1", port, MONGO_START_TIMEOUT, process=server):
        if server.poll() is not None:
            raise SystemExit(f"secantusd-py exited with status {server.returncode}")
        server.kill()
        raise SystemExit(f"secantusd-py did not listen within {MONGO_START_TIMEOUT} s")
    print(f"{READY} mongodb://127.0.0.1:{port}", file=out, flush=True)
    while server.poll() is None:  # until SIGTERM stops it (killed if it lingers 10 s)
        if stopping and time.monotonic() - stopping[0] > 10:
            server.kill()
        time.sleep(0.2)


# -- the site server -------------------------------------------------------------------------


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve_site(folder: Path, out: IO[str]) -> None:
    """Serve ``folder`` on 127.0.0.1 until terminated."""
    handler = functools.partial(_QuietFiles, directory=str(folder))
    with FixtureServer(handler) as server:
        print(f"{READY} {server.url('/')}", file=out, flush=True)
        threading.Event().wait()  # until SIGTERM ends the process


# -- the worker ------------------------------------------------------------------------------

WORKER_ARGV = [
    "worker",
    "--pool=solo",
    "--queues=fptrack",
    "--without-heartbeat",
    "--without-mingle",
    "--without-gossip",
    "--loglevel=WARNING",
]


COMMAND_LOG_DIR = "FPTRACK_BENCH_COMMAND_LOG"
"""Where a worker writes the commands its store sends (:mod:`bench.command_log`), when set."""


def ready_key(prefix: str, pid: int) -> str:
    """The Redis key a worker sets when it is ready."""
    return f"{prefix}:bench-ready:{pid}"


def run_worker(profile: Path | None, queues: str = "fptrack") -> None:
    """Run one Celery worker of ``queues`` until it is stopped (its store and index from the
    settings)."""
    from celery.signals import worker_ready

    from matcher.index.redis_clients import connect_server
    from matcher.settings import Settings
    from matcher.worker.celery_app import make_app

    settings = Settings.from_env()
    if os.environ.get(COMMAND_LOG_DIR):
        from bench import command_log

        command_log.write_every(Path(os.environ[COMMAND_LOG_DIR]) / f"commands-{os.getpid()}.json")
    app = make_app(settings)
    client = connect_server(settings.redis_target)
    app.fptrack.engine()  # connect before taking tasks

    def on_ready(**_: Any) -> None:
        client.set(ready_key(settings.redis_prefix, os.getpid()), "1", ex=3600)
        # Celery redirects sys.stdout to its log: the line goes to the real stdout.
        print(f"{READY} {os.getpid()}", file=sys.__stdout__, flush=True)

    worker_ready.connect(on_ready, weak=False)
    profiler = None
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        app.worker_main(
            [f"--queues={queues}" if a.startswith("--queues=") else a for a in WORKER_ARGV]
        )
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(str(profile))


# -- subprocesses ----------------------------------------------------------------------------


class ChildFailed(RuntimeError):
    """A benchmark subprocess exited or did not get ready in time."""


class Child:
    """A ``python -m bench.pipeline_support`` subprocess, its log and its ``ready`` line."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name, self.log = name, log
        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.pipeline_support", *argv],
            cwd=ROOT,
            env=dict(os.environ if env is None else env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self.detail = ""

    def wait_ready(self, timeout: float = 60.0) -> str:
        """Wait for the ``ready`` line; returns what follows it."""
        assert self.proc.stdout is not None
        found: list[str] = []

        def read() -> None:
            assert self.proc.stdout is not None
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", "replace").strip()
                if line.startswith(READY):
                    found.append(line.removeprefix(READY).strip())
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        if not found:
            self.stop()
            raise ChildFailed(f"{self.name} did not start: {self.tail()}")
        self.detail = found[0]
        threading.Thread(target=self._drain, daemon=True).start()
        return self.detail

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        with contextlib.suppress(ValueError, OSError):
            for _ in self.proc.stdout:
                pass

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 5) -> str:
        """The last lines of the child's stderr log."""
        if not self._log.closed:
            self._log.flush()
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return "no log"
        return " | ".join(text.splitlines()[-lines:]) or f"exit status {self.proc.poll()}"

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; closes the log."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            with contextlib.suppress(OSError):
                self.proc.stdout.close()
        self._log.close()


def stop_children(children: Sequence[Child], client: Any, database: str) -> None:
    """Stop a benchmark's processes: the others first, newest first; then drop ``database``
    through ``client`` (when there is one) while its MongoDB child still runs; then that."""
    for child in reversed([c for c in children if c.name != "mongodb"]):
        child.stop()
    if client is not None:
        client.drop_database(database)
        client.close()
    for child in children:
        if child.name == "mongodb":
            child.stop()


def wait_for(condition: Callable[[], bool], timeout: float, what: str, step: float = 0.1) -> None:
    """Poll ``condition`` until it holds; :class:`ChildFailed` after ``timeout`` seconds."""
    if not wait_until(condition, timeout, step):
        raise ChildFailed(f"timed out after {timeout:.0f} s waiting for {what}")


# -- command line ----------------------------------------------------------------------------


def run_beat() -> None:
    """Run Celery beat (redbeat) on the ``FPTRACK_*`` settings until it is stopped."""
    from celery.signals import beat_init

    from matcher.settings import Settings
    from matcher.worker.celery_app import BEAT_SCHEDULER, make_app

    app = make_app(Settings.from_env())

    def on_init(**_: Any) -> None:
        print(f"{READY} {os.getpid()}", file=sys.__stdout__, flush=True)

    beat_init.connect(on_init, weak=False)
    app.start(["beat", "-S", BEAT_SCHEDULER, "--loglevel=WARNING"])


def main(argv: Sequence[str] | None = None) -> None:
    """``mongo-server``, ``site-server DIR``, ``worker [--profile OUT] [--queues Q]`` or
    ``beat``."""
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline_support")
    roles = parser.add_subparsers(dest="role", required=True)
    roles.add_parser("mongo-server", help="SecantusDB in memory on a free port")
    site = roles.add_parser("site-server", help="serve a folder over HTTP")
    site.add_argument("folder", type=Path)
    worker = roles.add_parser("worker", help="a Celery worker of the FPTRACK_* settings")
    worker.add_argument("--profile", type=Path, default=None, help="cProfile output (default none)")
    worker.add_argument(
        "--queues", default="fptrack", help="queues to consume, comma-separated (default fptrack)"
    )
    roles.add_parser("beat", help="Celery beat (redbeat) of the FPTRACK_* settings")
    args = parser.parse_args(argv)
    if args.role == "mongo-server":
        serve_mongo(sys.stdout)
    elif args.role == "site-server":
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        serve_site(args.folder, sys.stdout)
    elif args.role == "beat":
        run_beat()
    else:
        run_worker(args.profile, args.queues)


if __name__ == "__main__":
    main()
