"""The matching engine end to end: the store on the test MongoDB server, the indexes on the
in-memory twin of Redis (:class:`matcher.index.memory.MemoryStorage`, held to Redis's
behaviour by ``test_packed.py``); the engine on the real server and cluster is tested in
``test_cluster.py``, ``test_index_lost.py``, ``test_field_shapes.py`` and
``test_redis_guard.py`` (an outage included).

Works are the shipped sample works (``samples/works``); pages are built from them with the
edits pirates make and reach the engine as crawled pages do (``crawl``: the ingest, then
the ``process_page`` task's work). Every test checks what reaches the store, not just
return values.
"""

from __future__ import annotations

import random

import bson
import numpy as np
import opencc
import pytest

from fingerprint.normalize import normalize
from matcher.errors import UnusableText
from matcher.index.maintenance import drop_indexes, rebuild_indexes
from matcher.keys import segment_owner
from matcher.matching.engine import Engine
from matcher.matching.prepared import prepare
from matcher.store import fingerprints as stored
from tests.matcher.conftest import (
    UNRELATED,
    crawl,
    matched,
    page_of,
    paragraphs,
    sample,
)

INDEX_BACKENDS = ("memory",)


def test_exact_copy_in_new_chrome_matches_with_evidence(engine: Engine, works) -> None:
    work_text = sample("lighthouse.txt")
    page_text = page_of(work_text)
    records = crawl(engine, "http://pirate.example/1", page_text, site="pirate.example")
    assert matched(records) == {works["lighthouse.txt"]}
    record = records[0]
    assert record["containment_work"] > 0.97 and record["score"] > 0.97
    assert {"shingles", "pinyin"} <= set(record["methods"])
    assert record["evidence"]
    for ev in record["evidence"]:
        a, b = ev["work_span"]
        c, d = ev["page_span"]
        assert normalize(work_text[a:b]).text == normalize(page_text[c:d]).text
        assert page_text[c:d].startswith(ev["text"].rstrip("…"))
    [stored] = engine.store.matches.matches_for(
        "page_id", str(engine.store.pages.page_by_url("http://pirate.example/1")["_id"])
    )
    assert stored["status"] == "new" and stored["site"] == "pirate.example"


def test_traditional_homophone_and_typo_copy_matches(engine: Engine, works) -> None:
    text = opencc.OpenCC("s2t").convert(sample("tea-history.txt"))
    rng = random.Random(7)
    chars = list(text)
    han = [i for i, ch in enumerate(chars) if "\u4e00" <= ch <= "\u9fff"]
    for i in rng.sample(han, len(han) * 3 // 100):
        chars[i] = "蠶"
    records = crawl(engine, "http://pirate.example/tw", page_of("".join(chars)))
    assert matched(records) == {works["tea-history.txt"]}
    assert records[0]["containment_work"] > 0.8


def test_two_works_on_one_page_and_one_work_over_two_pages(engine: Engine, works) -> None:
    both = crawl(
        engine,
        "http://pirate.example/both",
        page_of(sample("river-town.txt"), sample("star-voyage.txt")),
    )
    assert matched(both) == {works["river-town.txt"], works["star-voyage.txt"]}
    paras = paragraphs(sample("star-voyage.txt"))
    half = len(paras) // 2
    first = crawl(engine, "http://pirate.example/p1", page_of(*paras[:half]))
    second = crawl(engine, "http://pirate.example/p2", page_of(*paras[half:]))
    assert matched(first) == matched(second) == {works["star-voyage.txt"]}
    assert engine.store.matches.count() == 4


def test_shuffled_and_excerpted_copies_match(engine: Engine, works) -> None:
    paras = paragraphs(sample("lighthouse.txt"))
    random.Random(1).shuffle(paras)
    assert matched(crawl(engine, "http://x/shuffled", page_of(*paras))) == {works["lighthouse.txt"]}
    text = sample("river-town.txt")
    excerpt = text[len(text) // 3 : len(text) // 3 + int(len(text) * 0.35)]
    records = crawl(engine, "http://x/excerpt", page_of(UNRELATED, excerpt, UNRELATED))
    assert matched(records) == {works["river-town.txt"]}
    assert 0.25 < records[0]["containment_work"] < 0.45


def test_unrelated_and_same_topic_pages_do_not_match(engine: Engine, works) -> None:
    assert crawl(engine, "http://x/news", page_of(UNRELATED * 3)) == []
    assert crawl(engine, "http://x/tea", page_of(sample("tea-brewing.txt"))) == []
    assert engine.store.matches.count() == 0
    assert engine.store.count("pages") == 2


def test_boilerplate_shared_with_many_works_is_not_a_match(engine: Engine) -> None:
    licence = (
        "版权声明：本作品采用知识共享署名许可协议进行许可。您可以自由地复制、发行、展览、表演、"
        "放映、广播或通过信息网络传播本作品，但必须按照作者或者许可人指定的方式对作品进行署名。"
        "转载请注明出处，并保留本段声明的全部内容，不得用于任何商业用途，违者必究。"
    )
    names = ["lighthouse.txt", "river-town.txt", "tea-history.txt", "star-voyage.txt"]
    ids = [engine.add_work(sample(n)[:500] + "\n\n" + licence, title=n) for n in names]
    page = page_of(UNRELATED, licence, sample("chef-diary.txt")[:300])
    assert crawl(engine, "http://x/licence", page) == []
    copy = crawl(engine, "http://x/copy", page_of(sample("river-town.txt")[:500], licence))
    assert matched(copy) == {ids[1]}


def test_reprocessing_updates_records_and_deactivates_stale_ones(engine: Engine, works) -> None:
    url = "http://pirate.example/changing"
    first = crawl(engine, url, page_of(sample("lighthouse.txt")))
    again = crawl(engine, url, page_of(sample("lighthouse.txt")))
    assert first[0]["_id"] == again[0]["_id"]
    assert engine.store.matches.count() == 1
    assert engine.store.count("pages") == 1
    changed = crawl(engine, url, page_of(sample("river-town.txt")))
    assert matched(changed) == {works["river-town.txt"]}
    page_id = str(engine.store.pages.page_by_url(url)["_id"])
    records = engine.store.matches.matches_for("page_id", page_id, active_only=False)
    states = {str(m["work_id"]): m["active"] for m in records}
    assert states == {works["lighthouse.txt"]: False, works["river-town.txt"]: True}
    # The old content is gone from the page index: the new work is not matched to it.
    lone = engine.add_work(sample("chef-diary.txt"), title="chef")
    assert engine.match_work_against_pages(lone) == []


def test_new_work_finds_pages_crawled_before(engine: Engine) -> None:
    crawl(engine, "http://old.example/1", page_of(sample("chef-diary.txt")))
    crawl(engine, "http://old.example/2", page_of(UNRELATED))
    work_id = engine.add_work(sample("chef-diary.txt"), title="chef")
    records = engine.match_work_against_pages(work_id)
    assert [r["url"] for r in records] == ["http://old.example/1"]
    assert records[0]["evidence"] and records[0]["containment_work"] > 0.97
    assert engine.match_work_against_pages(work_id)[0]["_id"] == records[0]["_id"]
    assert engine.store.matches.count() == 1


def test_removed_work_is_no_longer_matched(engine: Engine, works) -> None:
    assert engine.remove_work(works["lighthouse.txt"])
    assert crawl(engine, "http://x/1", page_of(sample("lighthouse.txt"))) == []
    assert engine.store.works.get_work(works["lighthouse.txt"]) is None
    assert not engine.remove_work(works["lighthouse.txt"])


def test_rebuild_from_store_gives_identical_answers(engine: Engine, works) -> None:
    pages = {
        "http://x/a": page_of(sample("lighthouse.txt")),
        "http://x/b": page_of(sample("river-town.txt")[:700], sample("star-voyage.txt")),
    }
    before = {u: engine.match_text(t) for u, t in pages.items()}
    for url, text in pages.items():
        crawl(engine, url, text)
    keys_before = sorted(engine.storage.scan("fptrack-test:*"))
    drop_indexes(engine)
    assert engine.storage.scan("fptrack-test:*") == []
    assert rebuild_indexes(engine) == {"work": 4, "page": 2}
    after = {u: engine.match_text(t) for u, t in pages.items()}
    assert sorted(engine.storage.scan("fptrack-test:*")) == keys_before
    for url in pages:
        assert [(r["work_id"], r["score"], r["evidence"]) for r in before[url]] == [
            (r["work_id"], r["score"], r["evidence"]) for r in after[url]
        ]
    lone = engine.add_work(sample("chef-diary.txt"), title="chef")
    crawl(engine, "http://x/c", page_of(sample("chef-diary.txt")))
    assert [r["url"] for r in engine.match_work_against_pages(lone)] == ["http://x/c"]


def test_registering_the_same_work_twice_keeps_one(engine: Engine) -> None:
    a = engine.add_work(sample("lighthouse.txt"), title="t", source="s/l.txt")
    b = engine.add_work(sample("lighthouse.txt"), title="t2", source="s/l.txt")
    assert a == b and engine.store.count("works") == 1
    records = crawl(engine, "http://x/1", page_of(sample("lighthouse.txt")))
    assert len(records) == 1 and records[0]["work_title"] == "t2"


def test_work_without_usable_text_is_rejected(engine: Engine) -> None:
    for text in ["", "   \n\t", "!!!???。。。", "短文"]:
        with pytest.raises(UnusableText, match="content characters"):
            engine.add_work(text, title="empty")
    with pytest.raises(UnusableText):
        engine.add_work(b"\x00\x01\x02\xff\xfe" * 200, title="binary")
    assert engine.store.count("works") == 0


def test_bytes_in_legacy_encodings_are_decoded(engine: Engine, works) -> None:
    text = page_of(sample("river-town.txt"))
    records = engine.process_page("http://x/gbk", text.encode("gb18030"))
    assert matched(records) == {works["river-town.txt"]}
    big5 = opencc.OpenCC("s2t").convert(text).encode("big5hkscs", "replace")
    assert matched(engine.process_page("http://x/big5", big5)) == {works["river-town.txt"]}


def test_corrupt_stored_fingerprint_is_reported_not_compared(engine: Engine, works, caplog) -> None:
    owner = segment_owner(engine.store.works.get_work(works["lighthouse.txt"])["seq"], 0)
    key = engine.keys.segment(owner)
    [ref], _ = engine.storage.mget([key], "testing")
    engine.storage.set_many([(key, ref[:-3])], "testing")
    assert crawl(engine, "http://x/1", page_of(sample("lighthouse.txt"))) == []
    assert any(f"segment {owner}" in p for p in engine.problems)
    assert "rebuild" in caplog.text
    rebuild_indexes(engine)
    assert len(crawl(engine, "http://x/2", page_of(sample("lighthouse.txt")))) == 1


def test_match_text_stores_nothing(engine: Engine, works) -> None:
    records = engine.match_text(page_of(sample("star-voyage.txt")))
    assert matched(records) == {works["star-voyage.txt"]}
    assert "page_id" not in records[0]
    assert engine.store.count("pages") == 0
    assert np.isclose(records[0]["containment"], records[0]["containment_work"])


def test_a_page_changed_between_its_read_and_its_lock_is_matched_as_it_is_now(
    engine: Engine, works, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone page is matched as read before its lock, and read once: no second read under
    the lock. When its text changed in between (and another task matched the new text
    meanwhile), its processed mark is not written and it is matched again, read under the
    lock: only the new text's match stays active."""
    url = "http://pirate.example/changing"
    crawl(engine, url, page_of(sample("lighthouse.txt")))
    page_id = str(engine.store.pages.page_by_url(url)["_id"])
    reads: list[str] = []
    rereads: list[object] = []
    get_page, pages_by_id = engine.store.page_links.page_and_around, engine.store.pages.pages_by_id
    monkeypatch.setattr(
        engine.store.pages, "pages_by_id", lambda ids: rereads.append(ids) or pages_by_id(ids)
    )

    def read(wanted: str) -> tuple[dict | None, object]:
        doc = get_page(wanted)
        reads.append(wanted)
        if len(reads) == 1:  # the new text is stored, and matched, after this read
            monkeypatch.setattr(engine.store.page_links, "page_and_around", get_page)
            crawl(engine, url, page_of(sample("river-town.txt")))
            monkeypatch.setattr(engine.store.page_links, "page_and_around", read)
        return doc

    monkeypatch.setattr(engine.store.page_links, "page_and_around", read)
    engine.process_stored_page(page_id)  # the task of the first text, run late
    assert reads == [page_id, page_id] and len(rereads) == 1  # the lock's read, the second time
    records = engine.store.matches.matches_for("page_id", page_id, active_only=False)
    states = {str(m["work_id"]): m["active"] for m in records}
    assert states == {works["lighthouse.txt"]: False, works["river-town.txt"]: True}
    page = engine.store.pages.get_page(page_id)
    assert page["processed_hash"] == page["content_hash"] and not page["pending"]

    reads.clear()
    rereads.clear()
    engine.process_stored_page(page_id)  # nothing changed: one read, none under the lock
    assert reads == [page_id] and rereads == []


def test_a_page_never_matched_has_no_matches_to_read(
    engine: Engine, works, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page never matched (no processed mark, not named a part of a chapter by another
    part's task) has no match records: they are not read, and its records are inserted.
    Matched again, its records are read. A record left by a task that died before the page's
    processed mark is found by the insert and updated, never doubled."""
    asked: list[object] = []
    active = engine.store.matches.active_matched_works
    monkeypatch.setattr(
        engine.store.matches, "active_matched_works", lambda ids: asked.append(ids) or active(ids)
    )
    url = "http://pirate.example/never"
    records = crawl(engine, url, page_of(sample("lighthouse.txt")))
    assert matched(records) == {works["lighthouse.txt"]} and asked == []
    page = engine.store.pages.page_by_url(url)
    engine.process_stored_page(str(page["_id"]))
    assert len(asked) == 1

    engine.store.db.pages.update_one({"_id": page["_id"]}, {"$unset": {"processed_hash": 1}})
    again = engine.process_stored_page(str(page["_id"]))
    assert len(asked) == 1 and [r["_id"] for r in again] == [records[0]["_id"]]
    stored = engine.store.matches.matches_for("page_id", str(page["_id"]), active_only=False)
    assert [str(m["work_id"]) for m in stored] == [works["lighthouse.txt"]]


def test_a_page_too_large_for_all_its_fingerprints_keeps_those_read_back(
    engine: Engine, works, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored page holds its text and fingerprints in one document, which MongoDB keeps
    under 16 MiB: a page whose fingerprints would not all fit keeps those read back (and is
    matched as any page); one whose text and those would still not fit is refused with the
    reason, before anything is written."""
    text = page_of(sample("lighthouse.txt"))
    fps = prepare(text).stored_fingerprints()
    read_back = {m: fp for m, fp in fps.items() if m in stored.READ_BACK}

    def size(methods: dict) -> int:
        return len(bson.encode({stored.PAGE_FIELD: stored.stored_methods(methods)}))

    text_bytes = len(text.encode())
    monkeypatch.setattr(stored, "_BYTES_PER_CHAR_BOUND", 10**9)  # every page measured
    monkeypatch.setattr(stored, "PAGE_DOCUMENT_BYTES", text_bytes + size(read_back) + 10)
    assert size(fps) > size(read_back) + 10
    found = crawl(engine, "http://pirate/1", text)
    assert [m["work_title"] for m in found if m["active"]] == ["lighthouse.txt"]
    [page] = engine.store.db.pages.find({"url": "http://pirate/1"})
    assert set(page["fingerprints"]) == stored.READ_BACK

    monkeypatch.setattr(stored, "PAGE_DOCUMENT_BYTES", text_bytes + 10)
    entries = engine.pages.simhash.entries()
    with pytest.raises(UnusableText, match="more than a stored page holds"):
        crawl(engine, "http://pirate/2", text)
    [page] = engine.store.db.pages.find({"url": "http://pirate/2"})
    assert page["pending"] and "fingerprints" not in page
    assert engine.store.matches.matches_for("page_id", str(page["_id"])) == []
    assert engine.pages.simhash.entries() == entries


def test_pages_matched_together_get_the_records_of_pages_matched_one_at_a_time(
    engine: Engine, works, mongo_db
) -> None:
    """:meth:`Engine.pages_together` (the embedded scan's batches): one read of the pages
    and their neighbours, their marks written as the block ends; the same records and
    marks as each page's task alone, a split chapter's parts included."""
    from matcher.index.memory import MemoryStorage
    from matcher.pages import CrawledPage
    from matcher.settings import Settings
    from matcher.worker.ingest import Ingest
    from tests.matcher.conftest import prose

    text = sample("lighthouse.txt")
    sixth = len(text) // 6
    rng = random.Random(3)
    split = ["http://x/book/9.html", "http://x/book/9_2.html"]
    bodies = [page_of(prose(rng, 2 * sixth), b, prose(rng, 2 * sixth)) for b in (
        text[:sixth], text[sixth : 2 * sixth]
    )]  # fmt: skip
    pages = [
        CrawledPage(split[0], "pirate", "灯塔（1/2）", bodies[0], next_url=split[1]),
        CrawledPage("http://x/river", "pirate", "", page_of(sample("river-town.txt"))),
        CrawledPage(split[1], "pirate", "灯塔（2/2）", bodies[1], prev_url=split[0]),
        CrawledPage("http://x/news", "pirate", "", page_of(UNRELATED * 3)),
    ]

    def outcome(one: Engine) -> list[tuple]:
        return sorted(
            (m["url"], m["work_title"], m["via"], m["split"], round(m["score"], 6))
            for m in one.store.db.matches.find()
        ) + sorted(
            (p["url"], p["processed_hash"] == p["content_hash"], p["split"])
            for p in one.store.db.pages.find()
        )

    alone_db = mongo_db.client[mongo_db.name + "_alone"]
    settings = Settings.from_env(redis_prefix="fptrack-test-alone", mongo_db=alone_db.name)
    alone = Engine.open(settings, mongo_client=mongo_db.client, storage=MemoryStorage())
    for name in ("lighthouse.txt", "river-town.txt", "tea-history.txt", "star-voyage.txt"):
        alone.add_work(sample(name), title=name, source=f"samples/{name}")
    sent: list[str] = []
    Ingest(alone.store, sent.append).pages(pages)
    for page_id in sent:
        alone.process_stored_page(page_id)

    together: list[str] = []
    Ingest(engine.store, together.append, send_many=together.extend).pages(pages)
    assert len(together) == 4
    reads: list[str] = []
    around = engine.store.page_links.pages_and_around

    def counted(page_ids):  # the one read the block makes
        reads.append("pages_and_around")
        return around(page_ids)

    def single(page_id):
        reads.append("page_and_around")
        return one(page_id)

    one = engine.store.page_links.page_and_around
    engine.store.page_links.pages_and_around = counted
    engine.store.page_links.page_and_around = single
    with engine.pages_together(together):
        for page_id in together:
            engine.process_stored_page(page_id)
        assert engine.store.db.pages.count_documents({"pending": False}) == 0  # not yet
    # the second part is read again: the first part's task wrote its share to it
    assert reads == ["pages_and_around", "page_and_around"]
    assert outcome(engine) == outcome(alone)
    assert {m["url"] for m in engine.store.db.matches.find()} == {*split, "http://x/river"}
    assert engine.store.db.pages.count_documents({"pending": False}) == 4
    mongo_db.client.drop_database(alone_db.name)
