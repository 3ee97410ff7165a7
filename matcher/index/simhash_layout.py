"""The bit layout of the simhash index: blocks, tables and the keys of split buckets.

Pure arithmetic on bit positions (no Redis): which bits of a fingerprint name its bucket in
each table, which remain as its stored residual, and how a hot bucket's free bits are cut
into the k + 1 sub-blocks of its split (see :mod:`matcher.index.simhash_index` for the scheme).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from matcher.index.packed import RecordFormat

PIGEONHOLE_BUCKET_BITS = 16
PERMUTED_BUCKET_BITS = 18
_U64 = np.uint64
Run = tuple[int, int]
"""(lowest bit, width): a run of consecutive bits of an integer."""


@dataclass(frozen=True)
class SimhashIndexParams:
    """Geometry and split policy of a :class:`SimhashIndex`; ``bucket_bits`` 0 = the default."""

    bits: int = 64
    k: int = 3
    permuted: bool = False
    split_mu: float = 1.0
    split_floor: int = 256
    bucket_bits: int = 0
    split_depth: int = 3

    def __post_init__(self) -> None:
        blocks = self.k + (2 if self.permuted else 1)
        if not 1 <= self.bits <= 64 or self.k < 0 or blocks > self.bits:
            raise ValueError(f"need 1 <= bits <= 64 and {blocks} blocks of >= 1 bit: {self}")
        if not 0 <= self.bucket_bits <= 32 or self.split_depth < 0:
            raise ValueError("bucket_bits must be 0..32 and split_depth >= 0")
        if self.split_mu < 0 or self.split_floor < 1:
            raise ValueError("split_mu must be >= 0 and split_floor >= 1")


def blocks(bits: int, parts: int) -> list[Run]:
    """``parts`` runs covering ``bits`` bits, most significant first, the first ones wider.

    >>> blocks(64, 5)
    [(51, 13), (38, 13), (25, 13), (12, 13), (0, 12)]
    """
    out, top = [], bits
    for i in range(parts):
        width = bits // parts + (1 if i < bits % parts else 0)
        top -= width
        out.append((top, width))
    return out


def take(runs: Sequence[Run], nbits: int) -> tuple[list[Run], list[Run]]:
    """The first ``nbits`` bits of ``runs`` (most significant first) and the rest."""
    head: list[Run] = []
    tail = list(runs)
    while nbits > 0 and tail:
        lo, width = tail.pop(0)
        if width <= nbits:
            head.append((lo, width))
        else:
            head.append((lo + width - nbits, nbits))
            tail.insert(0, (lo, width - nbits))
        nbits -= min(width, nbits)
    return head, tail


def gather(values: np.ndarray, runs: Sequence[Run]) -> np.ndarray:
    """The bits of ``runs`` of each value, concatenated (first run most significant)."""
    out = np.zeros(len(values), dtype=_U64)
    for lo, width in runs:
        part = values >> _U64(lo) if lo else values
        if width < 64:
            part = part & _U64((1 << width) - 1)
            out = (out << _U64(width)) | part
        else:
            out = part
    return out


def gather_int(value: int, runs: Sequence[Run]) -> int:
    """:func:`gather` of one Python int."""
    out = 0
    for lo, width in runs:
        out = (out << width) | ((value >> lo) & ((1 << width) - 1))
    return out


@dataclass(frozen=True)
class Table:
    """One table: the bits naming its buckets and the residual bits stored in records."""

    bucket: tuple[Run, ...]
    residual: tuple[Run, ...]

    @property
    def root(self) -> tuple[Run, ...]:
        """The free bits of the table's buckets: all of the residual."""
        return ((0, sum(w for _, w in self.residual)),)


class Layout:
    """The tables of a parameter set, and how split buckets are keyed."""

    def __init__(self, params: SimhashIndexParams) -> None:
        self.params = params
        parts, choose = (params.k + 2, 2) if params.permuted else (params.k + 1, 1)
        default = PERMUTED_BUCKET_BITS if params.permuted else PIGEONHOLE_BUCKET_BITS
        cut = blocks(params.bits, parts)
        self.tables = []
        for combo in itertools.combinations(range(parts), choose):
            head, tail = take([cut[i] for i in combo], params.bucket_bits or default)
            rest = [cut[i] for i in range(parts) if i not in combo]
            self.tables.append(Table(tuple(head), tuple(tail + rest)))
        self.bucket_count = sum(1 << sum(w for _, w in t.bucket) for t in self.tables)
        widest = max(sum(w for _, w in t.bucket) for t in self.tables)
        self.name_digits = (len(f"{len(self.tables) - 1:x}"), (widest + 3) // 4)
        self.fmt = RecordFormat((max(t.root[0][1] for t in self.tables) + 7) // 8)
        self._children: dict[tuple, list[tuple[list[Run], tuple[Run, ...]]]] = {}

    def children(self, free: tuple[Run, ...], s: int) -> list[tuple[list[Run], tuple[Run, ...]]]:
        """(key bits, free bits) of the k + 1 sub-tables of a bucket split with ``s``-bit keys.

        The free bits are cut into k + 1 sub-blocks; sub-table j is keyed by the first ``s``
        bits of sub-block j, and its own buckets keep every other free bit for later splits.
        """
        if (free, s) not in self._children:
            groups, rest = [], list(free)
            for _, size in blocks(sum(w for _, w in free), self.params.k + 1):
                head, rest = take(rest, size)
                groups.append(head)
            out = []
            for j, group in enumerate(groups):
                key, tail = take(group, s)
                others = [run for g in groups[:j] for run in g] + tail
                out.append((key, tuple(others + [run for g in groups[j + 1 :] for run in g])))
            self._children[free, s] = out
        return self._children[free, s]

    def key_bits(self, free: tuple[Run, ...], size: int, limit: float) -> int:
        """Sub-key width that leaves at most limit / (2 (k + 1)) records per sub-bucket.

        A query then reads at most limit / 2 records of the split bucket (k + 1 sub-buckets),
        and each sub-bucket can grow well before it needs a split of its own; wider keys
        would make buckets of a handful of records, where Redis's per-key overhead dominates.
        """
        parts = self.params.k + 1
        narrowest = sum(w for _, w in free) // parts
        wanted = math.ceil(math.log2(max(2.0, 2 * size * parts / limit)))
        return max(1, min(narrowest, wanted))

    def splittable(self, free: tuple[Run, ...], depth: int) -> bool:
        width = sum(w for _, w in free)
        return depth < self.params.split_depth and width >= self.params.k + 1
