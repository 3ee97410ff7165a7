"""Smoke test of ``bench/hostile_bench.py``: real ``fptrack scan`` subprocesses on two cases
of the hostile site, one with its peers, and on the bad-works corpus; checks the JSON and the
benchmark's own verdicts, never a speed or a memory figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.benchmarks import run_benchmark

pytestmark = pytest.mark.bench


def test_two_cases_write_every_key(tmp_path: Path) -> None:
    out = tmp_path / "hostile.json"
    data = run_benchmark("hostile_bench", "--runs", "1", "--cases", "gzip,gzip-bomb", out=out)
    assert data["all_ok"] and set(data["cases"]) == {"gzip", "gzip-bomb", "bad-works"}
    for row in data["cases"].values():
        for key in ("wall_s", "scan_rss_mb", "tree_rss_mb"):
            assert row[key]["min"] <= row[key]["median"] <= row[key]["max"], key
        assert row["tree_rss_mb"]["max"] >= row["scan_rss_mb"]["max"] > 0
    peer = data["cases"]["gzip"]["peer"]
    assert peer["fptrack"]["seconds"] > 0 and peer["trafilatura"]["seconds"] > 0
    assert "peer" not in data["cases"]["gzip-bomb"]  # not a copy: nothing to extract
    assert data["cases"]["gzip-bomb"]["exit"] == [1]  # too large: an error of the scan
    assert data["max_tree_rss_mb"] == max(r["tree_rss_mb"]["max"] for r in data["cases"].values())


def test_a_template_bomb_is_refused_with_its_reason(tmp_path: Path) -> None:
    """One admin case of issue 23: the admin served as ``fptrack scan --serve`` refuses a
    template joining a thousand strings of a million characters, and says why."""
    out = tmp_path / "bomb.json"
    data = run_benchmark(
        "hostile_bench", "--runs", "1", "--cases", "bomb-join", "--no-works", out=out
    )
    assert data["all_ok"] and set(data["cases"]) == {"bomb-join"}
    row = data["cases"]["bomb-join"]
    assert row["exit"] == [400]  # the form's answer: refused
    assert "the previous one is kept" in row["reason"]
    assert "over 1,000,000 characters" in row["reason"]
    assert row["child_mb"]["max"] > 0
    assert row["tree_rss_mb"]["max"] >= row["scan_rss_mb"]["max"] > 0


def test_the_outbound_cases_carry_their_figures(tmp_path: Path) -> None:
    """Two outbound cases (:mod:`bench.hostile_outbound`): discovery from a watched page that
    announces an internal address reaches it only when allowed, and a webhook with an IPv6
    zone is refused with a reason, never a 500."""
    out = tmp_path / "outbound.json"
    cases = "discover-internal,webhook-zone"
    data = run_benchmark("hostile_bench", "--runs", "1", "--cases", cases, "--no-works", out=out)
    assert data["all_ok"] and set(data["cases"]) == {"discover-internal", "webhook-zone"}
    found = data["cases"]["discover-internal"]
    assert (found["requests_internal"], found["candidates_stored"]) == (0, 0)
    assert found["control_requests"] > 0 and found["exit"] == [0]
    assert "127.0.0.3 is a private, loopback or reserved address" in found["reason"]
    zone = data["cases"]["webhook-zone"]
    assert zone["exit"] == [400] and "fe80::1%lo is a private" in zone["reason"]


def test_a_scan_with_no_usable_work_fetches_no_page(tmp_path: Path) -> None:
    """A case of people's work: the scan of a works folder whose only file is empty is
    refused before its crawl, the file named, no page fetched."""
    out = tmp_path / "empty.json"
    argv = ["--runs", "1", "--cases", "empty-work-scan", "--no-works", "--json", str(out)]
    data = run_benchmark("hostile_bench", *argv)
    assert data["all_ok"] and set(data["cases"]) == {"empty-work-scan"}
    row = data["cases"]["empty-work-scan"]
    assert row["exit"] == [1] and row["fetched"]["max"] == 0
    assert "empty.txt: work 'empty' has 0 content characters" in row["reason"]


def test_a_notice_names_the_unreviewed_match_only_when_chosen(tmp_path: Path) -> None:
    """A notice case: the admin served as ``fptrack scan --serve`` names the confirmed match
    only, and the unreviewed one too when chosen (``notice-placeholders`` shares its
    scan, login and review; tests/web and tests/browser test the refusal itself)."""
    out = tmp_path / "notices.json"
    case = "notice-unreviewed"
    data = run_benchmark("hostile_bench", "--runs", "1", "--cases", case, "--no-works", out=out)
    assert data["all_ok"] and set(data["cases"]) == {case}
    row = data["cases"][case]
    assert row["exit"] == [200] and "1 unreviewed left out" in row["reason"]
    assert row["named"] == {"matched": 2, "confirmed": 1, "default": 1, "chosen": 2}


def test_refused_downloads_and_a_forbidden_page_are_named(tmp_path: Path) -> None:
    """The crawl case of the trust issue: a zip bomb, 5,001 members, ZIPs nested three deep,
    a bad CRC-32 and a page robots.txt forbids, each named by the scan with its reason."""
    out = tmp_path / "refused.json"
    data = run_benchmark(
        "hostile_bench", "--runs", "1", "--cases", "refused-named", "--no-works", out=out
    )
    row = data["cases"]["refused-named"]
    assert data["all_ok"] and row["exit"] == [0], row
    for words in ("a zip bomb", "more than 5,000 members", "nested more than 2 deep"):
        assert words in row["reason"]
    assert "Bad CRC-32" in row["reason"] and "robots.txt forbids" in row["reason"]
    assert row["tree_rss_mb"]["max"] >= row["scan_rss_mb"]["max"] > 0
