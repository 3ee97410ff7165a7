"""Smoke test of ``bench/pipeline_bench.py`` at tiny sizes on synthetic text (no download).

The whole benchmark runs for real: a site server, a SecantusDB server it starts, two Celery
worker processes on the Redis broker and that store, the in-process crawls and an ``fptrack
scan`` subprocess. It checks the JSON and that the pipeline did its work (every page
processed, copies found, no task failure); it never asserts a speed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from tests.servers import session
from tests.support.benchmarks import benchmark, run_benchmark

pytestmark = pytest.mark.bench

BROKER_URL, INDEX_URL = session.session().redis_url(2), session.session().redis_url(3)
PAGES, WORKS, SCAN_PAGES, SCAN_WORKS = 40, 8, 20, 6


@pytest.fixture
def databases() -> None:
    for url in (BROKER_URL, INDEX_URL):
        redis.Redis.from_url(url).flushdb()


def test_quick_run_processes_every_page_and_writes_json(databases: None, tmp_path: Path) -> None:
    out = tmp_path / "pipeline.json"
    argv = [
        *("--quick", "--pages", str(PAGES), "--works", str(WORKS)),
        *("--scan-pages", str(SCAN_PAGES), "--scan-works", str(SCAN_WORKS)),
        *("--broker-url", BROKER_URL, "--redis-url", INDEX_URL, "--synthetic", "80"),
        *("--drain-timeout", "180"),
        *("--hiding-costs", "css,render", "--chromium", str(tmp_path / "no-chromium")),
    ]
    data = run_benchmark("pipeline_bench", *argv, out=out)
    for key in ("pages_per_s", "bare_pages_per_s", "ratio", "scan_700_s"):
        assert isinstance(data[key], float) and data[key] > 0, key
    assert data["ratio"] == pytest.approx(data["pages_per_s"] / data["bare_pages_per_s"])
    assert (
        set(data["met"])
        == set(data["targets"])
        == {
            "ratio",
            "scan_700_s",
            "commands_per_page",
            "scan_commands_per_page",
            "crawl_cpu_ratio",
        }
    )
    # Every process's store commands were recorded: the crawl's ingest and the workers'.
    commands = data["commands"]
    assert data["commands_per_page"] == commands["per_page"] > 1
    kinds = commands["by_kind"]
    assert kinds["insert pages"] > 0  # the ingest's new pages, inserted in bulk
    # the workers' processed marks, each with the page's fingerprints (no write of its own)
    marks = [s for s in commands["shapes_per_page"] if '"content_hash": "str"' in s]
    assert marks and all(s.startswith("update pages") for s in marks)
    assert "update fingerprints" not in kinds
    assert commands["per_page"] <= commands["server_per_page"]  # the server saw them all
    assert commands["slowest_ms"] and all(ms >= 0 for ms in commands["slowest_ms"].values())

    # the CPU each part spent a page, read from /proc: none idle through the round
    cpu = data["cpu_ms_per_page"]
    assert set(cpu) == {"crawl", "store", "workers", "site", "redis"}
    assert cpu["crawl"] > 0 and cpu["store"] > 0 and cpu["workers"] > 0
    assert data["bare_cpu_ms_per_page"] > 0
    assert data["crawl_cpu_ratio"] == pytest.approx(cpu["crawl"] / data["bare_cpu_ms_per_page"])

    # the costs of copies that hide, each by its own benchmark; one that cannot run says why
    costs = data["hiding_costs"]
    assert set(costs) == {"css", "render"}
    assert set(costs["css"]["ms_per_page"]) == {"plain", "styled", "hidden"}
    assert all(ms > 0 for ms in costs["css"]["ms_per_page"].values())
    assert costs["css"]["plain_ratio"] > 0 and isinstance(costs["css"]["plain_met"], bool)
    assert costs["render"] == {"error": f"no browser at {tmp_path / 'no-chromium'} (--chromium)"}

    (one,) = data["rounds"]
    sizes = data["sizes"]
    assert PAGES <= sizes["pages"] < PAGES * 1.5  # split pages are two records
    assert one["bare"]["pages"] == one["end_to_end"]["pages"] == sizes["pages"]
    sanity = data["sanity"]
    assert sanity["failures"] == [] and sanity["pending_left"] == 0
    assert sanity["copies"] > 0 and sanity["copies_found"] >= 0.9 * sanity["copies"]
    assert sanity["matches"] >= sanity["copies_found"]

    (scan,) = data["scans"]
    assert scan["pages"] == sizes["scan_pages"] >= SCAN_PAGES and scan["works"] == SCAN_WORKS
    # the scan's mongomock calls were counted: its page upserts, reads and processed marks
    assert data["scan_commands_per_page"] == scan["commands"]["per_page"] > 1
    scanned = scan["commands"]["by_kind"]
    assert scanned["update pages"] > 0 and scanned["find pages"] > 0  # batched: under one a page
    # The benchmark cleans up after itself: no key left in either database.
    for url in (BROKER_URL, INDEX_URL):
        assert redis.Redis.from_url(url).dbsize() == 0


def test_an_unknown_hiding_cost_is_refused() -> None:
    done = benchmark("pipeline_bench", "--quick", "--hiding-costs", "css,tarot")
    assert done.returncode == 2 and "unknown part(s) tarot" in done.stderr, done.stderr


def test_a_database_holding_foreign_keys_is_refused(databases: None) -> None:
    client = redis.Redis.from_url(INDEX_URL)
    client.set("someone-else:key", "1")
    try:
        argv = ["--quick", "--synthetic", "20", "--pages", "4", "--works", "2"]
        done = benchmark(
            "pipeline_bench", *argv, "--broker-url", BROKER_URL, "--redis-url", INDEX_URL
        )
        assert done.returncode == 1 and "not the benchmark's" in done.stderr, done.stderr
        assert client.get("someone-else:key") == b"1"
    finally:
        client.flushdb()
