"""The Redis indexes of one kind of owner: a simhash index and a postings index.

Work segments and pages each have a :class:`Side` under their own key prefix
(:class:`matcher.keys.Keys`); an owner is added and removed from both at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from matcher.index.simhash_index import SimhashIndex, SimhashIndexParams
from matcher.index.storage import Storage
from matcher.index.window_index import WindowIndex
from matcher.settings import Settings


@dataclass
class Side:
    """The simhash and postings indexes of one kind of owner (work segments or pages)."""

    simhash: SimhashIndex
    windows: WindowIndex

    @classmethod
    def open(cls, storage: Storage, prefix: str, settings: Settings) -> Side:
        """Both indexes under ``prefix`` in ``storage``, with the settings' parameters."""
        params = SimhashIndexParams(permuted=settings.simhash_permuted)
        return cls(
            SimhashIndex(storage, prefix, params),
            WindowIndex(storage, prefix, settings.window_bucket_bits, settings.window_max_df),
        )

    def add(self, owner: int, simhash: int, keys: np.ndarray) -> None:
        self.simhash.add([owner], [simhash])
        self.windows.add(owner, keys)

    def add_many(
        self,
        owners: list[int],
        simhashes: list[int],
        keys: list[np.ndarray],
        *,
        fresh: bool = False,
    ) -> None:
        """Several owners at once: one simhash call, one postings script call per group
        (``fresh``: owners never indexed, see :meth:`WindowIndex.add_many`)."""
        if not owners:
            return
        self.simhash.add(owners, simhashes)
        lengths = [len(k) for k in keys]
        owner_ids = np.repeat(np.asarray(owners, np.uint32), lengths)
        self.windows.add_many(owner_ids, np.concatenate(keys), fresh=fresh)

    def remove(self, owner: int, simhash: int, keys: np.ndarray) -> None:
        self.simhash.remove([owner], [simhash])
        self.windows.remove(owner, keys)

    def remove_stale(
        self, owner: int, simhash: int, keys: np.ndarray, kept: int, kept_keys: np.ndarray
    ) -> None:
        """Remove the entries of an owner's old fingerprints (``simhash``, ``keys``) that its
        new ones (``kept``, ``kept_keys``), already added, do not hold."""
        if simhash != kept:
            self.simhash.remove([owner], [simhash])
        stale = np.setdiff1d(keys, kept_keys)
        if len(stale):
            self.windows.remove(owner, stale)

    def clear(self) -> None:
        self.simhash.clear()
        self.windows.clear()
