"""A page and the pages around it in one read
(:meth:`matcher.store.page_links.PageLinks.page_and_around`): the same answer as reading the
page and then :meth:`~matcher.store.page_links.PageLinks.pages_around`, in fewer commands;
the earlier layout (pages without the field) and crowded pages answered the long way."""

from __future__ import annotations

from matcher.matching.prepared import content_hash
from matcher.pages import CrawledPage
from matcher.store import Store, ids
from matcher.store.pages import AROUND, AROUND_READ, LINKERS, around_ids
from tests.support.commands import Commands

BOOK = "http://pirate.test/book/"


def url(name: str) -> str:
    return BOOK + name


def put(store: Store, name: str, next_name: str = "", prev_name: str = "") -> int:
    """Store page ``name`` linking to the pages named; its id."""
    text = f"{name}的正文"
    page = CrawledPage(
        url(name), "pirate", name, text,
        next_url=url(next_name) if next_name else "", prev_url=url(prev_name) if prev_name else "",
    )  # fmt: skip
    doc, _ = store.pages.store_crawled_page(page, content_hash(text))
    return doc["_id"]


def chain(store: Store) -> dict[str, int]:
    """1 <-> 2 <-> 3 -> 4 (4 does not link back), 5 -> 2 (a second page naming 2 as next):
    their ids by name."""
    return {
        "1": put(store, "1", next_name="2"),
        "2": put(store, "2", next_name="3", prev_name="1"),
        "3": put(store, "3", next_name="4", prev_name="2"),
        "4": put(store, "4"),
        "5": put(store, "5", next_name="2"),
    }


def long_way(store: Store, page_id: int) -> tuple[dict | None, object]:
    doc = store.pages.get_page(page_id)
    return doc, None if doc is None else store.page_links.pages_around(doc)


def shape(answer: tuple[dict | None, object]) -> object:
    """An answer by ids: the page's, its neighbours' by URL, the linking pages'."""
    doc, around = answer
    if doc is None or around is None:
        return doc and doc["_id"], around
    known, linking = around
    return doc["_id"], {u: d["_id"] for u, d in known.items()}, sorted(d["_id"] for d in linking)


def finds(commands: Commands) -> int:
    return sum(1 for name in commands.names if name == "find")


def test_one_read_answers_as_the_long_way(counted: tuple[Store, Commands]) -> None:
    store, commands = counted
    pages = chain(store)
    store.page_links.page_and_around(
        pages["4"]
    )  # the process's one look for pages without the field
    for name, page_id in pages.items():
        assert store.pages.get_page(page_id)[AROUND] == around_ids(
            page_id,
            store.pages.get_page(page_id)["next_url"],
            store.pages.get_page(page_id)["prev_url"],
        )
        commands.names.clear()
        answer = store.page_links.page_and_around(page_id)
        reads = finds(commands)
        assert shape(answer) == shape(long_way(store, page_id)), name
        # one read when the neighbours link back; 3's next page and 5's do not: a second
        assert reads == {"3": 2, "5": 2}.get(name, 1), name
    two = shape(store.page_links.page_and_around(pages["2"]))
    assert two == (pages["2"], {url("1"): pages["1"], url("3"): pages["3"]}, sorted(
        [pages["1"], pages["5"]]
    ))  # fmt: skip
    assert store.page_links.page_and_around(ids.page_id(url("none"))) == (None, None)


def test_pages_of_the_earlier_layout_are_read_the_long_way(
    counted: tuple[Store, Commands],
) -> None:
    store, commands = counted
    one, two = put(store, "1", next_name="2"), put(store, "2", prev_name="1")
    store.db.pages.update_one({"_id": one}, {"$unset": {AROUND: ""}})
    commands.names.clear()
    answer = store.page_links.page_and_around(two)
    assert shape(answer) == shape(long_way(store, two))
    assert shape(answer)[2] == [one]  # found although its document does not name 2
    assert finds(commands) >= 3  # the check for such pages, the page, the pages linking to it

    # the migration's step gives it the field; a new process then reads it in one
    assert store.page_links.set_around(store.page_links.pages_without_around(10)) == 1
    fresh = Store(store.db)
    commands.names.clear()
    assert shape(fresh.page_links.page_and_around(two)) == shape(answer)
    assert finds(commands) == 2  # the check, then the one read


def test_a_crowded_page_is_answered_the_long_way(counted: tuple[Store, Commands]) -> None:
    store, _ = counted
    hub = put(store, "hub")
    linking = [put(store, f"c{n}", next_name="hub") for n in range(AROUND_READ + 1)]
    assert len(linking) > LINKERS
    answer = store.page_links.page_and_around(hub)
    assert answer[0]["_id"] == hub and answer[1] is None  # too many: each looked up alone
    assert shape(answer) == shape(long_way(store, hub))
    few = put(store, "few")
    for n in range(LINKERS + 1):
        put(store, f"f{n}", next_name="few")
    assert (
        store.page_links.page_and_around(few)[1]
        is None
        == store.page_links.pages_around(store.pages.get_page(few))
    )


def test_many_pages_and_their_neighbours_in_one_read(counted: tuple[Store, Commands]) -> None:
    """:meth:`~matcher.store.page_links.PageLinks.pages_and_around`: each page's answer as its own
    read gives, for them all in one read; a crowded page left to its own read."""
    store, commands = counted
    pages = chain(store)
    store.page_links.page_and_around(
        pages["4"]
    )  # the process's one look for pages without the field
    absent = ids.page_id(url("none"))
    commands.names.clear()
    together = store.page_links.pages_and_around([*pages.values(), absent])
    assert finds(commands) == 1  # 3's next page and 5's, not linking back, among them
    assert sorted(together) == sorted(pages.values())  # a page not stored is absent
    for name, page_id in pages.items():
        assert shape(together[page_id]) == shape(store.page_links.page_and_around(page_id)), name

    hub = put(store, "hub")
    for n in range(AROUND_READ + 1):
        put(store, f"c{n}", next_name="hub")
    crowded = store.page_links.pages_and_around([pages["1"], hub])
    assert hub not in crowded and shape(crowded[pages["1"]]) == shape(together[pages["1"]])
    commands.names.clear()
    assert store.page_links.pages_and_around([hub]) == {}  # more than a read a page: none of them
    assert finds(commands) == 1
