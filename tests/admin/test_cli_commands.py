"""The operator's CLI commands over the test Redis and MongoDB servers (handed in through
:class:`admin.context.Context`): what they print, what they store, how they fail."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import time
import zipfile
from pathlib import Path

import pytest
import redis
from pymongo.database import Database

from admin.cli import main
from admin.context import Context
from admin.crawl_wait import wait_for_crawl
from admin.report.html_report import SORT_SCRIPT
from matcher.index.maintenance import drop_indexes
from matcher.keys import segment_owner
from matcher.matching.engine import Engine
from matcher.settings import Settings
from matcher.store import now
from matcher.worker import jobs
from tests.servers import session

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "works"
CHROME = "书海阁 首页 排行榜\n{}\n本站小说均来自网络"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def run(capsys, ctx: Context, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv), ctx)
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(err: str) -> bool:
    lines = [line for line in err.splitlines() if line.startswith("fptrack: error:")]
    return len(lines) == 1


@pytest.fixture
def works_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "works"
    (folder / "sub").mkdir(parents=True)
    (folder / "lighthouse.txt").write_text(sample("lighthouse.txt"), encoding="utf-8")
    (folder / "sub" / "river.md").write_bytes(sample("river-town.txt").encode("gbk"))
    html = f"<html><head><meta charset='big5'></head><body><p>{sample('tea-history.txt')}</p>"
    (folder / "tea.html").write_bytes(html.encode("big5", "xmlcharrefreplace"))
    with zipfile.ZipFile(folder / "more.zip", "w") as archive:
        archive.writestr("star.txt", sample("star-voyage.txt"))
        archive.writestr("notes.bin", b"\x00\x01")
    (folder / "broken.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")
    (folder / "image.png").write_bytes(b"\x89PNG")
    return folder


class TestWorks:
    def test_add_folder_reports_unreadable_and_keeps_the_rest(self, capsys, ctx, works_dir):
        status, out, err = run(capsys, ctx, "works", "add", str(works_dir))
        assert status == 1  # one file could not be read
        assert f"fptrack: skipped {works_dir}/broken.txt: " in err
        # Files of other kinds are named, in the folder and in a zip, one path style for all.
        kinds = "not a work file (.txt .md .html .htm .zip)"
        assert f"fptrack: ignored {works_dir}/image.png: {kinds}" in err
        assert f"fptrack: ignored {works_dir}/more.zip/notes.bin: {kinds}" in err
        assert "4 work(s) registered, 1 skipped, 2 ignored (not work files)" in err
        titles = sorted(w["title"] for w in ctx.engine.store.works.list_works())
        assert titles == ["lighthouse", "river", "star", "tea"]
        assert len(out.splitlines()) == 4
        named = [line.split(": ")[1] for line in err.splitlines() if line.startswith("fptrack:")]
        assert all(name.split()[-1].startswith(f"{works_dir}/") for name in named), named

    def test_add_again_says_which_works_were_registered_already(self, capsys, ctx, works_dir):
        run(capsys, ctx, "works", "add", str(works_dir / "lighthouse.txt"), str(works_dir / "sub"))
        (works_dir / "sub" / "river.md").write_text(sample("chef-diary.txt"), encoding="utf-8")
        status, out, err = run(capsys, ctx, "works", "add", str(works_dir), "--no-match")
        ids = {w["title"]: str(w["_id"]) for w in ctx.engine.store.works.list_works()}
        assert (
            f"fptrack: {works_dir}/lighthouse.txt: already registered (work {ids['lighthouse']}),"
            " unchanged" in err
        )
        assert (
            f"fptrack: {works_dir}/sub/river.md: already registered (work {ids['river']}); "
            "its text changed: indexed again" in err
        )
        assert (
            "2 work(s) registered, 2 already registered (1 unchanged, 1 with a new text), "
            "1 skipped, 2 ignored (not work files)" in err
        )
        assert len(out.splitlines()) == 4 and status == 1

    def test_list_has_a_header_and_the_newest_work_first(self, capsys, ctx, works_dir):
        for name in ("lighthouse.txt", "tea.html", "sub/river.md"):
            run(capsys, ctx, "works", "add", str(works_dir / name), "--no-match")
        run(capsys, ctx, "works", "add", str(works_dir / "lighthouse.txt"), "--no-match")
        status, out, _ = run(capsys, ctx, "works", "list")
        header, *rows = out.splitlines()
        assert status == 0 and header == "id\tregistered\ttitle\tauthor\tsource\ttwin of"
        assert [row.split("\t")[2] for row in rows] == ["river", "tea", "lighthouse"]
        assert all(len(row.split("\t")) == 6 for row in rows)
        assert run(capsys, ctx, "works", "list")[1] == out  # the same order every time

    def test_add_again_updates_in_place(self, capsys, ctx, works_dir):
        run(capsys, ctx, "works", "add", str(works_dir / "lighthouse.txt"))
        status, _, _ = run(
            capsys,
            ctx,
            "works",
            "add",
            str(works_dir / "lighthouse.txt"),
            "--title",
            "灯塔",
            "--author",
            "某人",
        )
        assert status == 0
        [work] = ctx.engine.store.works.list_works()
        assert (work["title"], work["author"]) == ("灯塔", "某人")

    def test_add_the_same_text_twice_says_so(self, capsys, ctx, works_dir, tmp_path):
        copy = tmp_path / "copy.txt"
        copy.write_bytes((works_dir / "lighthouse.txt").read_bytes())
        run(capsys, ctx, "works", "add", str(works_dir / "lighthouse.txt"))
        status, _, err = run(capsys, ctx, "works", "add", str(copy))
        first = next(w for w in ctx.engine.store.works.list_works() if w["title"] != "copy")
        assert status == 0 and f"{copy}: same text as work {first['_id']} ('lighthouse')" in err
        _, out, _ = run(capsys, ctx, "works", "list")
        assert f"same text as {first['_id']}" in out
        _, out, _ = run(capsys, ctx, "works", "list", "--json")
        twins = {w["title"]: w["same_text_as"] for w in json.loads(out)}
        assert twins == {"lighthouse": "", "copy": str(first["_id"])}

    def test_add_a_near_identical_text_says_so(self, capsys, ctx, works_dir, tmp_path):
        edition = tmp_path / "edition.txt"
        text = (works_dir / "lighthouse.txt").read_text(encoding="utf-8")
        edition.write_text("第一版\n" + text + "\n完\n", encoding="utf-8")
        run(capsys, ctx, "works", "add", str(works_dir / "lighthouse.txt"))
        status, _, err = run(capsys, ctx, "works", "add", str(edition))
        first = next(w for w in ctx.engine.store.works.list_works() if w["title"] != "edition")
        assert status == 0
        assert f"{edition}: nearly the same text as work {first['_id']} ('lighthouse')" in err
        assert "an edition of it, indexed" in err  # matched as an edition, no longer hidden
        [doc] = ctx.engine.store.works.find_works("edition")
        seq = ctx.engine.store.works.get_work(str(doc["_id"]))["seq"]
        assert ctx.engine.redis.exists(ctx.engine.keys.segment(segment_owner(seq, 0)))
        _, out, _ = run(capsys, ctx, "works", "list")
        assert f"nearly the same text as {first['_id']}" in out
        _, out, _ = run(capsys, ctx, "works", "list", "--json")
        twins = {w["title"]: (w["same_text_as"], w["near_twin"]) for w in json.loads(out)}
        assert twins == {"lighthouse": ("", False), "edition": (str(first["_id"]), True)}

    def test_add_matches_pages_crawled_before(self, capsys, ctx, works_dir):
        ctx.engine.process_page("http://p/1", CHROME.format(sample("lighthouse.txt")), site="p")
        status, _, err = run(capsys, ctx, "works", "add", str(works_dir / "lighthouse.txt"))
        assert status == 0 and "1 match(es) among pages already crawled" in err
        status, out, _ = run(capsys, ctx, "matches", "list", "--json")
        assert [m["url"] for m in json.loads(out)] == ["http://p/1"]

    def test_list_and_remove(self, capsys, ctx, works_dir):
        run(capsys, ctx, "works", "add", str(works_dir / "lighthouse.txt"))
        status, out, _ = run(capsys, ctx, "works", "list", "--json")
        [work] = json.loads(out)
        status, out, _ = run(capsys, ctx, "works", "remove", "lighthouse")
        assert status == 0 and work["_id"] in out
        assert ctx.engine.store.works.list_works() == []
        status, _, err = run(capsys, ctx, "works", "remove", "lighthouse")
        assert status == 1 and one_line_error(err)

    def test_title_needs_one_file(self, capsys, ctx, works_dir):
        status, _, err = run(capsys, ctx, "works", "add", str(works_dir), "--title", "x")
        assert status == 2 and one_line_error(err)


class TestSites:
    def test_add_change_list_remove_with_schedule(self, capsys, ctx):
        status, out, _ = run(
            capsys,
            ctx,
            "sites",
            "add",
            "http://127.0.0.1:8000/",
            "--name",
            "pirate",
            "--schedule",
            "every 10 m",
            "--recrawl",
            "every 2m",
        )
        assert status == 0 and "added site pirate" in out, _
        assert "incremental crawl every 2m" in out
        status, out, _ = run(capsys, ctx, "schedules", "--json")
        [entry] = [e for e in json.loads(out) if e["name"] == "crawl:pirate"]
        assert entry["task"] == "fptrack.crawl_site" and entry["args"] == ["pirate"]
        assert "10.00 minutes" in entry["schedule"]
        [quick] = [e for e in json.loads(out) if e["name"] == "recrawl:pirate"]
        assert quick["task"] == "fptrack.recrawl_site" and quick["args"] == ["pirate"]
        assert "2.00 minutes" in quick["schedule"]

        status, out, _ = run(
            capsys,
            ctx,
            "sites",
            "add",
            "http://127.0.0.1:8000/",
            "--name",
            "pirate",
            "--schedule",
            "daily@02:30",
            "--depth",
            "2",
            "--render",
        )
        assert "updated site pirate" in out
        status, out, _ = run(capsys, ctx, "sites", "list", "--json")
        [site] = json.loads(out)
        assert (site["max_depth"], site["schedule"], site["render"]) == (2, "daily@02:30", True)
        assert site["recrawl"] == "never"
        _, out, _ = run(capsys, ctx, "sites", "list")
        assert out.rstrip().endswith("http://127.0.0.1:8000/ render\tnever crawled")
        _, out, _ = run(capsys, ctx, "schedules", "--json")
        assert not [e for e in json.loads(out) if e["name"] == "recrawl:pirate"]
        assert (
            "30 2 * * *"
            in next(e for e in json.loads(out) if e["name"] == "crawl:pirate")["schedule"]
        )

        status, _, _ = run(capsys, ctx, "sites", "remove", "pirate")
        assert status == 0
        _, out, _ = run(capsys, ctx, "schedules", "--json")
        assert not [e for e in json.loads(out) if e["name"] == "crawl:pirate"]
        status, _, err = run(capsys, ctx, "sites", "remove", "pirate")
        assert status == 1 and one_line_error(err)

    @pytest.mark.parametrize(
        "argv",
        [
            ("sites", "add", "ftp://x/"),
            ("sites", "add", "http://x/", "--schedule", "whenever"),
            ("sites", "add", "http://x/", "--recrawl", "every 0 m"),
            ("sites", "add", "http://x/", "--recrawl", "often"),
            ("sites", "add", "http://x/", "--include", "(unclosed"),
            ("sites", "add", "http://x/", "--name", "bad name"),
        ],
    )
    def test_bad_site_arguments(self, capsys, ctx, argv):
        status, _, err = run(capsys, ctx, *argv)
        assert status == 2 and one_line_error(err)
        assert ctx.engine.store.sites.list_sites() == []


class TestMatchingAndReports:
    @pytest.fixture
    def recorded(self, ctx):
        ctx.engine.add_work(sample("tea-history.txt"), title="茶史", source="tea-history.txt")
        hostile = CHROME.format(
            '=HYPERLINK("http://evil")<script>alert(1)</script>\n' + sample("tea-history.txt")
        )
        ctx.engine.process_page("http://pirate/tea?<b>", hostile, site="pirate")
        return ctx

    def test_match_a_file(self, capsys, recorded, tmp_path):
        page = tmp_path / "page.txt"
        page.write_text(CHROME.format(sample("tea-history.txt")[:1500]), encoding="utf-8")
        status, out, _ = run(capsys, recorded, "match", str(page))
        assert status == 0 and "茶史 (tea-history.txt)" in out and "text [" in out
        status, out, _ = run(capsys, recorded, "match", str(page), "--json")
        [record] = json.loads(out)
        assert record["work_title"] == "茶史" and record["evidence"]
        other = tmp_path / "other.txt"
        other.write_text("完全无关的一段文字，讲的是今天的天气和明天的计划。" * 5, encoding="utf-8")
        assert "no registered work" in run(capsys, recorded, "match", str(other))[1]

    def test_match_missing_file_and_unreachable_url(self, capsys, recorded, tmp_path):
        status, _, err = run(capsys, recorded, "match", str(tmp_path / "nope.txt"))
        assert status == 2 and one_line_error(err)
        status, _, err = run(capsys, recorded, "match", "http://127.0.0.1:9/page")
        assert status == 1 and one_line_error(err) and "cannot fetch" in err

    def test_matches_list_filters(self, capsys, recorded):
        _, out, _ = run(capsys, recorded, "matches", "list", "--site", "pirate", "--since", "1d")
        assert "http://pirate/tea?<b>" in out
        _, out, _ = run(capsys, recorded, "matches", "list", "--status", "confirmed")
        assert out == ""
        status, _, err = run(capsys, recorded, "matches", "list", "--since", "last tuesday")
        assert status == 2 and one_line_error(err)
        status, _, err = run(capsys, recorded, "matches", "list", "--site", '{"$ne": 1}')
        assert status != 0 and one_line_error(err)

    def test_report_formats_are_inert(self, capsys, recorded, tmp_path):
        _, out, _ = run(capsys, recorded, "report", "--format", "csv")
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == 1 and rows[0]["url"] == "http://pirate/tea?<b>"
        assert rows[0]["work"] == "茶史" and float(rows[0]["score"]) > 0.5
        _, out, _ = run(capsys, recorded, "report", "--format", "json")
        assert json.loads(out)[0]["site"] == "pirate"
        target = tmp_path / "report.html"
        status, _, _ = run(capsys, recorded, "report", "--format", "html", "--out", str(target))
        page = target.read_text(encoding="utf-8")
        # the page's <script> is text; the one script is the report's own, allowed by hash
        assert status == 0 and "&lt;script&gt;" in page
        assert page.count("<script>") == 1 and f"<script>{SORT_SCRIPT}</script>" in page
        assert "<mark>" in page and "default-src 'none'" in page

    def test_report_as_xlsx_is_the_admins_export(self, capsys, recorded, tmp_path):
        """The workbook of the admin's XLSX export: the CSV's columns and rows, typed."""
        from openpyxl import load_workbook

        from admin.report import CSV_FIELDS

        _, out, _ = run(capsys, recorded, "report", "--format", "csv")
        [expected] = list(csv.DictReader(io.StringIO(out)))
        target = tmp_path / "report.xlsx"
        status, _, err = run(capsys, recorded, "report", "--format", "xlsx", "--out", str(target))
        assert status == 0 and f"1 match(es) written to {target}" in err
        sheet = load_workbook(target).active
        header, *rows = [[c.value for c in line] for line in sheet.iter_rows()]
        assert tuple(header) == CSV_FIELDS and len(rows) == 1
        got = dict(zip(CSV_FIELDS, rows[0], strict=True))
        # an empty cell (no sibling edition) reads back as None
        assert {k: "" if v is None else str(v) for k, v in got.items()} == expected
        assert got["siblings"] is None and expected["siblings"] == ""
        assert isinstance(got["score"], float) and isinstance(got["passages"], int)
        piped = io.TextIOWrapper(io.BytesIO())  # standard output redirected to a file
        with contextlib.redirect_stdout(piped):
            assert main(["report", "--format", "xlsx"], recorded) == 0
        again = load_workbook(io.BytesIO(piped.buffer.getvalue())).active
        assert [[c.value for c in line] for line in again.iter_rows()] == [header, *rows]
        status, _, err = run(capsys, recorded, "report", "--format", "xlsx", "--status", "new",
                             "--out", str(tmp_path / "none" / "r.xlsx"))  # fmt: skip
        assert status != 0 and one_line_error(err)

    def test_index_rebuild(self, capsys, recorded):
        drop_indexes(recorded.engine)
        # A process that finds the indexes gone rebuilds them from the store first.
        assert len(recorded.engine.match_text(CHROME.format(sample("tea-history.txt")))) == 1
        assert any("Redis had lost them" in p for p in recorded.engine.problems)
        status, out, _ = run(capsys, recorded, "index", "rebuild", "--if-incomplete")
        assert status == 0 and "the indexes are whole" in out
        status, out, _ = run(capsys, recorded, "index", "rebuild")
        assert status == 0 and "1 work segment(s), 1 page(s)" in out
        assert len(recorded.engine.match_text(CHROME.format(sample("tea-history.txt")))) == 1


def test_archive_prune(capsys, ctx, tmp_path):
    from matcher.evidence.archive import DirectoryArchive

    folder = DirectoryArchive(tmp_path / "archive")
    stale = folder.put(b"a WARC file no page or match refers to")
    two_days = time.time() - 2 * 86400
    os.utime(tmp_path / "archive" / stale[:2] / f"{stale}.warc.gz", (two_days, two_days))
    fresh = folder.put(b"a WARC file a crawl has just stored")
    status, out, _ = run(capsys, Context(engine=ctx.engine, archive=folder), "archive", "prune")
    assert status == 0 and "1 archived exchange(s) deleted" in out
    assert not folder.has(stale) and folder.has(fresh)
    status, out, _ = run(capsys, Context(engine=ctx.engine, archive=None), "archive", "prune")
    assert status == 0 and "nothing to prune" in out


def test_store_outage_is_one_line(capsys, tmp_path):
    settings = Settings(mongo_uri="mongodb://127.0.0.1:1")
    status, _, err = run(capsys, Context(settings=settings), "works", "list")
    assert status == 1 and one_line_error(err)
    assert "MongoDB unreachable at mongodb://127.0.0.1:1 (connection refused)" in err
    assert "set FPTRACK_MONGO_URI" in err


def test_crawl_inline_records_matches(capsys, ctx) -> None:
    """`fptrack crawl SITE --inline`: a real crawl of the sample site, matched in process."""
    from admin.scan import serve_directory

    site_dir = Path(__file__).resolve().parents[2] / "samples" / "site"
    for name in ("lighthouse.txt", "tea-history.txt"):
        ctx.engine.add_work(sample(name), title=name, source=name)
    with serve_directory(site_dir) as base:
        run(capsys, ctx, "sites", "add", base + "index.html", "--name", "sample")
        status, out, _ = run(capsys, ctx, "crawl", "sample", "--inline")
        assert status == 0 and "sample: 18 page(s)" in out
        assert "; matches: 3 new, 3 on the site in all (3 awaiting review)" in out
        # nothing new since: only the start page (stored: it has text) is fetched again
        status, again, _ = run(capsys, ctx, "crawl", "sample", "--inline", "--incremental")
    assert status == 0 and "sample: 1 page(s) (0 new, 0 changed, 1 unchanged)" in again
    # a crawl that finds no new copy says how many the site has: "0 new" is not "0 matched"
    assert "; matches: 0 new, 3 on the site in all (3 awaiting review)" in again
    # a worker's crawl of the site that stored nothing new, followed by `crawl --wait`
    lease = {"run_id": "run-1", "token": "0123abcd", "run_started_at": now().isoformat(),
             "slot": 0, "host": "worker-1", "pid": 1}  # fmt: skip
    jobs.record_crawler_started(ctx.store, "sample", lease, "task-1")
    ended = {f"{jobs.FRONTIER_STATS}ended_run": True}
    jobs.record_crawler_ended(ctx.store, "sample", lease, "finished", ended)
    waited = io.StringIO()
    assert wait_for_crawl(ctx.store, "sample", "task-1", poll=0.1, out=waited) == 0
    assert waited.getvalue().splitlines()[-1] == (
        "sample: crawl finished: 0 page(s); matches: 0 new, 3 on the site in all "
        "(3 awaiting review)"
    )
    _, out, _ = run(capsys, ctx, "matches", "list", "--site", "sample", "--json")
    works = sorted(m["work"] for m in json.loads(out))
    assert works == ["lighthouse.txt", "lighthouse.txt", "tea-history.txt"]
    status, _, err = run(capsys, ctx, "crawl", "nowhere")
    assert status == 1 and one_line_error(err)


def test_crawl_inline_of_a_rendered_site_matches_the_text_its_scripts_load(
    capsys, ctx: Context, tmp_path: Path
) -> None:
    """`fptrack sites add URL --render` then `fptrack crawl SITE --inline`: Chromium runs the
    pages' scripts, and the work they load is matched on both parts of its chapter; with no
    browser the crawl ends in one line."""
    from dataclasses import replace

    from tests.servers.fixture_site import FixtureSite
    from tests.sites.script_site import PARTS, WORK, chromium, script_pages

    ctx.engine.add_work(WORK.read_text(encoding="utf-8"), title=WORK.name, source=WORK.name)
    browser = Context(engine=ctx.engine, settings=replace(ctx.settings, chromium=chromium()))
    missing = str(tmp_path / "chromium")
    none = Context(engine=ctx.engine, settings=replace(ctx.settings, chromium=missing))
    with FixtureSite(script_pages()) as site:
        run(capsys, browser, "sites", "add", site.url("/"), "--name", "script", "--render")
        status, out, err = run(capsys, browser, "crawl", "script", "--inline")
        assert status == 0 and "script: 2 page(s)" in out, err
        _, out, _ = run(capsys, browser, "matches", "list", "--site", "script", "--json")
        assert sorted(m["url"] for m in json.loads(out)) == [site.url(p) for p in PARTS]
        status, _, err = run(capsys, none, "crawl", "script", "--inline")
    assert status == 1 and one_line_error(err)
    assert f"site script: its pages cannot be rendered: no Chromium at {missing}" in err


def test_crawl_here_is_one_crawler_of_the_shared_frontier(
    capsys, redis_client: redis.Redis, mongo_db: Database
) -> None:
    """`fptrack crawl SITE --here`: this process takes a slot of the site's Redis frontier,
    sends its pages to the workers, and records its part of the run."""
    from admin.scan import serve_directory

    settings = Settings(
        redis_prefix="fptrack-test",
        redis_url=session.session().redis_url(0),
        crawl_lease=10,
        mongo_db=mongo_db.name,
    )
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=redis_client)
    ctx = Context(settings=settings, engine=engine)
    sent: list[tuple[str, tuple]] = []
    ctx.send = lambda task, *args: sent.append((task, args)) or "id"  # type: ignore[method-assign]
    site_dir = Path(__file__).resolve().parents[2] / "samples" / "site"
    with serve_directory(site_dir) as base:
        run(capsys, ctx, "sites", "add", base + "index.html", "--name", "sample", "--crawlers", "2")
        status, out, _ = run(capsys, ctx, "crawl", "sample", "--here")
    assert status == 0 and "sample: 18 page(s)" in out
    assert len(sent) == 18 and {task for task, _ in sent} == {"fptrack.process_page"}
    [crawl] = ctx.store.crawls.last_crawls("sample")
    assert (crawl["outcome"], crawl["crawlers"]) == ("finished", 1)
    assert crawl["stats"]["fptrack/pages"] == 18
    [process] = crawl["processes"].values()
    assert process["slot"] == 0 and process["ended_run"] is True
    assert redis_client.keys("fptrack-test:crawl*") == []  # the finished run is cleared
    assert ctx.store.sites.get_site("sample").crawlers == 2
