"""``fptrack scan`` of the whole hostile site (:mod:`tests.servers.hostile_site`), as a user
runs it: every copy found with its work and nothing else matched, the responses it could not read
named as errors (exit status 1, no traceback) and by URL with the reason, and the XSS
payloads escaped in the HTML report; of a site of refused downloads
(:mod:`tests.sites.refused_site`): each named with its URL and reason."""

from __future__ import annotations

import json
from pathlib import Path

from crawler.spiders.site import canonical
from tests.servers.fixture_site import FixtureSite
from tests.servers.hostile_site import build
from tests.support.cli import fptrack

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
    [named] = result["not_crawled_urls"].values()
    too_large = {p["url"]: p["why"] for p in named["too_large"]["urls"]}
    limit = "the limit 10,485,760"
    assert too_large == {
        server.url("/huge-declared.html"): (
            f"over the size limit (DOWNLOAD_MAXSIZE): 2,147,483,648 bytes announced, {limit}"
        ),
        server.url("/huge-streamed.html"): too_large[server.url("/huge-streamed.html")],
        server.url("/bomb.html"): too_large[server.url("/bomb.html")],
    }
    assert too_large[server.url("/huge-streamed.html")] == (
        "over the size limit (DOWNLOAD_MAXSIZE): more than 10,485,760 bytes received"
    )
    assert "bytes unpack to more than 10,485,760" in too_large[server.url("/bomb.html")]
    assert named["too_large"]["more"] == 0
    undecodable = named["undecodable"]["urls"]
    assert [p["url"] for p in undecodable] == [server.url("/image.html")]
    assert f"  too_large: {server.url('/bomb.html')} (over the size limit" in ran.err
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
    from tests.servers.hostile_site import FLOOD_PREFIX, link_flood

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


def test_a_scan_names_each_refused_download_and_forbidden_page_with_its_reason(
    tmp_path: Path,
) -> None:
    """A zip bomb, a ZIP of 5,001 members, ZIPs nested three deep, a ZIP failing its CRC-32
    and a page robots.txt forbids (:func:`tests.sites.refused_site.refused_site`): each is in the
    JSON's ``not_crawled_urls`` with its URL and why, and on stderr; counted as before in
    ``not_crawled``; the copy beside them matched, exit 0 (none is an error)."""
    from tests.sites.refused_site import FORBIDDEN_PAGE, refused_site

    work = sorted(WORKS.glob("*.txt"))[0]
    out = tmp_path / "scan.json"
    with FixtureSite(refused_site(work.read_text(encoding="utf-8"), 32 << 20)) as server:
        base = server.url("/")
        ran = fptrack(
            *("scan", "--works", str(WORKS), "--site", base, "--json", str(out)), timeout=300
        )
        asked = server.requested()
    assert ran.status == 0, ran.err
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["errors"] == [] and FORBIDDEN_PAGE not in asked
    assert result["not_crawled"] == {base: {"download_refused": 4, "robots": 1}}
    named = result["not_crawled_urls"][base]
    refused = {p["url"]: p["why"] for p in named["download_refused"]["urls"]}
    assert refused == {
        server.url("/down/bomb.zip"): (
            "member 'bomb.txt' unpacks " + refused[server.url("/down/bomb.zip")].split()[3]
            + " bytes to 33,554,432 (over 200 to 1: a zip bomb)"
        ),
        server.url("/down/members.zip"): "more than 5,000 members",
        server.url("/down/nested.zip"): "archives nested more than 2 deep",
        server.url("/down/crc.zip"): "member '1.txt': Bad CRC-32 for file '1.txt'",
    }  # fmt: skip
    assert named["robots"] == {
        "urls": [
            {"url": server.url(FORBIDDEN_PAGE), "why": "robots.txt forbids fptrack to crawl it"}
        ],
        "more": 0,
    }
    assert named["download_refused"]["more"] == 0
    assert [(m["url"], m["work"]) for m in result["matches"]] == [
        (server.url("/copy.html"), work.name)
    ]
    assert f"{base}: not crawled: 4 download_refused, 1 robots" in ran.err
    assert (
        f"  download_refused: {server.url('/down/crc.zip')} (member '1.txt': Bad CRC-32" in ran.err
    )
    assert "Traceback" not in ran.err
