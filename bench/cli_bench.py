"""How long ``fptrack`` takes to start: ``--version``, ``--help``, every ``COMMAND --help``
and ``fptrack check``, beside ``python -c pass``.

Issue 24's targets on an idle machine: ``--version`` and ``--help`` under 0.3 s, a
command's ``--help`` under 0.5 s, ``check`` under 1 s. Each case runs in a fresh process
(``python -m admin.cli`` from the repository root, or the ``fptrack`` console script with
``--script``), ``--runs`` times (default 5); the median is printed with [min-max] and its
ratio to the median of ``python -c pass`` (the interpreter's own start). ``check`` talks to
the servers of the ``FPTRACK_*`` variables in the environment: its time is what a health
check costs there, and its exit status is printed (1 when a server is down: then it measures
how quickly the outage is reported). With ``--services`` the benchmark starts its own
deployment first (:func:`live_services`: ``redis-server`` and SecantusDB on free ports of
127.0.0.1, one ``fptrack worker`` and ``fptrack beat`` on them), waits until ``fptrack
check`` passes, times ``check`` there (every check healthy, the worker answering its ping)
and stops them all. ``--json OUT`` writes every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.pipeline_support import Child, free_port

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"--version": 0.3, "--help": 0.3, "check": 1.0}
"""Seconds on an idle machine (issue 24); every ``COMMAND --help``: :data:`HELP_TARGET`."""
HELP_TARGET = 0.5


def cases() -> dict[str, list[str]]:
    """Each case's ``fptrack`` arguments, in the order of ``fptrack --help``."""
    from admin.commands import COMMANDS

    found = {"--version": ["--version"], "--help": ["--help"]}
    found.update({f"{name} --help": [name, "--help"] for name in COMMANDS})
    found["check"] = ["check"]
    return found


SERVER_VARIABLES = ("FPTRACK_MONGO_URI", "FPTRACK_REDIS_URL", "FPTRACK_BROKER_URL")
"""The settings naming ``check``'s servers, written with the figures."""
SERVICES_READY_S = 180.0
"""How long :func:`live_services` waits for its deployment to pass ``fptrack check``."""


def _wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with status {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not listen on port {port} within 30 s")
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process's group, SIGKILL after 30 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


@contextlib.contextmanager
def live_services(logs: Path) -> Iterator[dict[str, str]]:
    """A deployment of its own, up: ``redis-server`` (broker, redbeat and indexes, nothing on
    disk) and SecantusDB in memory on free ports of 127.0.0.1, one ``fptrack worker
    --concurrency 1`` and ``fptrack beat`` on them (their logs in ``logs``). Yields the
    ``FPTRACK_*`` environment once ``fptrack check`` passed there; stops everything after."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    started: list[subprocess.Popen[bytes]] = []
    mongo: Child | None = None
    try:
        redis_server = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
             "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        started.append(redis_server)
        _wait_for_port(port, redis_server, "redis-server")
        mongo = Child("mongo-server", ["mongo-server"], logs / "mongodb.log")
        url = f"redis://127.0.0.1:{port}/0"
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "FPTRACK_MONGO_URI": mongo.wait_ready(60),
            "FPTRACK_MONGO_DB": "fptrack_cli_bench",
            "FPTRACK_REDIS_URL": url,
            "FPTRACK_BROKER_URL": url,
        }
        env.pop("FPTRACK_INDEX_REDIS_URL", None)
        for name in ("worker", "beat"):
            argv = [name, "--loglevel", "WARNING"] + (["--concurrency", "1"] * (name == "worker"))
            with (logs / f"{name}.log").open("wb") as log:
                service = subprocess.Popen(
                    [sys.executable, "-m", "admin.cli", *argv], cwd=ROOT, env=env, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
            started.append(service)
        deadline = time.monotonic() + SERVICES_READY_S
        while timed([sys.executable, "-m", "admin.cli", "check"], env)[1] != 0:
            if time.monotonic() > deadline:
                raise SystemExit(f"fptrack check did not pass within {SERVICES_READY_S:g} s")
            time.sleep(1)
        yield env
    finally:
        for process in reversed(started[1:]):  # worker and beat, while their servers answer
            _stop(process)
        if mongo is not None:
            mongo.stop()
        for process in started[:1]:
            _stop(process)


def timed(argv: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[float, int]:
    """Seconds one process took, and its exit status (``env``: the environment, default
    this one's)."""
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env={**(os.environ if env is None else env), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        timeout=120,
    )
    return time.perf_counter() - started, done.returncode


def measure(argv: Sequence[str], runs: int, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    timed(argv, env)  # warm the file cache and the bytecode
    seconds, statuses = [], set()
    for _ in range(runs):
        took, status = timed(argv, env)
        seconds.append(took)
        statuses.add(status)
    return {
        "median": statistics.median(seconds),
        "min": min(seconds),
        "max": max(seconds),
        "exit": sorted(statuses),
    }


def run(
    runs: int, script: bool, only: Sequence[str], env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Every case (those of ``only``), in a fresh process each; ``check`` in ``env``."""
    if script:
        found = shutil.which("fptrack", path=str(Path(sys.executable).parent))
        if found is None:
            raise SystemExit("no fptrack console script next to this Python")
        command = [found]
    else:
        command = [sys.executable, "-m", "admin.cli"]
    baseline = measure([sys.executable, "-c", "pass"], runs)
    figures = {}
    for name, argv in cases().items():
        if only and name.split()[0].lstrip("-") not in only:
            continue
        figures[name] = measure([*command, *argv], runs, env if name == "check" else None)
        figures[name]["ratio"] = figures[name]["median"] / baseline["median"]
        figures[name]["target"] = TARGETS.get(name, HELP_TARGET)
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load": os.getloadavg(),
        "runs": runs,
        "via": "console script" if script else "python -m admin.cli",
        "services": "environment" if env is None else "started here",
        "servers": {k: v for k, v in (env or os.environ).items() if k in SERVER_VARIABLES},
        "python_c_pass": baseline,
        "cases": figures,
    }


def report(result: dict[str, Any]) -> str:
    base = result["python_c_pass"]
    lines = [
        f"fptrack start-up, {result['via']}, medians of {result['runs']} runs "
        f"(load {result['load'][0]:.2f}, {result['cpus']} CPUs; check's servers:"
        f" {result['services']})",
        f"  {'python -c pass':<28} {base['median']:>7.3f} s [{base['min']:.3f}-{base['max']:.3f}]",
    ]
    for name, f in result["cases"].items():
        verdict = "ok" if f["median"] < f["target"] else "OVER"
        lines.append(
            f"  {'fptrack ' + name:<28} {f['median']:>7.3f} s [{f['min']:.3f}-{f['max']:.3f}]"
            f"  x{f['ratio']:>5.1f} python -c pass  target {f['target']:g} s {verdict}"
            + (f"  exit {f['exit']}" if f["exit"] != [0] else "")
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.cli_bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="runs per case (default 5)")
    parser.add_argument(
        "--script",
        action="store_true",
        help="time the fptrack console script next to this Python (default: python -m admin.cli)",
    )
    parser.add_argument(
        "--only",
        type=lambda text: [w for w in text.split(",") if w],
        default=[],
        metavar="WORDS",
        help="only the cases of these first words, e.g. version,help,check,works (default: all)",
    )
    parser.add_argument(
        "--services",
        action="store_true",
        help="time check against a deployment started here: redis-server and SecantusDB on"
        " free ports, one fptrack worker and fptrack beat (default: the servers of the"
        " FPTRACK_* variables)",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    with contextlib.ExitStack() as stack:
        env = None
        if args.services:
            logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cli-bench-")))
            env = stack.enter_context(live_services(logs))
        result = run(args.runs, args.script, args.only, env)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
