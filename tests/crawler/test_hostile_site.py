"""The hostile site (:mod:`tests.servers.hostile_site`) crawled for real on 127.0.0.1: every copy is
stored under its URL with its work's text, every other trick is counted under its reason and
stores nothing, and the crawl finishes on its own."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import opencc
import pytest

from crawler.run import crawl_in_process
from matcher.sites.site_config import SiteConfig
from tests.servers.fixture_site import FixtureSite
from tests.servers.hostile_site import COPY, FLOOD_PREFIX, HostileSite, build
from tests.support.crawl import RecordingIngest

WORKS = Path(__file__).resolve().parents[2] / "samples" / "works"
REQUEST_CAP = 100  # below the generator's 120 pages within the default depth of 5
_LETTERS = re.compile(r"[\W\d_]+")


@pytest.fixture(scope="module")
def hostile() -> HostileSite:
    return build({p.name: p.read_text(encoding="utf-8") for p in sorted(WORKS.glob("*.txt"))})


def letters(text: str) -> str:
    return _LETTERS.sub("", opencc.OpenCC("t2s").convert(text))


def test_every_case_of_the_hostile_site_has_its_outcome(
    hostile: HostileSite, ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    overrides = {**test_overrides, "FPTRACK_MAX_REQUESTS": REQUEST_CAP, "DOWNLOAD_TIMEOUT": 20}
    with FixtureSite(hostile.pages, hostile.redirects) as site:
        config = SiteConfig.from_dict({"name": "hostile", "start_urls": [site.url("/")]})
        stats = crawl_in_process([config], overrides, timeout=240)["hostile"]
        pages = ingest.by_url()
        works = {p.name: letters(p.read_text(encoding="utf-8")) for p in WORKS.glob("*.txt")}
        for case in hostile.copies():
            url = site.url(case.page_path)
            stored = next((p for u, p in pages.items() if u == url or _same(u, url)), None)
            assert stored is not None, f"{case.name}: not stored"
            text = letters(stored["text"])
            work = works[case.work]
            assert work[:60] in text and work[-60:] in text, case.name
        copy_urls = {site.url(c.page_path) for c in hostile.copies()}
        extra = [u for u in pages if not any(u == c or _same(u, c) for c in copy_urls)]
    assert extra == []
    # The link flood is crawled on its own (test_hostile_pages.py): here the request cap can
    # be spent on the link generator before the flood's page is asked for.
    expected = Counter(
        c.outcome
        for c in hostile.cases
        if c.outcome != COPY and not c.path.startswith(FLOOD_PREFIX)
    )
    for outcome, count in expected.items():
        assert stats.get(outcome, 0) >= count, outcome
    assert stats["finish_reason"] == "finished"
    assert stats["fptrack/pages"] == len(hostile.copies())
    assert not stats.get("fptrack/extract_failed")


def _same(stored: str, served: str) -> bool:
    """URLs equal once both are canonical (the XSS case's path is percent-encoded)."""
    from crawler.spiders.site import canonical

    return canonical(stored) == canonical(served)
