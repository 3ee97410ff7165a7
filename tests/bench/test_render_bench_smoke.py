"""Smoke test of ``bench/render_bench.py`` on synthetic text (no download): the site crawled
as served, its script-built copy through Chromium, with automatic render only, and without
either; every page's text is found in the first three crawls and none in the fourth. It never
asserts a speed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sites.script_site import chromium
from tests.support.benchmarks import run_benchmark

pytestmark = pytest.mark.bench


def test_quick_run_finds_the_text_only_when_rendered(tmp_path: Path) -> None:
    out = tmp_path / "render.json"
    argv = ["--quick", "--pages", "12", "--chromium", chromium(), "--synthetic", "40:5"]
    result = run_benchmark("render_bench", *argv, out=out)
    summary, pages = result["summary"], result["pages_with_text"]
    assert pages >= 12
    assert summary["plain"]["with_text"]["median"] == pages
    assert summary["rendered"]["with_text"]["median"] == pages
    assert summary["auto"]["with_text"]["median"] == pages
    assert summary["script_plain"]["with_text"]["median"] == 0
    assert summary["ratio_rendered_over_plain_s_per_page"] > 0
