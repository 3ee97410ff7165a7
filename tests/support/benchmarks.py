"""A benchmark run as its users run it: ``python -m bench.NAME ARG... --json OUT`` from the
repository root, in a process of its own, and its JSON read back (the benchmarks' smoke
tests: the tests never import ``bench``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def benchmark(name: str, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    """``python -m bench.NAME ARG...`` in the test process's environment (the session's
    servers), run to its end: its exit status, stdout and stderr."""
    return subprocess.run(
        [sys.executable, "-m", f"bench.{name}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_benchmark(
    name: str, *args: str, out: Path | None = None, timeout: float = 1200
) -> dict[str, Any]:
    """Run ``bench.NAME`` with ``args`` and ``--json out`` (or the ``--json`` among
    ``args``) and return what it wrote; a benchmark that exits with an error fails the test
    with the end of its stderr."""
    if out is not None:
        args = (*args, "--json", str(out))
    out = Path(args[args.index("--json") + 1])
    done = benchmark(name, *args, timeout=timeout)
    assert done.returncode == 0, f"bench.{name} exited {done.returncode}: {done.stderr[-4000:]}"
    return json.loads(out.read_text(encoding="utf-8"))
