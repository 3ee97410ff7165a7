"""Smoke test of ``bench/webfont_bench.py``: one sample chapter hidden in Droid Sans
Fallback both ways, read against Zen Hei; the JSON carries every figure, the decoder reads
the chapter at the issue's target and the outline hash, which only knows the reference's
very outlines, reads almost nothing. It never asserts a speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import webfont_bench

pytestmark = pytest.mark.bench


def test_quick_run_reads_the_hidden_chapter(tmp_path: Path) -> None:
    out = tmp_path / "webfont.json"
    argv = ["--quick", "--typefaces", "droid", "--json", str(out)]
    webfont_bench.main(argv, texts=webfont_bench.sample_chapters()[2:3])
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["args"]["chapters"] == 1 and result["args"]["references"] == ["zenhei"]
    reference = result["references"]["zenhei"]
    assert reference["chars"] > 6700 and reference["bytes"] > 1_000_000
    assert [p["variant"] for p in result["pairs"]] == ["pua-woff2", "shuffle-ttf"]
    for pair in result["pairs"]:
        assert pair["pages_at_target"] == 1 and pair["right"]["min"] >= 0.97
        assert pair["decode_s"]["median"] > 0 and pair["cached_s"]["median"] >= 0
        assert pair["peers"]["outline-hash"]["right"]["mean"] < 0.1
        assert 0 < pair["peers"]["bitmap-nn"]["right"]["mean"] < pair["right"]["mean"]


def test_a_typeface_not_installed_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        webfont_bench.main(["--typefaces", "comic-sans"])
    assert exit_.value.code == 2
    assert "typeface comic-sans is not installed (known: zenhei" in capsys.readouterr().err
