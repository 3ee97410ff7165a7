"""``bench/scale_sim.py --quick`` runs on a 3-master cluster and the test MongoDB server,
finds the copies it planted, and writes measured and extrapolated figures as JSON."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.benchmarks import run_benchmark

pytestmark = pytest.mark.bench


def test_quick_run_measures_and_extrapolates(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    data = run_benchmark(
        "scale_sim", "--quick", "--mongo-uri", os.environ["FPTRACK_MONGO_URI"], out=out
    )
    m, t = data["measured"], data["target"]
    assert m["copies"] > 0 and m["matches"] >= m["copies"]  # every planted copy found
    assert m["work_chars"] >= 3 * 30_000 and m["masters"] == 3
    for key in ("redis_bytes_per_work_char", "redis_bytes_per_page", "mongo_bytes_per_page"):
        assert m[key] > 0, key
    assert 0 < m["page_p50_ms"] <= m["page_p99_ms"]
    # the extrapolation is the measured costs times the target's items
    expected = m["redis_bytes_per_work_char"] * 2e10 + m["redis_bytes_per_page"] * 1e9
    assert abs(t["redis_gib"] * 2**30 - expected) < 1e-6 * expected
    assert t["redis_nodes"] >= 1 and t["mongo_shards"] >= 1 and t["worker_machines"] >= 1
