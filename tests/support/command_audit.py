"""The shard-key audit: every write fptrack's own code sends to MongoDB during the tests,
checked against the shard keys of :data:`matcher.store.SHARD_KEYS`.

On a sharded collection MongoDB 7.0 refuses a single-document update, delete or
findAndModify, and any upsert, whose filter does not name the full shard key (an equality
on each of its fields); a multi-document update or delete (``multi: true``, ``limit: 0``)
goes to every shard and needs none. An update that changes a shard-key field moves the
document between shards, which a multi-document update cannot do at all. SecantusDB does
not shard, so the tests would never meet a refusal: :class:`CommandAudit`, a pymongo command
listener registered for every client of the test process (:func:`install`), checks each
``insert``, ``update``, ``delete`` and ``findAndModify`` (:func:`check`) and keeps those that
break a rule, with the line of fptrack's code that sent them. Commands sent by the tests'
own code (to set up a case) are not fptrack's and are not kept. The session then fails,
listing them (:func:`pytest_terminal_summary`, :func:`pytest_sessionfinish`, which
``tests/conftest.py`` takes as its own hooks).

Commands of subprocesses (``fptrack worker`` processes, served admin processes) are not
seen; the same code runs in this process in the store, admin, web and worker tests
(workers started with ``celery.contrib.testing.worker.start_worker``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pymongo import monitoring

from matcher.store import SHARD_KEYS

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = tuple(ROOT / name for name in ("matcher", "admin", "crawler", "fingerprint"))
"""Where fptrack's own code is: a command whose sender is elsewhere is not audited."""
KEY_REWRITES_ALLOWED = (ROOT / "matcher" / "store" / "migration.py",)
"""Code allowed to change shard-key values: ``fptrack migrate`` rewrites page ids only in
collections that are not sharded (it refuses otherwise, ``tests/admin/test_migrate.py``)."""
SYSTEM_DATABASES = frozenset({"admin", "config", "local"})


@dataclass(frozen=True)
class Offence:
    """One write a sharded deployment would refuse."""

    collection: str
    kind: str
    """``update``, ``upsert``, ``delete``, ``findAndModify`` or ``insert``."""
    query: Any
    problem: str
    sender: str = ""
    """``path:line`` of the code that sent it (relative to the repository)."""

    def describe(self) -> str:
        sent = f" (sent by {self.sender})" if self.sender else ""
        return f"{self.collection}: {self.kind} {self.query!r}: {self.problem}{sent}"


def _equality(query: Any, field: str) -> bool:
    """Whether ``query`` selects one value of ``field`` (``{field: v}``, ``{field: {"$eq":
    v}}``, or either inside a top-level ``$and``)."""
    if not isinstance(query, Mapping):
        return False
    if field in query:
        value = query[field]
        if not isinstance(value, Mapping) or not any(str(k).startswith("$") for k in value):
            return True  # a value, or an embedded document matched whole
        return "$eq" in value
    return any(_equality(clause, field) for clause in query.get("$and", ()))


def _missing_key(query: Any, key: Mapping[str, Any]) -> list[str]:
    return [field for field in key if not _equality(query, field)]


def _touches(paths: Iterable[str], key: Mapping[str, Any]) -> list[str]:
    """The shard-key fields among ``paths`` (or whose sub-fields they are, or which are
    theirs)."""
    hit = []
    for field in key:
        if any(p == field or p.startswith(f"{field}.") or field.startswith(f"{p}.") for p in paths):
            hit.append(field)
    return hit


def _changed_key(update: Any, query: Any, key: Mapping[str, Any]) -> list[str]:
    """The shard-key fields ``update`` may change. ``$setOnInsert`` sets a new document's
    fields and changes none, nor does a ``$set`` (or a replacement) of the value the
    filter selects (a replacement keeps ``_id``)."""
    if not isinstance(update, Mapping):  # an aggregation pipeline: fptrack sends none
        return []

    def same(field: str, fields: Mapping[str, Any]) -> bool:
        return _equality(query, field) and query.get(field) == fields.get(field)

    if any(str(op).startswith("$") for op in update):
        paths: list[str] = []
        for op, fields in update.items():
            if op == "$setOnInsert" or not isinstance(fields, Mapping):
                continue
            paths += [str(f) for f in fields if not (op == "$set" and same(str(f), fields))]
            if op == "$rename":
                paths += [str(v) for v in fields.values()]
        return _touches(paths, key)
    return [field for field in key if field != "_id" and not same(field, update)]


def check(command_name: str, command: Mapping[str, Any], database: str) -> list[Offence]:
    """The rules a command breaks, if it writes to a collection of fptrack's database
    (sender unknown: see :class:`CommandAudit`)."""
    if database in SYSTEM_DATABASES or command_name not in (
        "insert",
        "update",
        "delete",
        "findAndModify",
    ):
        return []
    collection = str(command.get(command_name, ""))
    if collection.startswith("system."):
        return []
    key = SHARD_KEYS.get(collection)
    if key is None:
        return [Offence(collection, command_name, None, "collection not in SHARD_KEYS")]
    found = []
    if command_name == "update":
        for one in command.get("updates", ()):
            query, upsert = one.get("q", {}), bool(one.get("upsert"))
            kind = "upsert" if upsert else "update"
            missing = _missing_key(query, key)
            if missing and (upsert or not one.get("multi")):
                problem = f"filter lacks shard key field(s) {', '.join(missing)}"
                found.append(Offence(collection, kind, query, problem))
            changed = _changed_key(one.get("u"), query, key)
            if changed:
                problem = f"changes shard key field(s) {', '.join(changed)}"
                found.append(Offence(collection, kind, query, problem))
    elif command_name == "delete":
        for one in command.get("deletes", ()):
            missing = _missing_key(one.get("q", {}), key)
            if missing and one.get("limit", 0) != 0:
                problem = f"filter lacks shard key field(s) {', '.join(missing)}"
                found.append(Offence(collection, "delete", one.get("q"), problem))
    elif command_name == "findAndModify":
        query = command.get("query", {})
        missing = _missing_key(query, key)
        if missing:
            problem = f"filter lacks shard key field(s) {', '.join(missing)}"
            found.append(Offence(collection, "findAndModify", query, problem))
        changed = _changed_key(command.get("update"), query, key)
        if changed:
            problem = f"changes shard key field(s) {', '.join(changed)}"
            found.append(Offence(collection, "findAndModify", query, problem))
    return found


def sender(roots: Sequence[Path], skip: Path = Path(__file__)) -> tuple[Path, int] | None:
    """The file and line of the innermost caller under one of ``roots`` and outside any
    installed package (pymongo and gridfs, and a virtual environment inside a root), or
    None."""
    frame = sys._getframe(1)
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if (
            path != skip
            and "site-packages" not in path.parts
            and any(path.is_relative_to(root) for root in roots)
        ):
            return path, frame.f_lineno
        frame = frame.f_back
    return None


class CommandAudit(monitoring.CommandListener):
    """Keeps the offences (:func:`check`) of the commands sent by code under ``audited``."""

    def __init__(self, audited: Sequence[Path] = PRODUCT) -> None:
        self.audited = tuple(audited)
        self.offences: list[Offence] = []
        self._lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        found = check(event.command_name, event.command, event.database_name)
        if not found:
            return
        where = sender((ROOT, *self.audited))
        if where is None or not any(where[0].is_relative_to(a) for a in self.audited):
            return  # not fptrack's: a test's own write, or none of the project's code
        path, line = where
        if path in KEY_REWRITES_ALLOWED:
            found = [o for o in found if not o.problem.startswith("changes shard key")]
        name = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}"
        with self._lock:
            self.offences += [
                Offence(o.collection, o.kind, o.query, o.problem, name) for o in found
            ]

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def summary(self) -> list[str]:
        """One line per sending line and problem, with how often it was sent."""
        seen: dict[tuple[str, str, str, str], tuple[Offence, int]] = {}
        for o in list(self.offences):
            k = (o.sender, o.collection, o.kind, o.problem)
            first, n = seen.get(k, (o, 0))
            seen[k] = (first, n + 1)
        return [f"{o.describe()} x{n}" for o, n in seen.values()]


AUDIT = CommandAudit()
"""The test session's audit (:func:`install`)."""
_installed = False


def install(audit: CommandAudit = AUDIT) -> None:
    """Register ``audit`` for every pymongo client created from now on (once per process)."""
    global _installed
    if not _installed:
        monitoring.register(audit)
        _installed = True


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = AUDIT.summary()
    if lines:
        terminalreporter.section("shard-key audit: writes a sharded MongoDB 7.0 refuses", red=True)
        for line in lines:
            terminalreporter.line(line)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if AUDIT.offences and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
