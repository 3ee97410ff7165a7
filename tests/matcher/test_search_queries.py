"""The sentences search-engine discovery asks for (:func:`matcher.sites.search.run_search`,
:mod:`matcher.sites.query_choice`): chosen per chapter of the works registered on the
engine, ranked by the works' index, within a day's budget spread over the works; asked of a
local server answering as SearXNG's JSON API does."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from crawler.sample_crawl import sampler
from matcher.index.redis_io import IndexClient
from matcher.matching.engine import Engine
from matcher.outbound import Policy
from matcher.sites.query_choice import (
    TARGET_CHARS,
    Frequency,
    candidates,
    chapter_queries,
    query_sentences,
    rarity,
    sentences,
)
from matcher.sites.search import NO_INDEX, SearchEngine, SearchRun, run_search
from tests.matcher.conftest import prose
from tests.servers.search_engine import SearchEngineServer

SHARED = "感谢每一位订阅本书的读者朋友你们的支持是作者坚持写作的最大动力我们下一章再见吧"
"""A line of 39 Han characters that two works hold (an author's formula), three of its
postings keys in the works' index."""
NOTE = "作者有话说今天的更新到此为止我们明天同一时间不见不散"
"""An author's note said at the head of every chapter of one work."""
DAY = datetime(2026, 12, 7, 9, tzinfo=UTC)


def chapters(count: int, seed: int, chars: int = 3000) -> list[str]:
    """A novel's chapters under 第N章 headings, each opening with :data:`NOTE` (the third
    with :data:`SHARED` before it: the longest candidates there, the first of them)."""
    rng = random.Random(seed)
    return [
        f"第{n}章 风起{n}\n"
        + (SHARED + "。\n" if n == 3 else "")
        + NOTE
        + "。\n"
        + prose(rng, chars)
        for n in range(1, count + 1)
    ]


@pytest.fixture
def server() -> Iterator[SearchEngineServer]:
    with SearchEngineServer(lambda query: []) as engine:
        yield engine


def search(
    engine: Engine,
    server: SearchEngineServer,
    frequency: Frequency | None,
    *,
    budget: int = 100,
    at: datetime = DAY,
) -> tuple[SearchRun, list[str]]:
    """One run at the settings' defaults; what it did and the sentences it asked, in order."""
    before = len(server.asked)
    run = run_search(
        engine.store, engine.match_text, sampler(engine.settings),
        SearchEngine(server.url("/"), Policy(5.0)), budget=budget,
        queries_per_chapter=engine.settings.search_queries_per_chapter, sample_pages=1, at=at,
        frequency=frequency,
    )  # fmt: skip
    return run, [q.strip('"') for q in server.asked[before:]]


def where(sentence: str, parts: list[str]) -> int:
    """The chapter (1, 2 ...) that holds ``sentence``."""
    [n] = [n for n, part in enumerate(parts, 1) if sentence in part]
    return n


def test_each_new_chapter_is_asked_once_never_a_line_another_work_holds(
    engine: Engine, server: SearchEngineServer
) -> None:
    other = prose(random.Random(7), 1500) + SHARED + "。\n" + prose(random.Random(8), 1500)
    engine.add_work(other, title="他书", key="other")
    parts = chapters(6, seed=3)
    engine.add_work("\n".join(parts), title="风起", key="novel")
    assert engine.settings.search_queries_per_chapter == 1  # the default

    run, asked = search(engine, server, engine.work_frequency)
    assert SHARED not in asked and NOTE not in asked
    mine = [q for q in asked if q in "".join(parts)]
    assert [where(q, parts) for q in mine] == [1, 2, 3, 4, 5, 6]  # one a chapter, in order
    assert len(asked) == 7 and asked[1] in other  # and one of the other work (one piece)
    assert (run.chapters, run.works, run.queries, run.index) == (7, 2, 7, "")
    assert engine.store.works.works_to_search(10) == []
    # by the text alone, the third chapter's longest sentence, its first, is the shared line,
    # which the index knows two works hold; the note said at the head of every chapter is
    # a chapter's candidate when the chapter is read alone
    assert query_sentences(parts[2], 1) == [SHARED]
    shared, rare = candidates(sentences(SHARED + "。" + asked[0]))
    assert rarity([shared, rare], engine.work_frequency) == {rare.at: True}
    assert NOTE in [c.text for c in candidates(sentences(parts[0]))]
    assert search(engine, server, engine.work_frequency)[1] == []  # nothing new: none asked


def test_without_the_index_the_sentences_are_chosen_by_the_text_alone(
    engine: Engine, server: SearchEngineServer, dead_index_client: IndexClient
) -> None:
    other = prose(random.Random(7), 1500) + SHARED + "。\n" + prose(random.Random(8), 1500)
    engine.add_work(other, title="他书", key="other")
    parts = chapters(4, seed=3)
    engine.add_work("\n".join(parts), title="风起", key="novel")

    run, asked = search(engine, server, None)  # no index given (an embedded run)
    assert run.index == NO_INDEX and len(asked) == 5
    assert SHARED in asked and where(SHARED, parts) == 3 and NOTE not in asked

    engine.add_work("\n".join(chapters(6, seed=3)), title="风起", key="novel")  # 2 more
    broken = Engine(engine.settings, engine.store, dead_index_client)  # its Redis is gone
    run, asked = search(broken, server, broken.work_frequency)
    assert run.index.startswith("Redis unavailable while")
    assert run.index.endswith(": sentences chosen by their text alone")
    assert run.queries == 2 and "\n" not in run.index


def test_a_work_registered_again_with_more_chapters_asks_only_the_new_ones(
    engine: Engine, server: SearchEngineServer
) -> None:
    parts = chapters(6, seed=2)
    engine.add_work("\n".join(parts[:4]), title="风起", key="novel")  # one segment: short
    [work] = engine.store.works.works_to_search(1)
    assert len(engine.store.works.segments_after(work["_id"], 0, 9)) == 1
    _, asked = search(engine, server, engine.work_frequency)
    assert [where(q, parts) for q in asked] == [1, 2, 3, 4]  # its chapters, by headings

    engine.add_work("\n".join(parts), title="风起", key="novel")  # chapters 5 and 6 added
    _, asked = search(engine, server, engine.work_frequency)
    assert [where(q, parts) for q in asked] == [5, 6]
    engine.add_work("\n".join(parts), title="风起", key="novel")  # the same text again
    assert search(engine, server, engine.work_frequency)[1] == []


def test_the_day_s_budget_goes_round_the_new_works_newest_first(
    engine: Engine, server: SearchEngineServer
) -> None:
    older, newer = chapters(5, seed=3), chapters(3, seed=4)
    engine.add_work("\n".join(older), title="旧书", key="older")
    engine.add_work("\n".join(newer), title="新书", key="newer")

    def order(asked: list[str]) -> list[tuple[str, int]]:
        return [("new", where(q, newer)) if q in "".join(newer) else ("old", where(q, older))
                for q in asked]  # fmt: skip

    run, asked = search(engine, server, engine.work_frequency, budget=4)
    assert order(asked) == [("new", 1), ("old", 1), ("new", 2), ("old", 2)]
    assert run.budget_spent and (run.chapters, run.works) == (4, 0)
    run, asked = search(engine, server, engine.work_frequency, budget=4)  # the same day
    assert asked == [] and run.budget_spent
    run, asked = search(engine, server, engine.work_frequency, budget=4, at=DAY + timedelta(1))
    assert order(asked) == [("new", 3), ("old", 3), ("old", 4), ("old", 5)]  # a new day
    assert not run.budget_spent and run.works == 2
    assert engine.store.works.works_to_search(10) == []


def test_the_rare_sentence_nearest_the_target_length_is_asked_first(engine: Engine) -> None:
    parts = chapters(6, seed=5)
    engine.add_work("\n".join(parts), title="风起", key="novel")
    for part in parts:
        found = candidates(sentences(part))
        known = rarity(found, engine.work_frequency)
        rare = [c for c in found if known.get(c.at)]
        assert rare and len(rare) < len(found)  # the index knows some, not all
        [chosen] = chapter_queries(part, 1, frequency=engine.work_frequency)
        [asked] = [c for c in rare if c.text == chosen]  # a rare one, however long the others
        assert abs(asked.han - TARGET_CHARS) == min(abs(c.han - TARGET_CHARS) for c in rare)
