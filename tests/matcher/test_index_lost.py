"""Redis losing the indexes under running processes (a restart without persistence, a
flush): detected by the index epoch, rebuilt from the store, no copy missed."""

from __future__ import annotations

from matcher.engine import Engine
from tests.conftest import all_keys
from tests.matcher.conftest import crawl, matched, page_of, sample

NAMES = ["lighthouse.txt", "river-town.txt", "tea-history.txt"]


def lose_the_index(engine: Engine) -> None:
    for key in all_keys(engine.redis, f"{engine.settings.redis_prefix}:*"):
        engine.redis.delete(key)


def test_a_page_after_the_index_was_lost_is_still_matched(engine: Engine) -> None:
    ids = {n: engine.add_work(sample(n), title=n) for n in NAMES}
    assert matched(crawl(engine, "http://p/1", page_of(sample(NAMES[0])))) == {ids[NAMES[0]]}
    epoch = engine.redis.get(engine.keys.epoch)
    lose_the_index(engine)
    for n, name in enumerate(NAMES, 2):
        assert matched(crawl(engine, f"http://p/{n}", page_of(sample(name)))) == {ids[name]}
    assert engine.redis.get(engine.keys.epoch) not in (None, epoch)
    assert any("were lost; rebuilt from the store" in p for p in engine.problems)
    # The pages matched before the loss are back in the pages' index too.
    assert engine.pages.simhash.entries() == len(NAMES) + 1


def test_one_process_rebuilds_and_the_others_take_its_index(engine: Engine) -> None:
    work_id = engine.add_work(sample(NAMES[1]), title="河镇")
    other = Engine(engine.settings, engine.store, engine.redis)
    lose_the_index(engine)
    assert matched(crawl(engine, "http://p/1", page_of(sample(NAMES[1])))) == {work_id}
    assert matched(crawl(other, "http://p/2", page_of(sample(NAMES[1])))) == {work_id}
    assert not other.problems  # the first process had rebuilt it


def test_the_index_lost_while_a_page_is_matched_is_rebuilt_before_any_write(
    engine: Engine, monkeypatch
) -> None:
    work_id = engine.add_work(sample(NAMES[2]), title="茶史")
    considered = engine._considered
    lost = []

    def losing(*args, **kwargs):  # Redis restarts between the reads and the writes
        if not lost:
            lost.append(1)
            lose_the_index(engine)
        return considered(*args, **kwargs)

    monkeypatch.setattr(engine, "_considered", losing)
    assert matched(crawl(engine, "http://p/1", page_of(sample(NAMES[2])))) == {work_id}
    assert lost and engine.store.db.matches.count_documents({"active": True}) == 1


def test_a_work_registered_on_a_lost_index_finds_the_others(engine: Engine) -> None:
    first = engine.add_work(sample(NAMES[0]), title="灯塔")
    lose_the_index(engine)
    second = engine.add_work(sample(NAMES[1]), title="河镇")
    assert matched(crawl(engine, "http://p/1", page_of(sample(NAMES[0])))) == {first}
    assert matched(crawl(engine, "http://p/2", page_of(sample(NAMES[1])))) == {second}
