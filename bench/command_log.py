"""What the store sends to MongoDB during a benchmark: every command a process's pymongo
clients run, counted by kind and collection with their total time, the most frequent
and the slowest query shapes (pymongo's command monitoring, ``pymongo.monitoring.CommandListener``).

A process calls :func:`record` once, before it makes its clients. The benchmark process
reads its own :func:`snapshot`; a worker process started by the benchmark also writes its
snapshot to a file every :data:`FLUSH_S` seconds (:func:`write_every`), which the benchmark
reads (:func:`read_files`). :func:`difference` of two snapshots is what happened between
them; :func:`merge` adds several processes' up; :func:`per_page` divides by the pages.

A query's *shape* is its command, collection and filter with every value replaced by its
type, operators kept: ``find pages {"_id": {"$in": "list"}}``.

mongomock (the embedded scan's store) has no command monitoring: :func:`record_mongomock`
counts its collection methods instead, each call as the command a MongoDB server would
have been sent for it (``find_one`` a ``find``, ``bulk_write`` an ``update`` or
``insert``, ``find_one_and_update`` a ``findAndModify`` ...), the calls mongomock makes
inside another not counted again.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pymongo import monitoring

FLUSH_S = 0.5
SLOWEST = 8
"""Query shapes kept, slowest first (by their slowest run)."""
FREQUENT = 12
"""Query shapes kept, most frequent first."""
SKIPPED = frozenset({"hello", "ismaster", "isMaster", "endSessions", "ping", "serverStatus"})
"""Driver housekeeping, not the store's work."""


def shape(value: Any) -> Any:
    """A filter's shape: operators and field names kept, values replaced by their type.

    >>> shape({"_id": {"$in": [1, 2]}, "active": True})
    {'_id': {'$in': 'list'}, 'active': 'bool'}
    """
    if isinstance(value, Mapping):
        return {str(k): shape(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        return [shape(v) for v in value[:4]]
    return type(value).__name__


def _filter_of(name: str, command: Mapping[str, Any]) -> Any:
    if name in ("find", "count", "distinct"):
        return command.get("filter") or command.get("query") or {}
    if name == "findAndModify":
        return command.get("query") or {}
    if name in ("update", "delete"):
        statements = command.get("updates") or command.get("deletes") or [{}]
        return statements[0].get("q", {})
    if name == "aggregate":
        return command.get("pipeline", [])
    return {}


class CommandTally(monitoring.CommandListener):
    """Counts and times of the commands of this process's clients (see the module)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: dict[int, tuple[str, str, str]] = {}
        self.counts: dict[str, int] = {}
        self.micros: dict[str, int] = {}
        self.slowest: dict[str, int] = {}
        self.shapes: dict[str, int] = {}

    def started(self, event: monitoring.CommandStartedEvent) -> None:  # type: ignore[override]
        name = event.command_name
        if name in SKIPPED:
            return
        target = event.command.get(name)
        collection = target if isinstance(target, str) else ""
        query = json.dumps(shape(_filter_of(name, event.command)), sort_keys=True)
        with self.lock:
            self.running[event.request_id] = (name, collection, query)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:  # type: ignore[override]
        self._done(event.request_id, event.duration_micros)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:  # type: ignore[override]
        self._done(event.request_id, event.duration_micros)

    def _done(self, request_id: int, micros: int) -> None:
        with self.lock:
            op = self.running.pop(request_id, None)
            if op is None:
                return
            name, collection, query = op
            key = f"{name} {collection}".strip()
            self.counts[key] = self.counts.get(key, 0) + 1
            self.micros[key] = self.micros.get(key, 0) + micros
            full = f"{key} {query}"
            self.slowest[full] = max(self.slowest.get(full, 0), micros)
            self.shapes[full] = self.shapes.get(full, 0) + 1

    def add(self, name: str, collection: str, query: Any, micros: int) -> None:
        """Count one command that took ``micros`` (one not seen by the monitoring)."""
        with self.lock:
            self.running[-1] = (name, collection, json.dumps(shape(query), sort_keys=True))
        self._done(-1, micros)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "counts": dict(self.counts),
                "micros": dict(self.micros),
                "slowest": dict(self.slowest),
                "shapes": dict(self.shapes),
            }


_TALLY: CommandTally | None = None

MONGOMOCK_COMMANDS = {
    "find": "find",
    "find_one": "find",
    "insert_one": "insert",
    "insert_many": "insert",
    "update_one": "update",
    "update_many": "update",
    "replace_one": "update",
    "delete_one": "delete",
    "delete_many": "delete",
    "bulk_write": "bulk",
    "count_documents": "aggregate",
    "aggregate": "aggregate",
    "distinct": "distinct",
    "find_one_and_update": "findAndModify",
    "find_one_and_replace": "findAndModify",
    "find_one_and_delete": "findAndModify",
}
"""mongomock's collection methods and the command each stands for (``bulk``: the kind of
its first request)."""


def record_mongomock(tally: CommandTally) -> None:
    """Count every call of mongomock's collection methods in ``tally`` (this process, from
    now on; see the module docstring), those of its subclasses' own too (the embedded
    scan's :class:`matcher.store.memory.MemoryCollection`)."""
    from mongomock.collection import Collection

    import matcher.store.memory  # noqa: F401 - its collection class is counted too

    classes, todo = [], [Collection]
    while todo:
        cls = todo.pop()
        classes.append(cls)
        todo.extend(cls.__subclasses__())
    inside = threading.local()
    for cls, (method, command) in (
        (c, m) for c in classes for m in MONGOMOCK_COMMANDS.items() if m[0] in vars(c)
    ):
        original = vars(cls)[method]

        def counted(
            self: Any, *args: Any, __original: Any = original, __command: str = command,
            **kwargs: Any,
        ) -> Any:  # fmt: skip
            if getattr(inside, "depth", 0):
                return __original(self, *args, **kwargs)
            inside.depth = 1
            started = time.perf_counter_ns()
            try:
                return __original(self, *args, **kwargs)
            finally:
                inside.depth = 0
                name, query = __command, (args[0] if args else kwargs.get("filter", {}))
                if name == "bulk":
                    first = next(iter(query), None)
                    name = "insert" if type(first).__name__ == "InsertOne" else "update"
                    query = getattr(first, "_filter", {}) or {}
                if not isinstance(query, (Mapping, list)):
                    query = {}
                tally.add(name, self.name, query, (time.perf_counter_ns() - started) // 1000)

        setattr(cls, method, counted)


def record() -> CommandTally:
    """Monitor every client this process makes from now on (once per process)."""
    global _TALLY
    if _TALLY is None:
        _TALLY = CommandTally()
        monitoring.register(_TALLY)
    return _TALLY


def snapshot() -> dict[str, Any]:
    """This process's commands so far (empty when :func:`record` was not called)."""
    return _TALLY.snapshot() if _TALLY is not None else empty()


def empty() -> dict[str, Any]:
    return {"counts": {}, "micros": {}, "slowest": {}, "shapes": {}}


def write_every(path: Path) -> None:
    """Write this process's snapshot to ``path`` every :data:`FLUSH_S` seconds, from a
    daemon thread (replaced atomically: a reader never sees half a file)."""
    tally = record()

    def loop() -> None:
        while True:
            temp = path.with_suffix(".tmp")
            temp.write_text(json.dumps(tally.snapshot()), encoding="utf-8")
            temp.replace(path)
            time.sleep(FLUSH_S)

    threading.Thread(target=loop, name="command-log", daemon=True).start()


def read_files(paths: Iterable[Path]) -> dict[str, Any]:
    """The snapshots written by :func:`write_every`, added up."""
    found = []
    for path in paths:
        try:
            found.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return merge(found)


def merge(snapshots: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Several snapshots as one: counts and times added, the slowest run kept."""
    out = empty()
    for snap in snapshots:
        for field in ("counts", "micros", "shapes"):
            for key, value in snap.get(field, {}).items():
                out[field][key] = out[field].get(key, 0) + value
        for key, value in snap.get("slowest", {}).items():
            out["slowest"][key] = max(out["slowest"].get(key, 0), value)
    return out


def difference(after: Mapping[str, Any], before: Mapping[str, Any]) -> dict[str, Any]:
    """What happened between two snapshots of the same processes (the slowest runs are
    those of ``after``: a maximum cannot be subtracted)."""
    out = empty()
    for field in ("counts", "micros", "shapes"):
        for key, value in after.get(field, {}).items():
            left = value - before.get(field, {}).get(key, 0)
            if left:
                out[field][key] = left
    out["slowest"] = dict(after.get("slowest", {}))
    return out


def per_page(snap: Mapping[str, Any], pages: int) -> dict[str, Any]:
    """Commands per page in all and by ``command collection``, their total time, the most
    frequent query shapes (per page), the slowest (milliseconds) and every shape (per
    page)."""
    pages = max(pages, 1)
    counts, micros = snap.get("counts", {}), snap.get("micros", {})
    ranked = sorted(snap.get("slowest", {}).items(), key=lambda kv: -kv[1])[:SLOWEST]
    frequent = sorted(snap.get("shapes", {}).items(), key=lambda kv: -kv[1])[:FREQUENT]
    return {
        "per_page": round(sum(counts.values()) / pages, 2),
        "by_kind": {
            key: round(n / pages, 3) for key, n in sorted(counts.items(), key=lambda kv: -kv[1])
        },
        "seconds": round(sum(micros.values()) / 1e6, 3),
        "seconds_by_kind": {key: round(micros[key] / 1e6, 3) for key in counts if key in micros},
        "slowest_ms": {key: round(value / 1000, 2) for key, value in ranked},
        "frequent_per_page": {key: round(n / pages, 3) for key, n in frequent},
        "shapes_per_page": {key: round(n / pages, 3) for key, n in snap.get("shapes", {}).items()},
    }
