"""``fptrack scan`` of the whole hostile site (:mod:`bench.hostile_site`), as a user runs it:
every copy found with its work and nothing else matched, the responses it could not read
named as errors (exit status 1, no traceback), and the XSS payloads escaped in the HTML
report."""

from __future__ import annotations

import json
from pathlib import Path

from bench.fixture_site import FixtureSite
from bench.hostile_site import build
from crawler.spiders.site import canonical
from tests.admin.cli_support import fptrack

ROOT = Path(__file__).resolve().parents[2]
WORKS = ROOT / "samples" / "works"


def test_a_scan_of_the_hostile_site_finds_every_copy_and_names_what_it_could_not_read(
    tmp_path: Path,
) -> None:
    site = build({p.name: p.read_text(encoding="utf-8") for p in sorted(WORKS.glob("*.txt"))})
    out, report = tmp_path / "scan.json", tmp_path / "scan.html"
    with FixtureSite(site.pages, site.redirects) as server:
        ran = fptrack(
            *("scan", "--works", str(WORKS), "--site", server.url("/")),
            *("--json", str(out), "--html", str(report), "--max-pages", "200"),
            timeout=300,
        )
        copies = {(canonical(server.url(c.page_path)), c.work) for c in site.copies()}
    assert ran.status == 1 and ran.one_line_error(), ran.err
    result = json.loads(out.read_text(encoding="utf-8"))
    assert {(canonical(m["url"]), m["work"]) for m in result["matches"]} == copies
    [error] = result["errors"]
    assert "3 response(s) over the size limit (DOWNLOAD_MAXSIZE) not read" in error
    html = report.read_text(encoding="utf-8")
    assert "<script>alert(" not in html and "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # the page's text, shown as text
    assert "/xss/%22%3E%3Cscript%3Ealert(3)%3C/script%3E.html'" in html  # still encoded


def test_a_scan_of_a_link_flood_keeps_its_caps_and_its_deadline(tmp_path: Path) -> None:
    """Issue 23: pages made on request, each linking 5,000 new ones. ``fptrack scan
    --deadline 10`` (time for a loaded machine to read a few such pages; the crawl reads
    pages until then, so the test's cost grows with it) ends by its deadline,
    which says so: the pages not reached by it are counted (those being downloaded or read
    then included) and named in the errors; the links after each page's first
    ``--max-links`` are counted. The runner's timeout is only a hang guard. The pending cap is
    tested on the crawl (tests/crawler/test_hostile_pages.py): here few pages are read by the
    deadline."""
    from bench.hostile_site import FLOOD_PREFIX, link_flood

    out = tmp_path / "scan.json"
    deadline = 10
    links = 5_000
    with FixtureSite(generated={FLOOD_PREFIX: link_flood(links)}) as server:
        ran = fptrack(
            *("scan", "--works", str(WORKS), "--site", server.url(FLOOD_PREFIX + "0")),
            *("--json", str(out), "--deadline", str(deadline)),
            *("--max-links", "1000"),
            timeout=300,
        )
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["matches"] == []
    [skipped] = result["not_crawled"].values()
    pages_read, rest = divmod(skipped["links_capped"], links - 1000)  # after the first 1,000
    assert pages_read >= 1 and rest == 0
    assert skipped["deadline"] >= 1
    assert any("deadline" in e for e in result["errors"]), ran.err
