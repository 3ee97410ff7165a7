"""Simhash index in Redis: block tables with split hot buckets (Manku, Jain & Das Sarma 2007).

Pigeonhole (the default): the f bits are cut into k + 1 blocks; two fingerprints within
Hamming distance k differ in at most k blocks, so they agree exactly on at least one. Table
t files every fingerprint under block t, and a query reads one bucket per table: for f = 64,
k = 3, four tables keyed by 16 bits.

Permuted tables (``permuted=True``; "Detecting near-duplicates for web crawling", section
3.1.1): the f bits are cut into k + 2 blocks and there is one table for every choice of 2 of
them (C(k + 2, 2) = 10 tables for k = 3, keys of 25 or 26 bits): at most k blocks differ,
so at least two agree, and one table's key matches exactly. In both schemes a table's
bucket is named by the first ``bucket_bits`` bits of its key: 16 for pigeonhole (the whole
block), 18 for permuted tables. Each Redis key costs about 100 bytes (dict entry, key,
value header, allocator rounding), so buckets must not get small: the permuted layout pays
2.5 times the records and 4 times the keys for buckets 4 times smaller. With redis-py, whose
cost per fetched bucket dominates, it lost on every count at 10M real-text fingerprints (136
bytes per fingerprint and 11,900 batched queries/s, against 58 and 19,700 for pigeonhole);
it is meant for indexes of 10^8 fingerprints and more, where 16-bit buckets hold thousands.

Records: a bucket is one Redis string of fixed-width records (:mod:`matcher.index.packed`): the
fingerprint's f - bucket_bits other bits (its residual, 6 bytes for f = 64) and the uint32
owner id, 10 bytes in all. Every record of a bucket shares the bucket's bits with the query,
so the distance is the popcount of the residuals' XOR, computed client-side with numpy.

Hot buckets: a bucket holding more than max(split_floor, (1 + split_mu) x the mean bucket
size) records is split on its residual, again by the pigeonhole principle: the residual's
free bits are cut into k + 1 sub-blocks; sub-table j files every record under the first s
bits of its sub-block j (s chosen to leave about limit / (2 (k + 1)) records per
sub-bucket), so a fingerprint within distance k of the query that shares the bucket also
shares one sub-block, hence its first s bits. A sub-bucket keeps the bits not yet used as
a key for its own split, up to ``split_depth`` levels. A split is made only if it at least
halves the expected scan of a query drawn like the bucket's own records (the sum over
sub-tables of the squared sub-bucket sizes is at most half the squared bucket size): a
bucket of one repeated fingerprint stays whole. Splits cost memory (k + 1 copies of the
bucket's records) and are never undone; a rebuild (:meth:`SimhashIndex.clear` and
:meth:`SimhashIndex.bulk_load`) re-plans them, in one level where incremental adds, which
split a bucket each time it outgrows the limit, may have made several.

Layout (:mod:`matcher.keys`): the top-level bucket of table t and key ``key`` is in tag
group ``key mod 32``, and its split leaves carry the same tag; each group has its own
parameters, record count, split directory and version, so every script, ``MGET`` and
transaction stays in one hash slot of a Redis Cluster while the buckets spread over all
masters. The split limit is taken over the group's own mean bucket size.

Consistency: each group's split directory (a Redis hash: split bucket -> s) is cached
client-side with its version token, rewritten (a random token, never reused) by every split
in the group. A query reads each group's buckets with that group's token and stored
parameters in one MGET (one MGET of everything on a single server; one round trip per node
on a cluster); MGET is atomic, so a group's buckets match its token, and only the groups
whose token changed are reloaded and the query redone. Edits run the scripts of
:mod:`matcher.index.packed`, which refuse to write against a stale token; an add or remove is one
script call per group and chunk of whole owners (all pipelined), so atomic per owner within
a group and idempotent overall (an interrupted add is completed by running it again). When
an add pushes a bucket over the limit, the client splits it in a watched transaction
(:meth:`matcher.index.storage.Storage.transact`: WATCH / MULTI on Redis) on the bucket, the
group's token and record count (the numpy code of bulk loads); until then
the bucket is merely large, and a crash in between leaves it for the next add to split. A
:class:`SimhashIndex` object caches the directory as one snapshot
(:class:`matcher.index.simhash_directory.SplitDirectories`), replaced whole; each query, edit
or split reads it once and checks the stored tokens against that snapshot's, so the threads
of a process may share the object.

The parts: :class:`SimhashIndex` here (the stored parameters, queries, edits and the
transaction of a split), the routes of values to buckets and the buckets' names
(:mod:`matcher.index.simhash_routing`), the planning of splits
(:mod:`matcher.index.simhash_splits`), the cached directories
(:mod:`matcher.index.simhash_directory`), the bit layout (:mod:`matcher.index.simhash_layout`)
and the records (:mod:`matcher.index.packed`).
"""

from __future__ import annotations

import functools
import itertools
import json
import secrets
from collections.abc import Collection, Iterable, Sequence

import numpy as np

from fingerprint.base import params_dict
from matcher.errors import IndexUnavailable
from matcher.index.packed import (
    MISMATCH,
    STALE,
    IndexParamsMismatch,
    as_ids,
    as_values,
    expand_ranges,
    group_bytes,
    payload_buffer,
    script_args,
)
from matcher.index.simhash_directory import RETRIES, SplitDirectories
from matcher.index.simhash_layout import Layout, Run, SimhashIndexParams, gather
from matcher.index.simhash_routing import Directory, Plan, Routes
from matcher.index.simhash_splits import SplitPlanner
from matcher.index.storage import Command, Script, Storage
from matcher.keys import LAYOUT_VERSION, TAG_GROUPS, simhash_keys

MAX_KEYS_PER_CALL = 1024
REFUSED_GROWTH = 1.25
"""A bucket refused for splitting is reconsidered once it has grown by this factor."""
_U64 = np.uint64
_STALE = object()
"""A split found the group's directory changed: reload it, and try again."""


class SimhashIndex:
    """Near-duplicate lookup of 64-bit simhashes: (id, distance) within Hamming distance k.

    Keys (:class:`matcher.keys.IndexKeys` under ``{prefix}:sh``), per tag group:
    ``params`` (the parameters, JSON), ``records`` (records of the group's buckets over all
    tables), ``ver`` and ``split`` (the group's split directory), ``b:{table}:{key}`` and
    ``.../{j}:{subkey}`` (buckets and split buckets).
    """

    def __init__(
        self,
        storage: Storage,
        prefix: str,
        params: SimhashIndexParams | None = None,
    ) -> None:
        params = params or SimhashIndexParams()
        self._storage = storage
        self._prefix = prefix
        self._params = params
        self._layout = Layout(params)
        self._fmt = self._layout.fmt
        self._keys = simhash_keys(prefix)
        self._routes = Routes(self._layout, self._keys)
        self._splits = SplitPlanner(params, self._routes)
        self._params_json = json.dumps(
            {
                "layout": LAYOUT_VERSION,
                "simhash_index": params_dict(params),
                "tag_groups": TAG_GROUPS,
            },
            sort_keys=True,
            separators=(",", ":"),
        )
        self._params_bytes = self._params_json.encode()
        self._query_meta = [
            (self._keys.version(g), self._keys.params(g)) for g in range(TAG_GROUPS)
        ]
        self._refused: dict[bytes, int] = {}
        self._claimed = False
        self._directories = SplitDirectories(storage, self._keys, self._routes, self._check_params)

    @property
    def params(self) -> SimhashIndexParams:
        return self._params

    def add(self, ids: Sequence[int] | np.ndarray, values: Sequence[int] | np.ndarray) -> None:
        """File each (id, value) pair; a pair already filed is left as it is."""
        ids, values = self._pairs(ids, values)
        over = self._edit("add", ids, values, "adding to the simhash index")
        for name, size in over.items():
            self._split_bucket(name, size)

    def remove(self, ids: Sequence[int] | np.ndarray, values: Sequence[int] | np.ndarray) -> None:
        """Remove each (id, value) pair; absent pairs are ignored."""
        ids, values = self._pairs(ids, values)
        self._edit("remove", ids, values, "removing from the simhash index")

    def bulk_load(
        self,
        ids: Sequence[int] | np.ndarray,
        values: Sequence[int] | np.ndarray,
        groups: Collection[int] | None = None,
    ) -> None:
        """Fill an empty index: buckets built with numpy, split as needed, SET slot by slot.

        ``groups``: fill only the buckets of these tag groups, which must be empty (the
        others are left as they are: a rebuild of the groups Redis lost,
        :mod:`matcher.index.integrity`); every pair is given, as for the whole index, so that each
        group's split limit is the one of a whole load. Not atomic: the parameters and
        record counts are written first, so an interrupted load leaves an index that
        refuses another bulk load until it is cleared. Loading nothing (a new deployment's
        empty store) writes nothing.
        """
        ids, values = self._pairs(ids, values)
        what = "bulk-loading the simhash index"
        chosen = sorted(set(range(TAG_GROUPS) if groups is None else groups))
        counts, versions = self._group_meta(what)
        if any(counts[g] or versions[g] for g in chosen):
            raise ValueError(f"bulk_load needs an empty index; clear {self._prefix!r} first")
        if not len(ids):
            return
        per_group = np.zeros(TAG_GROUPS, dtype=np.int64)
        for table in self._layout.tables:
            keys = gather(values, table.bucket)
            per_group += np.bincount(keys % _U64(TAG_GROUPS), minlength=TAG_GROUPS)
        k = self._keys
        meta = [(k.params(g), self._params_json) for g in chosen]
        meta += [(k.records(g), str(int(per_group[g]))) for g in chosen if per_group[g]]
        self._storage.set_many(meta, what)
        splits: dict[bytes, int] = {}
        limits = [self._splits.limit(int(n)) for n in per_group]
        leaves = self._splits.bulk_buckets(ids, values, limits, splits, set(chosen))
        self._storage.set_many(leaves, what)
        if not splits:
            return
        by_group: dict[int, dict[bytes, int]] = {}
        for name, s in splits.items():
            by_group.setdefault(self._routes.group_of(name), {})[name] = s
        tokens = {g: _token() for g in by_group}
        commands: list[Command] = []
        for g, mapping in by_group.items():  # the directory first, then its version
            commands.append(("HSET", k.split(g), *itertools.chain(*mapping.items())))
            commands.append(("SET", k.version(g), tokens[g]))
        self._storage.commands(commands, what)
        self._directories.set({g: (tokens[g], mapping) for g, mapping in by_group.items()})

    def query(self, value: int, k: int | None = None) -> list[tuple[int, int]]:
        """(id, distance) of the fingerprints within distance k, by distance then id."""
        return self.query_many([value], k)[0]

    def query_many(
        self, values: Sequence[int] | np.ndarray, k: int | None = None
    ) -> list[list[tuple[int, int]]]:
        """:meth:`query` of each value, in one round trip per node (two if a directory changed)."""
        k = self._params.k if k is None else k
        if not 0 <= k <= self._params.k:
            raise ValueError(f"k must be 0..{self._params.k} for this index, got {k}")
        values = as_values(values, self._params.bits)
        if len(values) == 0:
            return []
        for _ in range(RETRIES):
            d = self._directories.current
            plan = self._routes.plan(values, d)
            payloads, meta = self._storage.mget(
                plan.names,
                "querying the simhash index",
                plan.groups,
                self._query_meta.__getitem__,
            )
            stale, empty = [], {}
            for g, (version, stored) in meta.items():
                if stored is None:  # nothing filed in the group, or cleared
                    empty[g] = (b"", {})
                    continue
                self._check_params(stored)
                if (version or b"") != d.versions[g]:
                    stale.append(g)
            if empty:
                self._directories.set({g: e for g, e in empty.items() if d.versions[g]})
                gone = np.isin(plan.groups, list(empty))
                payloads = [None if out else p for p, out in zip(payloads, gone, strict=True)]
            if not stale:
                return self._answers(len(values), plan, payloads, k)
            self._directories.sync(stale)
        raise IndexUnavailable("the simhash index's split directory kept changing; retry")

    def clear(self) -> None:
        """Delete every key of the index (the directories first, then SCAN + UNLINK)."""
        what = "clearing the simhash index"
        k = self._keys
        directories = [n for g in range(TAG_GROUPS) for n in (k.version(g), k.split(g))]
        self._storage.unlink(directories, what)
        self._storage.delete_matching(self._keys.everything, what)
        self.forget(range(TAG_GROUPS))

    def forget(self, groups: Iterable[int]) -> None:
        """Drop what this object cached of ``groups`` (their keys were deleted or lost)."""
        self._directories.set({g: (b"", {}) for g in groups})
        self._refused.clear()
        self._claimed = False

    def entries(self) -> int:
        """How many fingerprints the index holds (its groups' record counts; the parameters
        are checked)."""
        counts, _ = self._group_meta("counting the simhash index")
        return sum(counts) // len(self._layout.tables)

    def stats(self) -> dict:
        """Buckets, records, split buckets, largest bucket, bytes (SCANs the whole index)."""
        what = "reading simhash index statistics"
        sizes = self._storage.sizes(self._keys.bucket_pattern, what)
        counts_by_group, _ = self._group_meta(what)
        total = sum(counts_by_group)
        hlens = [("HLEN", self._keys.split(g)) for g in range(TAG_GROUPS)]
        split = sum(self._storage.commands(hlens, what))
        counts = np.fromiter(sizes.values(), np.int64, len(sizes)) // self._fmt.width
        tables = len(self._layout.tables)
        return {
            "tables": tables,
            "entries": total // tables,
            "records": int(counts.sum()),
            "buckets": len(sizes),
            "split_buckets": split,
            "largest_bucket": int(counts.max()) if len(counts) else 0,
            "mean_bucket": total / self._layout.bucket_count,
            "split_limit": self._splits.limit(total / TAG_GROUPS),
            "record_bytes": self._fmt.width,
            "bytes": int(counts.sum()) * self._fmt.width,
        }

    def _group_meta(self, what: str) -> tuple[list[int], list[bytes]]:
        """Each group's record count and directory version (parameters checked)."""
        k = self._keys
        groups = np.arange(TAG_GROUPS)
        names = [k.records(g) for g in range(TAG_GROUPS)]
        counts, meta = self._storage.mget(
            names, what, groups, lambda g: [k.version(g), k.params(g)]
        )
        for _, stored in meta.values():
            self._check_params(stored)
        return [int(c or 0) for c in counts], [meta[g][0] or b"" for g in range(TAG_GROUPS)]

    def _answers(
        self, n: int, plan: Plan, payloads: list[bytes | None], k: int
    ) -> list[list[tuple[int, int]]]:
        lengths, buffer = payload_buffer(payloads)
        residual, ids = self._fmt.unpack(buffer)
        counts = lengths // self._fmt.width
        # every leaf has an edge; edges are sorted by leaf: the first edge of each leaf scans
        # the fetched records in place, the others (queries sharing a bucket) scan copies
        first = np.r_[True, plan.edge_leaf[1:] != plan.edge_leaf[:-1]]
        hits = [_scan(residual, ids, counts, plan.edge_pair[first], plan.residual, k)]
        if not first.all():
            leaf = plan.edge_leaf[~first]
            rec = expand_ranges((np.cumsum(counts) - counts)[leaf], counts[leaf])
            pairs = plan.edge_pair[~first]
            hits.append(_scan(residual[rec], ids[rec], counts[leaf], pairs, plan.residual, k))
        pair, found, dist = (np.concatenate(parts) for parts in zip(*hits, strict=True))
        return collect_hits(n, pair % n, found, dist)

    # -- edits -----------------------------------------------------------------------------

    def _pairs(self, ids: Sequence[int] | np.ndarray, values: Sequence[int] | np.ndarray):
        ids, values = as_ids(ids), as_values(values, self._params.bits)
        if len(ids) != len(values):
            raise ValueError(f"{len(ids)} ids but {len(values)} values")
        order = np.lexsort((values, ids))
        ids, values = ids[order], values[order]
        first = np.ones(len(ids), dtype=bool)
        first[1:] = (ids[1:] != ids[:-1]) | (values[1:] != values[:-1])
        return ids[first], values[first]

    def _edit(
        self, script: Script, ids: np.ndarray, values: np.ndarray, what: str
    ) -> dict[bytes, int]:
        """Run ``script`` over the pairs, one call per tag group and chunk of owners, all in one
        pipeline; returns the oversized leaves. Pairs refused for a stale directory are redone
        (in every group: adding twice changes nothing)."""
        if not self._claimed:  # the parameters into every group, as WindowIndex._claim does
            names = [self._keys.params(g) for g in range(TAG_GROUPS)]
            for stored in self._storage.claim(names, self._params_json, what):
                self._check_params(stored)
            self._claimed = True
        pending = np.arange(len(ids))
        over: dict[bytes, int] = {}
        for _ in range(RETRIES):
            if len(pending) == 0:
                return over
            d = self._directories.current
            calls = self._calls(ids[pending], values[pending], d)
            split = (self._params.split_floor, self._params.split_mu, self._splits.group_buckets)
            k = self._keys
            scripted = []
            for g, names, flags, payloads, _ in calls:
                keys = [k.params(g), k.records(g), k.version(g), *names]
                args = script_args(
                    self._params_json, d.versions[g], self._fmt.width, flags, payloads, split
                )
                scripted.append((keys, args))
            results = self._storage.edit_buckets(script, scripted, what)
            stale, stale_groups = [], set()
            for (g, names, _, _, members), result in zip(calls, results, strict=True):
                if result[0] == MISMATCH:
                    raise self._mismatch(result[1])
                if result[0] == STALE:
                    stale.append(members)
                    stale_groups.add(g)
                    continue
                sizes = result[2]
                for i in range(0, len(sizes), 2):
                    over[names[sizes[i] - 1]] = int(sizes[i + 1])
            pending = pending[np.unique(np.concatenate(stale))] if stale else pending[:0]
            if stale:
                self._directories.sync(sorted(stale_groups))
        raise IndexUnavailable(f"the split directory kept changing while {what}; retry")

    def _calls(self, ids: np.ndarray, values: np.ndarray, d: Directory):
        """Script calls by the directory ``d``: (group, leaf names, count flags, payloads,
        pair indices); each call holds leaves of one tag group and whole owners' records in
        it."""
        n = len(ids)
        plan = self._routes.plan(values, d)
        q = plan.edge_pair % n
        edge_group = plan.groups[plan.edge_leaf]
        order = np.lexsort((q, edge_group))
        records = self._fmt.records(plan.residual[plan.edge_pair], ids[q])
        owner, group = ids[q[order]], edge_group[order]
        change = (owner[1:] != owner[:-1]) | (group[1:] != group[:-1])
        ends = [*(np.flatnonzero(change) + 1).tolist(), len(order)]
        cuts, prev = [0], 0
        for end in ends:
            new_group = prev > cuts[-1] and group[prev] != group[cuts[-1]]
            if prev > cuts[-1] and (new_group or end - cuts[-1] > MAX_KEYS_PER_CALL):
                cuts.append(prev)
            prev = end
        cuts.append(len(order))
        calls = []
        for a, b in itertools.pairwise(cuts):
            edges = order[a:b]
            leaves, payloads = group_bytes(records[edges], plan.edge_leaf[edges])
            leaves = leaves.tolist()
            names = [plan.names[i] for i in leaves]
            flags = "".join("1" if plan.flags[i] else "0" for i in leaves)
            calls.append((int(group[a]), names, flags, payloads, np.unique(q[edges])))
        return calls

    # -- splits ----------------------------------------------------------------------------

    def _split_bucket(self, name: bytes, size: int) -> None:
        """Split an oversized leaf: its records are read with the group's version and record
        count, and the leaves, directory and new version written only if none of the three
        changed meanwhile (:meth:`Storage.transact`; a WATCH / MULTI transaction on Redis)."""
        g = self._routes.group_of(name)
        watched = (name, self._keys.version(g), self._keys.records(g))  # one slot
        for _ in range(RETRIES):
            d = self._directories.current
            place = self._routes.locate(name, d.split)
            if place is None or size < self._refused.get(name, 0) * REFUSED_GROWTH:
                return
            decide = functools.partial(self._split_writes, name, g, place, d)
            done = self._storage.transact(watched, decide, "splitting a simhash bucket")
            if done is _STALE:
                self._directories.sync([g])
                continue
            if done is not None:
                token, splits = done
                self._directories.set({g: (token, {**d.splits[g], **splits})})
            return

    def _split_writes(
        self,
        name: bytes,
        g: int,
        place: tuple[int, tuple[Run, ...]],
        d: Directory,
        watched: list[bytes | None],
    ) -> tuple[list[Command], object]:
        """The writes that split bucket ``name`` of group ``g`` (its records, version and
        count in ``watched``), and the new (version, split buckets); no write, and
        :data:`_STALE`, when the group's directory is not ``d``'s; none, and None, when
        the bucket is gone or a split would not shorten its scan."""
        data, version, total = watched
        if not data:
            return [], None
        if (version or b"") != d.versions[g]:
            return [], _STALE
        residual, ids = self._fmt.unpack(data)
        splits: dict[bytes, int] = {}
        limit = self._splits.limit(int(total or 0))
        leaves = self._splits.leaves(name, *place, residual, ids, limit, splits)
        if not splits:
            self._refused[name] = len(ids)
            return [], None
        token = _token()
        commands: list[Command] = [("UNLINK", name)]
        commands += [("SET", leaf, payload) for leaf, payload in leaves]
        commands.append(("HSET", self._keys.split(g), *itertools.chain(*splits.items())))
        commands.append(("SET", self._keys.version(g), token))
        return commands, (token, splits)

    # -- directory and parameters ----------------------------------------------------------

    def _check_params(self, stored: bytes | None) -> None:
        if stored is not None and stored != self._params_bytes:
            raise self._mismatch(stored)

    def _mismatch(self, stored: bytes) -> IndexParamsMismatch:
        return IndexParamsMismatch(
            f"simhash index {self._prefix!r} was built with {stored.decode(errors='replace')}, "
            f"not {self._params_json}"
        )


def _scan(
    residual: np.ndarray,
    ids: np.ndarray,
    counts: np.ndarray,
    pairs: np.ndarray,
    pair_residual: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pair, id, distance) of the records within distance k of their pair's residual.

    The records come in runs of ``counts``, one run per pair of ``pairs``.
    """
    dist = np.bitwise_count(residual ^ np.repeat(pair_residual[pairs], counts))
    keep = np.flatnonzero(dist <= k)
    edge = np.searchsorted(np.cumsum(counts), keep, side="right")
    return pairs[edge], ids[keep], dist[keep]


def collect_hits(
    n: int, query: np.ndarray, ids: np.ndarray, dist: np.ndarray
) -> list[list[tuple[int, int]]]:
    """Per query, distinct ids with their smallest distance, sorted by distance then id."""
    if not len(query):
        return [[] for _ in range(n)]
    query, ids, dist = (np.asarray(a, dtype=np.int64) for a in (query, ids, dist))
    # sorts of packed int64 keys (distance < 64, id < 2**32): query, id, distance ...
    key = np.sort((query << 38) | (ids << 6) | dist)
    key = key[np.r_[True, (key[1:] >> 6) != (key[:-1] >> 6)]]  # ... nearest per (query, id)
    query, ids, dist = key >> 38, (key >> 6) & 0xFFFFFFFF, key & 63
    key = np.sort((query << 38) | (dist << 32) | ids)  # ... then query, distance, id
    rows = list(zip((key & 0xFFFFFFFF).tolist(), ((key >> 32) & 63).tolist(), strict=True))
    bounds = np.searchsorted(key >> 38, np.arange(n + 1)).tolist()
    return [rows[a:b] for a, b in itertools.pairwise(bounds)]


def _token() -> bytes:
    """A fresh directory version: random, so a cleared and rebuilt index never reuses one."""
    return secrets.token_hex(8).encode()
