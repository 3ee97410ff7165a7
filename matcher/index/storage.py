"""What the indexes need from the keys they live in: a small protocol, and its Redis backend.

The simhash index (:mod:`matcher.index.simhash_index`) and the window postings
(:mod:`matcher.index.window_index`) do a handful of things with their keys, all of them in
batches: read many values in one round trip, write many, edit packed buckets atomically per
tag group (the scripts of :mod:`matcher.index.packed`), claim parameter keys, rewrite a
bucket if nobody touched it meanwhile, and count, list or delete what a pattern matches.
The engine around them adds two: delete the keys of some tag groups (a rebuild of the
groups Redis lost, :mod:`matcher.index.integrity`), and lock a page while it is matched.
:class:`Storage` names those operations, as datasketch's ``storage.py`` puts a small
``Storage`` in front of every backend; :class:`RedisStorage` does them on one server, a
Redis Cluster or the primary Sentinel watches (:mod:`matcher.index.redis_io`), and
:class:`matcher.index.memory.MemoryStorage` does them in a dict, for the unit tests of the
indexes' logic. ``tests/matcher/test_packed.py`` holds both to the same assertions.

Keys and values are bytes (``str`` keys and values are UTF-8 encoded, numbers written as
their decimal digits, as Redis does); ``what`` names the operation in the
:class:`matcher.errors.IndexUnavailable` an outage raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

import numpy as np
import redis

from matcher.errors import redis_errors
from matcher.index import redis_io
from matcher.index.packed import BucketScripts
from matcher.index.redis_io import IndexClient, Key

Script: TypeAlias = Literal["add", "append", "remove"]
"""A bucket script of :mod:`matcher.index.packed`: ``ADD_LUA``, ``APPEND_LUA``, ``REMOVE_LUA``."""
Call: TypeAlias = tuple[list[Key], list[Any]]
"""One script call: its keys (one hash slot) and its arguments (:func:`packed.script_args`)."""
Command: TypeAlias = tuple[Any, ...]
"""A single-key command: ``GET``, ``SET`` (``NX`` allowed), ``HSET``, ``HGETALL``, ``HLEN``
or ``UNLINK``."""
T = TypeVar("T")
Decide: TypeAlias = Callable[[list[bytes | None]], tuple[Sequence[Command], T]]
WATCH_ATTEMPTS = 8


class Storage(Protocol):
    """The operations the indexes do on their keys (every one a batch, one round trip)."""

    def mget(
        self,
        keys: Sequence[Key],
        what: str,
        groups: np.ndarray | None = None,
        extra: Callable[[int], Sequence[Key]] | None = None,
    ) -> tuple[list[bytes | None], dict[int, list[bytes | None]]]:
        """The values of ``keys`` (None where absent), and per group ``g`` of ``groups`` (a
        key's own slot by default) the values of ``extra(g)``, read atomically with that
        group's keys (see :func:`matcher.index.redis_io.mget`)."""
        ...

    def set_many(self, items: Iterable[tuple[Key, bytes | str]], what: str) -> tuple[int, int]:
        """SET every (key, value); the number of keys and of value bytes written."""
        ...

    def claim(self, names: Sequence[Key], value: str, what: str) -> list[bytes | None]:
        """Each of ``names`` set to ``value`` where absent; what each held before (None
        where it was absent)."""
        ...

    def commands(self, commands: Sequence[Command], what: str) -> list[Any]:
        """The replies of single-key commands (see :data:`Command`), in order."""
        ...

    def edit_buckets(self, script: Script, calls: Sequence[Call], what: str) -> list[Any]:
        """The reply of each call of a bucket script, each call atomic (its keys share a
        slot): ``[0, counted, [i, size, ...]]``, ``[-1]`` (stale directory) or
        ``[-2, stored parameters]`` (see :data:`matcher.index.packed.ADD_LUA`)."""
        ...

    def transact(self, watched: Sequence[Key], decide: Decide[T], what: str) -> T | None:
        """``decide`` the values of ``watched`` (one slot); its commands run atomically if
        none of ``watched`` changed since they were read, else it decides again on the new
        values. Its answer; None if they kept changing (:data:`WATCH_ATTEMPTS` reads)."""
        ...

    def scan(self, pattern: str) -> list[bytes]:
        """Every key matching the glob ``pattern`` (Redis ``MATCH`` syntax)."""
        ...

    def sizes(self, pattern: str, what: str) -> dict[bytes, int]:
        """The byte length of every key matching ``pattern``."""
        ...

    def delete_matching(self, pattern: str, what: str) -> int:
        """Delete every key matching ``pattern``; how many there were."""
        ...

    def unlink(self, keys: Sequence[Key], what: str) -> None:
        """Delete ``keys`` (absent ones are ignored)."""
        ...

    def delete_heads(
        self, pattern: str, heads: Sequence[str], slots: Iterable[int], what: str
    ) -> int:
        """Delete every key that starts with one of ``heads`` (among those ``pattern``
        matches, or those of ``slots`` on a cluster); how many there were."""
        ...

    def lock(self, name: str, timeout: float, blocking_timeout: float) -> Any:
        """A lock of ``timeout`` seconds, as redis-py's ``Lock``: ``acquire()`` (waiting up
        to ``blocking_timeout`` seconds), ``reacquire()``, ``release()``, ``name``; the last
        two raise ``redis.exceptions.LockError`` for a lock not held."""
        ...


class RedisStorage:
    """:class:`Storage` on a Redis server, a Redis Cluster, or the primary Sentinel watches:
    the chunked, slot-aware IO of :mod:`matcher.index.redis_io`, and the Lua scripts of
    :mod:`matcher.index.packed`."""

    def __init__(self, client: IndexClient) -> None:
        self.client = client
        self._scripts = BucketScripts(client)

    def mget(
        self,
        keys: Sequence[Key],
        what: str,
        groups: np.ndarray | None = None,
        extra: Callable[[int], Sequence[Key]] | None = None,
    ) -> tuple[list[bytes | None], dict[int, list[bytes | None]]]:
        return redis_io.mget(self.client, keys, what, groups, extra)

    def set_many(self, items: Iterable[tuple[Key, bytes | str]], what: str) -> tuple[int, int]:
        encoded = ((k, v.encode() if isinstance(v, str) else v) for k, v in items)
        return redis_io.set_buckets(self.client, encoded, what)

    def claim(self, names: Sequence[Key], value: str, what: str) -> list[bytes | None]:
        return redis_io.claim(self.client, names, value, what)

    def commands(self, commands: Sequence[Command], what: str) -> list[Any]:
        return redis_io.pipelined(self.client, commands, what)

    def edit_buckets(self, script: Script, calls: Sequence[Call], what: str) -> list[Any]:
        return redis_io.run_script(self.client, getattr(self._scripts, script), calls, what)

    def transact(self, watched: Sequence[Key], decide: Decide[T], what: str) -> T | None:
        """WATCH ``watched``, MGET them, and run ``decide``'s commands in MULTI / EXEC."""
        with redis_errors(what), self.client.pipeline(transaction=True) as pipe:
            for _ in range(WATCH_ATTEMPTS):
                try:
                    pipe.watch(*watched)
                    commands, answer = decide(pipe.execute_command("MGET", *watched))
                    if not commands:
                        pipe.unwatch()
                        return answer
                    pipe.multi()
                    for command in commands:
                        pipe.execute_command(*command)
                    pipe.execute()
                    return answer
                except redis.WatchError:
                    continue
        return None

    def scan(self, pattern: str) -> list[bytes]:
        with redis_errors("listing index keys"):
            return list(redis_io.scan(self.client, pattern))

    def sizes(self, pattern: str, what: str) -> dict[bytes, int]:
        return redis_io.bucket_sizes(self.client, pattern, what)

    def delete_matching(self, pattern: str, what: str) -> int:
        return redis_io.delete_matching(self.client, pattern, what)

    def unlink(self, keys: Sequence[Key], what: str) -> None:
        redis_io.unlink(self.client, keys, what)

    def delete_heads(
        self, pattern: str, heads: Sequence[str], slots: Iterable[int], what: str
    ) -> int:
        return redis_io.delete_heads(self.client, pattern, heads, slots, what)

    def lock(self, name: str, timeout: float, blocking_timeout: float) -> Any:
        return self.client.lock(name, timeout=timeout, blocking_timeout=blocking_timeout)
