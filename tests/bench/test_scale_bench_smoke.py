"""``bench/scale_bench.py --quick`` on its own redis-server and the test MongoDB server:
every planted copy is matched, the figures are positive and written as JSON with the keys
issue 14 names; ``--register`` alone gives wall and CPU seconds, the bench's own servers'
CPU beside them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.benchmarks import run_benchmark

pytestmark = pytest.mark.bench


def test_quick_run_measures_bytes_latency_and_registration(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    data = run_benchmark(
        "scale_bench", "--quick", "--mongo-uri", os.environ["FPTRACK_MONGO_URI"], out=out
    )
    for key in ("bytes_per_char", "page_p50_ms", "page_p99_ms", "pages_per_s", "register_2m_s"):
        assert data[key] > 0, key
    assert data["copies_matched"] == data["copies"] == 10
    assert data["page_p50_ms"] <= data["page_p99_ms"]
    assert data["peer_bytes_per_char"] > 0 and data["peer_segments"] > 0
    assert data["chars"] >= 4 * 20_000


def test_register_only_reports_wall_and_cpu_seconds(tmp_path: Path) -> None:
    data = run_benchmark(
        "scale_bench",
        *("--register", "2", "--novel-chars", "600000", "--novels", "2"),
        *("--mongo-uri", os.environ["FPTRACK_MONGO_URI"]),
        out=tmp_path / "register.json",
    )
    assert len(data["register_runs"]) == 2 and data["novel_chars"] == 600_000
    assert data["register_wall_s"] > 0 and data["register_cpu_s"] > 0
    # the redis-server is the bench's own; the store is the test session's, not read
    assert list(data["register_server_cpu_s"]) == ["redis"]
    used = [run["server_cpu_s"]["redis"] for run in data["register_runs"]]
    # /proc counts in ticks of 10 ms: a novel of 600,000 characters costs Redis a few (one of
    # 200,000 could read 0 since its postings were halved)
    assert min(used) >= 0 and sum(used) > 0
    assert "bytes_per_char" not in data
