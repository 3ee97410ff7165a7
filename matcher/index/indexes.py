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

SEGMENT_BUCKET_SHIFT = 7
"""How many bits fewer the work segments' simhash buckets have than the postings buckets."""


def segment_simhash_bits(window_bucket_bits: int) -> int:
    """Bucket bits of the work segments' simhash tables, sized with the postings buckets.

    Each Redis key costs about 100 bytes, and a table of 16-bit buckets gives each of the
    catalogue's segments (about 3,000 characters of a novel's chapter) a key of its own in
    each of its 4 tables: 0.11 byte a registered character. Buckets named by fewer bits of
    the block (:class:`~matcher.index.simhash_layout.Layout`, the rest kept in the records)
    hold about 85 segments each: the postings buckets are sized to the catalogue
    (``FPTRACK_WINDOW_BUCKET_BITS``) to hold about 200 postings, a posting every 10
    characters, so 2**7 times fewer simhash buckets hold 256,000 characters each; 8 to 16
    bits.

    >>> segment_simhash_bits(20), segment_simhash_bits(12), segment_simhash_bits(28)
    (13, 8, 16)
    """
    return min(16, max(8, window_bucket_bits - SEGMENT_BUCKET_SHIFT))


@dataclass
class Side:
    """The simhash and postings indexes of one kind of owner (work segments or pages)."""

    simhash: SimhashIndex
    windows: WindowIndex

    @classmethod
    def open(
        cls, storage: Storage, prefix: str, settings: Settings, simhash_bucket_bits: int = 0
    ) -> Side:
        """Both indexes under ``prefix`` in ``storage``, with the settings' parameters;
        ``simhash_bucket_bits``: the simhash tables' (0: their default, 16 bits)."""
        params = SimhashIndexParams(
            permuted=settings.simhash_permuted, bucket_bits=simhash_bucket_bits
        )
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
