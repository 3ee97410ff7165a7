"""Every filter combination of the match list is served by an index of ``matches``.

The list form (``admin/web/templates/matches.html``) offers a site, a work, a status, a
first day (``since``), a last day (``until``) and a minimum score; the list always keeps
active matches only and is sorted by ``first_seen`` (newest first). For every combination
the test builds the real MongoDB filter with :meth:`admin.filters.MatchFilters.criteria` and
:meth:`matcher.store.matches.Matches.match_filter`,
reads the equality fields off it (every field compared to a plain value, ``active`` aside)
and looks in :data:`matcher.store.INDEXES` for an index whose leading keys are exactly those
fields, in any order, followed by ``first_seen`` descending: the index then finds the rows
of one page in list order and the ``first_seen`` range, while ``score`` and ``active`` are
checked on the documents it finds.

A few combinations also run on the test MongoDB server over real data written through the store, and
their results are compared with the same filters applied in Python.
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pymongo
import pytest
from bson import ObjectId
from pymongo import DESCENDING

from admin.filters import EQUALITY_FIELDS, MatchFilters
from matcher.store import INDEXES, STATUSES, Store

WORK = str(ObjectId())
VALUES: dict[str, Any] = {
    "site": "example.org",
    "work": WORK,
    "status": "confirmed",
    "since": "2026-01-10",
    "until": "2026-02-10",
    "min_score": 0.5,
}
EQUALITY = {"site": "site", "work": "work_id", "status": "status"}
"""Each equality filter of the form and the ``matches`` field it compares."""
RANGE_FIELDS = {"first_seen", "score"}
START = datetime(2026, 1, 1, tzinfo=UTC)


def combinations() -> list[dict[str, Any]]:
    """Every combination of the form's filters (each one set or left empty): 64."""
    names = list(VALUES)
    combos = []
    for chosen in itertools.product((False, True), repeat=len(names)):
        combos.append({n: VALUES[n] for n, on in zip(names, chosen, strict=True) if on})
    return combos


def label(filters: dict[str, Any]) -> str:
    return "+".join(filters) or "none"


def split(query: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The equality fields (``active`` aside) and the range fields of a filter."""
    assert query.get("active") is True, "the list shows active matches only"
    equality, ranges = set(), set()
    for field, value in query.items():
        if isinstance(value, dict):
            assert value and all(op.startswith("$") for op in value), (field, value)
            ranges.add(field)
        elif field != "active":
            equality.add(field)
    return equality, ranges


def serving_index(equality: set[str]) -> str | None:
    """The name of an index of ``matches``: the equality fields then ``first_seen`` desc."""
    for model in INDEXES["matches"]:
        keys = list(model.document["key"].items())
        if len(keys) <= len(equality):
            continue
        if {k for k, _ in keys[: len(equality)]} == equality and keys[len(equality)] == (
            "first_seen",
            DESCENDING,
        ):
            return model.document["name"]
    return None


def test_the_form_offers_the_filters_enumerated() -> None:
    assert set(VALUES) == {f.name for f in MatchFilters.__dataclass_fields__.values()}
    assert set(EQUALITY.values()) == set(EQUALITY_FIELDS)
    assert len(combinations()) == 2 ** len(VALUES)


@pytest.mark.parametrize("filters", combinations(), ids=label)
def test_every_filter_combination_is_served_by_an_index(
    store: Store, filters: dict[str, Any]
) -> None:
    query = store.matches.match_filter(**MatchFilters(**filters).criteria())
    equality, ranges = split(query)
    assert equality == {EQUALITY[n] for n in filters if n in EQUALITY}
    assert ranges <= RANGE_FIELDS
    assert ("first_seen" in ranges) == bool({"since", "until"} & set(filters))
    name = serving_index(equality)
    assert name is not None, f"no index of matches serves {sorted(equality)} + first_seen"
    assert name in store.db.matches.index_information()  # ensure_indexes created it


def test_every_equality_subset_has_its_own_index() -> None:
    for size in range(len(EQUALITY_FIELDS) + 1):
        for subset in itertools.combinations(EQUALITY_FIELDS, size):
            assert serving_index(set(subset)) is not None, subset


# -- results on real data -------------------------------------------------------------------

SITES = ("example.org", "copy.example.net", "mirror-3.cn")


@pytest.fixture(scope="module")
def recorded_store(mongo_client: pymongo.MongoClient) -> Iterator[Store]:
    """One database for the module's read-only tests of real data (written once: the filters
    only read it), its indexes made, dropped after the module."""
    from matcher.store import Store

    name = f"fptrack_test_{uuid.uuid4().hex[:12]}"
    store = Store(mongo_client[name])
    store.ensure_indexes()
    record(store)
    yield store
    mongo_client.drop_database(name)


@pytest.fixture
def recorded(recorded_store: Store) -> list[dict[str, Any]]:
    return list(recorded_store.db.matches.find({}))


def record(store: Store) -> None:
    """About 300 matches over 3 sites, 4 works, 60 days, every status; a few inactive."""
    rng = random.Random(7)
    works = [WORK, *(str(ObjectId()) for _ in range(3))]
    pages: dict[str, list[ObjectId]] = {site: [] for site in SITES}
    for i in range(120):
        site = SITES[i % len(SITES)]
        page = ObjectId()
        pages[site].append(page)
        for work in rng.sample(works, rng.randint(1, 3)):
            when = START + timedelta(days=rng.randrange(60), seconds=rng.randrange(86_400))
            match = store.matches.upsert_match(
                {
                    "page_id": str(page),
                    "work_id": work,
                    "site": site,
                    "score": round(rng.random(), 2),
                    "last_seen": when,
                }
            )
            status = rng.choice(STATUSES)
            if status != "new":
                assert store.matches.set_status(str(match["_id"]), status)
    for page in pages[SITES[0]][:5] + pages[SITES[1]][:5]:
        store.matches.deactivate_matches("page_id", page, keep=[])


def expected(docs: list[dict[str, Any]], filters: dict[str, Any]) -> list[ObjectId]:
    """The ids the filters select, computed in Python, in list order."""

    def day(value: str) -> datetime:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)

    def keep(d: dict[str, Any]) -> bool:
        first_seen = d["first_seen"].replace(tzinfo=UTC)
        return (
            d["active"]
            and ("site" not in filters or d["site"] == filters["site"])
            and ("work" not in filters or str(d["work_id"]) == filters["work"])
            and ("status" not in filters or d["status"] == filters["status"])
            and ("since" not in filters or first_seen >= day(filters["since"]))
            and ("until" not in filters or first_seen < day(filters["until"]) + timedelta(1))
            and ("min_score" not in filters or d["score"] >= filters["min_score"])
        )

    rows = sorted((d for d in docs if keep(d)), key=lambda d: (d["first_seen"], d["_id"]))
    return [d["_id"] for d in reversed(rows)]


SAMPLED = [
    {},
    {"site": "example.org"},
    {"work": WORK, "status": "confirmed"},
    {"site": "example.org", "since": "2026-01-10", "until": "2026-02-10"},
    {"status": "new", "min_score": 0.5, "until": "2026-02-10"},
    {"site": "copy.example.net", "work": WORK, "status": "false_positive", "since": "2026-01-20"},
    dict(VALUES),
]


@pytest.mark.parametrize("filters", SAMPLED, ids=label)
def test_filters_select_the_right_matches(
    recorded_store: Store, recorded: list[dict[str, Any]], filters: dict[str, Any]
) -> None:
    query = recorded_store.matches.match_filter(**MatchFilters(**filters).criteria())
    cursor = recorded_store.db.matches.find(query).sort(
        [("first_seen", DESCENDING), ("_id", DESCENDING)]
    )
    got = [d["_id"] for d in cursor]
    want = expected(recorded, filters)
    assert got == want
    if not filters:
        inactive = sum(1 for d in recorded if not d["active"])
        assert inactive > 0 and len(got) == len(recorded) - inactive
    assert len(want) > 0 or filters == dict(VALUES)  # the sample data reach each filter


def test_the_sample_data_cover_every_status(recorded: list[dict[str, Any]]) -> None:
    assert {d["status"] for d in recorded} == set(STATUSES)
    assert {d["site"] for d in recorded} == set(SITES)
