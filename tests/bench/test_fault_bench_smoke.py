"""Smoke test of ``bench/fault_bench.py --quick`` (synthetic text, nothing downloaded), with
two of its faults: a cluster master restarted empty during a crawl, and SecantusDB killed
while late works are matched in reverse.

The deployment runs for real: a 3-master Redis Cluster, a standalone broker, SecantusDB on
disk, two ``fptrack worker`` processes and ``fptrack beat`` under restart loops. It checks
the JSON and the invariants (nothing lost, retracted or duplicated, nothing pending or left
running, every fault recovered); it never asserts a speed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.benchmarks import run_benchmark

pytestmark = pytest.mark.bench


def test_quick_run_loses_nothing_under_two_faults(tmp_path: Path) -> None:
    out = tmp_path / "faults.json"
    result = run_benchmark("fault_bench", "--quick", "--faults", "master,mongodb", out=out)
    assert result["expected_pairs"] > 0
    assert result["active_expected_at_end"] == result["expected_pairs"]
    for key in ("lost", "retracted", "duplicates", "pending_pages", "runs_left_running"):
        assert result[key] == 0, (key, result)
    assert [f["fault"].split(" (")[0] for f in result["faults"]] == [
        "index master restarted empty",
        "SecantusDB killed and restarted",
    ]
    assert result["all_recovered"], result["faults"]
