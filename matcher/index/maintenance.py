"""Index maintenance: clear and load the Redis indexes (all of them, or some tag groups)
from the fingerprints stored in MongoDB, or drop them all.

Redis holds only what can be rebuilt from the store (design: storage model): the simhash
and postings indexes of work segments and pages, and each segment's verification data.
``fptrack index rebuild`` runs :func:`rebuild_indexes`; :mod:`matcher.index.integrity` rebuilds
the tag groups Redis lost with :func:`clear_groups` and :func:`load_side`. A rebuilt index
answers exactly as the one built incrementally (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

import numpy as np

from matcher.errors import redis_errors
from matcher.index.indexes import Side
from matcher.index.segment_refs import segment_ref
from matcher.index.window_index import stored_postings
from matcher.keys import TAG_GROUPS, group_slot, segment_group
from matcher.store.field_names import INDEX_KEYS

if TYPE_CHECKING:
    from matcher.index.engine_protocol import IndexedEngine

BATCH_KEYS = 1000
KINDS = ("work", "page")


def rebuild_indexes(engine: IndexedEngine, kinds: Iterable[str] = KINDS) -> dict[str, int]:
    """Drop the Redis indexes of ``kinds`` and rebuild them from the fingerprints stored in
    MongoDB, under the rebuild lease, then mark every tag group whole
    (:meth:`matcher.index.integrity.Integrity.rebuild`).

    Returns the number of owners indexed per kind (``work`` counts segments).
    """
    return engine.integrity.rebuild(range(TAG_GROUPS), "a rebuild was requested", kinds)


def clear_sides(engine: IndexedEngine, kinds: Iterable[str]) -> None:
    """Delete every key of the indexes of ``kinds`` (older key layouts' too)."""
    for kind in kinds:
        side = engine.works if kind == "work" else engine.pages
        with redis_errors("clearing the index"):
            side.clear()
            if kind == "work":
                engine.storage.delete_matching(engine.keys.segment_pattern, "clearing segments")


def clear_groups(
    engine: IndexedEngine, groups: Collection[int], kinds: Iterable[str] = KINDS
) -> int:
    """Delete every index key of the tag ``groups`` of the sides ``kinds`` (with the works'
    segments) and the groups' markers; returns how many there were."""
    keys = engine.keys
    heads = [head for g in groups for head in keys.group_heads(g, kinds)]
    slots = [group_slot(g) for g in groups]
    deleted = engine.storage.delete_heads(keys.index_pattern, heads, slots, "clearing lost groups")
    for side in (engine.works, engine.pages):
        side.simhash.forget(groups)
        side.windows.forget()
    return deleted


def load_side(
    engine: IndexedEngine,
    kind: str,
    *,
    fill_cache: bool = False,
    groups: Collection[int] | None = None,
    tick: Callable[[], None] | None = None,
) -> int:
    """Bulk-load the works' (``work``: with each segment's reference to its verification
    data) or the pages' (``page``) indexes from the fingerprints stored in MongoDB, into an
    empty side (or empty tag ``groups`` of it); returns the owners loaded. ``fill_cache``
    also keeps the segments' parsed data in the engine's segment cache, as far as it holds
    them; ``tick`` is called now and then (a rebuild renews its lease). Registering many
    works, or matching many pages, with their index writes deferred
    (``Registry.index_now``, ``Engine.index_pages``) and loading them once after is the
    embedded scan's way: one bulk write instead of a script call each."""
    tick = tick or (lambda: None)
    side = engine.works if kind == "work" else engine.pages
    count = _load(engine, kind, side, groups, tick)
    if kind == "work":
        chosen = set(range(TAG_GROUPS) if groups is None else groups)
        refs: list[tuple[str, bytes]] = []
        twins = engine.store.twins.twin_ids()
        for i, fp in enumerate(engine.store.fingerprints.iter_fingerprints("work", "anchors"), 1):
            owner = int(fp["seq"])
            if fp["owner_id"] in twins or segment_group(owner) not in chosen:
                continue
            blob = bytes(fp["value"])
            refs.append((engine.keys.segment(owner), segment_ref(blob, fp["owner_id"])))
            if fill_cache:
                engine.segments.remember(blob, fp["owner_id"])
            if i % BATCH_KEYS == 0:
                engine.storage.set_many(refs, "loading the index")
                refs = []
                tick()
        engine.storage.set_many(refs, "loading the index")
    return count


def _load(
    engine: IndexedEngine,
    kind: str,
    side: Side,
    groups: Collection[int] | None,
    tick: Callable[[], None],
) -> int:
    """Bulk-load one side's simhash and postings indexes from the stored index keys."""
    owners, simhashes, posting_owners, keys = [], [], [], []
    twins = engine.store.twins.twin_ids() if kind == "work" else set()
    for i, fp in enumerate(engine.store.fingerprints.iter_fingerprints(kind, INDEX_KEYS), 1):
        if fp["owner_id"] in twins:
            continue
        owner = int(fp["seq"])
        value = fp["value"]
        window_keys = stored_postings(value, int(fp.get("version", 1)))
        owners.append(owner)
        simhashes.append(int(value["simhash"], 16))
        posting_owners.append(np.full(len(window_keys), owner, dtype=np.uint32))
        keys.append(window_keys)
        if i % BATCH_KEYS == 0:
            tick()
    with redis_errors("rebuilding the index"):
        side.simhash.bulk_load(
            np.array(owners, dtype=np.uint32), np.array(simhashes, dtype=np.uint64), groups
        )
        tick()
        side.windows.bulk_load(_joined(posting_owners, np.uint32), _joined(keys, np.uint64), groups)
    return len(owners)


def _joined(arrays: Iterable[np.ndarray], dtype: type) -> np.ndarray:
    arrays = list(arrays)
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)


def drop_indexes(engine: IndexedEngine) -> None:
    """Delete every Redis key of the engine's prefix (the store is untouched)."""
    engine.storage.delete_matching(engine.keys.everything, "dropping the indexes")
