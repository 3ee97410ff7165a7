"""The IO the indexes do on their Redis client: one server, a Redis Cluster, or the primary
that Redis Sentinel watches.

The client comes from :func:`matcher.index.redis_clients.connect` (re-exported here):
``redis.Redis``
for a server URL or a ``redis+sentinel://`` URL, ``redis.cluster.RedisCluster`` with every
startup node for ``redis+cluster://`` (:class:`matcher.settings.RedisTarget`). The Celery
broker, redbeat and the crawl frontiers stay on ``FPTRACK_REDIS_URL``, a server or Sentinel:
Celery cannot use Redis Cluster.

Everything else here takes either client. On a cluster a multi-key command must stay in
one hash slot, so keys come in groups that each share a slot (the tag groups of
:mod:`matcher.keys`), or their slots are computed here: every ``MGET``, ``MSET``,
``UNLINK`` and script call is cut per group, and all of a batch's commands go in one
pipeline, which redis-py's cluster client sends as one round trip per node (it writes to
every node's socket, then reads them all). MOVED, ASK, connection errors and failovers are
retried by that client (it refreshes its slot table and resends the commands that failed,
one by one). On a single server nothing is cut: a query is one ``MGET`` of all its keys.

>>> from matcher.settings import RedisTarget
>>> is_cluster(connect(RedisTarget.parse("redis://127.0.0.1:1/0")))
False
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

import numpy as np
import redis
from redis.cluster import RedisCluster
from redis.commands.core import Script

from matcher.errors import redis_errors
from matcher.index.redis_clients import IndexClient as IndexClient
from matcher.index.redis_clients import connect as connect
from matcher.keys import key_slot

Key: TypeAlias = bytes | str
SET_CHUNK_KEYS = 1000
SET_CHUNK_BYTES = 2 << 20
PIPELINE_COMMANDS = 8
SCAN_COUNT = 1000


def is_cluster(client: Any) -> bool:
    return isinstance(client, RedisCluster)


def _slot(key: Key) -> int:
    return key_slot(key.encode() if isinstance(key, str) else key)


def mget(
    client: IndexClient,
    keys: Sequence[Key],
    what: str,
    groups: np.ndarray | None = None,
    extra: Callable[[int], Sequence[Key]] | None = None,
) -> tuple[list[bytes | None], dict[int, list[bytes | None]]]:
    """GET ``keys`` in one round trip (one per node on a cluster); values in ``keys`` order.

    ``groups`` gives each key's group, a set of keys sharing one slot (default: the key's
    own slot). ``extra(g)`` names keys read in the same ``MGET`` as group ``g``'s (an index's
    metadata), atomically with them; their values come back per group. On one server the
    whole read is one ``MGET``.
    """
    if groups is None:
        groups = np.fromiter((_slot(k) for k in keys), np.int64, len(keys))
    groups = np.asarray(groups, dtype=np.int64)
    touched = sorted(set(groups.tolist())) if len(groups) <= 64 else np.unique(groups).tolist()
    extras = {g: list(extra(g)) if extra else [] for g in touched}
    with redis_errors(what):
        if not is_cluster(client):
            values = client.mget([*keys, *(k for g in touched for k in extras[g])])
            out, at = values[: len(keys)], len(keys)
            meta = {}
            for g in touched:
                meta[g] = values[at : at + len(extras[g])]
                at += len(extras[g])
            return out, meta
        order = np.argsort(groups, kind="stable")
        starts = [*np.searchsorted(groups[order], touched).tolist(), len(keys)]
        pipe = client.pipeline(transaction=False)
        for i, g in enumerate(touched):
            chosen = order[starts[i] : starts[i + 1]].tolist()
            pipe.execute_command("MGET", *(keys[j] for j in chosen), *extras[g])
        replies = pipe.execute()
    out: list[bytes | None] = [None] * len(keys)
    meta = {}
    for i, (g, reply) in enumerate(zip(touched, replies, strict=True)):
        chosen = order[starts[i] : starts[i + 1]].tolist()
        for j, value in zip(chosen, reply, strict=False):
            out[j] = value
        meta[g] = reply[len(chosen) :]
    return out, meta


def run_script(
    client: IndexClient, script: Script, calls: Sequence[tuple[list[Key], list[Any]]], what: str
) -> list[Any]:
    """Results of ``script`` for each (keys, args) call: one pipeline, EVALSHA per call.

    The keys of one call must share a slot. A server that lost its scripts (restarted, or
    a replica promoted) answers NOSCRIPT: the script is loaded (on every master of a
    cluster) and those calls are sent again. Other errors are raised.
    """
    results: list[Any] = [None] * len(calls)
    pending = list(range(len(calls)))
    with redis_errors(what):
        for attempt in range(2):
            pipe = client.pipeline(transaction=False)
            for i in pending:
                keys, args = calls[i]
                pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
            replies = pipe.execute(raise_on_error=False)
            missing = []
            for i, reply in zip(pending, replies, strict=True):
                if isinstance(reply, redis.exceptions.NoScriptError) and attempt == 0:
                    missing.append(i)
                elif isinstance(reply, Exception):
                    raise reply
                else:
                    results[i] = reply
            if not missing:
                break
            client.script_load(script.script)
            pending = missing
    return results


def set_buckets(
    client: IndexClient, items: Iterable[tuple[Key, bytes]], what: str
) -> tuple[int, int]:
    """SET every (key, payload): MSETs of a few thousand keys, pipelined; (keys, bytes) written.

    On a cluster an MSET holds keys of one slot: items are buffered per slot and each
    buffer is flushed when full, so a bulk load writes slot by slot, one round trip per node
    for every few MSETs.
    """
    keys = nbytes = 0
    cluster = is_cluster(client)
    with redis_errors(what):
        pipe = client.pipeline(transaction=False)
        pending: dict[int, list[Key | bytes]] = defaultdict(list)
        sizes: dict[int, int] = defaultdict(int)
        for key, payload in items:
            slot = _slot(key) if cluster else 0
            args = pending[slot]
            args += (key, payload)
            sizes[slot] += len(payload)
            keys += 1
            nbytes += len(payload)
            if len(args) >= 2 * SET_CHUNK_KEYS or sizes[slot] >= SET_CHUNK_BYTES:
                pipe.execute_command("MSET", *args)
                pending[slot], sizes[slot] = [], 0
                if len(pipe) >= PIPELINE_COMMANDS:
                    pipe.execute()
        for args in pending.values():
            if args:
                pipe.execute_command("MSET", *args)
        if len(pipe):
            pipe.execute()
    return keys, nbytes


def scan(client: IndexClient, pattern: str) -> Iterable[bytes]:
    """Every key matching ``pattern`` (SCAN; on a cluster, SCAN of every master)."""
    return client.scan_iter(match=pattern, count=SCAN_COUNT)


def delete_matching(client: IndexClient, pattern: str, what: str) -> int:
    """UNLINK every key matching ``pattern`` (SCAN, UNLINKs pipelined); returns the count."""
    deleted = 0
    with redis_errors(what):
        pipe = client.pipeline(transaction=False)
        batch: list[bytes] = []
        for key in scan(client, pattern):
            batch.append(key)
            if len(batch) >= SCAN_COUNT:
                deleted += _unlink(client, pipe, batch)
                batch = []
                if len(pipe) >= 16:
                    pipe.execute()
        deleted += _unlink(client, pipe, batch)
        if len(pipe):
            pipe.execute()
    return deleted


def delete_heads(
    client: IndexClient, pattern: str, heads: Sequence[str], slots: Iterable[int], what: str
) -> int:
    """UNLINK every key that starts with one of ``heads``; returns the count.

    On a cluster the keys are those of ``slots`` (``CLUSTER GETKEYSINSLOT`` on the slot's
    node: the keys of one tag group share a slot); on one server, the keys ``pattern``
    matches (SCAN). Either way only keys starting with a head are deleted.
    """
    starts = tuple(h.encode() for h in heads)
    if is_cluster(client):
        found: list[bytes] = []
        with redis_errors(what):
            for slot in sorted(set(slots)):
                count = client.cluster_countkeysinslot(slot)
                if count:
                    found += client.cluster_get_keys_in_slot(slot, count)
    else:
        with redis_errors(what):
            found = list(scan(client, pattern))
    names = [k.encode() if isinstance(k, str) else k for k in found]  # GETKEYSINSLOT: str
    doomed = [k for k in names if k.startswith(starts)]
    if doomed:
        unlink(client, doomed, what)
    return len(doomed)


def _unlink(client: IndexClient, pipe: Any, keys: list[bytes]) -> int:
    """Queue UNLINKs of ``keys`` on ``pipe``: one command, or one per slot on a cluster."""
    if not keys:
        return 0
    if not is_cluster(client):
        pipe.unlink(*keys)
        return len(keys)
    by_slot: dict[int, list[bytes]] = defaultdict(list)
    for key in keys:
        by_slot[_slot(key)].append(key)
    for same in by_slot.values():
        pipe.execute_command("UNLINK", *same)
    return len(keys)


def unlink(client: IndexClient, keys: Sequence[Key], what: str) -> None:
    """UNLINK ``keys`` in one round trip (per node), whatever their slots."""
    with redis_errors(what):
        pipe = client.pipeline(transaction=False)
        _unlink(client, pipe, [k.encode() if isinstance(k, str) else k for k in keys])
        if len(pipe):
            pipe.execute()


def bucket_sizes(client: IndexClient, pattern: str, what: str) -> dict[bytes, int]:
    """Byte length of every key matching ``pattern`` (SCAN, STRLENs pipelined)."""
    out: dict[bytes, int] = {}
    with redis_errors(what):
        keys = list(scan(client, pattern))
        pipe = client.pipeline(transaction=False)
        for start in range(0, len(keys), SET_CHUNK_KEYS):
            chunk = keys[start : start + SET_CHUNK_KEYS]
            for key in chunk:
                pipe.strlen(key)
            out.update(zip(chunk, pipe.execute(), strict=True))
    return out


def claim(client: IndexClient, names: Sequence[Key], value: str, what: str) -> list[bytes | None]:
    """SET each of ``names`` to ``value`` unless it exists (``SET NX GET``, pipelined);
    returns what each held before (None where it was absent and is now ``value``)."""
    with redis_errors(what):
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.set(name, value, nx=True, get=True)
        return pipe.execute()


def pipelined(client: IndexClient, commands: Sequence[tuple[Any, ...]], what: str) -> list[Any]:
    """Replies of single-key (or one-slot) ``commands``, sent in one pipeline."""
    with redis_errors(what):
        pipe = client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        return pipe.execute()
