"""Where the simhash index files a fingerprint: bucket names, and the route of a batch of
values through the split directory to the leaf buckets that hold them (:class:`Routes`).

Pure computation on the bit layout (:mod:`matcher.index.simhash_layout`) and the key names
(:class:`matcher.keys.IndexKeys`), no Redis: a top-level bucket is named by its table and
key (``{base}:{tag}:b:{table}:{key}``, fixed-width hex, in tag group ``key mod 32``), a
split bucket's leaves by the sub-key of each sub-table (``.../{j}:{subkey}``), and a value
reaches, in a bucket the directory says is split, every leaf that may hold a match (one per
sub-table, recursively; see :mod:`matcher.index.simhash_index` for the scheme).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from matcher.index.simhash_layout import Layout, Run, gather, gather_int
from matcher.keys import TAG_GROUPS, IndexKeys


@dataclass(frozen=True)
class Directory:
    """What a :class:`matcher.index.simhash_index.SimhashIndex` knows of the split
    directories: each group's version token and directory, and every group's split buckets
    merged (with the top-level ones as sorted ``table << 32 | key`` numbers, for routing)."""

    versions: tuple[bytes, ...]
    splits: tuple[dict[bytes, int], ...]
    split: dict[bytes, int]
    split_top: np.ndarray


@dataclass
class Plan:
    """Where a batch of fingerprints lives: edges from (table, value) pairs to leaf buckets."""

    names: list[bytes]
    groups: np.ndarray  # the tag group of each leaf
    flags: list[bool]  # a leaf's new records count toward the record counter
    edge_pair: np.ndarray  # pair = table * n + value index
    edge_leaf: np.ndarray  # index into names
    residual: np.ndarray  # per pair

    def __post_init__(self) -> None:
        order = np.argsort(self.edge_leaf, kind="stable")
        self.edge_pair, self.edge_leaf = self.edge_pair[order], self.edge_leaf[order]


class Routes:
    """Bucket names and routes of one simhash index's ``layout`` under its ``keys``."""

    def __init__(self, layout: Layout, keys: IndexKeys) -> None:
        self.layout = layout
        self.keys = keys
        self.head = keys.bucket_head_chars
        """Length of a bucket name's ``{base}:{tag}:b:``."""

    def plan(self, values: np.ndarray, d: Directory) -> Plan:
        """Where ``values`` live by the directory ``d``."""
        n = len(values)
        tables = self.layout.tables
        keys = np.stack([gather(values, t.bucket) for t in tables]).astype(np.int64)
        residual = np.stack([gather(values, t.residual) for t in tables]).ravel()
        top = ((np.arange(len(tables), dtype=np.int64)[:, None] << 32) | keys).ravel()
        uniq, inv = np.unique(top, return_inverse=True)
        groups = (uniq & 0xFFFFFFFF) % TAG_GROUPS
        names = self.top_names(uniq, groups)
        flags = [True] * len(names)
        pairs = np.arange(len(top), dtype=np.int64)
        hot = np.zeros(len(uniq), dtype=bool)
        if len(d.split_top):  # split_top is sorted: a binary search, not np.isin's sort
            at = np.minimum(np.searchsorted(d.split_top, uniq), len(d.split_top) - 1)
            hot = d.split_top[at] == uniq
        hot = hot[inv]
        if not hot.any():
            return Plan(names, groups, flags, pairs, inv, residual)
        index: dict[bytes, int] = {}
        extra_pair: list[int] = []
        extra_leaf: list[int] = []
        leaf_groups = groups.tolist()
        for p in np.flatnonzero(hot).tolist():
            root = tables[p // n].root
            parent = inv[p]
            for name, counted in self._expand(d.split, names[parent], root, int(residual[p])):
                if name not in index:
                    index[name] = len(names)
                    names.append(name)
                    flags.append(counted)
                    leaf_groups.append(leaf_groups[parent])
                extra_pair.append(p)
                extra_leaf.append(index[name])
        edge_leaf = np.concatenate([inv[~hot], np.array(extra_leaf, dtype=np.int64)])
        used, leaf = np.unique(edge_leaf, return_inverse=True)
        return Plan(
            [names[i] for i in used.tolist()],
            np.array(leaf_groups, dtype=np.int64)[used],
            [flags[i] for i in used.tolist()],
            np.concatenate([pairs[~hot], np.array(extra_pair, dtype=np.int64)]),
            leaf,
            residual,
        )

    def top_names(self, tops: np.ndarray, groups: np.ndarray) -> list[bytes]:
        """Names of top-level buckets (table << 32 | key, in tag ``groups``): fixed-width hex."""
        t_digits, k_digits = self.layout.name_digits
        keys = tops & 0xFFFFFFFF
        return self.keys.buckets(groups, [(tops >> 32, t_digits), (keys, k_digits)])

    def group_of(self, name: bytes) -> int:
        """The tag group of a bucket or leaf: its table key mod the number of groups."""
        head = name[self.head :].split(b"/", 1)[0]
        return int(head.split(b":")[1], 16) % TAG_GROUPS

    def locate(self, name: bytes, split: dict[bytes, int]) -> tuple[int, tuple[Run, ...]] | None:
        """(depth, free bits) of a bucket, by the split buckets ``split``; None if unknown."""
        head, *subs = name[self.head :].split(b"/")
        free = self.layout.tables[int(head.split(b":")[0], 16)].root
        parent = name[: self.head + len(head)]
        for sub in subs:
            s = split.get(parent)
            if s is None:
                return None
            free = self.layout.children(free, s)[int(sub.split(b":")[0])][1]
            parent += b"/" + sub
        return len(subs), free

    def split_tops(self, split: dict[bytes, int]) -> np.ndarray:
        """The top-level buckets of the split buckets ``split``, as sorted ``table << 32 |
        key`` numbers (:attr:`Directory.split_top`)."""
        tops = [name[self.head :].split(b":") for name in split if b"/" not in name]
        return np.array(sorted((int(t, 16) << 32) | int(key, 16) for t, key in tops), np.int64)

    def _expand(
        self,
        split: dict[bytes, int],
        name: bytes,
        free: tuple[Run, ...],
        residual: int,
        counted: bool = True,
    ) -> list[tuple[bytes, bool]]:
        """The leaves under bucket ``name`` that may hold a match of ``residual``, by the
        split buckets ``split``.

        ``counted``: the leaf is the one copy of a record (sub-table 0 at every level) whose
        additions and removals count toward the record counter.
        """
        s = split.get(name)
        if s is None:
            return [(name, counted)]
        out = []
        for j, (key, child_free) in enumerate(self.layout.children(free, s)):
            child = name + b"/%d:%x" % (j, gather_int(residual, key))
            out += self._expand(split, child, child_free, residual, counted and j == 0)
        return out
