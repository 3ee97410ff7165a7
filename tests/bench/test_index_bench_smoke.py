"""Smoke test of ``python -m bench.index_bench`` with tiny sizes on synthetic text (no download).

It checks that the benchmark runs end to end against the test Redis database and writes
every JSON key, its fast window simhashes checked against the library's by the run itself;
it never asserts a speed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import redis

from tests.support.benchmarks import benchmark

pytestmark = pytest.mark.bench

HAN = "天下大势分久必合合久必分周末七国分争并入于秦及秦灭之后楚汉分争又并入于汉中文拼音指纹"
ROW_KEYS = ("n", "load_s", "bytes_per_fingerprint", "single_queries_per_s", "p50_ms", "p99_ms")


def _texts(count: int, chars: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(HAN + "，。") for _ in range(chars)) for _ in range(count)]


def test_tiny_run_writes_every_key(redis_client: redis.Redis, tmp_path: Path) -> None:
    out = tmp_path / "index.json"
    kw = redis_client.connection_pool.connection_kwargs
    url = f"redis://{kw['host']}:{kw['port']}/{kw['db']}"  # the fixture's flushed database
    argv = [
        *("--n", "1500", "--peer-n", "300", "--repeat", "1", "--queries", "200"),
        *("--latency-queries", "40", "--peer-queries", "40", "--batch", "50"),
        *("--redis-url", url, "--permuted", "--cluster", "--json", str(out)),
    ]
    (tmp_path / "texts.json").write_text(json.dumps(_texts(30, 600)), encoding="utf-8")
    done = benchmark("index_bench", *argv, "--texts", str(tmp_path / "texts.json"))
    assert done.returncode == 0, done.stderr[-4000:]

    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["n"] == 1500 and result["peer_n"] == 300
    assert result["checked_windows"] == 64  # each the library's simhash, or the run stops
    for key in ("queries_per_s", "p50_ms", "p99_ms", "skew_cost_ratio"):
        assert result[key] > 0, key
    assert isinstance(result["bytes_per_fingerprint"], float)  # a server-wide delta: any sign
    assert set(result["peers"]) == {"simhash", "simhash_skewed", "datasketch"}
    for name, row in result["rows"].items():
        for key in ROW_KEYS:
            assert row[key] is not None, (name, key)
    assert set(result["rows"]) >= {"uniform", "skewed", "permuted", "cluster1", "cluster3"}
    cluster = result["cluster"]
    assert cluster["one_node"]["stats"]["entries"] == cluster["three_nodes"]["stats"]["entries"]
    assert cluster["batched_ratio"] > 0 and cluster["three_nodes"]["masters"] == 3
    assert all(result["rows"][name]["queries_per_s"] > 0 for name in ("uniform", "skewed"))
    assert result["rows"]["uniform"]["stats"]["entries"] > 0
    assert redis_client.keys("fptrack-bench*") == []  # the benchmark cleans up after itself
    printed = done.stdout
    assert "PASS" in printed or "MISS" in printed
    assert "datasketch MinHashLSH" in printed
    assert "3-master / 1-master cluster" in printed
