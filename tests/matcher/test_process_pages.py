"""A batch of pages matched by one task (:func:`matcher.worker.jobs.process_pages`): the records of
each page's own task, a page whose text changed while the batch ran matched again, a page
that cannot be matched failing alone, an outage ending the batch with its done pages kept."""

from __future__ import annotations

from typing import Any

import pytest

from matcher.errors import StoreUnavailable, UnusableText
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.worker import jobs
from matcher.worker.ingest import Ingest
from tests.matcher.conftest import page_of, sample

URLS = ["http://pirate.test/a.html", "http://pirate.test/b.html", "http://pirate.test/c.html"]


def stored(engine: Engine, texts: dict[str, str]) -> list[str]:
    """Store pages as the crawl does; their ids, in order."""
    sent: list[str] = []
    ingest = Ingest(engine.store, sent.append)
    ingest.pages([CrawledPage(url, "pirate", "", text) for url, text in texts.items()])
    return sent


def active_titles(engine: Engine, url: str) -> set[str]:
    doc = engine.store.pages.page_by_url(url)
    assert doc is not None
    return {
        m["work_title"]
        for m in engine.store.db.matches.find({"page_id": doc["_id"], "active": True})
    }


def test_a_batch_gets_each_page_s_records_and_marks(engine: Engine, works) -> None:
    texts = {
        URLS[0]: page_of(sample("lighthouse.txt")[:900]),
        URLS[1]: page_of(sample("river-town.txt")[:900]),
        URLS[2]: page_of("今天天气很好，我们去公园散步，看见湖上有几只白鹅。" * 8),
    }
    ids = stored(engine, texts)
    failed: list[Any] = []
    result = jobs.process_pages(engine, ids, lambda page_id, exc: failed.append(page_id))
    assert result == {
        "pages": 3, "matched_again": 0, "matches": 2, "new_matches": 2, "failed": []
    }  # fmt: skip
    assert failed == []
    assert active_titles(engine, URLS[0]) == {"lighthouse.txt"}
    assert active_titles(engine, URLS[1]) == {"river-town.txt"}
    assert active_titles(engine, URLS[2]) == set()
    assert engine.store.db.pages.count_documents({"pending": False}) == 3


def test_a_page_changed_while_its_batch_ran_is_matched_again(
    engine: Engine, works, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crawl stores a new text of page A after A's task matched it and before the batch's
    marks are written: A's mark does not hold, and A is matched again, on its new text."""
    texts = {URLS[0]: page_of(sample("lighthouse.txt")[:900])}
    texts[URLS[1]] = page_of(sample("river-town.txt")[:900])
    ids = stored(engine, texts)
    process = engine.process_stored_page

    def then_recrawled(page_id: str, **kwargs: Any) -> list[dict]:
        records = process(page_id, **kwargs)
        if page_id == ids[0]:
            stored(engine, {URLS[0]: page_of(sample("tea-history.txt")[:900])})
        return records

    monkeypatch.setattr(engine, "process_stored_page", then_recrawled)
    result = jobs.process_pages(engine, ids, lambda page_id, exc: None)
    assert result["matched_again"] == 1
    assert active_titles(engine, URLS[0]) == {"tea-history.txt"}  # not the text it had
    doc = engine.store.pages.page_by_url(URLS[0])
    assert doc is not None and not doc["pending"]
    assert doc["processed_hash"] == doc["content_hash"]
    assert active_titles(engine, URLS[1]) == {"river-town.txt"}


def test_a_page_that_cannot_be_matched_fails_alone(engine: Engine, works) -> None:
    ids = stored(engine, {URLS[0]: page_of(sample("lighthouse.txt")[:900])})
    failed: list[tuple[str, type]] = []
    missing = "999999"  # no such page
    result = jobs.process_pages(
        engine, [missing, *ids], lambda page_id, exc: failed.append((page_id, type(exc)))
    )
    assert failed == [(missing, UnusableText)]
    assert result["failed"] == [missing] and result["matches"] == 1
    assert active_titles(engine, URLS[0]) == {"lighthouse.txt"}


def test_an_outage_ends_the_batch_and_keeps_the_marks_of_the_pages_done(
    engine: Engine, works, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = {URLS[0]: page_of(sample("lighthouse.txt")[:900])}
    texts[URLS[1]] = page_of(sample("river-town.txt")[:900])
    ids = stored(engine, texts)
    process = engine.process_stored_page

    def down_on_second(page_id: str, **kwargs: Any) -> list[dict]:
        if page_id == ids[1]:
            raise StoreUnavailable("MongoDB went away")
        return process(page_id, **kwargs)

    monkeypatch.setattr(engine, "process_stored_page", down_on_second)
    failed: list[str] = []
    with pytest.raises(StoreUnavailable):
        jobs.process_pages(engine, ids, lambda page_id, exc: failed.append(page_id))
    assert failed == []  # an outage is no page's failure: the task runs again
    pending = {d["url"]: d["pending"] for d in engine.store.db.pages.find()}
    assert pending == {URLS[0]: False, URLS[1]: True}
