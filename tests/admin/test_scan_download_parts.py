"""A whole-book download stored in parts is matched as one: one match record per (download
URL, work) on its first part's page, naming the parts and chapters that hold the work, its
evidence in the whole download's text; the scan's contract lists it once per work."""

from __future__ import annotations

from pathlib import Path

from admin.scan import contract_matches
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage, part_url
from matcher.worker.ingest import Ingest

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "works"
DOWNLOAD = "http://pirate.test/down/book.zip"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def crawl_download(engine: Engine, texts: list[str]) -> list[str]:
    """Store a download's parts as the crawl yields them (the next parts, then the first,
    which names how many there are) and run the tasks the ingest sends; their page ids."""
    sent: list[str] = []
    ingest = Ingest(engine.store, sent.append)
    items = [
        CrawledPage(part_url(DOWNLOAD, n), "pirate", f"书 {n}", text)
        for n, text in enumerate(texts[1:], 2)
    ]
    items.append(CrawledPage(DOWNLOAD, "pirate", "书 1", texts[0], parts=len(texts)))
    for item in items:
        ingest.page(item)
    for page_id in sent:
        engine.process_stored_page(page_id, as_task=True)
    return sent


def records(engine: Engine) -> dict[tuple[str, str], dict]:
    return {(m["url"], m["work_source"]): m for m in engine.store.db.matches.find({"active": True})}


def test_a_download_in_parts_is_one_record_per_work(engine: Engine) -> None:
    engine.add_work(sample("lighthouse.txt"), title="灯塔", source="lighthouse.txt")
    engine.add_work(sample("tea-history.txt"), title="茶史", source="tea-history.txt")
    lighthouse, tea = sample("lighthouse.txt"), sample("tea-history.txt")
    texts = [lighthouse[: len(lighthouse) // 2], lighthouse[len(lighthouse) // 2 :] + "\n" + tea]
    sent = crawl_download(engine, texts)
    first = engine.store.pages.page_by_url(DOWNLOAD)
    second = engine.store.pages.page_by_url(part_url(DOWNLOAD, 2))
    assert sent == [str(first["_id"])]  # one task: the first part's, for the whole download
    engine.process_page("http://pirate.test/1.html", tea, site="pirate")

    found = records(engine)
    assert set(found) == {
        (DOWNLOAD, "lighthouse.txt"),
        (DOWNLOAD, "tea-history.txt"),
        ("http://pirate.test/1.html", "tea-history.txt"),
    }
    book = found[DOWNLOAD, "lighthouse.txt"]
    assert book["page_id"] == first["_id"] and book["parts"] == [1, 2]
    assert found[DOWNLOAD, "tea-history.txt"]["parts"] == [2]
    assert book["containment_work"] > 0.9  # the two halves together: the whole work
    assert {e["part"] for e in book["evidence"]} == {1, 2}
    whole = engine.store.pages.download_text(first)
    assert whole == "\n".join(texts)
    for record in (book, found[DOWNLOAD, "tea-history.txt"]):
        for e in record["evidence"]:  # spans in the whole download's text
            a, b = e["page_span"]
            assert whole[a:b].startswith(e["text"].rstrip("…")[:20])
    assert engine.store.matches.matches_for("page_id", str(second["_id"]), active_only=False) == []
    for page in (first, second):  # each part matched: fingerprints stored, nothing pending
        stored = engine.store.pages.get_page(str(page["_id"]))
        assert stored["pending"] is False and stored["processed_hash"] == stored["content_hash"]

    entries = {(e["url"], e["work"]): e for e in contract_matches(engine)}
    assert set(entries) == set(found)
    assert entries[DOWNLOAD, "lighthouse.txt"]["parts"] == [DOWNLOAD, part_url(DOWNLOAD, 2)]
    assert entries[DOWNLOAD, "tea-history.txt"]["parts"] == [part_url(DOWNLOAD, 2)]
    assert "parts" not in entries["http://pirate.test/1.html", "tea-history.txt"]


def test_a_changed_next_part_and_a_work_registered_later_match_the_download_again(
    engine: Engine,
) -> None:
    engine.add_work(sample("lighthouse.txt"), title="灯塔", source="lighthouse.txt")
    lighthouse, river = sample("lighthouse.txt"), sample("river-town.txt")
    half = len(lighthouse) // 2
    crawl_download(engine, [lighthouse[:half], lighthouse[half:]])
    assert records(engine)[DOWNLOAD, "lighthouse.txt"]["parts"] == [1, 2]

    # the site swaps the second half for another book: the first part's text is the same
    sent = crawl_download(engine, [lighthouse[:half], river])
    assert sent == [str(engine.store.pages.page_by_url(DOWNLOAD)["_id"])]
    assert records(engine)[DOWNLOAD, "lighthouse.txt"]["parts"] == [1]

    # a work registered afterwards is found in the download's second part: the download
    work_id = engine.add_work(river, title="河镇", source="river-town.txt")
    engine.match_work_against_pages(work_id)
    found = records(engine)
    assert set(found) == {(DOWNLOAD, "lighthouse.txt"), (DOWNLOAD, "river-town.txt")}
    assert found[DOWNLOAD, "river-town.txt"]["parts"] == [2]

    # a next part's task sent again by the sweep finds it matched with its download
    second = engine.store.pages.page_by_url(part_url(DOWNLOAD, 2))
    assert engine.process_stored_page(str(second["_id"]), as_task=True) == []


def test_a_scan_of_a_site_offering_a_long_download(tmp_path: Path) -> None:
    """A real crawl: a ZIP of four chapters, each a registered work, read in parts of about
    one chapter; one record per work on the download's URL, each naming its part."""
    from admin.scan import run_scan, serve_directory
    from matcher.index.maintenance import drop_indexes
    from tests.sites.downloads import book_site

    names = ["lighthouse.txt", "river-town.txt", "tea-history.txt", "star-voyage.txt"]
    works = tmp_path / "works"
    works.mkdir()
    for name in names:
        (works / name).write_text(sample(name), encoding="utf-8")
    site = tmp_path / "site"
    part_chars = book_site(site, [sample(name) for name in names])
    with serve_directory(site) as url:
        result, engine = run_scan(
            works, [url], crawl_overrides={"FPTRACK_DOWNLOAD_PART_CHARS": part_chars}
        )
    try:
        assert result.errors == []
        download = url + "down/book.zip"
        entries = {e["work"]: e for e in result.matches}
        assert set(entries) == set(names)
        assert {e["url"] for e in entries.values()} == {download}
        stored = list(engine.store.db.matches.find({"active": True}))
        assert len(stored) == len(names)  # one record per (download, work)
        first = engine.store.pages.page_by_url(download)
        assert first["parts"] >= 2 and all(m["page_id"] == first["_id"] for m in stored)
        parts = {m["work_source"]: m["parts"] for m in stored}
        assert sorted(parts.values()) == [[n] for n in range(1, len(names) + 1)]  # a chapter each
        for m in stored:
            assert {e["part"] for e in m["evidence"]} == set(m["parts"])
    finally:
        drop_indexes(engine)
