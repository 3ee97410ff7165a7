"""Smoke test of ``bench/archive_bench.py`` on synthetic text (no download): every page's
WARC file is written, verified and stored (a folder, and GridFS in the SecantusDB server the
benchmark starts) and stamped by a real local TSA, one token per file and one for all,
each token checked beside ``openssl ts -verify``; the JSON holds the figures and ratios. It
never asserts a speed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.benchmarks import run_benchmark

pytestmark = pytest.mark.bench


def test_quick_run_writes_the_figures(tmp_path: Path) -> None:
    out = tmp_path / "archive.json"
    result = run_benchmark(
        "archive_bench", "--quick", "--pages", "30", "--synthetic", "60:3", out=out
    )
    summary = result["summary"]
    assert result["args"] == {"pages": 30, "runs": 1, "seed": 0}
    assert summary["pages"]["median"] == 30
    for key in ("warc_ms", "gzip_ms", "verify_ms", "put_dir_ms", "put_gridfs_ms"):
        assert summary[key]["median"] > 0, key
    # a WARC file holds the gzipped body and the headers of both records
    assert summary["gzip_bytes"]["median"] < summary["warc_bytes"]["median"]
    assert summary["ratios"]["warc_over_gzip_bytes"] > 1
    for key in ("stamp_per_file_ms", "stamp_crawl_ms", "check_token_ms", "openssl_verify_ms"):
        assert summary[key]["median"] > 0, key
    assert summary["list_bytes_per_file"]["median"] == 65  # a hex digest and a newline
    assert summary["token_bytes"]["median"] > 500  # signed, with the TSA's certificate
    assert "check_token_over_openssl" in summary["ratios"]
