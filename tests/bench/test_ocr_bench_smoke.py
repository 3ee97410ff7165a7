"""Smoke test of ``bench/ocr_bench.py`` on synthetic corpus text (no download): the default
engine reads the drawn chapters in its worker, the figures are in the JSON, and the matcher
finds every sample chapter read and nothing in the corpus chapters. It never asserts a
speed. Also the edit distance against the textbook dynamic programme."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.sites import text_images
from tests.support.benchmarks import run_benchmark

pytestmark = pytest.mark.bench


def textbook_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def test_edit_distance_is_levenshtein() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        a = "".join(rng.choice("灯塔己已ab") for _ in range(rng.randrange(0, 90)))
        b = "".join(rng.choice("灯塔己已ab") for _ in range(rng.randrange(0, 90)))
        assert text_images.edit_distance(a, b) == textbook_distance(a, b), (a, b)


def test_quick_run_reads_and_matches_the_chapters(tmp_path: Path) -> None:
    out = tmp_path / "ocr.json"
    argv = ["--quick", "--engines", "rapidocr", "--misreads", "0.1", "--synthetic", "20:3"]
    result = run_benchmark("ocr_bench", *argv, out=out)
    assert result["images"] == 4 and result["args"]["styles"] == ["s-20-png", "t-20-png"]
    rapid = result["engines"]["rapidocr"]
    assert rapid["refused"] == [] and rapid["stable"]
    assert rapid["accuracy"]["s-20-png"]["cer"] < 0.05
    assert rapid["accuracy"]["all"]["cer_t2s"] < 0.10
    assert rapid["cpu_s_per_image"]["median"] > 0 and rapid["peak_mb"] > 0
    assert rapid["install_mb"] > 0
    for name in ("drawn", "lookalikes", "misread-0.1", "rapidocr"):
        matching = result["matching"][name]
        assert (matching["found"], matching["positives"]) == (2, 2), name
        assert matching["false_pairs"] == 0, matching["false_pair_list"]
