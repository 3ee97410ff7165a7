"""The hostile benchmark's process cases: services that stop on an error, a store whose disk
fills, a scan whose Redis restarts. Each run starts the real parts on this machine, servers
of its own on free ports (never the shared ones), and measures what the issue asks:

- ``worker-unrecoverable``: ``fptrack worker`` under supervisord with the one-machine
  deployment's restart policy (:mod:`tests.servers.supervised`) on a Redis broker of its own; once
  it answers a ping, the broker is made to answer its read of the queue with an error (the
  queue's key holds a string: ``WRONGTYPE``), which Celery cannot recover from. Figures:
  the worker's exit status (``exit``: 1, which the systemd unit restarts; it was 0), and
  ``restarted_s``, from the fault until a new worker answers the ping (the key repaired
  once the first one stopped).
- ``store-disk-full``: SecantusDB started by the one-machine deployment
  (``deploy/local/mongodb.py`` under supervisord) with its data on a tmpfs of
  :data:`DISK_MB` (:class:`tests.servers.small_disk.SmallDisk`: root only), a worker that matched a
  first page; then the disk is filled (a ballast file, then writes until the server answers
  with internal errors: WiredTiger panics), and the remaining page tasks and
  :data:`BAD_TASKS` tasks that fail for good (a page id that is no id) are sent; then the
  ballast is deleted. Figures: ``fptrack check``'s line during the fault (``reason``), the
  metrics' ``fptrack_store_internal_errors``, the page tasks failed for good
  (``failed_for_good``, target 0), the failure records kept in Redis while the store could
  not take them and written after (``kept``, ``written``), and ``heal_s``: from the space
  freed until the store takes a write again (``matched_s``: until every page is matched).
- ``scan-redis-restart``: ``fptrack scan`` (the console command, a process of its own) of
  the pipeline benchmark's site (:mod:`bench.pipeline_site`, :data:`SCAN_PAGES` pages) with
  ``FPTRACK_REDIS_URL`` naming a ``redis-server`` of its own, stopped once the site served a
  quarter of its pages and started again, empty, :data:`REDIS_DOWN_S` later. Figures: the
  exit status (0: every page was matched), ``warnings`` in its JSON, ``errors``, the pages
  matched (``matched``: pages with no failure left, of ``pages``).

Each returns the row of :data:`bench.hostile_bench.EXTRA`: ``ok``, ``exit``, ``wall_s``,
``scan_rss_mb`` and ``tree_rss_mb`` (the process under test, and its tree: the worker and
its pool, SecantusDB's supervisor, the scan and its readers), ``reason`` and the case's
figures.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.fault_bench import Proc, wait_for
from bench.proc_memory import PeakMemory
from tests.servers.net import free_port, wait_for_port
from tests.servers.small_disk import SmallDisk
from tests.servers.supervised import exits, one_program

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "fptrack-hostile"
RESTARTED_WITHIN_S = 60.0
"""The worker case's target: a new worker answers within this of the fault."""
DISK_MB = 64
"""The store's disk: SecantusDB preallocates two 10 MB journal files, and its recovery after a
panic needs about as much again as the data."""
LEAVE_MB = 4
"""What the ballast leaves free: less than the next journal file."""
BAD_TASKS = 2
HEALED_WITHIN_S = 120.0
"""The disk case's target: the store takes writes within this of the space freed."""
SCAN_PAGES = 400
REDIS_DOWN_S = 2.0
FIGURES = ("restarted_s", "heal_s", "matched_s", "failed_for_good", "kept", "written", "warnings")
"""The figures of these cases beside the common ones, in the order the report shows them."""
VERDICTS = ("check", "internal_errors_metric", "logged", "restarted_store", "check_after")
"""What the disk case saw besides its figures (``check``'s line during the fault, the metric,
the worker's log line, the store restarted, ``check``'s status after), each run's in the JSON."""


def fptrack_command() -> list[str]:
    """The ``fptrack`` console script beside this interpreter, or the module."""
    script = Path(sys.executable).with_name("fptrack")
    return [str(script)] if script.exists() else [sys.executable, "-m", "admin.cli"]


def fptrack(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*fptrack_command(), *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@contextlib.contextmanager
def own_redis(workdir: Path) -> Iterator[tuple[Proc, int]]:
    """A ``redis-server`` of this run (no persistence) and its port."""
    port = free_port()
    argv = [shutil.which("redis-server") or "redis-server", "--port", str(port)]
    argv += ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)]
    server = Proc("redis", argv, workdir / "redis.log", dict(os.environ))
    server.start()
    try:
        if not wait_for_port("127.0.0.1", port, 20):
            raise RuntimeError("redis-server did not start")
        yield server, port
    finally:
        server.stop()


def environment(redis_port: int, mongo_port: int, database: str) -> dict[str, str]:
    """The ``FPTRACK_*`` of a run's services: its Redis (database 0, the broker 1), its
    MongoDB, this checkout first on the path."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FPTRACK_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "FPTRACK_BROKER_URL": f"redis://127.0.0.1:{redis_port}/1",
        "FPTRACK_INDEX_REDIS_URL": "",
        "FPTRACK_REDIS_PREFIX": PREFIX,
        "FPTRACK_MONGO_URI": f"mongodb://127.0.0.1:{mongo_port}",
        "FPTRACK_MONGO_DB": database,
    }


def _row(ok: bool, status: int | None, started: float, peak: PeakMemory, reason: str) -> dict:
    return {
        "ok": ok,
        "exit": status,
        "wall_s": time.monotonic() - started,
        "scan_rss_mb": peak.own,
        "tree_rss_mb": max(peak.own, peak.tree),
        "reason": reason,
    }


# worker-unrecoverable -----------------------------------------------------------------------


def worker_unrecoverable(args: Any, tmp: Path) -> dict[str, Any]:
    """See the module docstring."""
    from matcher.index.redis_clients import COMMAND, connect_url

    started = time.monotonic()
    mongo_port = free_port()
    mongo = Proc(
        "secantusdb",
        [shutil.which("secantusd-py") or "secantusd-py", "--host", "127.0.0.1", "--port",
         str(mongo_port), "--storage-path", ":memory:", "--standalone"],
        tmp / "mongodb.log", dict(os.environ),
    )  # fmt: skip
    mongo.start()
    with own_redis(tmp) as (_, redis_port), contextlib.ExitStack() as stack:
        stack.callback(mongo.stop)
        env = environment(redis_port, mongo_port, "hostile_worker")
        worker = [*fptrack_command(), "worker", "--concurrency", "1", "--loglevel", "WARNING"]
        loop = Proc("supervisord", one_program(tmp, "worker", worker), tmp / "out.log", env)
        loop.start()
        stack.callback(loop.stop, 60)
        assert loop.proc is not None
        peak = stack.enter_context(PeakMemory(loop.proc.pid))
        wait_for(lambda: fptrack(env, "check", "workers").returncode == 0, 120, "the worker")
        broker = connect_url(env["FPTRACK_BROKER_URL"], COMMAND)
        broker.delete("fptrack")
        broker.set("fptrack", "not a queue")  # kombu's list of the page queue
        fault = time.monotonic()
        wait_for(lambda: exits(tmp, "worker"), 60, "the worker to stop")
        broker.delete("fptrack")
        said = exits(tmp, "worker")[0]
        status = int(said) if said.isdigit() else -1
        wait_for(lambda: fptrack(env, "check", "workers").returncode == 0, 120, "a new worker")
        restarted = time.monotonic() - fault
        log = (tmp / "worker.log").read_text(errors="replace")
        ok = status == 1 and restarted <= RESTARTED_WITHIN_S and "Unrecoverable error" in log
        row = _row(ok, status, started, peak, f"exit status {status}, answering again after "
                   f"{restarted:.1f} s (target {RESTARTED_WITHIN_S:.0f} s)")  # fmt: skip
        row["restarted_s"] = restarted
        return row


# store-disk-full ----------------------------------------------------------------------------


def store_disk_full(args: Any, tmp: Path) -> dict[str, Any]:
    """See the module docstring."""
    with SmallDisk(tmp / "disk", DISK_MB) as disk:
        return DiskFull(tmp, disk).run()


class DiskFull:
    """One run of ``store-disk-full`` (see the module docstring)."""

    def __init__(self, tmp: Path, disk: SmallDisk) -> None:
        self.tmp = tmp
        self.disk = disk
        self.figures: dict[str, Any] = {}

    def run(self) -> dict[str, Any]:
        started = time.monotonic()
        with own_redis(self.tmp) as (_, redis_port), contextlib.ExitStack() as stack:
            mongo_port = free_port()
            self.env = env = environment(redis_port, mongo_port, "hostile_disk")
            env["FPTRACK_DATA_DIR"] = str(self.disk.path)
            self.mongodb = Proc(
                "supervisord", one_program(self.tmp, "mongodb"), self.tmp / "out.log", env
            )
            self.mongodb.start()
            stack.callback(self.mongodb.stop, 60)
            assert self.mongodb.proc is not None
            peak = stack.enter_context(PeakMemory(self.mongodb.proc.pid))
            worker = Proc(
                "worker", [*fptrack_command(), "worker", "--concurrency", "1", "--wait", "60s"],
                self.tmp / "worker.log", env,
            )  # fmt: skip
            worker.start()  # booting while the works are registered
            stack.callback(worker.stop, 60)
            if not wait_for_port("127.0.0.1", mongo_port, 60):
                raise RuntimeError("SecantusDB did not start: " + self._log("mongodb")[-2000:])
            self._open()
            stack.callback(self.client.close)
            self._fault_and_heal()
        ok = (
            self.figures["failed_for_good"] == 0
            and self.figures["kept"] == BAD_TASKS == self.figures["written"]
            and self.figures["internal_errors_metric"] == 1
            and "answers with internal errors (disk full?)" in self.figures["check"]
            and self.figures["heal_s"] <= HEALED_WITHIN_S
            and self.figures["restarted_store"]
        )
        reason = f"check: {self.figures['check']}"
        row = _row(ok, self.figures["check_status"], started, peak, reason)
        return row | self.figures

    def _log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _open(self) -> None:
        """Works registered and pages stored, their tasks not sent yet."""
        from matcher.matching.engine import Engine
        from matcher.pages import CrawledPage
        from matcher.settings import Settings
        from matcher.store import mongo_client
        from matcher.worker.celery_app import make_app
        from matcher.worker.ingest import Ingest
        from matcher.worker.kept_failures import KeptFailures

        self.settings = Settings.from_env(self.env)
        self.client = mongo_client(self.settings.mongo_uri, 3000)
        self.engine = Engine.open(self.settings, mongo_client=self.client)
        self.app = make_app(self.settings, tasks=False)
        self.kept = KeptFailures(self.engine.redis, self.engine.keys.kept_failures)
        texts = _sample_texts()
        works = list(texts)[:2]
        self.works = {
            name: self.engine.add_work(texts[name], title=name, source=name) for name in works
        }
        held: list[str] = []
        ingest = Ingest(self.engine.store, held.append)
        chrome = "书海阁 | 首页 | 排行榜\n{}\n本站小说均来自网络"
        self.pages: dict[str, str] = {}
        for n in range(6):
            name = works[n % 2]
            url = f"http://pirate.example/{n}.html"
            page = CrawledPage(url=url, site="pirate", title="", text=chrome.format(texts[name]))
            self.pages[ingest.page(page).page_id] = self.works[name]

    def _send(self, page_id: str) -> None:
        self.app.send_task("fptrack.process_page", [page_id])

    def _matched(self) -> set[str]:
        found = self.engine.store.db.matches.find({}, {"page_id": 1, "work_id": 1})
        return {str(m["page_id"]) for m in found if self.pages.get(str(m["page_id"]))}

    def _fault_and_heal(self) -> None:
        import pymongo.errors

        from admin.context import Context
        from admin.metrics import StoreMetrics
        from matcher.errors import store_failing

        env, figures = self.env, self.figures
        t0 = time.monotonic()
        stamps = figures["phases_s"] = {}

        def stamp(what: str) -> None:
            stamps[what] = round(time.monotonic() - t0, 1)

        first, *others = self.pages
        self._send(first)  # the worker takes it once up
        wait_for(lambda: first in self._matched(), 120, "the first page's match")

        stamp("first match")
        self.disk.fill(LEAVE_MB)
        junk = self.client["hostile_junk"]["blocks"]
        block = "x" * (1 << 20)
        for n in range(4 * DISK_MB):
            try:
                junk.insert_one({"n": n, "block": block})
            except pymongo.errors.PyMongoError as exc:
                if store_failing(exc):
                    break
        else:
            raise RuntimeError(f"{4 * DISK_MB} MB written to a {DISK_MB} MB disk, no error")
        stamp("panic")
        ran = fptrack(env, "check")
        stamp("check")
        said = [line for line in (ran.stdout + ran.stderr).splitlines() if "MongoDB" in line]
        figures["check"] = " ".join((said or [ran.stderr.strip()])[0].split())
        figures["check_status"] = ran.returncode
        metrics = StoreMetrics(Context(self.settings, engine=self.engine), 0).compute()
        [internal] = [m for m in metrics if m.name == "fptrack_store_internal_errors"]
        figures["internal_errors_metric"] = int(internal.samples[0].value)
        for page_id in others:
            self._send(page_id)
        for n in range(BAD_TASKS):
            self.app.send_task("fptrack.process_page", [f"not-a-page-{n}"])
        wait_for(lambda: self.kept.count() >= BAD_TASKS, 120, "the failure records to be kept")
        figures["kept"] = self.kept.count()
        stamp("kept")

        self.disk.free()
        freed = time.monotonic()
        probe = self.client["hostile_junk"]["probe"]
        wait_for(lambda: probe.insert_one({"at": time.time()}).acknowledged, 300, "the store")
        figures["heal_s"] = time.monotonic() - freed
        wait_for(lambda: self._matched() == set(self.pages), 300, "every page's match")
        figures["matched_s"] = time.monotonic() - freed
        stamp("matched")
        failures = self.engine.store.db.failures
        wait_for(lambda: self.kept.count() == 0, 120, "the kept failure records to be written")
        refs = {f["ref"] for f in failures.find({}, {"ref": 1})}
        figures["written"] = len({f"not-a-page-{n}" for n in range(BAD_TASKS)} & refs)
        figures["failed_for_good"] = len(refs & set(self.pages))
        figures["restarted_store"] = "SecantusDB answers only internal errors" in self._log(
            "mongodb"
        )
        figures["logged"] = "answers with internal errors (disk full?)" in self._log("worker")
        figures["check_after"] = fptrack(env, "check", "mongodb").returncode


def _sample_texts() -> dict[str, str]:
    works = ROOT / "samples" / "works"
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(works.glob("*.txt"))}


# scan-redis-restart -------------------------------------------------------------------------


def scan_redis_restart(args: Any, tmp: Path) -> dict[str, Any]:
    """See the module docstring."""
    from bench.pipeline_site import build_site
    from tests.sites.corpus import load_texts

    site = build_site(load_texts(2.0), works=8, pages=SCAN_PAGES, seed=1)
    folder = site.write(tmp / "site")
    works = site.write_works(tmp / "works")
    out = tmp / "scan.json"
    started = time.monotonic()
    with own_redis(tmp) as (server, port), _served(folder) as (base, served):
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "FPTRACK_REDIS_URL": f"redis://127.0.0.1:{port}/0",
        }
        command = [*fptrack_command(), "scan", "--works", str(works), "--site", base + "index.html",
                   "--json", str(out), "--max-pages", str(4 * SCAN_PAGES)]  # fmt: skip
        with (tmp / "scan.log").open("wb") as log:
            scan = subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT
            )
        with PeakMemory(scan.pid) as peak:
            wait_for(lambda: served() >= SCAN_PAGES // 4 or scan.poll() is not None, 600, "pages")
            server.kill_tree()
            time.sleep(REDIS_DOWN_S)
            server.start()
            scan.wait(1800)
    data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    warnings, errors = data.get("warnings", []), data.get("errors", [])
    pages = int(data.get("pages", 0))
    ok = scan.returncode == 0 and bool(warnings) and not errors and pages > 0
    reason = (f"exit {scan.returncode}, {len(warnings)} warning(s), {len(errors)} error(s), "
              f"{pages} page(s) matched: {(warnings or errors or [''])[0][:160]}")  # fmt: skip
    row = _row(ok, scan.returncode, started, peak, reason)
    return row | {"warnings": len(warnings), "errors": len(errors), "pages": pages}


@contextlib.contextmanager
def _served(folder: Path) -> Iterator[tuple[str, Any]]:
    """``folder`` served over HTTP on 127.0.0.1, and a count of the pages it served."""
    import functools
    import http.server

    count = [0]
    lock = threading.Lock()

    class Counting(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            with lock:
                count[0] += 1

    handler = functools.partial(Counting, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", lambda: count[0]
    finally:
        server.shutdown()
        server.server_close()
