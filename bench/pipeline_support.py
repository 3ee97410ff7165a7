"""Processes of the pipeline benchmark: the store server, the site server, the workers.

Run as ``python -m bench.pipeline_support ROLE ...`` (:func:`main`); each role prints one
line ``ready <detail>`` on stdout when it serves, then runs until it is terminated.

``store-server``: a :class:`matcher.store.Store` on mongomock, in this one process, served
through :class:`multiprocessing.managers.BaseManager` (:class:`StoreManager`, typeid
``store``): every proxy call pickles its arguments and its result, as a network database
client would, and calls are served one at a time (mongomock is not thread-safe). The
served object is a :class:`SharedStore`: the store's methods (but the generators) plus a few
for the benchmark (:data:`CONTROL_METHODS`). By default mongomock finds documents by the
equality filters of the page path through hash lookups (:func:`install_lookups`) instead of
scanning every document of the collection, as MongoDB's indexes would; ``--plain`` keeps
mongomock as it is. ``ready HOST:PORT``.

``site-server DIR``: ``DIR`` over HTTP on 127.0.0.1 (a free port), a
:class:`http.server.ThreadingHTTPServer`. ``ready http://127.0.0.1:PORT/``.

``worker``: a Celery worker (solo pool: one process) of the fptrack app on
``FPTRACK_BROKER_URL``, whose tasks use an :class:`matcher.engine.Engine` built here on the
store server's proxy and the Redis of ``FPTRACK_REDIS_URL`` (prefix
``FPTRACK_REDIS_PREFIX``). It sets the Redis key ``<prefix>:bench-ready:<pid>`` when the
worker is ready, and reports tasks that fail for good to the store server. ``--profile
OUT`` writes a cProfile of the whole worker to ``OUT`` when it stops.

:class:`Child` starts a role as a subprocess, waits for its ``ready`` line and stops it
(SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.managers import BaseManager
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]

READY = "ready"
UNPICKLABLE = frozenset({"connect", "iter_works", "iter_fingerprints", "pending_pages"})
"""Store methods a proxy cannot serve: a class method and generators."""
CONTROL_METHODS = (
    "pending_count",
    "reset_pages",
    "summary",
    "note_failure",
    "check_lookups",
    "matched_urls",
)
LOOKUP_FIELDS: dict[str, tuple[str, ...]] = {
    "pages": ("url", "seq"),
    "works": ("key", "seq"),
    "fingerprints": ("owner_id",),
    "matches": ("page_id",),
}
"""Fields found by hash lookup, per collection (besides ``_id``); none is ever updated."""


# -- the store server ------------------------------------------------------------------------


def store_methods() -> tuple[str, ...]:
    """The public methods of :class:`matcher.store.Store` a proxy can forward."""
    from matcher.store import Store

    return tuple(
        name
        for name in dir(Store)
        if not name.startswith("_") and callable(getattr(Store, name)) and name not in UNPICKLABLE
    )


class SharedStore:
    """A store shared through the manager: its methods, one call at a time, and controls.

    Keeps the set of pending pages as :meth:`store_crawled_page` and :meth:`mark_processed`
    change it, so :meth:`pending_count` costs nothing; :meth:`summary` counts in the
    database itself.
    """

    def __init__(self, store: Any) -> None:
        self._store = store
        self._lock = threading.RLock()
        self._pending: set[Any] = set()
        self._failures: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._store, name)

        @functools.wraps(method)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(*args, **kwargs)

        return locked

    def store_crawled_page(self, page: Any, content_hash: str) -> tuple[dict[str, Any], str]:
        """:meth:`matcher.store.Store.store_crawled_page`, noting the page as pending."""
        with self._lock:
            doc, state = self._store.store_crawled_page(page, content_hash)
            if doc.get("pending"):
                self._pending.add(doc["_id"])
            return doc, state

    def mark_processed(self, page_id: Any, content_hash: str, *args: Any) -> bool:
        """:meth:`matcher.store.Store.mark_processed`, noting the page as done."""
        from matcher.store import object_id

        with self._lock:
            done = self._store.mark_processed(page_id, content_hash, *args)
            if done:
                self._pending.discard(object_id(page_id))
            return done

    def pending_count(self) -> int:
        """Pages stored by the crawler and not yet processed."""
        with self._lock:
            return len(self._pending)

    def note_failure(self, ref: str, error: str) -> None:
        """Record a task that failed for good (the workers report them)."""
        with self._lock:
            self._failures.append((ref, error))

    def summary(self) -> dict[str, Any]:
        """Counts from the database itself, and the failures noted."""
        with self._lock:
            db = self._store.db
            return {
                "works": db.works.count_documents({}),
                "pages": db.pages.count_documents({}),
                "pending": db.pages.count_documents({"pending": True}),
                "matches": db.matches.count_documents({}),
                "page_fingerprints": db.fingerprints.count_documents({"owner_kind": "page"}),
                "failures": list(self._failures),
            }

    def matched_urls(self) -> dict[str, int]:
        """URL -> number of active match records of that page."""
        with self._lock:
            out: dict[str, int] = {}
            for m in self._store.db.matches.find({"active": True}, {"url": 1}):
                out[m["url"]] = out.get(m["url"], 0) + 1
            return out

    def reset_pages(self) -> None:
        """Delete pages, their fingerprints, matches and the page counter; works stay."""
        with self._lock:
            db = self._store.db
            db.pages.delete_many({})
            db.matches.delete_many({})
            db.fingerprints.delete_many({"owner_kind": "page"})
            db.counters.delete_many({"_id": "page"})
            self._pending.clear()
            self._failures.clear()

    def check_lookups(self) -> list[str]:
        """Where the hash lookups disagree with the documents (empty: they agree)."""
        with self._lock:
            return check_lookups(self._store.db)


class StoreManager(BaseManager):
    """The manager serving the shared store (register it with :func:`register`)."""


def register(shared: SharedStore | None = None) -> None:
    """Register typeid ``store`` on :class:`StoreManager` (serving ``shared`` on a server)."""
    exposed = (*store_methods(), *CONTROL_METHODS)
    if shared is None:
        StoreManager.register("store", exposed=exposed)
    else:
        StoreManager.register("store", callable=lambda: shared, exposed=exposed)


def connect_store(address: tuple[str, int], authkey: bytes) -> Any:
    """A proxy of the shared store served at ``address``."""
    register()
    manager = StoreManager(address=address, authkey=authkey)
    manager.connect()
    return manager.store()


class _Lookup:
    """Hash lookups of one collection: field value -> ids, in insertion order."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.by: dict[str, dict[Any, dict[Any, None]]] = {f: {} for f in self.fields}
        self.loose: dict[str, dict[Any, None]] = {f: {} for f in self.fields}
        self.values: dict[Any, tuple[Any, ...]] = {}
        self.order: dict[Any, int] = {}
        self._counter = itertools.count()

    @staticmethod
    def _key(value: Any) -> Any:
        """The value as a lookup key; ``None`` when it must be matched by scanning."""
        if value is None or isinstance(value, bool | float | dict | list | tuple):
            return None
        try:
            hash(value)
        except TypeError:
            return None
        return value

    def add(self, _id: Any, doc: dict[str, Any]) -> None:
        if _id in self.values:
            self.remove(_id)
        values = tuple(doc.get(f) for f in self.fields)
        self.values[_id] = values
        self.order.setdefault(_id, next(self._counter))
        for f, value in zip(self.fields, values, strict=True):
            key = self._key(value)
            if key is None:
                self.loose[f][_id] = None
            else:
                self.by[f].setdefault(key, {})[_id] = None

    def remove(self, _id: Any) -> None:
        values = self.values.pop(_id, None)
        if values is None:
            return
        for f, value in zip(self.fields, values, strict=True):
            key = self._key(value)
            if key is None:
                self.loose[f].pop(_id, None)
            else:
                ids = self.by[f].get(key, {})
                ids.pop(_id, None)
                if not ids:
                    self.by[f].pop(key, None)

    def clear(self) -> None:
        self.__init__(self.fields)  # type: ignore[misc]

    def candidates(self, spec: dict[str, Any], documents: Mapping[Any, Any]) -> list | None:
        """Ids that may match ``spec`` (a superset), or ``None`` when it needs a scan."""
        for field in ("_id", *self.fields):
            if field not in spec:
                continue
            wanted = spec[field]
            if isinstance(wanted, dict):
                if set(wanted) != {"$in"} or not isinstance(wanted["$in"], list | tuple):
                    continue
                keys = [self._key(v) for v in wanted["$in"]]
            else:
                keys = [self._key(wanted)]
            if any(k is None for k in keys):
                continue
            if field == "_id":
                return [k for k in dict.fromkeys(keys) if k in documents]
            found: dict[Any, None] = dict(self.loose[field])
            for key in keys:
                found.update(self.by[field].get(key, {}))
            return sorted(found, key=self.order.__getitem__)
        return None


def install_lookups() -> None:
    """Make mongomock find documents by hash lookups for :data:`LOOKUP_FIELDS` (this process).

    Equality and ``$in`` filters on ``_id`` or on a looked-up field read the candidate
    documents only, and every candidate is still checked with mongomock's own
    ``filter_applies``, so results are mongomock's; any other filter scans as before. The
    lookups follow inserts, replacements and deletions (``CollectionStore`` item access);
    they assume, as fptrack's store does, that updates never change a looked-up field
    (:func:`check_lookups` verifies it).
    """
    from mongomock import filtering
    from mongomock.collection import Collection
    from mongomock.store import CollectionStore

    if getattr(CollectionStore, "_fptrack_lookups", False):
        return
    plain_set, plain_del = CollectionStore.__setitem__, CollectionStore.__delitem__
    plain_drop, plain_iter = CollectionStore.drop, Collection._iter_documents

    def lookup(store: CollectionStore) -> _Lookup | None:
        fields = LOOKUP_FIELDS.get(store.name)
        if fields is None:
            return None
        found = store.__dict__.get("_fptrack_lookup")
        if found is None:
            found = store.__dict__["_fptrack_lookup"] = _Lookup(fields)
        return found

    def setitem(self: CollectionStore, key: Any, value: Any) -> None:
        plain_set(self, key, value)
        if (index := lookup(self)) is not None:
            index.add(key, value)

    def delitem(self: CollectionStore, key: Any) -> None:
        plain_del(self, key)
        if (index := lookup(self)) is not None:
            index.remove(key)

    def drop(self: CollectionStore) -> None:
        plain_drop(self)
        if (index := lookup(self)) is not None:
            index.clear()

    def iter_documents(self: Collection, spec: Any) -> Any:
        store = self._store
        index = lookup(store) if isinstance(spec, dict) else None
        if index is None and isinstance(spec, dict) and "_id" in spec:
            index = _Lookup(())
        ids = index.candidates(spec, store._documents) if index is not None else None
        if ids is None:
            return plain_iter(self, spec)
        docs = [store._documents[i] for i in ids if i in store._documents]
        return (d for d in docs if filtering.filter_applies(spec, d))

    CollectionStore.__setitem__ = setitem
    CollectionStore.__delitem__ = delitem
    CollectionStore.drop = drop
    Collection._iter_documents = iter_documents
    CollectionStore._fptrack_lookups = True


def check_lookups(db: Any) -> list[str]:
    """Disagreements between the hash lookups and the documents of ``db`` (mongomock)."""
    problems = []
    for name, fields in LOOKUP_FIELDS.items():
        store = db[name]._store
        index = store.__dict__.get("_fptrack_lookup")
        if index is None:
            continue
        fresh = _Lookup(fields)
        for _id, doc in store._documents.items():
            fresh.add(_id, doc)
        if fresh.by != index.by or fresh.loose != index.loose:
            problems.append(f"{name}: the lookups of {', '.join(fields)} are stale")
    return problems


def serve_store(host: str, plain: bool, out: IO[str]) -> None:
    """Serve a new mongomock store until terminated (see the module docstring)."""
    import mongomock

    from matcher.store import Store

    if not plain:
        install_lookups()
    store = Store(mongomock.MongoClient(tz_aware=True)["fptrack"])
    store.ensure_indexes()
    register(SharedStore(store))
    authkey = os.environ.get("FPTRACK_BENCH_AUTHKEY", "").encode()
    if not authkey:
        raise SystemExit("FPTRACK_BENCH_AUTHKEY must be set")
    server = StoreManager(address=(host, 0), authkey=authkey).get_server()
    print(f"{READY} {server.address[0]}:{server.address[1]}", file=out, flush=True)
    server.serve_forever()


# -- the site server -------------------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a crawler that hangs up early is no error here


def serve_site(folder: Path, out: IO[str]) -> None:
    """Serve ``folder`` on 127.0.0.1 until terminated."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = _QuietServer(("127.0.0.1", 0), handler)
    print(f"{READY} http://127.0.0.1:{server.server_address[1]}/", file=out, flush=True)
    server.serve_forever()


# -- the worker ------------------------------------------------------------------------------

WORKER_ARGV = [
    "worker",
    "--pool=solo",
    "--queues=fptrack",
    "--without-heartbeat",
    "--without-mingle",
    "--without-gossip",
    "--loglevel=WARNING",
]


def ready_key(prefix: str, pid: int) -> str:
    """The Redis key a worker sets when it is ready."""
    return f"{prefix}:bench-ready:{pid}"


def run_worker(address: tuple[str, int], authkey: bytes, profile: Path | None) -> None:
    """Run one Celery worker on the shared store until it is stopped."""
    import redis
    from celery.signals import task_failure, worker_ready

    from matcher.celery_app import app, runtime
    from matcher.engine import Engine

    settings = runtime.settings
    store = connect_store(address, authkey)
    client = redis.Redis.from_url(settings.redis_url)
    runtime.use(Engine(settings, store, client), settings)

    def on_ready(**_: Any) -> None:
        client.set(ready_key(settings.redis_prefix, os.getpid()), "1", ex=3600)
        # Celery redirects sys.stdout to its log: the line goes to the real stdout.
        print(f"{READY} {os.getpid()}", file=sys.__stdout__, flush=True)

    def on_failure(sender: Any = None, exception: Any = None, args: Any = None, **_: Any) -> None:
        with contextlib.suppress(Exception):
            store.note_failure(str((args or ["?"])[0]), f"{type(exception).__name__}: {exception}")

    worker_ready.connect(on_ready, weak=False)
    task_failure.connect(on_failure, weak=False)
    profiler = None
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        app.worker_main(WORKER_ARGV)
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(str(profile))


# -- subprocesses ----------------------------------------------------------------------------


class ChildFailed(RuntimeError):
    """A benchmark subprocess exited or did not get ready in time."""


class Child:
    """A ``python -m bench.pipeline_support`` subprocess, its log and its ``ready`` line."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name, self.log = name, log
        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.pipeline_support", *argv],
            cwd=ROOT,
            env=dict(os.environ if env is None else env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self.detail = ""

    def wait_ready(self, timeout: float = 60.0) -> str:
        """Wait for the ``ready`` line; returns what follows it."""
        assert self.proc.stdout is not None
        found: list[str] = []

        def read() -> None:
            assert self.proc.stdout is not None
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", "replace").strip()
                if line.startswith(READY):
                    found.append(line.removeprefix(READY).strip())
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        if not found:
            self.stop()
            raise ChildFailed(f"{self.name} did not start: {self.tail()}")
        self.detail = found[0]
        threading.Thread(target=self._drain, daemon=True).start()
        return self.detail

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        with contextlib.suppress(ValueError, OSError):
            for _ in self.proc.stdout:
                pass

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 5) -> str:
        """The last lines of the child's stderr log."""
        if not self._log.closed:
            self._log.flush()
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return "no log"
        return " | ".join(text.splitlines()[-lines:]) or f"exit status {self.proc.poll()}"

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; closes the log."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            with contextlib.suppress(OSError):
                self.proc.stdout.close()
        self._log.close()


def wait_for(condition: Callable[[], bool], timeout: float, what: str, step: float = 0.1) -> None:
    """Poll ``condition`` until it holds; :class:`ChildFailed` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise ChildFailed(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(step)


# -- command line ----------------------------------------------------------------------------


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv: Sequence[str] | None = None) -> None:
    """``store-server [--host H] [--plain]``, ``site-server DIR`` or ``worker --store H:P``."""
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline_support")
    roles = parser.add_subparsers(dest="role", required=True)
    store = roles.add_parser("store-server", help="serve a mongomock store")
    store.add_argument("--host", default="127.0.0.1", help="default %(default)s")
    store.add_argument("--plain", action="store_true", help="mongomock without hash lookups")
    site = roles.add_parser("site-server", help="serve a folder over HTTP")
    site.add_argument("folder", type=Path)
    worker = roles.add_parser("worker", help="a Celery worker on the shared store")
    worker.add_argument("--store", required=True, type=_address, help="the store server HOST:PORT")
    worker.add_argument("--profile", type=Path, default=None, help="cProfile output (default none)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)) if args.role != "worker" else None
    if args.role == "store-server":
        serve_store(args.host, args.plain, sys.stdout)
    elif args.role == "site-server":
        serve_site(args.folder, sys.stdout)
    else:
        authkey = os.environ.get("FPTRACK_BENCH_AUTHKEY", "").encode()
        run_worker(args.store, authkey, args.profile)


if __name__ == "__main__":
    main()
