"""Smoke test of ``bench/release_bench.py --quick`` (synthetic text, nothing downloaded).

The whole benchmark runs for real: its own redis-server, SecantusDB, a page worker and a
crawl worker (Celery processes), Celery beat sending the incremental crawls, crawls in
``python -m crawler.run`` subprocesses of a novel site served on 127.0.0.1. It checks the
JSON and that the work was done (every chapter matched, the registered chapter matched, the
incremental crawl fetched no chapter page and cost less than the full one); it never
asserts a speed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.benchmarks import run_benchmark

pytestmark = pytest.mark.bench


def test_quick_run_matches_every_released_chapter_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "release.json"
    result = run_benchmark("release_bench", "--quick", out=out)
    assert result["mode"] == "quick" and result["recrawl"] == "every 10s"
    assert result["chapters"] == 2 and result["missed"] == 0
    assert 0 < result["p50_s"] <= result["p90_s"] <= result["max_s"]
    assert result["register_s"] > 0
    [details] = result["details"]
    full, quiet = details["full"], details["incremental"]
    assert full["result"]["pages"] == 9  # 8 chapters and the one registered later
    assert quiet["result"] == {"site": "novel", "new": 0, "changed": 0, "unchanged": 0}
    assert quiet["requests"] < full["requests"] and quiet["bytes"] < full["bytes"]
    assert result["ratio"]["requests"] < 1
    assert result["recrawls"] >= 1 and details["recrawl_new"] == 2  # each found once
