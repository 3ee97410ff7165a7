"""The in-memory twin of :class:`matcher.index.storage.RedisStorage`, for unit tests.

:class:`MemoryStorage` keeps the keys in a dict (strings as bytes, hashes as dicts of
bytes) and does every :class:`~matcher.index.storage.Storage` operation under one lock, as
Redis runs one command, script or ``MULTI`` at a time. The bucket scripts are the Lua ones of
:mod:`matcher.index.packed` written again in Python, line for line: same checks, same
record search at record boundaries, same counts and split report. ``tests/matcher/
test_packed.py`` runs the same assertions on it, on a Redis server and on a Redis Cluster.

>>> storage = MemoryStorage()
>>> storage.set_many([(b"i:{t}:b:1", b"abc"), ("i:{t}:params", "{}")], "testing")
(2, 5)
>>> storage.mget([b"i:{t}:b:1", b"none"], "testing")[0]
[b'abc', None]
>>> storage.scan("i:*:b:*")
[b'i:{t}:b:1']
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from typing import Any

import numpy as np
from redis.exceptions import LockError

from matcher.index.storage import WATCH_ATTEMPTS, Call, Command, Decide, Key, Script, T
from matcher.keys import key_slot

Value = bytes | dict[bytes, bytes]


def _bytes(value: Any) -> bytes:
    """A key or value as Redis stores it: bytes, ``str`` in UTF-8, numbers in decimal."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).encode()


@cache
def _glob(pattern: str) -> re.Pattern[bytes]:
    """A Redis ``MATCH`` glob (``*``, ``?``, ``[...]``, ``\\`` escapes) as a regex."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            body = pattern[i + 1 : end]
            out.append("[^" + body[1:] + "]" if body.startswith("^") else "[" + body + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile(("".join(out) + r"\Z").encode(), re.DOTALL)


def _find_record(data: bytes, record: bytes, width: int) -> int:
    """``find_record`` of the bucket scripts: where ``record`` starts at a record boundary
    of ``data`` (0-based), or -1."""
    at = data.find(record)
    while at >= 0 and at % width:
        at = data.find(record, at + 1)
    return at


class MemoryStorage:
    """:class:`~matcher.index.storage.Storage` in a dict: one process, no server."""

    def __init__(self) -> None:
        self.data: dict[bytes, Value] = {}
        self.expiry: dict[bytes, float] = {}
        """When a lock's key goes (``time.monotonic()``), as Redis expires a key."""
        self._lock = threading.RLock()

    # -- Storage ---------------------------------------------------------------------------

    def mget(
        self,
        keys: Sequence[Key],
        what: str,
        groups: np.ndarray | None = None,
        extra: Callable[[int], Sequence[Key]] | None = None,
    ) -> tuple[list[bytes | None], dict[int, list[bytes | None]]]:
        if groups is None:
            groups = np.fromiter((key_slot(_bytes(k)) for k in keys), np.int64, len(keys))
        touched = sorted(set(np.asarray(groups, dtype=np.int64).tolist()))
        with self._lock:  # MGET: nil for a key that holds no string
            values = [self._mget_value(k) for k in keys]
            meta = {g: [self._mget_value(k) for k in (extra(g) if extra else [])] for g in touched}
        return values, meta

    def set_many(self, items: Iterable[tuple[Key, bytes | str]], what: str) -> tuple[int, int]:
        keys = nbytes = 0
        with self._lock:
            for key, value in items:
                value = _bytes(value)
                self.data[_bytes(key)] = value
                keys += 1
                nbytes += len(value)
        return keys, nbytes

    def claim(self, names: Sequence[Key], value: str, what: str) -> list[bytes | None]:
        with self._lock:
            before = [self._string(name) for name in names]
            for name, held in zip(names, before, strict=True):
                if held is None:
                    self.data[_bytes(name)] = _bytes(value)
        return before

    def commands(self, commands: Sequence[Command], what: str) -> list[Any]:
        with self._lock:
            return [self._command(*command) for command in commands]

    def edit_buckets(self, script: Script, calls: Sequence[Call], what: str) -> list[Any]:
        run = {"add": self._add, "append": self._append, "remove": self._remove}[script]
        with self._lock:
            return [run([_bytes(k) for k in keys], list(args)) for keys, args in calls]

    def transact(self, watched: Sequence[Key], decide: Decide[T], what: str) -> T | None:
        """As WATCH / MULTI does: ``decide`` runs unlocked, and its commands are applied
        only if the watched values are still the ones it was given."""
        for _ in range(WATCH_ATTEMPTS):
            with self._lock:
                seen = [self._string(k) for k in watched]
            commands, answer = decide(seen)
            if not commands:
                return answer
            with self._lock:
                if [self._string(k) for k in watched] != seen:
                    continue
                for command in commands:
                    self._command(*command)
            return answer
        return None

    def scan(self, pattern: str) -> list[bytes]:
        match = _glob(pattern).match
        with self._lock:
            return [key for key in self.data if match(key)]

    def sizes(self, pattern: str, what: str) -> dict[bytes, int]:
        with self._lock:
            return {key: len(self._string(key) or b"") for key in self.scan(pattern)}

    def delete_matching(self, pattern: str, what: str) -> int:
        with self._lock:
            doomed = self.scan(pattern)
            for key in doomed:
                del self.data[key]
                self.expiry.pop(key, None)
        return len(doomed)

    def unlink(self, keys: Sequence[Key], what: str) -> None:
        with self._lock:
            for key in keys:
                self.data.pop(_bytes(key), None)
                self.expiry.pop(_bytes(key), None)

    def delete_heads(
        self, pattern: str, heads: Sequence[str], slots: Iterable[int], what: str
    ) -> int:
        starts = tuple(h.encode() for h in heads)
        with self._lock:
            doomed = [key for key in self.scan(pattern) if key.startswith(starts)]
            self.unlink(doomed, what)
        return len(doomed)

    def lock(self, name: str, timeout: float, blocking_timeout: float) -> MemoryLock:
        return MemoryLock(self, name, timeout, blocking_timeout)

    # -- single commands ---------------------------------------------------------------------

    def _string(self, key: Key) -> bytes | None:
        value = self.data.get(_bytes(key))
        if isinstance(value, dict):
            raise TypeError(f"WRONGTYPE: {key!r} holds a hash")
        return value

    def _mget_value(self, key: Key) -> bytes | None:
        value = self.data.get(_bytes(key))
        return value if isinstance(value, bytes) else None

    def _hash(self, key: Key) -> dict[bytes, bytes]:
        value = self.data.get(_bytes(key), {})
        if not isinstance(value, dict):
            raise TypeError(f"WRONGTYPE: {key!r} holds a string")
        return value

    def _command(self, name: str, key: Key, *args: Any) -> Any:
        name = name.upper()
        if name == "GET":
            return self._string(key)
        if name == "SET":
            value, *flags = args
            if [_bytes(f).upper() for f in flags] == [b"NX"] and _bytes(key) in self.data:
                return None
            if flags and [_bytes(f).upper() for f in flags] != [b"NX"]:
                raise ValueError(f"MemoryStorage does not do SET {flags}")
            self.data[_bytes(key)] = _bytes(value)
            return True
        if name == "HSET":
            mapping = self._hash(key)
            fields = [_bytes(a) for a in args]
            added = sum(f not in mapping for f in fields[::2])
            mapping.update(zip(fields[::2], fields[1::2], strict=True))
            self.data[_bytes(key)] = mapping
            return added
        if name == "HGETALL":
            return dict(self._hash(key))
        if name == "HLEN":
            return len(self._hash(key))
        if name in ("UNLINK", "DEL"):
            names = [key, *args]
            return sum(self.data.pop(_bytes(k), None) is not None for k in names)
        raise ValueError(f"MemoryStorage does not do {name}")

    # -- the bucket scripts (packed.ADD_LUA, APPEND_LUA, REMOVE_LUA) ---------------------------

    def _check(self, keys: list[bytes], args: list[Any]) -> list[Any] | None:
        """``_CHECK``: the refusal of other parameters (-2) or a stale version (-1)."""
        stored = self._string(keys[0])
        if stored is not None and stored != _bytes(args[0]):
            return [-2, stored]
        check = _bytes(args[1])
        if check and b"=" + (self._string(keys[2]) or b"") != check:
            return [-1]
        return None

    def _grown(self, keys: list[bytes], args: list[Any], counted: int, sizes: list[int]):
        """``_GROWN``: the record counter moved by ``counted``; the buckets over the limit."""
        total = int(self._string(keys[1]) or 0) + counted
        self.data[keys[1]] = _bytes(total)
        floor, mu, buckets = float(args[3]), float(args[4]), float(args[5])
        over: list[int] = []
        if floor > 0:
            limit = max(floor, (1 + mu) * total / buckets)
            for i, n in enumerate(sizes, 1):
                if n > limit:
                    over += [i, n]
        return [0, counted, over]

    def _add(self, keys: list[bytes], args: list[Any]) -> list[Any]:
        """The ``add`` script: each bucket gets the records it does not hold yet."""
        return self._grow(keys, args, only_new=True)

    def _append(self, keys: list[bytes], args: list[Any]) -> list[Any]:
        """The ``append`` script: each bucket gets its records as they are."""
        return self._grow(keys, args, only_new=False)

    def _grow(self, keys: list[bytes], args: list[Any], only_new: bool) -> list[Any]:
        refused = self._check(keys, args)
        if refused:
            return refused
        width, flags = int(args[2]), _bytes(args[6])
        if self._string(keys[0]) is None:
            self.data[keys[0]] = _bytes(args[0])
        counted, sizes = 0, []
        for i, key in enumerate(keys[3:]):
            data = self._string(key) or b""
            records = _bytes(args[7 + i])
            if only_new:
                added = [
                    records[p : p + width]
                    for p in range(0, len(records), width)
                    if _find_record(data, records[p : p + width], width) < 0
                ]
                grown, count = b"".join(added), len(added)
            else:
                grown, count = records, len(records) // width
            if grown or not only_new:  # APPEND writes its key even with nothing to add
                data += grown
                self.data[key] = data
                if flags[i : i + 1] == b"1":
                    counted += count
            sizes.append(len(data) // width)
        return self._grown(keys, args, counted, sizes)

    def _remove(self, keys: list[bytes], args: list[Any]) -> list[Any]:
        refused = self._check(keys, args)
        if refused:
            return refused
        if self._string(keys[0]) is None:
            return [0, 0, []]
        width, flags = int(args[2]), _bytes(args[6])
        counted = 0
        for i, key in enumerate(keys[3:]):
            data = self._string(key)
            if not data:
                continue
            records, removed = _bytes(args[7 + i]), 0
            for p in range(0, len(records), width):
                at = _find_record(data, records[p : p + width], width)
                if at >= 0:
                    data = data[:at] + data[at + width :]
                    removed += 1
            if removed:
                if data:
                    self.data[key] = data
                else:
                    del self.data[key]
                if flags[i : i + 1] == b"1":
                    counted += removed
        if counted:
            self.data[keys[1]] = _bytes(int(self._string(keys[1]) or 0) - counted)
        return [0, counted, []]


class MemoryLock:
    """redis-py's ``Lock`` in a :class:`MemoryStorage`: the key holds a token until it is
    released or ``timeout`` seconds pass; :meth:`reacquire` restarts the timeout."""

    POLL_SECONDS = 0.01

    def __init__(
        self, storage: MemoryStorage, name: str, timeout: float, blocking_timeout: float
    ) -> None:
        self.storage, self.name = storage, name
        self.timeout, self.blocking_timeout = timeout, blocking_timeout
        self._key = _bytes(name)
        self._token: bytes | None = None

    def acquire(self) -> bool:
        token = secrets.token_hex(16).encode()
        deadline = time.monotonic() + self.blocking_timeout
        while True:
            with self.storage._lock:
                if self._holder() is None:
                    self.storage.data[self._key] = token
                    self.storage.expiry[self._key] = time.monotonic() + self.timeout
                    self._token = token
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(self.POLL_SECONDS)

    def reacquire(self) -> bool:
        with self.storage._lock:
            self._owned()
            self.storage.expiry[self._key] = time.monotonic() + self.timeout
        return True

    def release(self) -> None:
        with self.storage._lock:
            self._owned()
            del self.storage.data[self._key]
            self.storage.expiry.pop(self._key, None)
            self._token = None

    def _holder(self) -> bytes | None:
        """The token the key holds, once an expired one is dropped."""
        data, expiry = self.storage.data, self.storage.expiry
        if self._key in expiry and expiry[self._key] <= time.monotonic():
            data.pop(self._key, None)
            del expiry[self._key]
        value = data.get(self._key)
        return value if isinstance(value, bytes) else None

    def _owned(self) -> None:
        if self._token is None or self._holder() != self._token:
            raise LockError(f"{self.name} is not held by this lock", lock_name=self.name)
