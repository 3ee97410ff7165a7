"""A text registered several times: the earliest is indexed, the others are its twins, and
identical works never cancel each other out as boilerplate."""

from __future__ import annotations

from matcher.engine import Engine
from matcher.keys import segment_owner
from matcher.maintenance import rebuild_indexes
from matcher.operations import Operations
from tests.matcher.conftest import crawl, matched, page_of, sample

TEXT = sample("lighthouse.txt")


def segment_keys(engine: Engine, work_id: str) -> list[str]:
    work = engine.store.get_work(work_id)
    return [engine.keys.segment(segment_owner(work["seq"], i)) for i in range(work["segments"])]


def test_three_copies_of_a_work_still_match_under_the_earliest(engine: Engine) -> None:
    ids = [engine.add_work(TEXT, title=f"灯塔{n}", source=f"copy{n}.txt") for n in range(3)]
    first, *twins = ids
    assert matched(crawl(engine, "http://p/1", page_of(TEXT))) == {first}
    for twin in twins:
        assert engine.store.get_work(twin)["same_text_as"] == engine.store.get_work(first)["_id"]
        assert not any(engine.redis.exists(k) for k in segment_keys(engine, twin))
        note = Operations(engine.store).same_text_note(twin)
        assert note.startswith(f"same text as work {first}") and "'灯塔0'" in note
    assert Operations(engine.store).same_text_note(first) == ""
    pairs = [(t["source"], f["source"]) for t, f in Operations(engine.store).twin_pairs()]
    assert pairs == [("copy1.txt", "copy0.txt"), ("copy2.txt", "copy0.txt")]
    # The index, rebuilt from the store, still holds the text once.
    rebuild_indexes(engine)
    assert not any(engine.redis.exists(k) for k in segment_keys(engine, ids[2]))
    assert matched(crawl(engine, "http://p/2", page_of(TEXT))) == {first}


def test_removing_the_earliest_hands_its_text_to_the_next(engine: Engine) -> None:
    ids = [engine.add_work(TEXT, title=f"灯塔{n}", source=f"copy{n}.txt") for n in range(3)]
    assert engine.remove_work(ids[0])
    assert "same_text_as" not in engine.store.get_work(ids[1])
    assert engine.store.get_work(ids[2])["same_text_as"] == engine.store.get_work(ids[1])["_id"]
    assert all(engine.redis.exists(k) for k in segment_keys(engine, ids[1]))
    assert matched(crawl(engine, "http://p/1", page_of(TEXT))) == {ids[1]}


def test_a_twin_whose_text_changes_is_indexed_and_the_first_keeps_its_twins(
    engine: Engine,
) -> None:
    other = sample("river-town.txt")
    first = engine.add_work(TEXT, title="灯塔", key="a")
    twin = engine.add_work(TEXT, title="灯塔副本", key="b")
    assert engine.store.get_work(twin).get("same_text_as")
    assert engine.add_work(other, title="河镇", key="b") == twin
    assert "same_text_as" not in engine.store.get_work(twin)
    assert matched(crawl(engine, "http://p/1", page_of(other))) == {twin}
    assert matched(crawl(engine, "http://p/2", page_of(TEXT))) == {first}


def test_the_first_work_changing_its_text_releases_its_twins(engine: Engine) -> None:
    first = engine.add_work(TEXT, title="灯塔", key="a")
    twins = [engine.add_work(TEXT, title=f"副本{n}", key=f"b{n}") for n in range(2)]
    engine.add_work(sample("river-town.txt"), title="河镇", key="a")
    assert "same_text_as" not in engine.store.get_work(twins[0])
    assert engine.store.get_work(twins[1])["same_text_as"] == engine.store.get_work(twins[0])["_id"]
    assert matched(crawl(engine, "http://p/1", page_of(TEXT))) == {twins[0]}
    assert first not in matched(crawl(engine, "http://p/2", page_of(TEXT)))
