"""Smoke test of ``python -m bench.fingerprint_bench`` on a tiny synthetic corpus (no download).

It checks that the benchmark runs end to end and writes every JSON key with positive
numbers; it never asserts a speed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.support.benchmarks import benchmark

pytestmark = pytest.mark.bench

HAN = "天下大势分久必合合久必分周末七国分争并入于秦及秦灭之后楚汉分争又并入于汉中文拼音指纹"
TOP_KEYS = (
    "fptrack_mb_s",
    "fptrack_per_doc_mb_s",
    "fptrack_numpy_mb_s",
    "fptrack_numpy_per_doc_mb_s",
    "numpy_ratio",
    "compiled",
    "compiled_over_numpy",
    "first_call",
    "peer_pipeline_mb_s",
    "ratio",
    "stages",
    "size_mb",
    "documents",
    "repeat",
    "python",
    "machine",
)
STAGES = (
    "normalize",
    "pinyin_initials",
    "pinyin_windows",
    "pinyin_anchored",
    "simhash",
    "minhash_oph",
    "minhash_affine32",
    "winnow",
    "bloom",
    "sentences",
)


def _synthetic_docs(count: int, chars: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    docs = []
    for _ in range(count):
        sentences = []
        while sum(map(len, sentences)) < chars:
            body = "".join(rng.choice(HAN) for _ in range(rng.randint(6, 30)))
            sentences.append(body + rng.choice("，。！？\n"))
        docs.append("".join(sentences))
    return docs


def test_quick_run_writes_every_key(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    docs = _synthetic_docs(count=12, chars=300)
    (tmp_path / "docs.json").write_text(json.dumps(docs), encoding="utf-8")
    argv = ["--quick", "--repeat", "1", "--batch", "5", "--peer-size-mb", "0.002"]
    argv.append("--no-first-call")  # fresh processes compiling the kernels: seconds
    argv += ["--docs", str(tmp_path / "docs.json"), "--json", str(out)]
    done = benchmark("fingerprint_bench", *argv)
    assert done.returncode == 0, done.stderr[-4000:]

    result = json.loads(out.read_text(encoding="utf-8"))
    for key in TOP_KEYS:
        assert key in result, key
    for key in ("fptrack_mb_s", "fptrack_per_doc_mb_s", "peer_pipeline_mb_s", "ratio", "size_mb"):
        assert result[key] > 0, key
    assert result["documents"] == len(docs)
    assert result["repeat"] == 1
    assert result["python"] and result["machine"]
    assert result["peers_on_prefix"] and 0 < result["peer_documents"] < len(docs)
    assert set(result["stages"]) == set(STAGES)
    assert result["first_call"] is None
    for name, stage in result["stages"].items():
        assert {"mb_s", "peer_mb_s", "ratio", "numpy_mb_s", "compiled_mb_s"} <= set(stage), name
        assert stage["mb_s"] > 0 and stage["numpy_mb_s"] > 0, name
        if result["compiled"] and name not in ("pinyin_initials", "minhash_affine32", "bloom"):
            assert stage["compiled_mb_s"] > 0, name
        if stage["peer_mb_s"] is None:
            assert stage["ratio"] is None, name
        else:
            assert stage["peer_mb_s"] > 0 and stage["ratio"] > 0, name
    assert result["stages"]["minhash_affine32"]["peer_mb_s"] is not None
    assert result["stages"]["pinyin_initials"]["peer_mb_s"] is not None

    printed = done.stdout
    assert "PASS" in printed or "MISS" in printed
    assert "PEERS MEASURED ON A PREFIX" in printed
