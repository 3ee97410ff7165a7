"""A text registered several times: the earliest is indexed, the others are its twins, and
identical works never cancel each other out as boilerplate. A text registered nearly again
(editions a line apart) is a near twin of the earlier: reported as such, and indexed as an
edition, so a page copying it goes to the edition that explains it best, or names a tie.
Works that only share some text stay apart.

Editions further apart (revised, abridged, another publisher's, ``matcher.matching.editions``) are
all indexed: the text they share is not boilerplate for that alone, a copy is attributed to
the edition that explains it best, the others named as its siblings (ties marked), and
volumes of a series sharing front matter keep their strict attribution."""

from __future__ import annotations

import random
from dataclasses import replace

import opencc

from matcher.index.maintenance import rebuild_indexes
from matcher.keys import segment_owner
from matcher.matching import near_twins
from matcher.matching.engine import Engine
from matcher.settings import Settings
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

TEXT = sample("lighthouse.txt")


def segment_keys(engine: Engine, work_id: str) -> list[str]:
    work = engine.store.works.get_work(work_id)
    return [engine.keys.segment(segment_owner(work["seq"], i)) for i in range(work["segments"])]


def test_three_copies_of_a_work_still_match_under_the_earliest(engine: Engine) -> None:
    ids = [engine.add_work(TEXT, title=f"灯塔{n}", source=f"copy{n}.txt") for n in range(3)]
    first, *twins = ids
    assert matched(crawl(engine, "http://p/1", page_of(TEXT))) == {first}
    for twin in twins:
        assert (
            engine.store.works.get_work(twin)["same_text_as"]
            == engine.store.works.get_work(first)["_id"]
        )
        assert not any(engine.redis.exists(k) for k in segment_keys(engine, twin))
        note = engine.store.twins.same_text_note(twin)
        assert note.startswith(f"same text as work {first}") and "'灯塔0'" in note
    assert engine.store.twins.same_text_note(first) == ""
    pairs = [(t["source"], f["source"]) for t, f in engine.store.twins.twin_pairs()]
    assert pairs == [("copy1.txt", "copy0.txt"), ("copy2.txt", "copy0.txt")]
    # The index, rebuilt from the store, still holds the text once.
    rebuild_indexes(engine)
    assert not any(engine.redis.exists(k) for k in segment_keys(engine, ids[2]))
    assert matched(crawl(engine, "http://p/2", page_of(TEXT))) == {first}


def test_removing_the_earliest_hands_its_text_to_the_next(engine: Engine) -> None:
    ids = [engine.add_work(TEXT, title=f"灯塔{n}", source=f"copy{n}.txt") for n in range(3)]
    assert engine.remove_work(ids[0])
    assert "same_text_as" not in engine.store.works.get_work(ids[1])
    assert (
        engine.store.works.get_work(ids[2])["same_text_as"]
        == engine.store.works.get_work(ids[1])["_id"]
    )
    assert all(engine.redis.exists(k) for k in segment_keys(engine, ids[1]))
    assert matched(crawl(engine, "http://p/1", page_of(TEXT))) == {ids[1]}


def test_the_twin_indexed_in_place_of_a_removed_work_takes_its_reviews(engine: Engine) -> None:
    """The matches of a removed work go to its twin (its very text), indexed in its place,
    reviews and all, and are active again once their page is matched with the twin; the
    removed work registered again, a twin now, leaves them with the twin."""
    first, twin = (engine.add_work(TEXT, title=f"灯塔{n}", source=f"copy{n}.txt") for n in range(2))
    [record] = crawl(engine, "http://p/1", page_of(TEXT))
    store = engine.store
    assert store.matches.set_status(str(record["_id"]), "confirmed", "整章照抄", "alice")
    assert engine.remove_work(first)
    [kept] = engine.store.matches.list_matches(archived=True)
    assert kept["_id"] == record["_id"] and str(kept["work_id"]) == twin
    assert [r["_id"] for r in engine.match_work_against_pages(twin)] == [record["_id"]]
    back = store.matches.match(match_id=str(record["_id"]))
    assert back["active"] and "archived" not in back
    assert (back["status"], back["note"], back["reviewed_by"]) == ("confirmed", "整章照抄", "alice")
    again = engine.register_work(TEXT, title="灯塔0", source="copy0.txt")
    assert (again.restored, again.holder) == (0, twin)
    assert engine.store.matches.count(archived=True) == 0
    assert matched(crawl(engine, "http://p/1", page_of(TEXT))) == {twin}


def test_a_twin_whose_text_changes_is_indexed_and_the_first_keeps_its_twins(
    engine: Engine,
) -> None:
    other = sample("river-town.txt")
    first = engine.add_work(TEXT, title="灯塔", key="a")
    twin = engine.add_work(TEXT, title="灯塔副本", key="b")
    assert engine.store.works.get_work(twin).get("same_text_as")
    assert engine.add_work(other, title="河镇", key="b") == twin
    assert "same_text_as" not in engine.store.works.get_work(twin)
    assert matched(crawl(engine, "http://p/1", page_of(other))) == {twin}
    assert matched(crawl(engine, "http://p/2", page_of(TEXT))) == {first}


def test_the_first_work_changing_its_text_releases_its_twins(engine: Engine) -> None:
    first = engine.add_work(TEXT, title="灯塔", key="a")
    twins = [engine.add_work(TEXT, title=f"副本{n}", key=f"b{n}") for n in range(2)]
    engine.add_work(sample("river-town.txt"), title="河镇", key="a")
    assert "same_text_as" not in engine.store.works.get_work(twins[0])
    assert (
        engine.store.works.get_work(twins[1])["same_text_as"]
        == engine.store.works.get_work(twins[0])["_id"]
    )
    assert matched(crawl(engine, "http://p/1", page_of(TEXT))) == {twins[0]}
    assert first not in matched(crawl(engine, "http://p/2", page_of(TEXT)))


def editions(text: str) -> list[str]:
    """Three near-identical editions of ``text``: a line appended, a line prepended, and a
    character mistyped in the middle."""
    middle = len(text) // 2
    typo = "错" if text[middle] != "错" else "误"
    return [text + "\n完\n", "第一版\n" + text, text[:middle] + typo + text[middle + 1 :]]


def test_near_identical_works_are_near_twins_indexed_as_editions(engine: Engine) -> None:
    """Three editions differing by a line: reported as near twins of the first, and each
    indexed as an edition, never taken for boilerplate three works share. A page copying
    one of them is one match whose other editions are named as a tie (their text is one
    but for a line)."""
    ids = [
        engine.add_work(t, title=f"灯塔{n}", source=f"edition{n}.txt")
        for n, t in enumerate(editions(TEXT))
    ]
    first, *near = ids
    first_doc = engine.store.works.get_work(first)
    assert "same_text_as" not in first_doc and "near_twin" not in first_doc
    for twin in near:
        doc = engine.store.works.get_work(twin)
        assert doc["same_text_as"] == first_doc["_id"] and doc["near_twin"] is True
        assert all(engine.redis.exists(k) for k in segment_keys(engine, twin))
        note = engine.store.twins.same_text_note(twin)
        assert note.startswith(f"nearly the same text as work {first}") and "indexed" in note
    for n, text in enumerate(editions(TEXT)):
        [record] = crawl(engine, f"http://p/{n}", page_of(text))
        assert record["containment"] > 0.9
        assert siblings(record) == dict.fromkeys(set(ids) - {str(record["work_id"])}, True)
    pairs = [
        (t["source"], f["source"], t.get("near_twin")) for t, f in engine.store.twins.twin_pairs()
    ]
    assert pairs == [("edition1.txt", "edition0.txt", True), ("edition2.txt", "edition0.txt", True)]
    rebuild_indexes(engine)
    assert all(engine.redis.exists(k) for k in segment_keys(engine, ids[1]))
    [record] = crawl(engine, "http://p/9", page_of(editions(TEXT)[2]))
    assert set(siblings(record)) | {str(record["work_id"])} == set(ids)


def test_a_near_twin_with_a_passage_of_its_own_takes_the_copies_of_it(engine: Engine) -> None:
    """A novel and an edition with one passage reworded (too few characters to be copied
    alone, so a near twin): a chapter copied from the edition, the passage with it, goes
    to the edition and names the first as a sibling, no tie; a chapter both hold word for
    word is one match naming the other as a tie; the first's own chapter goes to it."""
    text, chapters = novel(40, 1_200, seed=51)
    old = chapters[9][400:560]
    second = revised(text, old, seed=52)
    first = engine.add_work(text, title="初版", key="a")
    twin = engine.add_work(second, title="修订版", key="b")
    doc = engine.store.works.get_work(twin)
    assert doc["same_text_as"] == engine.store.works.get_work(first)["_id"] and doc["near_twin"]
    assert all(engine.redis.exists(k) for k in segment_keys(engine, twin))
    own = second[second.index("第10章") : second.index("第11章")]
    [record] = crawl(engine, "http://p/own", page_of(own))
    assert str(record["work_id"]) == twin and siblings(record) == {first: False}
    [record] = crawl(engine, "http://p/first", page_of(chapters[9]))
    assert str(record["work_id"]) == first and siblings(record) == {twin: False}
    [record] = crawl(engine, "http://p/shared", page_of(chapters[20]))
    assert siblings(record) == {({first, twin} - {str(record["work_id"])}).pop(): True}
    # Removed, its match is archived with its review; registered again (after the pages
    # were crawled), the near twin takes it back, as any work, and the page is its again.
    [record] = crawl(engine, "http://p/own", page_of(own))
    store = engine.store
    assert store.matches.set_status(str(record["_id"]), "confirmed", "修订版整章", "alice")
    assert engine.remove_work(twin)
    again = engine.register_work(second, title="修订版", key="b")
    assert (again.holder, again.restored) == (again.work_id, 1)
    assert engine.store.works.get_work(again.work_id)["near_twin"]
    engine.match_work_against_pages(again.work_id)
    back = store.matches.match(match_id=str(record["_id"]))
    assert back["active"] and str(back["work_id"]) == again.work_id
    assert (back["status"], back["note"]) == ("confirmed", "修订版整章")


def test_editions_of_a_long_work_are_near_twins_and_its_chapters_match(engine: Engine) -> None:
    """A novel cut into chapter segments: its editions' sketches are merged from their
    segments', and a page copying one chapter every edition holds is one match naming the
    others as a tie."""
    text, chapters = novel(8, 2_500, seed=3)
    ids = [engine.add_work(t, title=f"长篇{n}", key=f"e{n}") for n, t in enumerate(editions(text))]
    assert engine.store.works.get_work(ids[0])["segments"] > 1
    for twin in ids[1:]:
        assert (
            engine.store.works.get_work(twin)["same_text_as"]
            == engine.store.works.get_work(ids[0])["_id"]
        )
    [record] = crawl(engine, "http://p/ch3", page_of(chapters[2]))
    assert siblings(record) == dict.fromkeys(set(ids) - {str(record["work_id"])}, True)


def test_editions_of_a_long_work_without_chapters_are_near_twins(engine: Engine) -> None:
    """Cut into fixed pieces, which a line prepended shifts: still nearly one text, a page
    copying a piece of it one match naming the other editions as a tie."""
    text = prose(random.Random(5), 60_000)
    ids = [engine.add_work(t, title=f"无章{n}", key=f"e{n}") for n, t in enumerate(editions(text))]
    assert engine.store.works.get_work(ids[0])["segments"] > 3
    for twin in ids[1:]:
        assert (
            engine.store.works.get_work(twin)["same_text_as"]
            == engine.store.works.get_work(ids[0])["_id"]
        )
    page = editions(text)[1][30_000:32_000]
    [record] = crawl(engine, "http://p/1", page_of(page))
    assert siblings(record) == dict.fromkeys(set(ids) - {str(record["work_id"])}, True)


def test_an_edition_with_a_chapter_added_is_not_a_near_twin(engine: Engine) -> None:
    """Its sketch lies 0.95 inside the first edition's, but its new chapter is text that
    could be copied on its own: it is indexed, and a copy of that chapter is matched to it."""
    text, _ = novel(40, 1_200, seed=21)
    _, extra = novel(1, 1_500, seed=22)
    added = extra[0].replace("第1章", "第41章", 1)
    first = engine.add_work(text, title="初版", key="a")
    second = engine.add_work(text + "\n\n" + added, title="增订版", key="b")
    sketches = [engine.store.works.get_work(w)["near_sketch"] for w in (first, second)]
    assert near_twins.is_near(*sketches, engine.settings.near_twin_share)
    assert "same_text_as" not in engine.store.works.get_work(second)
    assert matched(crawl(engine, "http://p/1", page_of(added))) == {second}


def test_a_sequel_quoting_a_chapter_and_an_anthology_are_not_near_twins(engine: Engine) -> None:
    """Works that share a chapter, or one of which holds the other whole, stay apart: each
    indexed, each matched for its own text."""
    first, first_chapters = novel(6, 3_000, seed=11)
    second, second_chapters = novel(6, 3_000, seed=12)
    sequel = second + "\n\n" + first_chapters[2].replace("第3章", "第7章", 1)
    anthology = first + "\n\n" + novel(6, 3_000, seed=13)[0].replace("第", "卷二第")
    ids = {
        name: engine.add_work(t, title=name, key=name)
        for name, t in (("first", first), ("sequel", sequel), ("anthology", anthology))
    }
    for work_id in ids.values():
        assert "same_text_as" not in engine.store.works.get_work(work_id)
        assert all(engine.redis.exists(k) for k in segment_keys(engine, work_id))
    assert ids["first"] in matched(crawl(engine, "http://p/1", page_of(first_chapters[0])))
    assert matched(crawl(engine, "http://p/2", page_of(second_chapters[1]))) == {ids["sequel"]}


def test_removing_the_first_edition_marks_the_next(engine: Engine) -> None:
    """The near twins of a removed edition stay indexed: the next is no near twin any
    more, the last is the next's; a page copying the last is one match, the next tied."""
    ids = [engine.add_work(t, title=f"灯塔{n}", key=f"e{n}") for n, t in enumerate(editions(TEXT))]
    [record] = crawl(engine, "http://p/0", page_of(editions(TEXT)[2]))
    assert engine.remove_work(ids[0])
    assert "same_text_as" not in engine.store.works.get_work(ids[1])
    third = engine.store.works.get_work(ids[2])
    assert (
        third["same_text_as"] == engine.store.works.get_work(ids[1])["_id"] and third["near_twin"]
    )
    assert all(engine.redis.exists(k) for k in segment_keys(engine, ids[1]))
    assert all(engine.redis.exists(k) for k in segment_keys(engine, ids[2]))
    [record] = crawl(engine, "http://p/1", page_of(editions(TEXT)[2]))
    assert siblings(record) == {({ids[1], ids[2]} - {str(record["work_id"])}).pop(): True}


def test_the_first_edition_changing_its_text_releases_its_near_twins(engine: Engine) -> None:
    ids = [engine.add_work(t, title=f"灯塔{n}", key=f"e{n}") for n, t in enumerate(editions(TEXT))]
    assert engine.add_work(TEXT + "\n再版后记\n", title="灯塔0", key="e0") == ids[0]
    assert (
        engine.store.works.get_work(ids[1])["same_text_as"]
        == engine.store.works.get_work(ids[0])["_id"]
    )
    engine.add_work(sample("river-town.txt"), title="河镇", key="e0")
    assert "same_text_as" not in engine.store.works.get_work(ids[1])
    assert (
        engine.store.works.get_work(ids[2])["same_text_as"]
        == engine.store.works.get_work(ids[1])["_id"]
    )
    [record] = crawl(engine, "http://p/1", page_of(TEXT))
    assert siblings(record) == {({ids[1], ids[2]} - {str(record["work_id"])}).pop(): True}


def test_a_work_registered_again_with_its_near_twin_text_becomes_its_twin(
    engine: Engine,
) -> None:
    """The first edition registered again with the very text of its near twin: it is now
    that work's twin, not indexed, and the other its own work, indexed, no twin of any."""
    texts = editions(TEXT)[:2]
    ids = [engine.add_work(t, title=f"灯塔{n}", key=f"e{n}") for n, t in enumerate(texts)]
    assert engine.store.works.get_work(ids[1])["near_twin"]
    again = engine.register_work(editions(TEXT)[1], title="灯塔0", key="e0")
    assert again.holder == ids[1]
    first = engine.store.works.get_work(ids[0])
    assert first["same_text_as"] == engine.store.works.get_work(ids[1])["_id"]
    assert "near_twin" not in first
    assert not any(engine.redis.exists(k) for k in segment_keys(engine, ids[0]))
    assert "same_text_as" not in engine.store.works.get_work(ids[1])
    assert all(engine.redis.exists(k) for k in segment_keys(engine, ids[1]))
    assert matched(crawl(engine, "http://p/1", page_of(editions(TEXT)[1]))) == {ids[1]}


def test_near_twins_can_be_turned_off(index_client, mongo_db) -> None:
    settings = Settings.from_env(
        redis_prefix="fptrack-test", mongo_db=mongo_db.name, near_twin_share=0
    )
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=index_client)
    ids = [engine.add_work(t, title=f"灯塔{n}", key=f"e{n}") for n, t in enumerate(editions(TEXT))]
    assert not any("same_text_as" in engine.store.works.get_work(i) for i in ids)


def test_a_near_twin_is_released_when_the_first_edition_loses_a_chapter(engine: Engine) -> None:
    """Re-registered without a chapter its near twin has, the first edition no longer holds
    all the twin's text: the twin is indexed, and a copy of that chapter matched to it."""
    text, chapters = novel(40, 1_200, seed=31)
    first = engine.add_work(text, title="初版", key="a")
    twin = engine.add_work(text + "\n完\n", title="二版", key="b")
    assert engine.store.works.get_work(twin)["near_twin"]
    engine.add_work(text.replace(chapters[19], ""), title="初版", key="a")
    assert "same_text_as" not in engine.store.works.get_work(twin)
    assert matched(crawl(engine, "http://p/1", page_of(chapters[19]))) == {twin}
    assert first in matched(crawl(engine, "http://p/2", page_of(chapters[3])))


# --- editions that differ by more than a line (matcher.matching.editions) -------------------------
def lines_swapped(text: str, which: range, other: str) -> str:
    """``text`` with its long lines ``which`` (40 characters or more, counted from 0)
    replaced by the long lines of ``other``, in order."""
    lines = text.split("\n")
    long = [i for i, line in enumerate(lines) if len(line) > 40]
    fresh = [line for line in other.split("\n") if len(line) > 40]
    for n, i in enumerate(long[k] for k in which):
        lines[i] = fresh[n + which.start]
    return "\n".join(lines)


def three_editions() -> list[str]:
    """The issue's probe: a sample work and two editions with three lines each swapped for
    other text (about a fifth of the work: none is a near twin of another)."""
    other = sample("star-voyage.txt")
    return [TEXT, lines_swapped(TEXT, range(2, 5), other), lines_swapped(TEXT, range(8, 11), other)]


def siblings(record: dict) -> dict[str, bool]:
    """The record's sibling editions: work id -> tie."""
    return {str(s["work_id"]): s["tie"] for s in record["siblings"]}


def test_three_editions_and_a_page_holding_one_of_them(engine: Engine) -> None:
    """Three editions of a work, two of them with three lines swapped: a page holding one
    verbatim is a copy of it (the text three editions share is not boilerplate), its match
    naming the other two; each edition's own copy goes to it."""
    texts = three_editions()
    ids = [engine.add_work(t, title=f"灯塔{n}", source=f"e{n}.txt") for n, t in enumerate(texts)]
    assert not any("same_text_as" in engine.store.works.get_work(i) for i in ids)
    [record] = crawl(engine, "http://p/1", page_of(texts[1]))
    assert str(record["work_id"]) == ids[1] and record["containment_work"] > 0.97
    assert siblings(record) == {ids[0]: False, ids[2]: False}
    assert [s["work_source"] for s in record["siblings"]] == ["e0.txt", "e2.txt"]
    considered = engine.store.pages.page_by_url("http://p/1")["considered"]
    assert {str(c["work_id"]) for c in considered} == {ids[0], ids[2]}
    assert all(c["reason"] == "an edition of '灯塔1', which explains the page better"
               for c in considered)  # fmt: skip
    for n, text in enumerate(texts):
        [own] = crawl(engine, f"http://p/own{n}", page_of(text))
        assert str(own["work_id"]) == ids[n] and set(siblings(own)) == set(ids) - {ids[n]}


def test_without_editions_the_shared_text_of_three_is_boilerplate(index_client, mongo_db) -> None:
    """What the page above met before editions were grouped: the text three editions share
    taken for boilerplate, and the 300-odd characters of an edition's own too few alone."""
    settings = Settings.from_env(redis_prefix="fptrack-test", mongo_db=mongo_db.name)
    settings = replace(settings, policy=replace(settings.policy, edition_share=0))
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=index_client)
    texts = three_editions()
    for n, t in enumerate(texts):
        engine.add_work(t, title=f"灯塔{n}", source=f"e{n}.txt")
    assert crawl(engine, "http://p/1", page_of(texts[1])) == []


def revised(text: str, old: str, seed: int) -> str:
    """``text`` with the passage ``old`` reworded (other text of the same length)."""
    return text.replace(old, prose(random.Random(seed), len(old)))


def test_a_chapter_every_edition_holds_is_a_tie(engine: Engine) -> None:
    """Two editions differing in one chapter: a copy of another chapter, word for word in
    both, is recorded once and names the other edition as a tie; a copy of the chapter
    they differ in goes to the edition it copies, no tie."""
    text, chapters = novel(6, 1_500, seed=41)
    second = revised(text, chapters[0][400:1000], seed=42)
    a = engine.add_work(text, title="初版", source="a.txt")
    b = engine.add_work(second, title="修订版", source="b.txt")
    assert "same_text_as" not in engine.store.works.get_work(b)
    [record] = crawl(engine, "http://p/4", page_of(chapters[3]))
    assert siblings(record) == {({a, b} - {str(record["work_id"])}).pop(): True}
    considered = engine.store.pages.page_by_url("http://p/4")["considered"]
    assert len(considered) == 1
    assert considered[0]["reason"].endswith("which explains the page as well (a tie)")
    chapter_one = second[: second.index("第2章")]
    [record] = crawl(engine, "http://p/1", page_of(chapter_one))
    assert str(record["work_id"]) == b and siblings(record) == {a: False}


def test_volumes_of_a_series_sharing_front_matter_keep_strict_attribution(
    engine: Engine,
) -> None:
    """Three volumes sharing a preface and a licence notice, the first in two editions: the
    front matter, held by three works that are no editions of each other, stays
    boilerplate; a chapter of volume 2 with the front matter is volume 2's alone."""
    rng = random.Random(43)
    front = prose(rng, 500) + "\n\n本书版权归作者所有，未经许可不得转载、摘编或以其他方式使用。\n\n"
    bodies = [prose(rng, 3_000) for _ in range(3)]
    vol1b = revised(bodies[0], bodies[0][1_000:1_400], seed=44)
    names = ["vol1", "vol1b", "vol2", "vol3"]
    texts = [front + bodies[0], front + vol1b, front + bodies[1], front + bodies[2]]
    ids = dict(zip(names, (engine.add_work(t, title=n, source=f"{n}.txt")
                           for n, t in zip(names, texts, strict=True)), strict=True))  # fmt: skip
    [record] = crawl(engine, "http://p/v2", page_of(front + bodies[1][:1_500]))
    assert str(record["work_id"]) == ids["vol2"] and record["siblings"] == []
    assert crawl(engine, "http://p/front", page_of(UNRELATED, front, UNRELATED)) == []
    [record] = crawl(engine, "http://p/v1", page_of(texts[0]))
    assert str(record["work_id"]) == ids["vol1"] and siblings(record) == {ids["vol1b"]: False}


def test_an_edited_copy_of_one_edition_among_five(engine: Engine) -> None:
    """Five editions of a novel (the first; two revised in other chapters; an abridged one;
    another publisher's, its own front matter and chapter headings): a chapter of one of
    them copied in Traditional script with typos and ad lines is attributed to it, and a
    chapter of the abridged one, whose text the others hold whole, to the abridged one."""
    text, chapters = novel(6, 1_500, seed=45)
    rng = random.Random(46)
    first = "长夜行\n\n作者：江南烟雨\n\n" + text
    one = revised(first, chapters[1][300:900], seed=47)
    two = revised(first, chapters[4][200:800], seed=48)
    paras = paragraphs(chapters[2])
    dropped = [paras[i] for i in (2, 4, 6, 8)]
    abridged = first
    for p in dropped:
        abridged = abridged.replace("\n\n" + p, "")
    house = "长夜行（青禾出版社版）\n\n出版说明\n\n" + prose(rng, 500) + "\n\n"
    publisher = house + "\n\n".join(
        chapter.replace(f"第{n}章 风起{n}", f"第{n}回 {prose(rng, 6)}").replace("，", ",")
        for n, chapter in enumerate(chapters, 1)
    )
    texts = [first, one, two, abridged, publisher]
    ids = [engine.add_work(t, title=f"长夜行{n}", source=f"e{n}.txt") for n, t in enumerate(texts)]
    assert not any("same_text_as" in engine.store.works.get_work(i) for i in ids)
    copied = one[one.index("第2章") : one.index("第3章")]
    edited = list(opencc.OpenCC("s2t").convert(copied))
    han = [i for i, ch in enumerate(edited) if "\u4e00" <= ch <= "\u9fff"]
    for i in random.Random(49).sample(han, len(han) * 3 // 100):
        edited[i] = "蠶"
    lines = "".join(edited).split("\n\n")
    for at in range(len(lines) - 1, 0, -3):
        lines.insert(at, "最新章节请访问 www.biquge-example.cc 本章未完，点击下一页继续阅读")
    [record] = crawl(engine, "http://p/tw", page_of("\n\n".join(lines)))
    assert str(record["work_id"]) == ids[1]
    assert set(siblings(record)) == {ids[0], ids[2], ids[3], ids[4]}
    assert not any(siblings(record).values())
    short = abridged[abridged.index("第3章") : abridged.index("第4章")]
    [record] = crawl(engine, "http://p/abridged", page_of(short))
    assert str(record["work_id"]) == ids[3] and not any(siblings(record).values())
