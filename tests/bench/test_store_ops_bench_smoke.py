"""Smoke test of ``bench/store_ops_bench.py``: the page writes run for real on the SecantusDB
server it starts, with and without the pages' indexes, and the JSON holds each operation's
CPU and ratio. It never asserts a speed, only that the indexed writes cost the server some
CPU (read from ``/proc``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.benchmarks import run_benchmark

OPERATIONS = {"insert", "upsert", "conditional mark", "mark by _id"}
"""The operations of ``bench/store_ops_bench.py`` (its ``OPERATIONS``)."""

pytestmark = pytest.mark.bench


def test_a_small_run_writes_each_operation_s_cost(tmp_path: Path) -> None:
    out = tmp_path / "store_ops.json"
    result = run_benchmark("store_ops_bench", "--docs", "200", "--runs", "1", out=out)
    figures = result["ms_per_op"]
    assert result["sizes"] == {"docs": 200, "runs": 1, "text_chars": 3000}
    for kind in ("indexed", "plain", "indexed_over_plain"):
        assert set(figures[kind]) == OPERATIONS, kind
    assert all(v >= 0 for kind in ("indexed", "plain") for v in figures[kind].values())
    assert figures["indexed"]["upsert"] > 0 and figures["indexed"]["conditional mark"] > 0
