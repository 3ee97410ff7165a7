"""Run the ``fptrack`` command in a fresh process, as an operator does."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEAD_MONGO = "mongodb://127.0.0.1:1"
DEAD_REDIS = "redis://127.0.0.1:1/0"


@dataclass
class Ran:
    """What one command did: exit status, output, and how long it took."""

    status: int
    out: str
    err: str
    seconds: float

    def one_line_error(self) -> bool:
        """Exactly one line on stderr, ``fptrack: error: ...`` (or argparse's usage + error)."""
        lines = [line for line in self.err.splitlines() if line.strip()]
        errors = [line for line in lines if ": error: " in line]
        return len(errors) == 1 and "Traceback" not in self.err


def fptrack(
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: str = "",
    timeout: float = 60.0,
    cwd: Path = ROOT,
) -> Ran:
    """``fptrack ARGS`` in a new Python process (the console script's ``main``)."""
    environ = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "admin.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        timeout=timeout,
    )
    return Ran(done.returncode, done.stdout, done.stderr, time.monotonic() - started)
