"""``fptrack scan`` of the bad-works corpus (:mod:`tests.sites.hostile_works`) against the sample
site, as a user runs it: every readable work registered and its copies found, every other
file named in one error line, nothing else lost, no traceback. A scan with no usable work
is refused before it fetches a page."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from tests.admin.test_scan import EXPECTED, SITE
from tests.servers.fixture_site import FixtureSite, page
from tests.sites.hostile_works import ERROR, WORK, build, remove
from tests.support.cli import fptrack


def test_a_scan_of_the_bad_works_corpus(tmp_path: Path) -> None:
    folder = tmp_path / "works"
    cases = build(folder)
    out = tmp_path / "scan.json"
    try:
        ran = fptrack(
            "scan", "--works", str(folder), "--site-dir", str(SITE), "--json", str(out),
            timeout=300,
        )  # fmt: skip
    finally:
        remove(folder)
    assert ran.status == 1 and "Traceback" not in ran.err, ran.err[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    errors = result["errors"]
    for case in (c for c in cases if c.outcome == ERROR):
        named = [e for e in errors if case.name.split("/")[-1] in e and case.expect in e]
        assert len(named) == 1, (case.name, errors)
    assert len(errors) == sum(c.outcome == ERROR for c in cases)
    assert result["works"] == sum(c.outcome == WORK for c in cases)
    found = {(urlsplit(m["url"]).path, m["work"]) for m in result["matches"]}
    assert found == {(path, work) for path, works in EXPECTED.items() for work in works}
    lines = [line for line in ran.err.splitlines() if line.startswith("fptrack: error: ")]
    assert len(lines) == len(errors)


def test_a_scan_whose_only_work_is_empty_fetches_nothing(tmp_path: Path) -> None:
    """The works are read and registered before the crawl: an empty work file is named in
    one error line at once, and with no work left to look for, no page is fetched."""
    folder = tmp_path / "works"
    folder.mkdir()
    (folder / "empty.txt").write_bytes(b"")
    out = tmp_path / "scan.json"
    with FixtureSite({"/": page("<html><body><p>正文</p></body></html>")}) as site:
        ran = fptrack("scan", "--works", str(folder), "--site", site.url("/"), "--json", str(out))
        fetched = site.requested()
    assert ran.status == 1 and ran.one_line_error(), ran.err
    [error] = [line for line in ran.err.splitlines() if ": error: " in line]
    assert error.startswith(f"fptrack: error: {folder}/empty.txt: work 'empty' has 0 content")
    assert f"--works {folder}: no work could be registered, so nothing was crawled" in ran.err
    assert fetched == []
    result = json.loads(out.read_text(encoding="utf-8"))
    assert (result["works"], result["pages"], result["matches"]) == (0, 0, [])
    assert result["errors"] == [error.removeprefix("fptrack: error: ")]
