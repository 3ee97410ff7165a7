"""Reviews are never lost: a work removed and registered again (the same file, or its text
under another name) takes back its matches with their review; a match whose page the work's
new text no longer explains stays archived, listed with its review; ``fptrack check``
counts what ``fptrack matches list`` lists. The operator's commands run as an operator runs
them, ``fptrack`` in a process of its own (:func:`~tests.support.cli.fptrack`), or
``admin.cli.main`` in this one (:func:`~tests.support.cli.run_cli`), on the test's
SecantusDB and Redis; the pages are stored and matched as a crawl's are."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from admin.context import Context
from tests.support.cli import Ran, fptrack, run_cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "works"
CHROME = "书海阁 首页 排行榜\n{}\n本站小说均来自网络"
WORKS = ("chef-diary.txt", "lighthouse.txt")
CHEF_PAGE = "http://pirate.test/book/1025/1.html"
NOTE = "第一章整章照抄"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def listed(ran: Ran) -> list[dict]:
    assert ran.status == 0, ran.err
    return json.loads(ran.out)


def active_matches_in_check(ran: Ran) -> int:
    """The active matches ``fptrack check mongodb`` counts."""
    found = re.search(r", (\d+) active matches", ran.out)
    assert ran.status == 0 and found, ran.out + ran.err
    return int(found.group(1))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A works folder: two of the sample works."""
    works = tmp_path / "works"
    works.mkdir()
    for name in WORKS:
        shutil.copy(SAMPLES / name, works / name)
    return works


@pytest.fixture
def reviewed(ctx: Context, folder: Path) -> str:
    """Pages crawled first (a copy of chef-diary, one of lighthouse, an unrelated one), then
    the works registered (``fptrack works add``, matched against those pages), then the
    copy of chef-diary confirmed by a reviewer; the match's id."""
    engine = ctx.engine
    engine.process_page(CHEF_PAGE, CHROME.format(sample("chef-diary.txt")), site="pirate")
    engine.process_page("http://pirate.test/1021", CHROME.format(sample("lighthouse.txt")))
    engine.process_page("http://pirate.test/news", CHROME.format("今日天气晴，午后有阵雨。" * 30))
    added = run_cli("works", "add", str(folder))
    assert added.status == 0, added.err
    assert "2 work(s) registered, 0 skipped, 2 match(es) among pages already crawled" in added.err
    [match] = [m for m in listed(run_cli("matches", "list", "--json")) if m["url"] == CHEF_PAGE]
    assert engine.store.matches.set_status(match["id"], "confirmed", NOTE, "alice")
    return match["id"]


def test_a_work_removed_and_added_again_gets_its_review_back(
    ctx: Context, folder: Path, reviewed: str
) -> None:
    """``works remove chef-diary`` then ``works add FOLDER``: the confirmed match is archived
    (listed apart, review and all), then given back to the work registered again and active
    once more, the same record with the same review; the other works are said to be
    registered already; ``check`` and ``matches list`` agree all along."""
    removed = fptrack("works", "remove", "chef-diary")
    assert removed.status == 0 and "removed " in removed.out, removed.err
    assert "1 match(es) of 'chef-diary' archived with their review" in removed.err
    assert listed(run_cli("matches", "list", "--status", "confirmed", "--json")) == []
    [archived] = listed(run_cli("matches", "list", "--archived", "--json"))
    assert (archived["id"], archived["status"], archived["note"]) == (reviewed, "confirmed", NOTE)
    assert archived["reviewed_by"] == "alice" and archived["archived"].endswith(": work removed")
    active = listed(run_cli("matches", "list", "--json"))
    assert active_matches_in_check(run_cli("check", "mongodb")) == len(active) == 1

    again = fptrack("works", "add", str(folder))
    assert again.status == 0, again.err
    assert (
        "1 work(s) registered, 1 already registered (1 unchanged), 0 skipped, "
        "2 match(es) among pages already crawled" in again.err
    )
    for name in WORKS[1:]:
        assert f"fptrack: {folder}/{name}: already registered (work " in again.err
    assert (
        f"fptrack: {folder}/chef-diary.txt: 1 match(es) of its earlier registration given back "
        "with their review: 1 active again" in again.err
    )
    [confirmed] = listed(run_cli("matches", "list", "--status", "confirmed", "--json"))
    assert (confirmed["id"], confirmed["note"], confirmed["url"]) == (reviewed, NOTE, CHEF_PAGE)
    assert confirmed["reviewed_by"] == "alice" and confirmed["work"] == "chef-diary"
    assert listed(run_cli("matches", "list", "--archived", "--json")) == []
    active = listed(run_cli("matches", "list", "--json"))
    assert active_matches_in_check(fptrack("check", "mongodb")) == len(active) == 2


def test_a_review_whose_page_the_new_text_no_longer_matches_stays_listed(
    ctx: Context, folder: Path, reviewed: str
) -> None:
    """chef-diary.txt registered again with another text (lighthouse's: it becomes that
    work's twin): its confirmed match is archived (its page no longer matches the work),
    never dropped; with its old text back the match is active again. Removed and registered
    under another name with that text, the work takes its match back too."""
    chef = folder / "chef-diary.txt"
    chef.write_text(sample("lighthouse.txt"), encoding="utf-8")
    changed = run_cli("works", "add", str(chef))
    assert changed.status == 0, changed.err
    assert "its text changed: indexed again" in changed.err
    assert f"fptrack: {chef}: same text as work " in changed.err
    assert (
        f"fptrack: {chef}: 1 match(es) stay archived with their review: their page does not "
        "match its text (fptrack matches list --archived)" in changed.err
    )
    [archived] = listed(run_cli("matches", "list", "--archived", "--json"))
    assert (archived["id"], archived["status"], archived["note"]) == (reviewed, "confirmed", NOTE)
    assert archived["archived"].endswith(": its page no longer matches the work's text")
    assert listed(run_cli("matches", "list", "--status", "confirmed", "--json")) == []
    active = listed(run_cli("matches", "list", "--json"))
    assert active_matches_in_check(run_cli("check", "mongodb")) == len(active) == 1

    chef.write_text(sample("chef-diary.txt"), encoding="utf-8")
    back = run_cli("works", "add", str(chef))
    assert back.status == 0 and "stay archived" not in back.err, back.err
    [confirmed] = listed(run_cli("matches", "list", "--status", "confirmed", "--json"))
    assert (confirmed["id"], confirmed["note"]) == (reviewed, NOTE)

    assert run_cli("works", "remove", "chef-diary").status == 0
    renamed = folder / "chef-diary-2nd.txt"
    chef.rename(renamed)
    moved = run_cli("works", "add", str(renamed))
    assert "1 match(es) of its earlier registration given back" in moved.err, moved.err
    [confirmed] = listed(run_cli("matches", "list", "--status", "confirmed", "--json"))
    assert (confirmed["id"], confirmed["note"]) == (reviewed, NOTE)
    assert confirmed["work"] == "chef-diary-2nd"
    active = listed(run_cli("matches", "list", "--json"))
    assert active_matches_in_check(run_cli("check", "mongodb")) == len(active) == 2
