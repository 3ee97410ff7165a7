"""The evidence archive end to end: a real crawl keeps each page's HTTP exchange as a WARC
file (GridFS on the test MongoDB server), its match points at it, and after the page changes
and is crawled again the match still holds the original, which still verifies (``fptrack
evidence verify`` too, in a deployment with no TSA: intact, no trusted timestamp)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from admin.cli import main
from admin.commands.evidence import NO_TRUSTED_TIMESTAMP
from admin.context import Context
from crawler.run import crawl_in_process
from matcher.evidence.archive import GridFSArchive, verify
from matcher.matching.engine import Engine
from matcher.sites.site_config import SiteConfig
from matcher.worker.ingest import Ingest
from matcher.worker.jobs import prune_archive
from tests.servers.fixture_site import FixtureSite, page
from tests.support.e2e import sample

SETTINGS = {"AUTOTHROTTLE_ENABLED": False, "LOG_LEVEL": "WARNING"}


def chapter(text: str) -> str:
    paragraphs = "".join(f"<p>{line}</p>" for line in text.splitlines() if line.strip())
    return f"<html><head><title>第一章</title></head><body><div>{paragraphs}</div></body></html>"


def crawl_and_match(engine: Engine, ingest: Ingest, site: FixtureSite, queued: list[str]) -> None:
    config = SiteConfig.from_dict({"name": "pirate", "start_urls": [site.url("/1.html")]})
    crawl_in_process([config], {"FPTRACK_INGEST": ingest, **SETTINGS}, timeout=60)
    for page_id in queued:
        engine.process_stored_page(page_id)
    queued.clear()


def test_a_match_keeps_the_exchange_it_was_found_in(engine: Engine, capsys: Any) -> None:
    work_id = engine.add_work(sample("lighthouse.txt"), title="灯塔", source="lighthouse.txt")
    archive = GridFSArchive(engine.store.db)
    queued: list[str] = []
    ingest = Ingest(engine.store, queued.append, archive=archive)
    first_body = chapter(sample("lighthouse.txt")).encode("gbk")
    with FixtureSite({"/1.html": (200, {"Content-Type": "text/html"}, first_body)}) as site:
        crawl_and_match(engine, ingest, site, queued)
        [doc] = engine.store.db.pages.find()
        [match] = engine.store.db.matches.find()
        original: dict[str, Any] = doc["archive"]
        assert str(match["work_id"]) == work_id and match["archive"] == original
        response, request = verify(archive.get(original["sha256"]), original["sha256"])
        assert response.kind == "response" and response.payload == first_body
        assert response.url == request.url == site.url("/1.html")
        assert original["bytes"] == len(archive.get(original["sha256"]))

        crawl_and_match(engine, ingest, site, queued)  # unchanged: nothing new archived
        assert engine.store.db.pages.find_one()["archive"] == original

        changed = chapter(sample("lighthouse.txt") + "\n本章完，请收藏本站。").encode("gbk")
        site.pages["/1.html"] = (200, {"Content-Type": "text/html"}, changed)
        crawl_and_match(engine, ingest, site, queued)
    latest = engine.store.db.pages.find_one()["archive"]
    assert latest["sha256"] != original["sha256"]
    [match] = engine.store.db.matches.find()
    assert match["archive"] == original  # the original exchange, kept
    assert verify(archive.get(original["sha256"]), original["sha256"])[0].payload == first_body
    assert verify(archive.get(latest["sha256"]), latest["sha256"])[0].payload == changed
    ctx = Context(settings=engine.settings, engine=engine, archive=archive)  # no TSA, no CA
    assert main(["evidence", "verify", str(match["_id"])], ctx) == NO_TRUSTED_TIMESTAMP
    out = capsys.readouterr().out
    assert f"INTACT {original['sha256']}.warc.gz: 2 record(s); no trusted timestamp" in out


def test_an_archive_that_fails_costs_no_page(engine: Engine, tmp_path: Any) -> None:
    from matcher.evidence.archive import DirectoryArchive

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the archive's folder should be")
    queued: list[str] = []
    ingest = Ingest(engine.store, queued.append, archive=DirectoryArchive(blocked))
    body = chapter(sample("river-town.txt")).encode()
    with FixtureSite({"/1.html": page(body.decode())}) as site:
        crawl_and_match(engine, ingest, site, queued)
    [doc] = engine.store.db.pages.find()
    assert "archive" not in doc and doc["pending"] is False


def test_a_page_removed_since_keeps_its_evidence(engine: Engine) -> None:
    engine.add_work(sample("star-voyage.txt"), title="星", source="star-voyage.txt")
    archive = GridFSArchive(engine.store.db)
    queued: list[str] = []
    ingest = Ingest(engine.store, queued.append, archive=archive)
    body = chapter(sample("star-voyage.txt")).encode()
    with FixtureSite({"/1.html": (200, {"Content-Type": "text/html"}, body)}) as site:
        crawl_and_match(engine, ingest, site, queued)
        del site.pages["/1.html"]  # the pirate took it down: now a 404
        crawl_and_match(engine, ingest, site, queued)
        gone = engine.store.db.pages.find_one()["gone"]
        assert gone["status"] == 404
        [match] = engine.store.db.matches.find()
        assert verify(archive.get(match["archive"]["sha256"]))[0].payload == body
        site.pages["/1.html"] = (200, {"Content-Type": "text/html"}, body)  # back again
        crawl_and_match(engine, ingest, site, queued)
    assert "gone" not in engine.store.db.pages.find_one()


def test_pruning_keeps_the_current_and_the_matched_exchanges(engine: Engine) -> None:
    """A page first unrelated to any work, then a copy, then a copy with an ad line: pruning
    drops only the first exchange (no match, no longer the page's)."""
    engine.add_work(sample("tea-history.txt"), title="茶史", source="tea-history.txt")
    archive = GridFSArchive(engine.store.db)
    queued: list[str] = []
    ingest = Ingest(engine.store, queued.append, archive=archive)
    versions = [
        chapter(sample("chef-diary.txt")),
        chapter(sample("tea-history.txt")),
        chapter(sample("tea-history.txt") + "\n手机用户请访问本站。"),
    ]
    refs = []
    with FixtureSite({}) as site:
        for html in versions:
            site.pages["/1.html"] = page(html)
            crawl_and_match(engine, ingest, site, queued)
            refs.append(engine.store.db.pages.find_one()["archive"]["sha256"])
    unrelated, matched, current = refs
    assert len(set(refs)) == 3 and all(archive.has(r) for r in refs)
    [match] = engine.store.db.matches.find()
    assert match["archive"]["sha256"] == matched
    assert prune_archive(engine, archive) == {"deleted": 0}  # all younger than a day
    assert prune_archive(engine, archive, grace=timedelta(0)) == {"deleted": 1}
    assert not archive.has(unrelated) and archive.has(matched) and archive.has(current)
    assert verify(archive.get(matched), matched)[0].url == site.url("/1.html")
