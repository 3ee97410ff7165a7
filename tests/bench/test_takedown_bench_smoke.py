"""Smoke test of ``bench/takedown_bench.py`` on synthetic text (no download): five local
sites on their own loopback addresses carry out their policies, every due recheck runs over
HTTP, and the measured figures equal the truth the sites were told. It never asserts a speed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.benchmarks import run_benchmark

DAYS = (1.0, 3.0, 7.0, 14.0)
"""The days after a notice the takedown benchmark rechecks on (its ``DAYS``)."""

pytestmark = pytest.mark.bench


def test_quick_run_measures_the_truth(tmp_path: Path) -> None:
    out = tmp_path / "takedowns.json"
    result = run_benchmark("takedown_bench", "--quick", out=out)
    assert result["rechecks"] == 5 * 8 * len(DAYS)
    assert result["state_accuracy"] == 1.0
    for site in result["sites"]:
        assert site["removal_rate"] == pytest.approx(site["truth_removal_rate"]), site
        if site["truth_median_days"] is None:
            assert site["median_days"] is None, site
        else:  # the rechecks run a minute after their day
            assert site["median_days"] == pytest.approx(site["truth_median_days"], abs=0.01), site
    assert result["sites"][-1]["removal_rate"] == 0.0  # the site that ignores its notice
    assert result["recheck_ms"] > 0 and result["peer_get_ms"] > 0
