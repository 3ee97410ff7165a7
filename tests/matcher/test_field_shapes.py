"""The engine on field shapes: split chapters, pages linked by 上一页/下一页, novel-length
works in both directions, related works sharing text.

Pages go through the production path (``crawl``: the ingest, then the task's work).
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from matcher.keys import segment_owner
from matcher.matching.engine import Engine
from matcher.matching.match_records import MAX_PASSAGES
from tests.matcher.conftest import (
    UNRELATED,
    crawl,
    matched,
    novel,
    page_of,
    paragraphs,
    prose,
    sample,
)

INDEX_BACKENDS = ("server", "cluster")


def records_of(engine: Engine, url: str) -> list[dict]:
    page = engine.store.pages.page_by_url(url)
    return engine.store.matches.matches_for("page_id", str(page["_id"])) if page else []


def test_split_chapter_is_matched_by_parts_and_each_part_gets_its_record(
    engine: Engine, works
) -> None:
    text = sample("lighthouse.txt")
    third = len(text) // 6  # each part carries a sixth of the work among other text
    rng = random.Random(3)
    bodies = [text[:third], text[third : 2 * third]]
    urls = ["http://x/book/9.html", "http://x/book/9_2.html"]
    pages = [page_of(prose(rng, 2 * third), body, prose(rng, 2 * third)) for body in bodies]
    title = "灯塔（{}/2）"
    first = crawl(engine, urls[0], pages[0], title=title.format(1), next_url=urls[1])
    assert first == []  # a sixth of the work, a third of the page: not a copy alone
    crawl(engine, urls[1], pages[1], title=title.format(2), prev_url=urls[0])
    for url, body in zip(urls, bodies, strict=True):
        [record] = records_of(engine, url)
        assert str(record["work_id"]) == works["lighthouse.txt"]
        assert record["via"] == "split" and record["split"] == urls
        page_text = engine.store.pages.page_by_url(url)["text"]
        for item in record["evidence"]:
            a, b = item["page_span"]
            assert page_text[a:b] in body  # every span lies in this part's own copy
    assert engine.store.pages.page_by_url(urls[0])["split"] == urls


def test_pages_linked_as_neighbours_stay_separate_pages(engine: Engine, works) -> None:
    """A manual's sections link 上一页/下一页 like split chapters; titles tell them apart."""
    urls = ["http://doc/ch01.html", "http://doc/ch02.html"]
    crawl(engine, urls[0], page_of(sample("river-town.txt")), title="第一章 河镇", next_url=urls[1])
    crawl(
        engine, urls[1], page_of(sample("tea-history.txt")), title="第二章 茶史", prev_url=urls[0]
    )
    assert matched(records_of(engine, urls[0])) == {works["river-town.txt"]}
    assert matched(records_of(engine, urls[1])) == {works["tea-history.txt"]}
    assert all(r["split"] == [] for r in engine.store.db.matches.find())


def test_split_chapter_parts_matching_alone_keep_their_own_records(engine: Engine, works) -> None:
    paras = paragraphs(sample("star-voyage.txt"))
    half = len(paras) // 2
    urls = ["http://x/c/12.html", "http://x/c/12_2.html"]
    # The second part is crawled first: its chapter is joined once the first arrives.
    crawl(engine, urls[1], page_of(*paras[half:]), title="第十二章", prev_url=urls[0])
    crawl(engine, urls[0], page_of(*paras[:half]), title="第十二章", next_url=urls[1])
    for url in urls:
        [record] = records_of(engine, url)
        assert str(record["work_id"]) == works["star-voyage.txt"]
        assert record["via"] == "page" and record["split"] == urls


def test_a_thread_page_quoting_one_sentence_is_not_a_part_of_the_copy(
    engine: Engine, works
) -> None:
    text = sample("lighthouse.txt")
    rng = random.Random(7)
    urls = ["http://bbs/t?tid=5", "http://bbs/t?page=2&tid=5"]
    quote = text[300:400]
    chatter = page_of(prose(rng, 700), "引用楼主：" + quote, prose(rng, 700))
    crawl(engine, urls[0], page_of(text), title="[转载] 灯塔", next_url=urls[1])
    crawl(engine, urls[1], chatter, title="[转载] 灯塔 - 第2页", prev_url=urls[0])
    assert matched(records_of(engine, urls[0])) == {works["lighthouse.txt"]}
    assert records_of(engine, urls[1]) == []
    assert engine.store.pages.page_by_url(urls[1])["split"] == urls


def test_a_long_quotation_among_replies_is_a_copy_and_a_short_one_is_not(engine: Engine) -> None:
    """A forum post quoting an eighth of a work (1,000 characters) among 3,000 characters of
    replies covers neither a fifth of the work nor half of the page: the quotation rule."""
    rng = random.Random(11)
    text = prose(rng, 8000)
    work_id = engine.add_work(text, title="长文", source="long.txt")
    start = text.index("。", 3000) + 1
    for url, length, copy in (("http://bbs/q1", 1000, True), ("http://bbs/q2", 350, False)):
        page = page_of(prose(rng, 1500), "引用：" + text[start : start + length], prose(rng, 1500))
        records = crawl(engine, url, page)
        assert matched(records) == ({work_id} if copy else set()), url
    [record] = records_of(engine, "http://bbs/q1")
    assert 0.1 < record["scores"]["containment_work"] < 0.2
    assert record["scores"]["containment_page"] < 0.5


def test_a_chapter_of_a_novel_names_its_chapter_and_quotes_the_work(engine: Engine) -> None:
    text, chapters = novel(120, 2500)
    work_id = engine.add_work(text, title="长篇", source="novel.txt")
    work = engine.store.works.get_work(work_id)
    assert work["segments"] == 120 and engine.store.works.work_text(work["_id"]) == text
    for n in (1, 57, 120):
        [record] = crawl(engine, f"http://p/{n}.html", page_of(chapters[n - 1]))
        assert record["segments"] == [{"index": n - 1, "title": f"第{n}章 风起{n}"}]
        assert record["scores"]["containment_segment"] > 0.95
        page = engine.store.pages.page_by_url(f"http://p/{n}.html")["text"]
        for item in record["evidence"]:
            (a, b), (c, d) = item["work_span"], item["page_span"]
            assert text[a:b] == page[c:d]


def test_a_download_of_the_book_names_every_chapter_it_holds(engine: Engine) -> None:
    """A whole-book download (here 80 of a novel's 120 chapters in one part) holds more
    chapters than a record quotes passages (MAX_PASSAGES): its record names every one."""
    text, chapters = novel(120, 1200, seed=4)
    engine.add_work(text, title="长篇", source="novel.txt")
    held = list(range(10, 90))
    [record] = crawl(engine, "http://p/down/book.zip", "\n\n".join(chapters[i] for i in held))
    assert len(record["evidence"]) == MAX_PASSAGES < len(held)
    assert record["segments"] == [{"index": i, "title": f"第{i + 1}章 风起{i + 1}"} for i in held]


def test_a_novel_registered_after_its_chapters_finds_every_one(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More chapters than the work's segments are read at a time and than the pages matched
    again at a time (both batches made small here: 16): 40 chapters crawled, then the novel
    registered, every chapter found."""
    engine.settings = replace(engine.settings, candidate_batch=16)
    monkeypatch.setattr("matcher.matching.pages_of_work.PAGE_BATCH", 16)
    text, chapters = novel(40, 1500, seed=5)
    for n, chapter in enumerate(chapters, 1):
        crawl(engine, f"http://p/{n}.html", page_of(chapter, UNRELATED))
    crawl(engine, "http://p/news.html", page_of(UNRELATED * 3))
    work_id = engine.add_work(text, title="长篇", source="novel.txt")
    records = engine.match_work_against_pages(work_id)
    assert sorted(r["url"] for r in records) == sorted(f"http://p/{n}.html" for n in range(1, 41))
    again = engine.match_work_against_pages(work_id)  # idempotent
    assert [r["_id"] for r in again] == [r["_id"] for r in records]
    assert engine.store.matches.count() == 40


def test_text_shared_by_related_works_goes_to_the_one_the_page_copies(engine: Engine) -> None:
    rng = random.Random(9)
    preface = prose(rng, 600)  # a series' shared preface: 40% of the short sibling
    a = engine.add_work(preface + "\n\n" + prose(rng, 3000), title="卷一", source="a.txt")
    b = engine.add_work(preface + "\n\n" + prose(rng, 900), title="卷二", source="b.txt")
    copy_of_a = engine.store.works.work_text(engine.store.works.get_work(a)["_id"])
    records = crawl(engine, "http://p/a.html", page_of(copy_of_a))
    assert matched(records) == {a}
    [considered] = engine.store.pages.page_by_url("http://p/a.html")["considered"]
    assert str(considered["work_id"]) == b and "卷一" in considered["reason"]
    # The sibling's own text still makes its own copy a match.
    copy_of_b = engine.store.works.work_text(engine.store.works.get_work(b)["_id"])
    assert matched(crawl(engine, "http://p/b.html", page_of(copy_of_b))) == {b}


def test_text_common_to_many_registered_works_is_boilerplate(engine: Engine) -> None:
    rng = random.Random(4)
    notice = prose(rng, 400)  # a licence notice in every work of a catalogue
    ids = [
        engine.add_work(prose(rng, 1200) + "\n\n" + notice, title=f"w{i}", source=f"w{i}.txt")
        for i in range(4)
    ]
    page = page_of(UNRELATED, notice, UNRELATED)
    assert crawl(engine, "http://p/notice.html", page) == []
    reasons = [
        c["reason"] for c in engine.store.pages.page_by_url("http://p/notice.html")["considered"]
    ]
    assert reasons and all("boilerplate" in r for r in reasons)
    body = engine.store.works.work_text(engine.store.works.get_work(ids[2])["_id"])
    assert matched(crawl(engine, "http://p/copy.html", page_of(body))) == {ids[2]}


def test_segments_are_indexed_and_removed_with_their_work(engine: Engine) -> None:
    text, _ = novel(40, 2000, seed=2)
    work_id = engine.add_work(text, title="长篇")
    seq = engine.store.works.get_work(work_id)["seq"]
    keys = [engine.keys.segment(segment_owner(seq, i)) for i in range(40)]
    assert all(engine.redis.exists(k) for k in keys)
    # Registering a shorter version drops the segments it no longer has.
    shorter, _ = novel(10, 2000, seed=2)
    assert (
        engine.add_work(shorter, title="长篇", key=engine.store.works.get_work(work_id)["key"])
        == work_id
    )
    assert sum(engine.redis.exists(k) for k in keys) == 10
    assert engine.store.count("work_segments") == 10
    engine.remove_work(work_id)
    assert not any(engine.redis.exists(k) for k in keys)
    assert engine.store.count("work_segments") == 0


def test_a_work_registered_again_is_quoted_from_its_new_text(engine: Engine) -> None:
    """The evidence's segment cache is keyed by the segment as verified: a work registered
    again under its key with another text (here a preface put in front, every segment moved)
    is quoted from the new text at once, not from the segments cached for the old."""
    text, chapters = novel(6, 1500, seed=7)
    engine.add_work(text, title="长篇", source="novel.txt", key="novel")
    [before] = crawl(engine, "http://p/3.html", page_of(chapters[2]))
    again = "序言\n\n" + prose(random.Random(9), 900) + "\n\n" + text
    engine.add_work(again, title="长篇（修订）", source="novel-2.txt", key="novel")
    [after] = crawl(engine, "http://p/3b.html", page_of(chapters[2]))
    page = engine.store.pages.page_by_url("http://p/3b.html")["text"]
    assert after["work_id"] == before["work_id"]
    for item in after["evidence"]:
        (a, b), (c, d) = item["work_span"], item["page_span"]
        assert again[a:b] == page[c:d]
    assert after["evidence"][0]["work_span"][0] > before["evidence"][0]["work_span"][0]
