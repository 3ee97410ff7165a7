"""Smoke test of the ``hiding`` shape of ``bench/eval_sites.py`` (tests/sites/hiding_shape.py):
four of the CSS techniques' sites on quick sizes (an external stylesheet the spider fetches
with the page, a ``<style>`` block, white ``<font>`` noise, off-screen noise), scanned for
real by one ``fptrack scan``; every chapter of each registered novel found, disguised or
plain, and no page of the unregistered novels reported. Each technique has its figure in
the benchmark itself, and each way of hiding its unit test (tests/crawler/test_visible.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.servers import session
from tests.sites.eval_corpus import synthetic_texts
from tests.sites.hiding_shape import CHAPTERS, FILLERS, TECHNIQUES, hiding_shape, technique
from tests.support.benchmarks import run_benchmark

pytestmark = pytest.mark.bench

CSS = [name for name, where in TECHNIQUES.items() if where.startswith("tests.sites.hiding_css")]
SCANNED = ["css-external", "css-style-block", "font-white", "offscreen"]


def test_every_css_technique_disguises_a_page_with_files_of_its_own() -> None:
    rng = random.Random(0)
    for name in CSS:
        first = technique(name)("第一章 天地", "天地玄黄宇宙洪荒。\n日月盈昃辰宿列张。", rng)
        second = technique(name)("第一章 天地", "天地玄黄宇宙洪荒。\n日月盈昃辰宿列张。", rng)
        assert first.html != second.html and "<h1>第一章 天地</h1>" in first.html
        assert not set(first.files) & set(second.files)
        assert all(path.startswith("/") for path in first.files)
    shape = hiding_shape(synthetic_texts(160), 0, quick=True, techniques=CSS[:2])
    assert [s.name for s in shape.sites] == [f"hiding-{n}" for n in CSS[:2]]
    for site in shape.sites:
        chapters = [c for (s, _), c in shape.chapters.items() if s == site.name]
        assert len(chapters) == CHAPTERS[1] + FILLERS[1]
        assert {c.served for c in chapters if c.work} == {"plain", "disguised"}
        assert {c.served for c in chapters if not c.work} == {"disguised"}


def test_quick_hiding_run_finds_every_chapter_and_no_false_pair(tmp_path: Path) -> None:
    out = tmp_path / "hiding.json"
    argv = ["--quick", "--shapes", "hiding", "--techniques", ",".join(SCANNED),
            "--synthetic", "160", "--redis-url", session.session().redis_url(0)]  # fmt: skip
    result = run_benchmark("eval_sites", *argv, out=out)
    hiding = result["hiding"]
    assert list(hiding["techniques"]) == SCANNED and hiding["exit_status"] == 0
    for name, row in hiding["techniques"].items():
        assert row["disguised"] == 2 and row["plain"] == 1 and row["unregistered"] == 2, name
    failed = [name for name, ok in result["targets"].items() if not ok]
    assert failed == [], f"targets missed on the quick hiding sites: {failed}"
