"""The labelled corpus of ``bench/eval.py``: each transformation does what it says.

Built from synthetic documents of real Chinese words (no download); the same checks run
on the real Debian corpus too when it is cached already (``python -m tests.sites.corpus``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from pypinyin import Style, lazy_pinyin

from fingerprint.normalize import normalize, to_simplified
from fingerprint.tokens import content_codes, from_codepoints
from tests.sites import corpus as debian
from tests.sites.eval_corpus import (
    CAUGHT_ADS,
    CLASSES,
    EXCERPT_SHARE,
    HOMOPHONE_RATE,
    MAX_SHARED_RUN,
    NEGATIVE_KINDS,
    TYPO_RATE,
    WORK_CHARS,
    Corpus,
    Page,
    Work,
    ad_line,
    build_corpus,
    make_sites,
    synthetic_texts,
    to_traditional,
    topic_vectors,
)

ROOT = Path(__file__).resolve().parents[2]


def _is_han(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff"


def _real_cached() -> bool:
    return debian._complete(debian.bench_cache_dir(None))


def _build(source: str, seed: int = 7) -> Corpus:
    if source == "debian":
        return build_corpus(debian.load_texts(2.0), 11, seed, 2, 4)
    return build_corpus(synthetic_texts(80), 11, seed, 2, 4)


@pytest.fixture(
    scope="module",
    params=[
        "synthetic",
        pytest.param(
            "debian",
            marks=pytest.mark.skipif(not _real_cached(), reason="Debian corpus not cached"),
        ),
    ],
)
def corpus(request: pytest.FixtureRequest) -> Corpus:
    """A quick-sized corpus: 11 works, two pages of distinct classes each, 4 per negative kind."""
    return _build(request.param)


def _works(corpus: Corpus) -> dict[str, Work]:
    return {w.id: w for w in corpus.works}


def _pages(corpus: Corpus, label: str) -> list[Page]:
    pages = [p for p in corpus.pages if p.label == label]
    assert pages, f"no page of class {label}"
    return pages


def _body(corpus: Corpus, page: Page) -> list[str]:
    site = next(s for s in make_sites(random.Random(f"{corpus.seed}:sites")) if s.name == page.site)
    return site.body_of(page.text)


def _changed_han(original: str, changed: str) -> tuple[list[tuple[str, str]], int]:
    assert len(original) == len(changed)
    pairs = [(a, b) for a, b in zip(original, changed, strict=True) if a != b]
    assert all(_is_han(a) and _is_han(b) for a, b in pairs), "only Han characters change"
    return pairs, sum(map(_is_han, original))


def _content(text: str) -> str:
    return from_codepoints(content_codes(text)[0])


def test_sizes_classes_and_kinds(corpus: Corpus) -> None:
    sizes = corpus.sizes()
    assert sizes["works"] == 11
    assert all(WORK_CHARS[0] <= len(w.text) <= WORK_CHARS[1] for w in corpus.works)
    assert len({w.source for w in corpus.works}) == 11  # the engine keys works by source
    assert all(sizes["pages_per_class"][c] >= 2 for c in CLASSES)
    assert sizes["pages_per_negative_kind"] == {k: 4 for k in NEGATIVE_KINDS}
    assert sizes["positive_pairs"] == len(corpus.truth()) == sum(sizes["pairs_per_class"].values())
    assert len({p.id for p in corpus.pages}) == len({p.url for p in corpus.pages}) == sizes["pages"]
    assert all(p.text.count("\n") > 8 for p in corpus.pages)  # chrome on every page


def test_exact_copy_in_new_chrome(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "exact"):
        work = works[page.works[0]]
        assert _body(corpus, page) == work.text.split("\n")
        assert page.text != work.text and work.text in page.text


def test_typos_rate(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "typos"):
        pairs, han = _changed_han(works[page.works[0]].text, "\n".join(_body(corpus, page)))
        assert abs(len(pairs) / han - TYPO_RATE) < 0.005


def test_homophones_rate_and_pinyin(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "homophones"):
        pairs, han = _changed_han(works[page.works[0]].text, "\n".join(_body(corpus, page)))
        assert abs(len(pairs) / han - HOMOPHONE_RATE) < 0.01
        for a, b in pairs:
            assert lazy_pinyin(a, style=Style.NORMAL) == lazy_pinyin(b, style=Style.NORMAL)


def _agreement(a: str, b: str) -> float:
    return sum(x == y for x, y in zip(a, b, strict=False)) / max(len(a), len(b))


def test_traditional_differs_and_converts_back(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "traditional"):
        work, body = works[page.works[0]].text, "\n".join(_body(corpus, page))
        assert len(body) == len(work)
        assert sum(a != b for a, b in zip(work, body, strict=True)) > 0.1 * sum(map(_is_han, work))
        assert _agreement(to_simplified(body), work) > 0.98
    assert to_traditional("简体中文") == "簡體中文"


def _subsequence(part: list[str], whole: list[str]) -> bool:
    it = iter(whole)
    return all(line in it for line in part)


def test_ads_every_two_or_three_paragraphs(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "ads"):
        lines = works[page.works[0]].text.split("\n")
        body = _body(corpus, page)
        is_ad = [x == "\0ad" for x in _realign(body, lines)]
        ad_at = [i for i, flag in enumerate(is_ad) if flag]
        gaps = [b - a - 1 for a, b in zip([-1, *ad_at], ad_at, strict=False)]
        assert gaps and set(gaps) <= {2, 3}
        assert len(body) - ad_at[-1] - 1 <= 3
        assert [x for x, flag in zip(body, is_ad, strict=True) if not flag] == lines


def _realign(body: list[str], lines: list[str]) -> list[str]:
    """``body`` with a placeholder wherever an ad line was inserted (ads never equal a line)."""
    out, k = [], 0
    for line in body:
        if k < len(lines) and line == lines[k]:
            out.append(line)
            k += 1
        else:
            out.append("\0ad")
    return out


def test_ad_lines_mix_caught_and_uncaught() -> None:
    rng = random.Random(1)
    for caught in (True, False):
        for _ in range(20):
            line = ad_line(rng, caught)
            assert (normalize(line).text.strip() == "") is caught, line
    assert len(CAUGHT_ADS) >= 3


def test_dropped_paragraphs(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "dropped"):
        lines, body = works[page.works[0]].text.split("\n"), _body(corpus, page)
        assert _subsequence(body, lines)
        assert abs(len(body) / len(lines) - 0.7) <= 0.5 / len(lines) + 1e-9


def test_shuffled_paragraphs(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "shuffled"):
        lines, body = works[page.works[0]].text.split("\n"), _body(corpus, page)
        assert sorted(body) == sorted(lines) and body != lines


def test_excerpt_is_contiguous_and_inside_unrelated_text(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "excerpt"):
        work = works[page.works[0]].text
        start, end = page.detail["span"]
        assert abs((end - start) / len(work) - EXCERPT_SHARE) < 0.01
        body = "\n".join(_body(corpus, page))
        at = body.index(work[start:end])
        assert at > 0 and at + end - start < len(body)  # host text before and after
        before, after = body[:at], body[at + end - start :]
        for host in (before, after):  # the host shares no copied body with the work
            assert not _grams(host) & _grams(work)


def test_split_halves_cover_the_work(corpus: Corpus) -> None:
    works = _works(corpus)
    halves: dict[str, list[Page]] = {}
    for page in _pages(corpus, "split"):
        halves.setdefault(page.works[0], []).append(page)
    for work_id, pages in halves.items():
        work = works[work_id].text
        pages.sort(key=lambda p: p.detail["span"])
        cut = pages[1].detail["span"][0]
        assert [p.detail["span"] for p in pages] == [(0, cut), (cut, len(work))]
        assert "\n".join("\n".join(_body(corpus, p)) for p in pages) == work
        assert all(0.3 < len("\n".join(_body(corpus, p))) / len(work) < 0.7 for p in pages)


def test_two_works_on_one_page(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "two_works"):
        assert len(set(page.works)) == 2
        assert "\n".join(_body(corpus, page)) == "\n".join(works[w].text for w in page.works)


def test_combined(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "combined"):
        work = works[page.works[0]].text.split("\n")
        body = [to_simplified(x) for x in _body(corpus, page)]
        assert len(work) // 3 <= len(body) - len(work) <= (len(work) + 1) // 2  # ads
        assert "\n".join(body) != "\n".join(_body(corpus, page))  # Traditional script
        similar = difflib.SequenceMatcher(None, "".join(work), "".join(body), autojunk=False)
        assert similar.ratio() > 0.75


def _grams(text: str, n: int = MAX_SHARED_RUN) -> set[str]:
    content = _content(text)
    return {content[i : i + n] for i in range(len(content) - n + 1)}


def test_negatives_share_no_copied_body(corpus: Corpus) -> None:
    """No run of MAX_SHARED_RUN content characters of a work's body is on a negative page."""
    bodies = set().union(*(
        _grams("\n".join(x for x in w.text.split("\n") if x not in w.boilerplate))
        for w in corpus.works
    ))  # fmt: skip
    for page in (p for p in corpus.pages if not p.positive):
        assert not _grams(page.text) & bodies, page.id


def test_boilerplate_negatives_share_real_boilerplate(corpus: Corpus) -> None:
    works = _works(corpus)
    for page in _pages(corpus, "boilerplate"):
        work = works[page.detail["target"]]
        assert work.boilerplate and all(line in page.text.split("\n") for line in work.boilerplate)
        copies = [p for p in corpus.pages if work.id in p.works]
        assert any(p.site == page.site for p in copies)  # and the chrome of a copying site


def test_same_topic_negatives_are_closer_than_unrelated(corpus: Corpus) -> None:
    works = _works(corpus)
    topical = _pages(corpus, "same_topic")
    unrelated = _pages(corpus, "unrelated")
    for page in topical:
        work = works[page.detail["target"]]
        vectors = topic_vectors([work.text, page.text, *(p.text for p in unrelated)])
        sims = vectors[1:] @ vectors[0]
        assert sims[0] >= sorted(sims[1:])[len(unrelated) // 2]


def _digest(corpus: Corpus) -> str:
    return hashlib.sha1(
        repr([(p.id, p.url, p.text, p.works) for p in corpus.pages]).encode()
    ).hexdigest()


def _small(seed: int) -> Corpus:
    return build_corpus(synthetic_texts(40), 6, seed, 2, 2)


def test_deterministic_under_a_seed() -> None:
    assert _digest(_small(3)) == _digest(_small(3)) != _digest(_small(4))


DIGEST_SCRIPT = """
import hashlib, json, sys
from tests.sites.eval_corpus import build_corpus
c = build_corpus(json.load(open(sys.argv[1], encoding="utf-8")), 6, 1, 2, 2)
print(hashlib.sha1(repr([(p.id, p.url, p.text, p.works) for p in c.pages]).encode()).hexdigest())
"""


def test_deterministic_across_processes(tmp_path: Path) -> None:
    """No ``hash()`` order leaks in: a process with another hash seed builds the same corpus."""
    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(synthetic_texts(40)), encoding="utf-8")
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    env = os.environ | {"PYTHONPATH": str(ROOT), "PYTHONHASHSEED": seed}
    run = subprocess.run(
        [sys.executable, "-c", DIGEST_SCRIPT, str(texts)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert run.stdout.strip() == _digest(_small(1))
