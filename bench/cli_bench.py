"""How long ``fptrack`` takes to start: ``--version``, ``--help``, every ``COMMAND --help``
and ``fptrack check``, beside ``python -c pass``.

Issue 24's targets on an idle machine: ``--version`` and ``--help`` under 0.3 s, a
command's ``--help`` under 0.5 s, ``check`` under 1 s. Each case runs in a fresh process
(``python -m admin.cli`` from the repository root, or the ``fptrack`` console script with
``--script``), ``--runs`` times (default 5); the median is printed with [min-max] and its
ratio to the median of ``python -c pass`` (the interpreter's own start). ``check`` talks to
the servers of the ``FPTRACK_*`` variables in the environment: its time is what a health
check costs there, and its exit status is printed (1 when a server is down: then it measures
how quickly the outage is reported). ``--json OUT`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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


def timed(argv: Sequence[str]) -> tuple[float, int]:
    """Seconds one process took, and its exit status."""
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        timeout=120,
    )
    return time.perf_counter() - started, done.returncode


def measure(argv: Sequence[str], runs: int) -> dict[str, Any]:
    timed(argv)  # warm the file cache and the bytecode
    seconds, statuses = [], set()
    for _ in range(runs):
        took, status = timed(argv)
        seconds.append(took)
        statuses.add(status)
    return {
        "median": statistics.median(seconds),
        "min": min(seconds),
        "max": max(seconds),
        "exit": sorted(statuses),
    }


def run(runs: int, script: bool, only: Sequence[str]) -> dict[str, Any]:
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
        figures[name] = measure([*command, *argv], runs)
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
        "python_c_pass": baseline,
        "cases": figures,
    }


def report(result: dict[str, Any]) -> str:
    base = result["python_c_pass"]
    lines = [
        f"fptrack start-up, {result['via']}, medians of {result['runs']} runs "
        f"(load {result['load'][0]:.2f}, {result['cpus']} CPUs)",
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
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    result = run(args.runs, args.script, args.only)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
