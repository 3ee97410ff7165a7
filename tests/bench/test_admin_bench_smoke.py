"""Smoke test of ``bench/admin_bench.py`` at tiny sizes (no server needed).

The benchmark runs for real: two mongomock stores (one written through
``store.matches.upsert_match``, one bulk-inserted and recounted), the Flask app served by werkzeug
on 127.0.0.1, a logged-in ``http.client`` session, and the naive peer. It checks the JSON
and the benchmark's own checks (recount finds the tallies the writes kept, the naive peer
finds the dashboard's figures); it never asserts a speed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.benchmarks import benchmark

pytestmark = pytest.mark.bench

SMALL, LARGE = 200, 1500
ROW_KEYS = ("p50_ms", "p95_ms", "p99_ms", "summary_ms", "naive_ms", "naive_over_tallies")


def test_quick_run_writes_every_key(tmp_path: Path) -> None:
    out = tmp_path / "admin.json"
    argv = [
        *("--quick", "--small", str(SMALL), "--large", str(LARGE)),
        *("--sites", "8", "--works", "60", "--requests", "6", "--warmup", "1"),
        *("--json", str(out)),
    ]
    done = benchmark("admin_bench", *argv)
    assert done.returncode == 0, done.stderr[-4000:]

    data = json.loads(out.read_text(encoding="utf-8"))
    for key in ("dashboard_p95_ms_10k", "dashboard_p95_ms_1m", "p95_ratio", "naive_growth"):
        assert isinstance(data[key], float) and data[key] > 0, key
    assert data["p95_ratio"] == pytest.approx(
        data["dashboard_p95_ms_1m"] / data["dashboard_p95_ms_10k"]
    )
    assert set(data["met"]) == set(data["targets"]) == {"difference", "p95_ms"}
    assert data["sizes"]["10k"] == SMALL and data["sizes"]["1m"] == LARGE
    assert data["recount_agrees"] is True
    for slot, matches in (("10k", SMALL), ("1m", LARGE)):
        row = data["per_size"][slot]
        for key in ROW_KEYS:
            assert row[key] > 0, (slot, key)
        assert row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"]
        assert row["naive_agrees"] is True, slot
        build = row["build"]
        assert build["matches"] == matches and build["works"] == 60
        assert 0 < build["pages"] <= matches and build["tallies"] > 0
    printed = done.stdout
    assert "PASS" in printed or "MISS" in printed
    assert "naive" in printed
