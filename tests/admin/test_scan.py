"""The embedded one-shot scan's contract (docs/scan.md): JSON shape, exit codes, a site
that is down, unreadable works; on the shipped sample site, with a real crawl in process and
the real Redis server (``FPTRACK_REDIS_URL`` is set by the test suite)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from admin.cli import main
from tests.servers.fixture_site import FixtureSite, page

ROOT = Path(__file__).resolve().parents[2]
WORKS = ROOT / "samples" / "works"
SITE = ROOT / "samples" / "site"
EXPECTED = {  # page path -> works it copies (samples/site/README.md)
    "/book/1021/1.html": {"lighthouse.txt"},
    "/book/1022/1.html": {"river-town.txt"},
    "/tw/book/1023/1.html": {"tea-history.txt"},
    "/book/1024/9.html": {"star-voyage.txt"},
    "/book/1024/9_2.html": {"star-voyage.txt"},
    "/book/1025/1.html": {"chef-diary.txt"},
    "/book/1026/1.html": {"sanguo-01.txt", "lighthouse.txt"},
    "/news/5501.html": {"tea-brewing.txt"},
}


def scan(capsys, *argv: str) -> tuple[int, str]:
    """``fptrack scan ARGV`` in process: exit status (argparse's exit on bad arguments too)."""
    try:
        status = main(["scan", *argv])
    except SystemExit as exit:
        status = exit.code
    return status, capsys.readouterr().err


def scan_keys() -> set[bytes]:
    client = redis.Redis.from_url(os.environ["FPTRACK_REDIS_URL"])
    return set(client.scan_iter("fptrack-scan-*", count=1000))


@pytest.fixture(scope="module")
def sample_scan(tmp_path_factory) -> tuple[int, dict, str, set[bytes]]:
    """The scan of the sample site, and the Redis keys of scans it left behind."""
    out = tmp_path_factory.mktemp("scan") / "out.json"
    html = out.with_suffix(".html")
    before = scan_keys()
    argv = ["--works", str(WORKS), "--site-dir", str(SITE), "--json", str(out)]
    status = main(["scan", *argv, "--html", str(html)])
    left = scan_keys() - before
    result = json.loads(out.read_text(encoding="utf-8"))
    return status, result, html.read_text(encoding="utf-8"), left


def test_json_shape(sample_scan) -> None:
    status, result, _, _ = sample_scan
    assert status == 0
    assert set(result) == {
        "works", "pages", "matches", "errors", "warnings", "duplicates", "not_crawled",
        "not_crawled_urls", "crawl",
    }  # fmt: skip
    [crawl] = result["crawl"].values()  # where the requests went
    assert crawl["pages"] == result["pages"] and crawl["requests"] >= crawl["pages"]
    assert crawl["skipped"] == {} and crawl["aliases_fetched"] == 0
    assert result["not_crawled"] == {}  # the sample site's every page is reachable
    assert result["not_crawled_urls"] == {}
    assert result["works"] == 7 and result["errors"] == [] and result["duplicates"] == []
    assert result["warnings"] == []  # nothing met and overcome
    assert result["pages"] >= 15
    for m in result["matches"]:
        assert set(m) >= {"url", "work", "score", "containment", "methods", "evidence"}
        assert m["twins"] == []  # no two sample works have (nearly) the same text
        assert m["siblings"] == m["tied"] == []  # nor are any two editions of one work
        assert 0 <= m["containment"] <= 1 and 0 < m["score"] <= 1
        assert m["methods"] and all(isinstance(x, str) for x in m["methods"])
        assert m["evidence"]
        for e in m["evidence"]:
            assert set(e) == {"work_span", "page_span", "text"}
            a, b = e["work_span"]
            c, d = e["page_span"]
            assert 0 <= a < b and 0 <= c < d and e["text"]


def test_every_copy_found_and_nothing_else(sample_scan) -> None:
    _, result, _, _ = sample_scan
    found: dict[str, set[str]] = {}
    for m in result["matches"]:
        found.setdefault(urlsplit(m["url"]).path, set()).add(m["work"])
    assert found == EXPECTED  # both parts of the split chapter, each under its own URL
    parts = [m for m in result["matches"] if "/book/1024/" in m["url"]]
    assert all(m["evidence"] for m in parts)


def test_evidence_quotes_the_page(sample_scan) -> None:
    _, result, _, _ = sample_scan
    exact = next(m for m in result["matches"] if m["url"].endswith("/book/1021/1.html"))
    work_text = (WORKS / "lighthouse.txt").read_text(encoding="utf-8")
    longest = max(exact["evidence"], key=lambda e: e["work_span"][1] - e["work_span"][0])
    a, b = longest["work_span"]
    assert longest["text"].rstrip("…")[:50] == work_text[a:b][:50]


def test_html_report(sample_scan) -> None:
    _, result, report, _ = sample_scan
    assert report.count("<mark>") >= len(result["matches"])
    assert report.count("<script") == 1 and "default-src 'none'" in report
    assert "http://127.0.0.1" not in report  # the --site-dir server is gone: file paths
    assert "scan1-" not in report and f"<td><span class='url'>{SITE}/index.html</span>" in report


def test_no_keys_left_in_redis(sample_scan) -> None:
    assert sample_scan[3] == set()


def test_site_down_is_reported_and_the_rest_processed(capsys, tmp_path) -> None:
    out = tmp_path / "out.json"
    status, err = scan(
        capsys,
        "--works",
        str(WORKS),
        "--site-dir",
        str(SITE),
        "--site",
        "http://127.0.0.1:9/",
        "--json",
        str(out),
    )
    assert status == 1
    assert "http://127.0.0.1:9/" in err and "could not be crawled" in err
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["pages"] >= 15 and len(result["matches"]) == 9
    assert any("127.0.0.1:9" in e for e in result["errors"])


def test_a_site_whose_robots_txt_forbids_fptrack_is_reported(capsys, tmp_path) -> None:
    chapter = (WORKS / "lighthouse.txt").read_text(encoding="utf-8")
    pages = {
        "/robots.txt": (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /\n"),
        "/": page(f"<html><body><p>{chapter}</p></body></html>"),
    }
    out = tmp_path / "out.json"
    with FixtureSite(pages) as site:
        status, err = scan(
            capsys, "--works", str(WORKS), "--site", site.url("/"), "--json", str(out)
        )
        fetched = site.requested()
    result = json.loads(out.read_text(encoding="utf-8"))
    assert status == 1 and fetched == ["/robots.txt"]
    assert result["pages"] == 0 and result["matches"] == []
    [error] = result["errors"]
    assert "robots.txt forbids fptrack" in error and site.url("/") in error
    assert "robots.txt forbids fptrack" in err


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/nosuch/", "answered 404 Not Found"),
        ("/gone", "answered 410 Gone"),
        ("/down", "answered 500 Internal Server Error"),
        ("/away", "redirected off the site, to http://localhost:"),
    ],
)
def test_a_start_url_without_a_page_fails_the_scan(capsys, tmp_path, path, reason) -> None:
    """A typo in a URL is not "no piracy found": exit 1, the reason in ``errors``."""
    chapter = (WORKS / "lighthouse.txt").read_text(encoding="utf-8")
    pages = {
        "/": page(f"<html><body><p>{chapter}</p></body></html>"),
        "/gone": (410, {"Content-Type": "text/html"}, b"gone"),
        "/down": (500, {"Content-Type": "text/html"}, b"down"),
    }
    out = tmp_path / "out.json"
    with FixtureSite({"/": page("<p>别处</p>")}) as other, FixtureSite(pages) as site:
        site.redirects["/away"] = (302, other.url("/", host="localhost"))
        status, err = scan(
            capsys, "--works", str(WORKS), "--site", site.url(path), "--json", str(out)
        )
    result = json.loads(out.read_text(encoding="utf-8"))
    assert status == 1 and result["pages"] == 0
    [error] = result["errors"]
    assert f"start URL {site.url(path)}: {reason}" in error
    assert f"start URL {site.url(path)}: {reason}" in err
    assert err.count("fptrack: error:") == 1


def test_a_page_robots_txt_forbids_is_counted(capsys, tmp_path) -> None:
    """A single page robots.txt forbids is not an error, but the JSON counts it."""
    chapter = (WORKS / "lighthouse.txt").read_text(encoding="utf-8")
    pages = {
        "/robots.txt": (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /ev/\n"),
        "/": page(f'<html><body><p>{chapter}</p><a href="/ev/nul.html">x</a></body></html>'),
        "/ev/nul.html": page(f"<html><body><p>{chapter}</p></body></html>"),
    }
    out = tmp_path / "out.json"
    with FixtureSite(pages) as site:
        status, err = scan(
            capsys, "--works", str(WORKS), "--site", site.url("/"), "--json", str(out)
        )
        assert "/ev/nul.html" not in site.requested()
    result = json.loads(out.read_text(encoding="utf-8"))
    assert status == 0 and result["errors"] == [] and result["pages"] == 1
    assert result["not_crawled"] == {site.url("/"): {"robots": 1}}
    assert f"{site.url('/')}: not crawled: 1 robots" in err


def test_a_work_named_in_gbk_bytes_is_scanned_and_shown(capsys, tmp_path) -> None:
    works = tmp_path / "works"
    works.mkdir()
    name = os.fsdecode("灯塔.txt".encode("gbk"))  # not UTF-8: a surrogate-escaped str
    (works / name).write_bytes((WORKS / "lighthouse.txt").read_bytes())
    out = tmp_path / "out.json"
    status, _ = scan(capsys, "--works", str(works), "--site-dir", str(SITE), "--json", str(out))
    result = json.loads(out.read_text(encoding="utf-8"))
    assert status == 0 and result["works"] == 1 and result["errors"] == []
    assert {m["work"] for m in result["matches"]} == {"\ufffd\ufffd\ufffd\ufffd.txt"}


def test_unreadable_work_is_reported_and_the_rest_processed(capsys, tmp_path) -> None:
    works = tmp_path / "works"
    works.mkdir()
    (works / "lighthouse.txt").write_bytes((WORKS / "lighthouse.txt").read_bytes())
    (works / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    (works / "tiny.txt").write_text("短", encoding="utf-8")
    out = tmp_path / "out.json"
    status, err = scan(capsys, "--works", str(works), "--site-dir", str(SITE), "--json", str(out))
    assert status == 1 and "image.txt" in err and "tiny.txt" in err
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["works"] == 1
    assert {m["work"] for m in result["matches"]} == {"lighthouse.txt"}
    assert len(result["matches"]) == 2


def editions(text: str) -> list[str]:
    """Three near-identical editions: a line appended, a line prepended, a typo."""
    middle = len(text) // 2
    return [text + "\n完\n", "第一版\n" + text, text[:middle] + "错" + text[middle + 1 :]]


def write_works(tmp_path: Path, texts: list[str]) -> Path:
    works = tmp_path / "works"
    works.mkdir()
    for name, body in zip(("a-lighthouse.txt", "b-copy.txt", "c-copy.txt"), texts, strict=True):
        (works / name).write_text(body, encoding="utf-8")
    return works


def test_a_work_registered_three_times_is_matched_and_reported(capsys, tmp_path) -> None:
    """Three files with one text: its copies are found (the text is not boilerplate shared
    by three works), recorded under the first, which names the others (``twins``), and the
    others are reported as duplicates."""
    text = (WORKS / "lighthouse.txt").read_text(encoding="utf-8")
    works = write_works(tmp_path, [text] * 3)
    out = tmp_path / "out.json"
    status, _ = scan(capsys, "--works", str(works), "--site-dir", str(SITE), "--json", str(out))
    result = json.loads(out.read_text(encoding="utf-8"))
    assert status == 0 and result["works"] == 3
    assert {m["work"] for m in result["matches"]} == {"a-lighthouse.txt"}
    assert all(m["twins"] == ["b-copy.txt", "c-copy.txt"] for m in result["matches"])
    assert all(m["siblings"] == [] for m in result["matches"])
    assert {urlsplit(m["url"]).path for m in result["matches"]} == {
        path for path, copied in EXPECTED.items() if "lighthouse.txt" in copied
    }
    assert result["duplicates"] == [
        {"work": "b-copy.txt", "same_text_as": "a-lighthouse.txt", "near": False},
        {"work": "c-copy.txt", "same_text_as": "a-lighthouse.txt", "near": False},
    ]


def test_three_editions_a_line_apart_are_matched_as_a_tie_and_reported(capsys, tmp_path) -> None:
    """Three editions a line apart (near twins): each indexed as an edition, so a page
    copying the text they share is one entry, under one of them, naming the other two as
    a tie (``tied``), no ``twins``; the two later are reported as ``near`` duplicates."""
    text = (WORKS / "lighthouse.txt").read_text(encoding="utf-8")
    works = write_works(tmp_path, editions(text))
    out = tmp_path / "out.json"
    status, _ = scan(capsys, "--works", str(works), "--site-dir", str(SITE), "--json", str(out))
    result = json.loads(out.read_text(encoding="utf-8"))
    assert status == 0 and result["works"] == 3
    names = {"a-lighthouse.txt", "b-copy.txt", "c-copy.txt"}
    for m in result["matches"]:
        assert m["work"] in names and m["twins"] == []
        assert sorted(m["tied"]) == sorted(m["siblings"]) == sorted(names - {m["work"]})
    paths = [urlsplit(m["url"]).path for m in result["matches"]]
    assert sorted(paths) == sorted(
        path for path, copied in EXPECTED.items() if "lighthouse.txt" in copied
    )
    assert result["duplicates"] == [
        {"work": "b-copy.txt", "same_text_as": "a-lighthouse.txt", "near": True},
        {"work": "c-copy.txt", "same_text_as": "a-lighthouse.txt", "near": True},
    ]


def swapped(text: str, which: range, seed: int) -> str:
    """``text`` with its long lines ``which`` (40 characters or more) swapped for other text:
    their characters shuffled, a text no work or page holds."""
    rng = random.Random(seed)
    lines = text.split("\n")
    long = [i for i, line in enumerate(lines) if len(line) > 40]
    for i in (long[k] for k in which):
        lines[i] = "".join(rng.sample(lines[i], len(lines[i])))
    return "\n".join(lines)


def test_editions_of_a_work_are_matched_and_attributed(capsys, tmp_path) -> None:
    """The issue's probe: three editions of a sample work, two with three lines swapped for
    other text, and a page holding the second verbatim: a copy of the second, naming the
    other two as siblings. The sample site's copy of the original goes to the first; its
    page holding the work's last paragraphs, which every edition holds, is a tie of the
    three."""
    text = (WORKS / "lighthouse.txt").read_text(encoding="utf-8")
    texts = [text, swapped(text, range(2, 5), 1), swapped(text, range(8, 11), 2)]
    works, site = tmp_path / "works", tmp_path / "site"
    works.mkdir()
    site.mkdir()
    for n, body in enumerate(texts, 1):
        (works / f"lighthouse-{n}.txt").write_text(body, encoding="utf-8")
    (site / "index.html").write_text(
        '<html><head><meta charset="utf-8"><title>灯塔</title></head><body>'
        '<a href="book.html">全文</a></body></html>',
        encoding="utf-8",
    )
    body = "<br>\n".join(texts[1].split("\n"))
    (site / "book.html").write_text(
        f'<html><head><meta charset="utf-8"><title>灯塔全文</title></head><body>'
        f'<div id="content">{body}</div></body></html>',
        encoding="utf-8",
    )
    out = tmp_path / "out.json"
    argv = ["--works", str(works), "--site-dir", str(site), "--site-dir", str(SITE)]
    status, _ = scan(capsys, *argv, "--json", str(out))
    result = json.loads(out.read_text(encoding="utf-8"))
    assert status == 0 and result["works"] == 3 and result["duplicates"] == []
    by_path = {urlsplit(m["url"]).path: m for m in result["matches"]}
    copy = by_path.pop("/book.html")
    assert copy["work"] == "lighthouse-2.txt" and copy["containment"] > 0.97
    assert copy["siblings"] == ["lighthouse-1.txt", "lighthouse-3.txt"] and copy["tied"] == []
    assert set(by_path) == {p for p, copied in EXPECTED.items() if "lighthouse.txt" in copied}
    whole = by_path["/book/1021/1.html"]
    assert whole["work"] == "lighthouse-1.txt" and whole["tied"] == []
    assert whole["siblings"] == ["lighthouse-2.txt", "lighthouse-3.txt"]
    end = by_path["/book/1026/1.html"]  # sanguo-01, then the last 4 paragraphs
    assert {end["work"], *end["tied"]} == {f"lighthouse-{n}.txt" for n in (1, 2, 3)}
    assert end["siblings"] == end["tied"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--works", "/nonexistent", "--site", "http://127.0.0.1:9/"],
        ["--works", str(WORKS), "--site", "ftp://example/"],
        ["--works", str(WORKS)],
        ["--works", str(WORKS), "--site", "http://127.0.0.1:9/", "--max-pages", "0"],
        ["--works", str(WORKS), "--site", "http://127.0.0.1:9/", "--max-depth", "-1"],
        ["--works", str(WORKS), "--site-dir", str(WORKS)],
    ],
)
def test_bad_arguments(capsys, tmp_path, argv) -> None:
    out = tmp_path / "out.json"
    status, err = scan(capsys, *argv, "--json", str(out))
    assert status == 2
    assert len([line for line in err.splitlines() if line.startswith("fptrack scan: error:")]) == 1
    assert "Traceback" not in err and not out.exists()


def test_max_depth_bounds_the_links_followed(capsys, tmp_path) -> None:
    out = tmp_path / "out.json"
    argv = ["--works", str(WORKS), "--site-dir", str(SITE), "--json", str(out)]
    assert scan(capsys, *argv, "--max-depth", "0")[0] == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["pages"] == 1 and result["matches"] == []  # the start page alone
    assert scan(capsys, *argv, "--max-depth", "2")[0] == 0
    found = {urlsplit(m["url"]).path for m in json.loads(out.read_text("utf-8"))["matches"]}
    assert found == set(EXPECTED)


def test_command_line_exit_codes(tmp_path) -> None:
    """The installed command, as a user runs it: one-line error and non-zero exit."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "admin.cli",
            "scan",
            "--works",
            str(tmp_path / "none"),
            "--site",
            "http://127.0.0.1:9/",
            "--json",
            str(tmp_path / "o.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("fptrack scan: error: --works")


@pytest.mark.parametrize("index_pages", [True, False])
def test_pages_are_indexed_for_works_added_later_only_when_served(index_pages: bool) -> None:
    """The scan bulk-loads the pages' index after its crawl when an admin is served over its
    result (``--serve``): a work registered there then finds the pages crawled before. The
    dashboard's tallies, gathered during the scan, are sent by its end; those of the matches
    made later go at once."""
    from admin.reading import iter_work_files
    from admin.scan import run_scan, serve_directory
    from matcher.index.maintenance import drop_indexes
    from matcher.store import tallies

    def figures() -> dict:
        total = tallies.total(engine.store.db)
        active = {k: v for k, v in total.get("active", {}).items() if v}
        return {"active": active, **{k: total.get(k) for k in ("pages", "matches_seen")}}

    def recounted() -> dict:
        tallies.recount(engine.store.db)
        return figures()

    works = [w for w in iter_work_files([WORKS]) if w.name != "chef-diary.txt"]
    with serve_directory(SITE) as base:
        result, engine = run_scan(works, [base + "index.html"], index_pages=index_pages)
    try:
        urls = {urlsplit(m["url"]).path for m in result.matches}
        assert "/book/1025/1.html" not in urls and "/book/1021/1.html" in urls
        scanned = figures()
        assert scanned["pages"] == result.pages and scanned == recounted()
        later = engine.add_work(
            (WORKS / "chef-diary.txt").read_text(encoding="utf-8"), title="chef"
        )
        found = {urlsplit(r["url"]).path for r in engine.match_work_against_pages(later)}
        assert found == ({"/book/1025/1.html"} if index_pages else set())
        served = figures()
        assert served["matches_seen"] == scanned["matches_seen"] + len(found)
        assert served == recounted()
    finally:
        drop_indexes(engine)


def test_redis_losing_the_index_mid_scan_loses_no_match() -> None:
    """The scan's Redis restarts empty after the sixth page: the index is rebuilt from the
    scan's store at the next page, and every copy is still found."""
    from admin.scan import run_scan, scan_settings, serve_directory
    from matcher.index.maintenance import drop_indexes

    url = os.environ["FPTRACK_REDIS_URL"]
    client = redis.Redis.from_url(url)
    settings = scan_settings()
    seen: list[str] = []

    def on_page(page_id: str) -> None:
        seen.append(page_id)
        if len(seen) == 6:
            for key in client.scan_iter(f"{settings.redis_prefix}:*", count=1000):
                client.delete(key)

    with serve_directory(SITE) as base:
        result, engine = run_scan(
            WORKS, [base + "index.html"], redis_url=url, settings=settings, on_page=on_page
        )
    drop_indexes(engine)
    assert len(seen) > 6 and result.errors == []
    assert any("Redis had lost them" in p for p in engine.problems)
    found = {(urlsplit(m["url"]).path, m["work"]) for m in result.matches}
    assert found == {(path, work) for path, works in EXPECTED.items() for work in works}


def test_a_scan_takes_only_the_outbound_policy_from_the_environment() -> None:
    from admin.scan import scan_settings
    from matcher.settings import Settings

    environment = Settings.from_env(
        {
            "FPTRACK_QUERY_DEADLINE": "3",
            "FPTRACK_QUERY_ALLOW_PRIVATE": "true",
            "FPTRACK_ALERT_TIMEOUT": "2.5",
            "FPTRACK_MONGO_URI": "mongodb://elsewhere:27017",
            "FPTRACK_REDIS_PREFIX": "deployed",
        }
    )
    settings = scan_settings(environment)
    assert (settings.query_deadline, settings.query_allow_private) == (3.0, True)
    assert settings.alert_timeout == 2.5 and not settings.alert_allow_private
    assert settings.mongo_uri == "memory://"  # its own in-memory store, not the deployed one
    assert settings.redis_prefix.startswith("fptrack-scan-")
