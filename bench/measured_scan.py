"""``fptrack scan`` run as a user runs it (the console command, in a subprocess), its wall
time and peak memory measured: the hostile benchmark's scans (:mod:`bench.hostile_bench`,
:mod:`bench.hostile_review`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.proc_memory import PeakMemory

ROOT = Path(__file__).resolve().parents[1]
WORKS = ROOT / "samples" / "works"
TARGET_RSS_MB = 1024
"""Every hostile scan's process tree stays under this (1 GiB)."""


def run_scan(
    url: str, out: Path, works: Path = WORKS, max_pages: int = 200, deadline: int = 120
) -> dict[str, Any]:
    """One ``fptrack scan`` of ``url`` (a URL, or a folder to serve) against ``works``: wall
    time, peak RSS of the process and of its tree."""
    site = ["--site", url] if "://" in url else ["--site-dir", url]
    command = [
        sys.executable, "-c", "import sys; from admin.cli import main; sys.exit(main())",
        "scan", "--works", str(works), *site,
        "--json", str(out), "--max-pages", str(max_pages), "--deadline", str(deadline),
    ]  # fmt: skip
    started = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "FPTRACK_REDIS_URL"}
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    with PeakMemory(proc.pid) as peak:
        stderr = proc.stderr.read() if proc.stderr else ""
        proc.wait()
        wall = time.perf_counter() - started
    return {
        "wall_s": wall,
        "scan_rss_mb": peak.own,
        "tree_rss_mb": max(peak.own, peak.tree),
        "exit": proc.returncode,
        "stderr": stderr.strip().splitlines()[-3:],
        "log": stderr,
    }
