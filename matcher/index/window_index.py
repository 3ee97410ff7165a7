"""Window postings in Redis: from a 64-bit window key to the uint32 owners whose text has it.

A window key is any stable 64-bit hash of a window (a pinyin-window "dna", a shingle hash).
Postings are packed like the simhash index's buckets (:mod:`matcher.index.packed`): the key is
mixed with ``fmix64`` (MurmurHash3's finaliser, a bijection), the top ``bucket_bits`` bits of
the mix name the bucket, and a record is the next 16 bits of the mix (the key's check) and
the owner: 6 bytes. Containment is then counted from the index alone: :meth:`WindowIndex.hits`
returns, per owner, how many distinct query keys it holds.

False positives: a record answers a query key when bucket and check agree. Buckets sized by
the rule of docs/configuration.md (:func:`bucket_bits_for`) hold about
:data:`POSTINGS_PER_BUCKET` postings whatever the catalogue's size, so a query key meets a
foreign posting with probability about POSTINGS_PER_BUCKET / 2**16 (0.3%): a chapter page's
few hundred keys find a posting or two of random owners. A candidate needs
``min_window_hits`` keys of one owner, and every candidate is verified, so a false posting
costs a little time, never a false match; the check costs 2 bytes a posting where 3 did
(24 bits, up to 2026-12): a seventh of the postings' bytes.

Keys that more than ``max_df`` owners share (boilerplate windows: licences, "上一章 下一章")
are stop keys: :meth:`WindowIndex.hits` ignores them, as a search engine ignores stop words.

Layout (:mod:`matcher.keys`): bucket ``b`` is in tag group ``b mod 32``, which holds its own
copy of the parameters and its own posting count, so that every script call and every
``MGET`` stays in one hash slot of a Redis Cluster. A lookup is one ``MGET`` per group, sent
as one round trip per node; an add or remove is one script call per group, pipelined,
atomic per group and idempotent (an interrupted add is completed by running it again).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from fingerprint.base import array_from_hex
from fingerprint.hashing import fmix64
from matcher.index.packed import (
    MISMATCH,
    IndexParamsMismatch,
    RecordFormat,
    as_ids,
    as_values,
    group_bytes,
    payload_buffer,
    script_args,
)
from matcher.index.storage import Script, Storage
from matcher.keys import LAYOUT_VERSION, TAG_GROUPS, window_keys
from matcher.store.field_names import INDEX_KEYS_VERSION

POSTINGS_PER_CHAR = 0.1
"""Postings keys per content character of a text (pinyin-window dnas and sampled anchors,
:func:`matcher.matching.prepared.window_keys`), measured on Chinese prose."""
POSTINGS_PER_BUCKET = 200
DNA_SAMPLE_M = 2
"""One in this many pinyin-window dnas is a postings key
(:func:`matcher.matching.prepared.window_keys`)."""
DNA_BELOW = np.uint64(1 << 62)
"""Dnas are below this; sampled anchors, the other postings keys, are tagged above it."""


def sampled_dnas(dnas: np.ndarray) -> np.ndarray:
    """The dnas that are postings keys: those whose mixed value is 0 mod
    :data:`DNA_SAMPLE_M` (Broder's MOD_m sample), so a dna two texts share is a key of both
    or of neither."""
    return dnas[fmix64(dnas) % np.uint64(DNA_SAMPLE_M) == 0]


def stored_postings(value: dict, version: int) -> np.ndarray:
    """The postings keys of a stored ``index_keys`` value
    (:meth:`matcher.matching.prepared.Prepared.stored_fingerprints`) of ``version``, reduced to
    what the current version posts: an earlier version's dnas (fixed and anchored windows',
    not told apart) sampled by :func:`sampled_dnas`, so that an index rebuilt after an
    upgrade holds the keys a lookup asks for, and about half the postings it held.
    """
    keys = array_from_hex(value["windows"], "<u8", np.uint64)
    if version >= INDEX_KEYS_VERSION:
        return keys
    dna = keys < DNA_BELOW
    return np.concatenate([sampled_dnas(keys[dna]), keys[~dna]])


def bucket_bits_for(chars: float) -> int:
    """``FPTRACK_WINDOW_BUCKET_BITS`` for about ``chars`` indexed characters: buckets of about
    :data:`POSTINGS_PER_BUCKET` postings, within 8..28. Fuller buckets make every lookup read
    more bytes; emptier ones cost Redis about 100 bytes of key overhead each.

    >>> bucket_bits_for(1e8), bucket_bits_for(2e10)
    (16, 23)
    """
    buckets = max(chars, 1.0) * POSTINGS_PER_CHAR / POSTINGS_PER_BUCKET
    return min(28, max(8, round(math.log2(buckets))))


@dataclass(frozen=True, eq=False)
class Postings:
    """A lookup's answer: owners with their number of distinct query keys (stop keys
    ignored), and for each distinct query key (sorted) its document frequency."""

    owners: np.ndarray
    counts: np.ndarray
    keys: np.ndarray
    df: np.ndarray

    def df_of(self, keys: np.ndarray) -> np.ndarray:
        """The document frequency of each of ``keys`` (which must be among the query keys)."""
        return self.df[np.searchsorted(self.keys, np.asarray(keys, dtype=np.uint64))]


_U64 = np.uint64
_GROUPS = _U64(TAG_GROUPS)
CHECK_BITS = 16
"""Bits of the mixed key a record keeps besides its bucket (2 bytes; with the owner, 6)."""
_CHECK = _U64(CHECK_BITS)


def _matching(
    sig_sorted: np.ndarray, buckets: np.ndarray, counts: np.ndarray, checks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The signatures of the records read (``counts[i]`` records of ``buckets[i]``, their
    ``checks`` in order) and which of them are among the query's ``sig_sorted``.

    A bucket asked for holds one query key but rarely (buckets outnumber a page's keys
    thousands of times), so each record is compared with its bucket's key alone; the
    records of a bucket holding several are looked up among the query's keys.
    """
    found = (np.repeat(buckets, counts) << _CHECK) | checks
    first = np.searchsorted(sig_sorted >> _CHECK, buckets)
    last = np.searchsorted(sig_sorted >> _CHECK, buckets, side="right")
    match = found == np.repeat(sig_sorted[first], counts)
    shared = np.repeat(last - first > 1, counts)
    if shared.any():
        some = found[shared]
        at = np.minimum(np.searchsorted(sig_sorted, some), len(sig_sorted) - 1)
        match[shared] = sig_sorted[at] == some
    return found, match


class WindowIndex:
    """Postings of window keys: which owners hold each key; atomic and idempotent per owner.

    Keys (:class:`matcher.keys.IndexKeys` under ``{prefix}:win``), per tag group:
    ``params``, ``records`` (number of postings) and ``b:{bucket}`` (the buckets,
    fixed-width hex names).
    """

    def __init__(
        self, storage: Storage, prefix: str, bucket_bits: int = 20, max_df: int = 1000
    ) -> None:
        if not 1 <= bucket_bits <= 32 or max_df < 1:
            raise ValueError("bucket_bits must be 1..32 and max_df >= 1")
        self._storage = storage
        self._prefix = prefix
        self._bits = bucket_bits
        self.max_df = max_df
        self._keys = window_keys(prefix)
        self._fmt = RecordFormat(CHECK_BITS // 8)
        self._params_json = json.dumps(
            {
                "layout": LAYOUT_VERSION,
                "tag_groups": TAG_GROUPS,
                "window_index": {"bucket_bits": bucket_bits, "check_bits": CHECK_BITS},
            },
            sort_keys=True,
            separators=(",", ":"),
        )
        self._claimed = False

    def add(self, owner: int, keys: np.ndarray) -> None:
        """Post ``owner`` under each key (a script call per tag group, atomic per group;
        already posted: no change)."""
        self.add_many(np.repeat(as_ids([owner]), len(keys)), keys)

    def add_many(self, owners: np.ndarray, keys: np.ndarray, *, fresh: bool = False) -> None:
        """Post ``owners[i]`` under ``keys[i]`` for every i: several owners in the same
        script calls, one per tag group (a work's segments registered together).

        ``fresh``: none of ``owners`` has a posting yet (a newly registered work's segments,
        sent once each), so the records are appended without a search
        (:data:`matcher.index.packed.APPEND_LUA`); a wrong ``fresh`` would store duplicates."""
        self._edit("append" if fresh else "add", owners, keys, "adding to the window index")

    def remove(self, owner: int, keys: np.ndarray) -> None:
        """Remove ``owner``'s postings of ``keys`` (a script call per tag group)."""
        owners = np.repeat(as_ids([owner]), len(keys))
        self._edit("remove", owners, keys, "removing from the window index")

    def bulk_load(
        self, owners: np.ndarray, keys: np.ndarray, groups: Collection[int] | None = None
    ) -> None:
        """Fill an empty index from parallel arrays: buckets built with numpy, SET in chunks.

        ``groups``: fill only the buckets of these tag groups, which must be empty (the
        others are left as they are, :mod:`matcher.index.integrity`). Not atomic: the parameters
        and posting count are written first, so an interrupted load leaves an index that
        refuses another bulk load until it is cleared. Loading nothing (a new deployment's
        empty store) writes nothing.
        """
        owners, keys = as_ids(owners), as_values(keys)
        if len(owners) != len(keys):
            raise ValueError(f"{len(owners)} owners but {len(keys)} keys")
        what = "bulk-loading the window index"
        chosen = sorted(set(range(TAG_GROUPS) if groups is None else groups))
        counts = self._group_records(what)
        if any(counts[g] for g in chosen):
            raise ValueError(f"bulk_load needs an empty index; clear {self._prefix!r} first")
        if not len(keys):
            return
        sig = self._signature(keys)
        if len(chosen) < TAG_GROUPS:
            inside = np.isin((sig >> _CHECK) % _GROUPS, np.asarray(chosen, dtype=np.uint64))
            sig, owners = sig[inside], owners[inside]
        order = np.lexsort((owners, sig))
        sig, owners = sig[order], owners[order]
        first = np.r_[True, (sig[1:] != sig[:-1]) | (owners[1:] != owners[:-1])]
        sig, owners = sig[first], owners[first]
        per_group = np.bincount((sig >> _CHECK) % _GROUPS, minlength=TAG_GROUPS).tolist()
        meta = [(self._keys.params(g), self._params_json) for g in chosen]
        meta += [(self._keys.records(g), str(per_group[g])) for g in chosen if per_group[g]]
        self._storage.set_many(meta, what)
        buckets, payloads = group_bytes(self._fmt.records(sig, owners), sig >> _CHECK)
        self._storage.set_many(zip(self._names(buckets), payloads, strict=True), what)

    def records(self, what: str = "counting window postings") -> int:
        """Postings in the index (the groups' counts added up); checks the parameters."""
        return sum(self._group_records(what))

    def _group_records(self, what: str) -> list[int]:
        """Each tag group's posting count; checks the parameters."""
        groups = np.arange(TAG_GROUPS)
        names = [self._keys.records(g) for g in range(TAG_GROUPS)]
        counts, meta = self._storage.mget(names, what, groups, lambda g: [self._keys.params(g)])
        for (stored,) in meta.values():
            self._check_params(stored)
        return [int(c or 0) for c in counts]

    def forget(self) -> None:
        """Drop what this object cached (some of its groups' keys were deleted or lost)."""
        self._claimed = False

    def hits(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(owners, number of distinct query keys each holds), by owner; one round trip.

        Keys held by more than ``max_df`` owners are ignored.
        """
        found = self.lookup(keys)
        return found.owners, found.counts

    def lookup(self, keys: np.ndarray, group_shift: int = 0) -> Postings:
        """Owners holding the query keys, and each key's document frequency; one round trip
        (one per node on a cluster).

        The frequency of a key counts distinct owner groups, ``owner >> group_shift`` (the
        works of segment owners, see :mod:`matcher.keys`), stop keys included.
        """
        keys = np.unique(as_values(keys))
        sig = self._signature(keys)
        order = np.argsort(sig, kind="stable")
        sig_sorted = sig[order]
        empty = Postings(
            np.empty(0, dtype=np.uint32),
            np.empty(0, dtype=np.int64),
            keys,
            np.zeros(len(keys), np.int64),
        )
        if not len(sig):
            return empty
        buckets = np.unique(sig_sorted >> _CHECK)
        groups = (buckets % _GROUPS).astype(np.int64)
        payloads, meta = self._storage.mget(
            self._names(buckets),
            "reading the window index",
            groups,
            lambda g: [self._keys.params(g)],
        )
        for stored in meta.values():
            self._check_params(stored[0])
        lengths, buffer = payload_buffer(payloads)
        if not len(buffer):
            return empty
        checks, owners = self._fmt.unpack(buffer)
        found, match = _matching(sig_sorted, buckets, lengths // self._fmt.width, checks)
        found, owners = found[match], owners[match]
        if not len(found):
            return empty
        order2 = np.lexsort((owners, found))
        found, owners = found[order2], owners[order2]
        distinct = np.r_[True, (found[1:] != found[:-1]) | (owners[1:] != owners[:-1])]
        found, owners = found[distinct], owners[distinct]
        keys_found, owners_per_key = np.unique(found, return_counts=True)
        groups = owners.astype(np.uint64) >> _U64(group_shift)
        firsts = np.r_[True, (found[1:] != found[:-1]) | (groups[1:] != groups[:-1])]
        group_keys, groups_per_key = np.unique(found[firsts], return_counts=True)
        df = np.zeros(len(keys), dtype=np.int64)
        positions = np.searchsorted(group_keys, sig)
        known = (positions < len(group_keys)) & (
            group_keys[np.minimum(positions, len(group_keys) - 1)] == sig
        )
        df[known] = groups_per_key[positions[known]]
        stop = keys_found[owners_per_key > self.max_df]
        if len(stop):
            owners = owners[~np.isin(found, stop)]
        held, counts = np.unique(owners, return_counts=True)
        return Postings(held.astype(np.uint32), counts.astype(np.int64), keys, df)

    def clear(self) -> None:
        """Delete every key of the index (SCAN + UNLINK, pipelined)."""
        self._storage.delete_matching(self._keys.everything, "clearing the window index")
        self._claimed = False

    def _edit(self, script: Script, owners: np.ndarray, keys: np.ndarray, what: str) -> None:
        self._claim(what)
        owners, keys = as_ids(owners), as_values(keys)
        if len(owners) != len(keys):
            raise ValueError(f"{len(owners)} owners but {len(keys)} keys")
        if not len(keys):
            return
        sig = self._signature(keys)
        order = np.lexsort((owners, sig))
        sig, owners = sig[order], owners[order]
        distinct = np.r_[True, (sig[1:] != sig[:-1]) | (owners[1:] != owners[:-1])]
        sig, owners = sig[distinct], owners[distinct]
        buckets, payloads = group_bytes(self._fmt.records(sig, owners), sig >> _CHECK)
        names = self._names(buckets)
        groups = (buckets % _GROUPS).astype(np.int64)
        calls = []
        for g in np.unique(groups).tolist():
            chosen = np.flatnonzero(groups == g).tolist()
            k = self._keys  # the version slot of the scripts is never checked here
            keys = [k.params(g), k.records(g), k.version(g), *(names[i] for i in chosen)]
            args = script_args(
                self._params_json,
                None,
                self._fmt.width,
                "1" * len(chosen),
                [payloads[i] for i in chosen],
            )
            calls.append((keys, args))
        for result in self._storage.edit_buckets(script, calls, what):
            if result[0] == MISMATCH:
                self._check_params(result[1])

    def _claim(self, what: str) -> None:
        """Before this object's first edit: the parameters into every group that has none
        (a script writes them only into its own group), checked where present, so that
        a client with other parameters is refused whichever groups it reads or writes."""
        if not self._claimed:
            names = [self._keys.params(g) for g in range(TAG_GROUPS)]
            for stored in self._storage.claim(names, self._params_json, what):
                self._check_params(stored)
            self._claimed = True

    def _signature(self, keys: np.ndarray) -> np.ndarray:
        """bucket << 16 | check: the top bucket_bits + 16 bits of fmix64(key)."""
        return fmix64(keys) >> _U64(64 - CHECK_BITS - self._bits)

    def _names(self, buckets: np.ndarray) -> list[bytes]:
        """Bucket names: the group's head and the bucket number in fixed-width hex."""
        groups = (buckets % _GROUPS).astype(np.int64)
        return self._keys.buckets(groups, [(buckets, (self._bits + 3) // 4)])

    def _check_params(self, stored: bytes | None) -> None:
        if stored is not None and stored != self._params_json.encode():
            raise IndexParamsMismatch(
                f"window index {self._prefix!r} was built with "
                f"{stored.decode(errors='replace')}, not {self._params_json}"
            )
