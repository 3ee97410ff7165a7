"""How the simhash index cuts its hot buckets (:class:`SplitPlanner`): the split limit of a
tag group, the leaves of one bucket split recursively on its residual, and every leaf of a
bulk load.

Pure computation on records (:class:`matcher.index.packed.RecordFormat`) and the bit layout
(:mod:`matcher.index.simhash_layout`), no Redis: the writes are the index's
(:meth:`matcher.index.simhash_index.SimhashIndex.bulk_load`, and the watched transaction of
an incremental split). The scheme, and why a split must at least halve a query's expected
scan, are in :mod:`matcher.index.simhash_index`.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from matcher.index.simhash_layout import Layout, Run, SimhashIndexParams, gather
from matcher.index.simhash_routing import Routes
from matcher.keys import TAG_GROUPS


class SplitPlanner:
    """The splits of one simhash index's buckets, by its ``params`` and ``routes``."""

    def __init__(self, params: SimhashIndexParams, routes: Routes) -> None:
        self.params = params
        self.routes = routes
        self.layout: Layout = routes.layout
        self.fmt = self.layout.fmt
        self.group_buckets = self.layout.bucket_count / TAG_GROUPS
        """Top-level buckets per tag group (over all tables)."""

    def limit(self, records: float) -> float:
        """Records a bucket may hold before it is split: max(floor, (1 + mu) x mean), the mean
        over the buckets of a tag group holding ``records``."""
        mean = records / self.group_buckets
        return max(float(self.params.split_floor), (1.0 + self.params.split_mu) * mean)

    def leaves(
        self,
        name: bytes,
        depth: int,
        free: tuple[Run, ...],
        residual: np.ndarray,
        ids: np.ndarray,
        limit: float,
        splits: dict[bytes, int],
    ) -> list[tuple[bytes, bytes]]:
        """Leaves (name, payload) of one bucket, split recursively; split names go to ``splits``.

        A bucket is split only if that at least halves the expected scan of a query drawn like
        its records: sum over sub-tables of the squared sub-bucket sizes <= n * n / 2.
        """
        n = len(ids)
        whole = [(name, self.fmt.pack(residual, ids))]
        if n <= limit or not self.layout.splittable(free, depth):
            return whole
        s = self.layout.key_bits(free, n, limit)
        children = self.layout.children(free, s)
        subkeys = [gather(residual, key) for key, _ in children]
        cost = sum(float((np.unique(k, return_counts=True)[1] ** 2.0).sum()) for k in subkeys)
        if cost > float(n) * n / 2:
            return whole
        splits[name] = s
        leaves: list[tuple[bytes, bytes]] = []
        for j, (sub, (_, child_free)) in enumerate(zip(subkeys, children, strict=True)):
            order = np.argsort(sub, kind="stable")
            sub = sub[order]
            starts = np.flatnonzero(np.r_[True, sub[1:] != sub[:-1]])
            ends = np.append(starts[1:], n).tolist()
            for key, a, b in zip(sub[starts].tolist(), starts.tolist(), ends, strict=True):
                child, idx = name + b"/%d:%x" % (j, key), order[a:b]
                leaves += self.leaves(
                    child, depth + 1, child_free, residual[idx], ids[idx], limit, splits
                )
        return leaves

    def bulk_buckets(
        self,
        ids: np.ndarray,
        values: np.ndarray,
        limits: list[float],
        splits: dict[bytes, int],
        chosen: set[int],
    ) -> Iterator[tuple[bytes, bytes]]:
        """(name, payload) of every leaf of a bulk load in the ``chosen`` tag groups
        (``limits``: the split limit of each group); split buckets are added to ``splits``."""
        width = self.fmt.width
        for t, table in enumerate(self.layout.tables):
            keys = gather(values, table.bucket)
            residual = gather(values, table.residual)
            narrow = np.uint16 if sum(w for _, w in table.bucket) <= 16 else np.uint32
            order = np.argsort(keys.astype(narrow), kind="stable")
            keys = keys[order]
            blob = self.fmt.records(residual[order], ids[order]).tobytes()
            if not len(keys):
                return
            starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
            ends = np.append(starts[1:], len(keys)).tolist()
            tops = keys[starts].astype(np.int64)
            groups = tops % TAG_GROUPS
            names = self.routes.top_names(tops | (t << 32), groups)
            groups = groups.tolist()
            for name, g, a, b in zip(names, groups, starts.tolist(), ends, strict=True):
                if g not in chosen:
                    continue
                limit = limits[g]
                if b - a <= limit:
                    yield name, blob[a * width : b * width]
                else:
                    idx = order[a:b]
                    yield from self.leaves(
                        name, 0, table.root, residual[idx], ids[idx], limit, splits
                    )
