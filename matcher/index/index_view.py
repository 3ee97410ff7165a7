"""The Redis indexes of one deployment without the matching engine: both sides' indexes
(:class:`matcher.index.indexes.Side`), their markers and rebuild state
(:class:`matcher.index.integrity.Integrity`) and the key layout check.

:class:`matcher.matching.engine.Engine` is one, with matching on top. ``fptrack check`` opens this
alone (:attr:`admin.context.Context.indexes`): it counts the indexes' entries and reads
their markers, and imports no fingerprint code (numpy only, no numba kernels), so a health
check starts in a fraction of a second. Rebuilding lost tag groups
(:meth:`Integrity.rebuild <matcher.index.integrity.Integrity.rebuild>`) needs the engine: it keeps
the rebuilt segments' verification data in the engine's segment cache.
"""

from __future__ import annotations

import logging
from collections import deque
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Self

from matcher.errors import IndexUnavailable, StoreUnavailable
from matcher.index.indexes import Side, segment_simhash_bits
from matcher.index.integrity import Integrity
from matcher.index.redis_io import IndexClient, connect
from matcher.index.storage import RedisStorage, Storage
from matcher.keys import Keys
from matcher.settings import Settings
from matcher.store import Store

log = logging.getLogger(__name__)

PROBLEMS_KEPT = 100


@dataclass
class IndexView:
    """The indexes over one store and the index client (one Redis server or a Redis
    Cluster, :func:`matcher.index.redis_io.connect`), with one set of settings.

    Every index key is reached through ``storage``: :class:`RedisStorage` of ``redis``
    unless another :class:`~matcher.index.storage.Storage` is given (the in-memory twin of
    the unit tests, with no ``redis``)."""

    settings: Settings
    store: Store
    redis: IndexClient | None
    problems: deque[str] = field(default_factory=lambda: deque(maxlen=PROBLEMS_KEPT))
    index_pages: bool = True
    """Add each processed page to the pages' indexes (the reverse direction: works
    registered later); ``False`` leaves that to a bulk load
    (:func:`matcher.index.maintenance.load_side`), as the embedded scan does."""
    storage: Storage = None  # type: ignore[assignment]  # RedisStorage(redis) by default

    def __post_init__(self) -> None:
        if self.storage is None:
            if self.redis is None:
                raise ValueError("the indexes need an index client or a storage")
            self.storage = RedisStorage(self.redis)
        self.keys = Keys(self.settings.redis_prefix)
        segment_bits = (
            0
            if self.settings.simhash_permuted
            else segment_simhash_bits(self.settings.window_bucket_bits)
        )
        self.works = Side.open(self.storage, self.keys.works, self.settings, segment_bits)
        self.pages = Side.open(self.storage, self.keys.pages, self.settings)
        self.integrity = Integrity(self)  # its rebuilds need an Engine (see the module docs)

    @classmethod
    def open(
        cls,
        settings: Settings,
        mongo_client: Any = None,
        redis_client: IndexClient | None = None,
        store: Store | None = None,
        storage: Storage | None = None,
    ) -> Self:
        """One on the given clients (or new ones from the settings), the store's indexes
        ensured; ``store``: an open store, its indexes ensured, instead of one on
        ``mongo_client``.

        The index client comes from ``settings.index_redis`` (``FPTRACK_INDEX_REDIS_URL``,
        else ``FPTRACK_REDIS_URL``), unless a ``storage`` is given. Indexes of an older key
        layout are reported as a problem (``fptrack index rebuild`` converts them); a new
        deployment's empty indexes are marked whole
        (:meth:`Integrity.start <matcher.index.integrity.Integrity.start>`).
        """
        if store is None:
            store = Store.open(settings, mongo_client)
            store.ensure_indexes()
        if redis_client is None and storage is None:
            redis_client = connect(settings.index_redis)
        view = cls(settings, store, redis_client, storage=storage)
        view._check_layout()
        with suppress(IndexUnavailable):
            view.integrity.start()
        return view

    def _check_layout(self) -> None:
        """Report indexes left in key layout 1 (no hash tags), which this code cannot read,
        and pages' fingerprints of the store's earlier layout, which it does not read
        (:mod:`matcher.store.migration`)."""
        sides = (self.keys.works, self.keys.pages)
        legacy = [self.keys.simhash(side).legacy_params for side in sides]
        with suppress(IndexUnavailable):
            if any(self.storage.mget(legacy, "checking the index layout")[0]):
                self._problem("the Redis indexes were built with an older key layout")
        with suppress(StoreUnavailable):
            if self.store.fingerprints.earlier_page_fingerprints():
                message = "pages' fingerprints are stored in the earlier layout"
                log.error("%s (run `fptrack migrate`)", message)
                self.problems.append(f"{message}: run fptrack migrate")

    def _problem(self, message: str) -> None:
        log.error("%s (run `fptrack index rebuild`)", message)
        self.problems.append(message)
