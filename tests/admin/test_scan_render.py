"""``fptrack scan --render``: a site that loads its chapter text by script, scanned for real
(Chromium runs its scripts), is matched against the work it copies; without ``--render``
its pages built by script are rendered all the same (automatic render), and with
``--no-auto-render`` too the copy is not seen; without Chromium they are counted as
``needs_browser`` with a one-line hint; without scrapy-playwright a ``--render`` scan says
so in one line."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from matcher.evidence.archive import RENDERED_FIELD, verify
from tests.admin.test_scan import ROOT, WORKS, scan
from tests.servers.fixture_site import FixtureSite
from tests.sites.script_site import PARTS, WORK, chromium, halves, script_pages


@pytest.fixture
def browser_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FPTRACK_CHROMIUM", chromium())


def test_a_rendered_site_is_matched_and_archived_as_rendered(
    capsys, tmp_path: Path, browser_env: None
) -> None:
    out, warc = tmp_path / "out.json", tmp_path / "evidence.warc.gz"
    with FixtureSite(script_pages()) as site:
        argv = ["--works", str(WORKS), "--site", site.url("/"), "--json", str(out)]
        status, err = scan(capsys, *argv, "--render", "--warc", str(warc))
        result = json.loads(out.read_text(encoding="utf-8"))
        matched = {(m["url"], m["work"]) for m in result["matches"]}
        assert status == 0, err
        assert matched == {(site.url(path), WORK.name) for path in PARTS}
    records = [r for r in verify(warc.read_bytes()) if r.kind == "response"]
    assert {r.url for r in records} == {site.url(path) for path in PARTS}
    first, second = halves()
    for record in records:
        part = first if record.url.endswith(PARTS[0]) else second
        assert max(part.splitlines(), key=len).encode() in record.payload  # the rendered DOM
    assert gzip.decompress(warc.read_bytes()).count(RENDERED_FIELD.encode()) == 2


def test_without_render_the_pages_built_by_script_are_rendered_all_the_same(
    capsys, tmp_path: Path, browser_env: None
) -> None:
    out = tmp_path / "out.json"
    with FixtureSite(script_pages()) as site:
        argv = ["--works", str(WORKS), "--site", site.url("/"), "--json", str(out)]
        status, err = scan(capsys, *argv)
        result = json.loads(out.read_text(encoding="utf-8"))
        matched = {(m["url"], m["work"]) for m in result["matches"]}
        assert status == 0, err
        assert matched == {(site.url(path), WORK.name) for path in PARTS}
    assert result["not_crawled"] == {} and "needs a browser" not in err


def test_with_no_auto_render_the_copy_is_not_seen(
    capsys, tmp_path: Path, browser_env: None
) -> None:
    out = tmp_path / "out.json"
    with FixtureSite(script_pages()) as site:
        argv = ["--works", str(WORKS), "--site", site.url("/"), "--json", str(out)]
        status, err = scan(capsys, *argv, "--no-auto-render")
    result = json.loads(out.read_text(encoding="utf-8"))
    assert status == 0, err
    assert result["matches"] == [] and result["pages"] == 0  # shells and a link list only


def test_without_chromium_pages_built_by_script_are_counted_with_a_hint(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matcher.sites.crawl_runs import NEEDS_BROWSER_HINT

    missing = tmp_path / "no-chromium"
    monkeypatch.setenv("FPTRACK_CHROMIUM", str(missing))
    out = tmp_path / "out.json"
    with FixtureSite(script_pages()) as site:
        argv = ["--works", str(WORKS), "--site", site.url("/"), "--json", str(out)]
        status, err = scan(capsys, *argv)
        url = site.url("/")
    result = json.loads(out.read_text(encoding="utf-8"))
    assert status == 0 and "Traceback" not in err, err
    assert result["not_crawled"] == {url: {"needs_browser": 1}}  # the first part's shell
    named = result["not_crawled_urls"][url]["needs_browser"]["urls"]
    assert [n["url"] for n in named] == [site.url(PARTS[0])]
    assert f"no Chromium at {missing}" in named[0]["why"]
    hint = f"{url}: {NEEDS_BROWSER_HINT.format(n=1)}"
    assert hint in err.splitlines() and f"{url}: not crawled: 1 needs_browser" in err


def test_without_scrapy_playwright_the_scan_says_so_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    absent = "import sys; sys.modules['scrapy_playwright'] = None; from admin.cli import main"
    with FixtureSite(script_pages()) as site:
        argv = ["--works", str(WORKS), "--site", site.url("/"), "--json", str(out), "--render"]
        done = subprocess.run(
            [sys.executable, "-c", f"{absent}; sys.exit(main(sys.argv[1:]))", "scan", *argv],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
        )
        fetched = site.requested()
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert done.returncode == 1 and "Traceback" not in done.stderr and fetched == []
    assert errors == [
        f"fptrack: error: site {site.url('/')} could not be crawled: its pages cannot be "
        "rendered: scrapy-playwright is not installed (pip install 'fptrack[render]')"
    ]
    assert json.loads(out.read_text(encoding="utf-8"))["errors"] == [errors[0].split(": ", 2)[2]]
