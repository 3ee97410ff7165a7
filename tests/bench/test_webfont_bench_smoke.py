"""Smoke test of ``bench/webfont_bench.py``: one sample chapter hidden in Droid Sans
Fallback both ways, read against Zen Hei; the JSON carries every figure, the decoder reads
the chapter at the issue's target and the outline hash, which only knows the reference's
very outlines, reads almost nothing. It never asserts a speed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.benchmarks import benchmark, run_benchmark

pytestmark = pytest.mark.bench


def test_quick_run_reads_the_hidden_chapter(tmp_path: Path) -> None:
    out = tmp_path / "webfont.json"
    argv = ["--quick", "--typefaces", "droid", "--skip", "2", "--chapters", "1"]  # the third
    result = run_benchmark("webfont_bench", *argv, out=out)
    assert result["args"]["chapters"] == 1 and result["args"]["references"] == ["zenhei"]
    reference = result["references"]["zenhei"]
    assert reference["chars"] > 6700 and reference["bytes"] > 1_000_000
    assert [p["variant"] for p in result["pairs"]] == ["pua-woff2", "shuffle-ttf"]
    for pair in result["pairs"]:
        assert pair["pages_at_target"] == 1 and pair["right"]["min"] >= 0.97
        assert pair["decode_s"]["median"] > 0 and pair["cached_s"]["median"] >= 0
        assert pair["peers"]["outline-hash"]["right"]["mean"] < 0.1
        assert 0 < pair["peers"]["bitmap-nn"]["right"]["mean"] < pair["right"]["mean"]


def test_a_typeface_not_installed_is_a_one_line_error() -> None:
    done = benchmark("webfont_bench", "--typefaces", "comic-sans")
    assert done.returncode == 2
    assert "typeface comic-sans is not installed (known: zenhei" in done.stderr
