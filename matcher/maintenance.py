"""Index maintenance: rebuild every Redis index from MongoDB, or drop them all.

Redis holds only what can be rebuilt from the store (design: storage model): the simhash
and postings indexes of work segments and pages, and each segment's verification data.
``fptrack index rebuild`` runs :func:`rebuild_indexes`; a rebuilt index answers exactly as
the one built incrementally (tested).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from fingerprint.base import array_from_hex
from matcher.engine import Engine
from matcher.errors import redis_errors
from matcher.indexes import Side
from matcher.prepared import INDEX_KEYS, segment_ref
from matcher.redis_io import delete_matching

BATCH_KEYS = 1000


def rebuild_indexes(engine: Engine, kinds: Iterable[str] = ("work", "page")) -> dict[str, int]:
    """Drop the Redis indexes of ``kinds`` and rebuild them from the fingerprints stored in
    MongoDB, then write a new index epoch (:meth:`Engine.check_epoch`).

    Returns the number of owners indexed per kind (``work`` counts segments).
    """
    counts = {}
    for kind, side in (("work", engine.works), ("page", engine.pages)):
        if kind not in kinds:
            continue
        with redis_errors("rebuilding the index"):
            side.clear()
            if kind == "work":
                delete_matching(engine.redis, engine.keys.segment_pattern, "clearing segments")
        counts[kind] = load_side(engine, kind)
    engine.new_epoch()
    return counts


def load_side(engine: Engine, kind: str, *, fill_cache: bool = False) -> int:
    """Bulk-load the works' (``work``: with each segment's reference to its verification
    data) or the pages' (``page``) indexes from the fingerprints stored in MongoDB, into an
    empty side; returns the owners loaded. ``fill_cache`` also keeps the segments' parsed
    data in the engine's segment cache, as far as it holds them. Registering many works, or
    matching many pages, with their index writes deferred (``Registry.index_now``,
    ``Engine.index_pages``) and loading them once after is the embedded scan's way: one bulk
    write instead of a script call each."""
    side = engine.works if kind == "work" else engine.pages
    count = _load(engine, kind, side)
    if kind == "work":
        with redis_errors("loading the index"):
            pipe = engine.redis.pipeline(transaction=False)
            twins = engine.store.twin_ids()
            for i, fp in enumerate(engine.store.iter_fingerprints("work", "anchors"), 1):
                if fp["owner_id"] in twins:
                    continue
                blob = bytes(fp["value"])
                pipe.set(engine.keys.segment(int(fp["seq"])), segment_ref(blob, fp["owner_id"]))
                if fill_cache:
                    engine.segments.remember(blob, fp["owner_id"])
                if i % BATCH_KEYS == 0:
                    pipe.execute()
            pipe.execute()
    return count


def _load(engine: Engine, kind: str, side: Side) -> int:
    """Bulk-load one side's simhash and postings indexes from the stored index keys."""
    owners, simhashes, posting_owners, keys = [], [], [], []
    twins = engine.store.twin_ids() if kind == "work" else set()
    for fp in engine.store.iter_fingerprints(kind, INDEX_KEYS):
        if fp["owner_id"] in twins:
            continue
        owner = int(fp["seq"])
        value = fp["value"]
        window_keys = array_from_hex(value["windows"], "<u8", np.uint64)
        owners.append(owner)
        simhashes.append(int(value["simhash"], 16))
        posting_owners.append(np.full(len(window_keys), owner, dtype=np.uint32))
        keys.append(window_keys)
    with redis_errors("rebuilding the index"):
        side.simhash.bulk_load(
            np.array(owners, dtype=np.uint32), np.array(simhashes, dtype=np.uint64)
        )
        side.windows.bulk_load(_joined(posting_owners, np.uint32), _joined(keys, np.uint64))
    return len(owners)


def _joined(arrays: Iterable[np.ndarray], dtype: type) -> np.ndarray:
    arrays = list(arrays)
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)


def drop_indexes(engine: Engine) -> None:
    """Delete every Redis key of the engine's prefix (the store is untouched)."""
    delete_matching(engine.redis, engine.keys.everything, "dropping the indexes")
