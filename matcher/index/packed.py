"""Fixed-width records packed into Redis strings: the storage layer of the matcher's indexes.

A bucket is one Redis string holding records of ``width`` bytes back to back: ``value_bytes``
little-endian value bytes (what the index compares), then the uint32 owner id, little-endian.
One string per bucket, not one set member per entry, is what keeps the indexes small
(datasketch's one-key-per-entry layout costs kilobytes per entry, its issue 96).

Strings are stored at exact size. APPEND and SETRANGE grow a string greedily (up to twice
its length), so incremental edits go through the Lua scripts of :class:`BucketScripts`,
which GET the bucket, edit it and SET it whole: the new value is allocated at its length.
A script call edits every bucket it is given atomically and idempotently (a record already
present is not added again; removing an absent one does nothing), and refuses to write
unless the index's stored parameters, and optionally its directory version, are the ones
the caller expects. Bulk loads build the buckets client-side and SET them in pipelined
chunks (:func:`matcher.index.redis_io.set_buckets`); reads fetch many buckets with one MGET per
tag group (:func:`matcher.index.redis_io.mget`) and parse all of them in a few numpy passes
(:meth:`RecordFormat.unpack`). Every script call's keys share one hash slot: the buckets of
one tag group and that group's metadata (:mod:`matcher.keys`).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import redis

from fingerprint.base import IncompatibleFingerprints

ID_BYTES = 4
_U64 = np.uint64
_FIND_RECORD = """
local function find_record(data, rec, width)
  local init = 1
  while true do
    local at = string.find(data, rec, init, true)
    if not at or (at - 1) % width == 0 then return at end
    init = at + 1
  end
end
"""
_CHECK = """
local stored = redis.call('GET', KEYS[1])
if stored and stored ~= ARGV[1] then return {-2, stored} end
if ARGV[2] ~= '' and '=' .. (redis.call('GET', KEYS[3]) or '') ~= ARGV[2] then return {-1} end
local width = tonumber(ARGV[3])
local flags = ARGV[7]
local counted = 0
"""
_GROWN = """
local total = tonumber(redis.call('INCRBY', KEYS[2], counted))
local floor = tonumber(ARGV[4])
local over = {}
if floor > 0 then
  local limit = math.max(floor, (1 + tonumber(ARGV[5])) * total / tonumber(ARGV[6]))
  for i, n in ipairs(sizes) do
    if n > limit then over[#over + 1] = i; over[#over + 1] = n end
  end
end
return {0, counted, over}
"""
ADD_LUA = (
    _FIND_RECORD
    + _CHECK
    + """
if not stored then redis.call('SET', KEYS[1], ARGV[1]) end
local sizes = {}
for i = 4, #KEYS do
  local data = redis.call('GET', KEYS[i]) or ''
  local recs = ARGV[i + 4]
  local fresh = {}
  for p = 1, #recs, width do
    local rec = string.sub(recs, p, p + width - 1)
    if not find_record(data, rec, width) then fresh[#fresh + 1] = rec end
  end
  if #fresh > 0 then
    data = data .. table.concat(fresh)
    redis.call('SET', KEYS[i], data)
    if string.byte(flags, i - 3) == 49 then counted = counted + #fresh end
  end
  sizes[i - 3] = #data / width
end
"""
    + _GROWN
)
"""KEYS: params, record counter, directory version, buckets...; ARGV: params, ``'='`` + the
expected version (``''``: do not check), record width, split floor (0: no limit), split mu,
number of buckets the mean is taken over, count flags (``'1'`` per bucket whose new records
count), then one string of records per bucket. Returns ``{0, counted, {i, size, ...}}`` with
the 1-based bucket indices over the split limit, ``{-1}`` on a stale directory version and
``{-2, stored_params}`` on a parameter mismatch."""

APPEND_LUA = (
    _CHECK
    + """
if not stored then redis.call('SET', KEYS[1], ARGV[1]) end
local sizes = {}
for i = 4, #KEYS do
  local recs = ARGV[i + 4]
  local data = (redis.call('GET', KEYS[i]) or '') .. recs
  redis.call('SET', KEYS[i], data)
  if string.byte(flags, i - 3) == 49 then counted = counted + #recs / width end
  sizes[i - 3] = #data / width
end
"""
    + _GROWN
)
"""Same KEYS, ARGV and answer as :data:`ADD_LUA`, for records that cannot be in the buckets
yet (those of owners never indexed): appended without looking for them, one concatenation
per bucket instead of a search per record. Not idempotent: the caller makes sure each
record is sent once."""

REMOVE_LUA = (
    _FIND_RECORD
    + _CHECK
    + """
if not stored then return {0, 0, {}} end
for i = 4, #KEYS do
  local data = redis.call('GET', KEYS[i])
  if data then
    local recs = ARGV[i + 4]
    local removed = 0
    for p = 1, #recs, width do
      local at = find_record(data, string.sub(recs, p, p + width - 1), width)
      if at then
        data = string.sub(data, 1, at - 1) .. string.sub(data, at + width)
        removed = removed + 1
      end
    end
    if removed > 0 then
      if #data == 0 then redis.call('DEL', KEYS[i]) else redis.call('SET', KEYS[i], data) end
      if string.byte(flags, i - 3) == 49 then counted = counted + removed end
    end
  end
end
if counted > 0 then redis.call('DECRBY', KEYS[2], counted) end
return {0, counted, {}}
"""
)
"""Same KEYS and ARGV as :data:`ADD_LUA` (the split arguments are ignored)."""

STALE = -1
MISMATCH = -2


class IndexParamsMismatch(IncompatibleFingerprints):
    """An index in Redis was built with other parameters than the ones it is opened with."""


def as_ids(ids: Sequence[int] | np.ndarray) -> np.ndarray:
    """``ids`` as a uint32 array; ValueError unless every one is an integer in 0..2**32-1."""
    arr = _integers(ids, "ids")
    if len(arr) and (int(arr.min()) < 0 or int(arr.max()) > 0xFFFFFFFF):
        raise ValueError("ids must be in 0..2**32-1")
    return arr.astype(np.uint32)


def as_values(values: Sequence[int] | np.ndarray, bits: int = 64) -> np.ndarray:
    """``values`` as a uint64 array; ValueError unless each is an unsigned ``bits``-bit int."""
    arr = _integers(values, "values")
    if arr.dtype.kind == "i" and len(arr) and int(arr.min()) < 0:
        raise ValueError("values must be unsigned")
    arr = arr.astype(_U64)
    if bits < 64 and len(arr) and int(arr.max()) >> bits:
        raise ValueError(f"values must fit in {bits} bits")
    return arr


def _integers(items: Sequence[int] | np.ndarray, what: str) -> np.ndarray:
    if not isinstance(items, np.ndarray | np.integer):
        try:  # operator.index: Python and numpy integers only, never floats
            items = np.array([operator.index(x) for x in items] or [], dtype=object)
        except TypeError as exc:
            raise ValueError(f"{what} must be integers: {exc}") from exc
    arr = np.asarray(items)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional")
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind == "O":
        try:
            return np.array([int(x) for x in arr], dtype=_U64)
        except (OverflowError, TypeError, ValueError) as exc:
            raise ValueError(f"{what} must be unsigned 64-bit integers: {exc}") from exc
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{what} must be integers, got {arr.dtype}")
    return arr


@cache
def _pieces(value_bytes: int) -> tuple[tuple[int, int], ...]:
    """(offset, size) of the unsigned fields that make up ``value_bytes`` bytes."""
    out, offset = [], 0
    for size in (8, 4, 2, 1):
        while value_bytes - offset >= size:
            out.append((offset, size))
            offset += size
    return tuple(out)


@dataclass(frozen=True)
class RecordFormat:
    """Records of ``value_bytes`` little-endian value bytes followed by a little-endian uint32 id.

    >>> fmt = RecordFormat(6)
    >>> fmt.pack(np.array([0x0102030405], dtype=np.uint64), np.array([7], dtype=np.uint32)).hex()
    '05040302010007000000'
    """

    value_bytes: int

    def __post_init__(self) -> None:
        if not 0 <= self.value_bytes <= 8:
            raise ValueError(f"value_bytes must be 0..8, got {self.value_bytes}")

    @property
    def width(self) -> int:
        return self.value_bytes + ID_BYTES

    @property
    def dtype(self) -> np.dtype:
        return _record_dtype(self.value_bytes)

    def records(self, values: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Structured records of ``values`` (uint64, high bytes beyond the width dropped)."""
        values = np.asarray(values, dtype=_U64)
        out = np.empty(len(values), dtype=self.dtype)
        for offset, size in _pieces(self.value_bytes):
            piece = values >> _U64(8 * offset) if offset else values
            out[f"v{offset}"] = piece & _U64((1 << (8 * size)) - 1) if size < 8 else piece
        out["id"] = ids
        return out

    def pack(self, values: np.ndarray, ids: np.ndarray) -> bytes:
        """The bytes of :meth:`records`."""
        return self.records(values, ids).tobytes()

    def unpack(self, buffer: bytes) -> tuple[np.ndarray, np.ndarray]:
        """Values (uint64) and ids (uint32, a read-only view of ``buffer``) of its records."""
        count = len(buffer) // self.width
        if not count:
            return np.empty(0, dtype=_U64), np.empty(0, dtype=np.uint32)
        ids = np.ndarray((count,), "<u4", buffer, self.value_bytes, (self.width,))
        if self.width >= 8:
            # one unaligned 8-byte read per record (its value and the id's first bytes), masked
            raw = np.ndarray((count,), "<u8", buffer, 0, (self.width,))
            mask = _U64((1 << (8 * self.value_bytes)) - 1) if self.value_bytes < 8 else None
            return (raw & mask if mask is not None else raw.copy()), ids
        recs = np.frombuffer(buffer, dtype=self.dtype)
        values = np.zeros(len(recs), dtype=_U64)
        for offset, _ in _pieces(self.value_bytes):
            piece = recs[f"v{offset}"].astype(_U64)
            values |= piece << _U64(8 * offset) if offset else piece
        return values, ids


@cache
def _record_dtype(value_bytes: int) -> np.dtype:
    pieces = _pieces(value_bytes)
    return np.dtype(
        {
            "names": [f"v{o}" for o, _ in pieces] + ["id"],
            "formats": [f"<u{s}" for _, s in pieces] + ["<u4"],
            "offsets": [o for o, _ in pieces] + [value_bytes],
            "itemsize": value_bytes + ID_BYTES,
        }
    )


class BucketScripts:
    """The add, append and remove scripts, registered on one client (run by
    :func:`matcher.index.redis_io.run_script`)."""

    def __init__(self, client: redis.Redis | redis.RedisCluster) -> None:
        self.add = client.register_script(ADD_LUA)
        self.append = client.register_script(APPEND_LUA)
        self.remove = client.register_script(REMOVE_LUA)


def script_args(
    params_json: str,
    version: bytes | None,
    width: int,
    flags: str,
    payloads: Sequence[bytes],
    split: tuple[int, float, int] = (0, 0.0, 1),
) -> list[bytes | str | int | float]:
    """ARGV of the bucket scripts; ``version`` None skips the version check."""
    floor, mu, buckets = split
    check = b"" if version is None else b"=" + version
    return [params_json, check, width, floor, mu, buckets, flags, *payloads]


def group_bytes(records: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
    """Sort ``records`` by ``groups`` and cut them into one bytes string per distinct group."""
    order = np.argsort(groups, kind="stable")
    groups = groups[order]
    blob = records[order].tobytes()
    width = records.dtype.itemsize
    uniq, starts = np.unique(groups, return_index=True)
    ends = np.append(starts[1:], len(groups)) * width
    return uniq, [blob[a:b] for a, b in zip((starts * width).tolist(), ends.tolist(), strict=True)]


def expand_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``range(s, s + c)`` for each (s, c), vectorised.

    >>> expand_ranges(np.array([10, 3]), np.array([2, 3])).tolist()
    [10, 11, 3, 4, 5]
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    shift = np.asarray(starts, dtype=np.int64) - (np.cumsum(counts) - counts)
    return np.repeat(shift, counts) + np.arange(total, dtype=np.int64)


def payload_buffer(payloads: Sequence[bytes | None]) -> tuple[np.ndarray, bytes]:
    """Byte length of each fetched payload (0 when absent) and all of them concatenated."""
    lengths = np.fromiter((len(p) if p else 0 for p in payloads), np.int64, len(payloads))
    return lengths, b"".join(p for p in payloads if p)
