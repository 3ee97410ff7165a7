"""Smoke test of ``bench/eval.py`` on a quick synthetic corpus (no download).

It checks that a run writes every JSON key with figures in range, that fptrack's run finds
copies and leaves no key behind, the scoring on known answers, and the simhash peer on
heavy features; it never asserts an accuracy target.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.servers import session
from tests.sites.eval_corpus import (
    CLASSES,
    NEGATIVE_KINDS,
    Corpus,
    build_corpus,
    synthetic_texts,
)
from tests.support.benchmarks import benchmark

pytestmark = pytest.mark.bench

TEST_REDIS_URL = session.session().redis_url(0)
METRIC_KEYS = ("precision", "recall", "f1", "per_class", "false_positives", "tp", "fp", "fn")


@pytest.fixture(scope="module")
def small() -> Corpus:
    """6 works, 2 pages each, 2 negatives per kind."""
    return build_corpus(synthetic_texts(40), 6, 1, 2, 2)


def _check_metrics(metrics: dict[str, Any]) -> None:
    for key in METRIC_KEYS:
        assert key in metrics, key
    for key in ("precision", "recall", "f1"):
        assert 0.0 <= metrics[key] <= 1.0
    assert set(metrics["per_class"]) == set(CLASSES)
    assert all(v is None or 0.0 <= v <= 1.0 for v in metrics["per_class"].values())
    assert set(metrics["false_positives"]) == {*NEGATIVE_KINDS, "wrong_work"}
    assert metrics["seconds"] >= 0


def test_quick_run_writes_the_json(tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    argv = ["--quick", "--json", str(out), "--redis-url", TEST_REDIS_URL, "--synthetic", "80"]
    done = benchmark("eval", *argv)
    assert done.returncode == 0, done.stderr[-4000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert set(data["peers"]) == {"minhash_lsh", "minhash_lsh_ensemble", "simhash"}
    for metrics in data["peers"].values():
        _check_metrics(metrics)
    sizes = data["corpus"]
    assert sizes["works"] == 11 and sizes["pages"] == sizes["positive_pages"] + 12
    assert set(sizes["pages_per_class"]) == set(CLASSES)
    printed = done.stdout
    assert "OpenCC t2s" in printed and "minhash_lsh_ensemble" in printed
    if data["fptrack_available"]:
        _check_metrics(data)
        assert data["tp"] > 0  # its matches mapped back to the corpus's page and work ids
        assert set(data["targets"]) and all(isinstance(v, bool) for v in data["targets"].values())
        client = redis.Redis.from_url(TEST_REDIS_URL)
        assert not list(client.scan_iter(match="fptrack-eval-*"))
    else:
        assert data["precision"] is None and data["fptrack_error"]
        assert "fptrack: UNAVAILABLE" in printed


def test_peers_only_skips_fptrack(small: Corpus, tmp_path: Path) -> None:
    argv = ["--works", "6", "--pages-per-work", "2", "--peers-only", "--synthetic", "40"]
    done = benchmark("eval", *argv, "--json", str(tmp_path / "eval.json"))
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads((tmp_path / "eval.json").read_text(encoding="utf-8"))
    assert result["fptrack_available"] is False and "--peers-only" in result["fptrack_error"]
    assert result["corpus"]["works"] == 6
    assert "UNAVAILABLE" in done.stdout


def test_score_on_known_answers(small: Corpus) -> None:
    truth = small.truth()
    perfect = small.score(set(truth))
    assert perfect["precision"] == perfect["recall"] == perfect["f1"] == 1.0
    assert all(v == 1.0 for v in perfect["per_class"].values())
    assert small.score(set())["recall"] == 0.0
    negatives = {p.label: p.id for p in small.pages if not p.positive}
    copy = next(p for p in small.pages if p.label == "exact")
    other = next(w.id for w in small.works if w.id not in copy.works)
    wrong = {(negatives[k], other) for k in NEGATIVE_KINDS} | {(copy.id, other)}
    half = set(sorted(truth)[: len(truth) // 2])
    scored = small.score(half | wrong)
    assert scored["tp"] == len(half) and scored["fp"] == 4
    assert scored["fn"] == len(truth) - len(half)
    assert scored["false_positives"] == {k: 1 for k in (*NEGATIVE_KINDS, "wrong_work")}
    assert scored["precision"] == pytest.approx(len(half) / (len(half) + 4))


def test_simhash_peer_survives_heavy_features(tmp_path: Path) -> None:
    """PyPI simhash 2.1.2 overflows a uint8 on a feature weighing more than 255 (a line
    repeated through a text): the benchmark's peer widens it, and the run goes through."""
    texts = tmp_path / "texts.json"
    heavy = [text + "重复" * 400 for text in synthetic_texts(40)]
    texts.write_text(json.dumps(heavy, ensure_ascii=False), encoding="utf-8")
    argv = ["--works", "6", "--pages-per-work", "2", "--peers-only", "--texts", str(texts)]
    done = benchmark("eval", *argv, "--json", str(tmp_path / "eval.json"))
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads((tmp_path / "eval.json").read_text(encoding="utf-8"))
    assert result["peers"]["simhash"]["tp"] > 0


def test_bad_arguments() -> None:
    done = benchmark("eval", "--works", "1")
    assert done.returncode == 2 and "usage: " in done.stderr  # argparse's error
