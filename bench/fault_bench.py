"""Real faults under a real deployment: what is lost, retracted or left behind, and how long
recovery takes with no command typed.

    python -m bench.fault_bench [--json OUT] [--quick] [--works N] [--pages N] [--seed N]

The deployment runs on this machine as it would on a small one: the indexes on a 3-master
Redis Cluster (no replica, no persistence), the broker, beat's schedules and the crawl
frontiers on a standalone ``redis-server`` (no persistence), MongoDB as SecantusDB with its
data on disk, two ``fptrack worker`` processes and ``fptrack beat``, each under a restart
loop (a process manager's, restarting one second after a death). A generated pirate site
(:mod:`bench.pipeline_site`: real Chinese texts, copies edited in ten ways, unrelated pages)
is served on 127.0.0.1 as four sites; two thirds of the works are registered before the
crawls and a third after, so both directions of matching run.

The fault-free result is the embedded scan's (``admin.scan.run_scan``) over the same works
and sites: the expected (page, work) pairs. Then the work runs with these faults, one after
another, each in the middle of work, and the benchmark waits after each for full recovery:

1. a cluster master killed and restarted empty during the crawl of site A;
2. the broker killed and restarted empty during the crawl of site B;
3. SecantusDB killed (SIGKILL) and restarted on its data while the late works are matched
   against the pages crawled before;
4. a worker's whole process tree killed (SIGKILL) during the crawl of site C;
5. all at once during the crawl of site D: another master restarted empty, the broker
   restarted empty and a worker killed.

Recovery after a fault: every expected pair of the works registered and the sites crawled
so far active, no page pending, no crawl run left running, the indexes whole and holding
what the store holds, and ``fptrack check`` healthy; its time is measured from the moment
the server (or the worker) is back. A sampler reads the matches every half second to catch
any expected match set inactive at any point (a retraction). Printed and written with
``--json``: per fault and in total, the expected pairs active at the end, pairs lost, matches
retracted, duplicate match records, pages left pending, run records left running, recovery
time, and the peak memory of the deployment's processes. Targets (issue: faults heal and
lose nothing): 0 lost, 0 retracted, 0 duplicated, 0 pending, 0 left running, each recovery
within 120 s of the server being back. No peer library runs a deployment under faults; the
reference is the fault-free run of the same work.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.pipeline_site import BenchSite, build_site
from tests.servers.local_cluster import LocalCluster
from tests.servers.net import free_port, wait_until

PREFIX = "fptrack-fault-bench"
DEFAULTS = {"works": 24, "pages": 360}
QUICK = {"works": 6, "pages": 48}
SITES = ("a", "b", "c", "d")
FAULTS = ("master", "broker", "mongodb", "worker", "together")
LATE_SHARE = 1 / 3
"""The share of the works registered after the crawls (matched by the reverse direction)."""
FAULT_AT = 0.3
"""A fault strikes once this share of a site's pages is stored."""
RECOVERY_TIMEOUT = 900.0
TARGET_RECOVERY_S = 120.0
RESTART_SEC = 1.0
SAMPLE_S = 0.5


def log(message: str) -> None:
    print(f"[fault-bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- processes --------------------------------------------------------------------------------


class Proc:
    """A process in a session of its own (so its whole tree can be killed), with a log."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, env: dict[str, str]):
        self.name, self.argv, self.log_path, self.env = name, list(argv), log_path, env
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                start_new_session=True,
            )  # fmt: skip

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill_tree(self) -> None:
        """SIGKILL to the process and every process it started."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout: float = 20.0) -> None:
        if not self.alive():
            return
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill_tree()


class Supervised(Proc):
    """A service under a restart loop: started again ``RESTART_SEC`` after it dies."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.restarts = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name=self.name)

    def start(self) -> None:
        super().start()
        if not self._thread.is_alive():
            self._thread.start()

    def _watch(self) -> None:
        while not self._stopping.wait(0.2):
            if self.proc is not None and self.proc.poll() is not None:
                time.sleep(RESTART_SEC)
                if self._stopping.is_set():
                    return
                self.restarts += 1
                Proc.start(self)

    def stop(self, timeout: float = 20.0) -> None:
        self._stopping.set()
        super().stop(timeout)


def wait_for(condition: Callable[[], bool], timeout: float, what: str, step: float = 0.5) -> None:
    def holds() -> bool:
        try:
            return bool(condition())
        except Exception as exc:  # a server is down for a moment: look again
            log(f"while waiting for {what}: {type(exc).__name__}: {str(exc)[:120]}")
            return False

    if not wait_until(holds, timeout, step):
        raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def tree_rss(pids: Sequence[int]) -> int:
    """Resident bytes of the processes of the sessions led by ``pids``."""
    sessions, total = set(pids), 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[3]) not in sessions:  # field 6 of stat: the session id
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except (OSError, IndexError, ValueError):
            continue
    return total


# -- the deployment ---------------------------------------------------------------------------


@dataclass
class Fault:
    name: str
    back_at: float = 0.0
    recovered_s: float | None = None
    notes: list[str] = field(default_factory=list)


class Deployment:
    """The servers and services of the benchmark, and the benchmark's own clients."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[Proc] = []
        self.cluster = LocalCluster(masters=3)

    def start(self) -> None:
        from matcher.index.redis_clients import COMMAND, connect_url
        from matcher.index.redis_io import connect
        from matcher.matching.engine import Engine
        from matcher.settings import IndexRedis, Settings
        from matcher.store import Store, mongo_client
        from matcher.worker.celery_app import make_app

        self.cluster.start()
        broker_port, mongo_port = free_port(), free_port()
        redis_server = shutil.which("redis-server") or "redis-server"
        self.broker = Proc(
            "broker",
            [redis_server, "--port", str(broker_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            self.workdir / "broker.log", dict(os.environ),
        )  # fmt: skip
        self.broker.start()
        data = self.workdir / "mongodb"
        data.mkdir()
        self.mongo = Proc(
            "mongodb",
            [shutil.which("secantusd-py") or "secantusd-py", "--host", "127.0.0.1", "--port",
             str(mongo_port), "--storage-path", str(data), "--standalone", "--log-level",
             "WARNING"],
            self.workdir / "mongodb.log", dict(os.environ),
        )  # fmt: skip
        self.mongo.start()
        self.broker_client = connect_url(f"redis://127.0.0.1:{broker_port}/0", COMMAND)
        wait_for(self.broker_client.ping, 30, "the broker")
        self.env = {
            **os.environ,
            "FPTRACK_REDIS_URL": f"redis://127.0.0.1:{broker_port}/0",
            "FPTRACK_BROKER_URL": f"redis://127.0.0.1:{broker_port}/1",
            "FPTRACK_INDEX_REDIS_URL": self.cluster.url,
            "FPTRACK_REDIS_PREFIX": PREFIX,
            "FPTRACK_MONGO_URI": f"mongodb://127.0.0.1:{mongo_port}",
            "FPTRACK_MONGO_DB": f"fptrack_fault_bench_{secrets.token_hex(4)}",
        }
        self.settings = Settings.from_env(self.env)
        self.client = mongo_client(self.settings.mongo_uri, 3000)
        wait_for(lambda: self.client.admin.command("ping"), 60, "SecantusDB")
        self.db = self.client[self.settings.mongo_db]
        self.store = Store(self.db)
        self.store.ensure_indexes()
        index = connect(IndexRedis.parse(self.cluster.url))
        self.engine = Engine.open(self.settings, mongo_client=self.client, redis_client=index)
        self.app = make_app(self.settings)
        fptrack = str(Path(sys.executable).with_name("fptrack"))
        self.workers = []
        for n in (1, 2):
            argv = [fptrack, "worker", "--concurrency", "2", "--wait", "60s"]
            self.workers.append(self.service(f"worker{n}", argv))
        self.beat = self.service("beat", [fptrack, "beat", "--wait", "60s"])
        last = [""]

        def healthy() -> bool:
            status, last[0] = self.check()
            return status == 0

        try:
            wait_for(healthy, 180, "fptrack check to pass at start")
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}: {last[0].strip()}") from None

    def service(self, name: str, argv: list[str]) -> Supervised:
        proc = Supervised(name, argv, self.workdir / f"{name}.log", self.env)
        proc.start()
        self.procs.append(proc)
        return proc

    def check(self) -> tuple[int, str]:
        from admin.health import NAMES

        fptrack = str(Path(sys.executable).with_name("fptrack"))
        # the services' health; a crawl a fault failed stays reported (24 h) by "crawls"
        services = [name for name in NAMES if name != "crawls"]
        done = subprocess.run(
            [fptrack, "check", *services], env=self.env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        return done.returncode, done.stdout + done.stderr

    def restart_broker(self) -> None:
        self.broker.kill_tree()
        self.broker.start()
        wait_for(self.broker_client.ping, 30, "the broker")

    def restart_mongo(self) -> None:
        self.mongo.kill_tree()
        self.mongo.start()
        wait_for(lambda: self.client.admin.command("ping"), 60, "SecantusDB")

    def pids(self) -> list[int]:
        procs = [*self.procs, self.broker, self.mongo]
        pids = [p.proc.pid for p in procs if p.proc is not None and p.alive()]
        return pids + [p.pid for p in self.cluster._procs]

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        with contextlib.suppress(Exception):
            self.client.drop_database(self.settings.mongo_db)
        self.mongo.stop()
        self.broker.stop()
        self.cluster.stop()


# -- what the matches say ---------------------------------------------------------------------


class Sampler:
    """Reads the active (url, work) pairs every half second; remembers every expected pair
    it saw go from active to inactive, and the deployment's peak memory."""

    def __init__(self, dep: Deployment, expected: set[tuple[str, str]]) -> None:
        import pymongo

        self.dep, self.expected = dep, expected
        self.client = pymongo.MongoClient(
            dep.settings.mongo_uri, tz_aware=True, serverSelectionTimeoutMS=1000
        )
        self.active: set[tuple[str, str]] = set()
        self.retracted: set[tuple[str, str]] = set()
        self.peak_rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="sampler")

    def pairs(self) -> set[tuple[str, str]]:
        db = self.client[self.dep.settings.mongo_db]
        found = db.matches.find({"active": True}, {"url": 1, "work_source": 1})
        return {(m["url"], m.get("work_source", "")) for m in found}

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            with contextlib.suppress(Exception):
                self.peak_rss = max(self.peak_rss, tree_rss(self.dep.pids()))
            try:
                now = self.pairs()
            except Exception:  # SecantusDB is down: the next sample will tell
                continue
            self.retracted |= (self.active - now) & self.expected
            self.active = now

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.client.close()


def recovered(
    dep: Deployment, sampler: Sampler, expected: set[tuple[str, str]]
) -> tuple[bool, str]:
    """Whether the deployment has recovered (see the module docstring), and if not why."""
    missing = expected - sampler.pairs()
    if missing:
        return False, f"{len(missing)} expected pair(s) not active"
    pending = dep.db.pages.count_documents({"pending": True})
    if pending:
        return False, f"{pending} page(s) pending"
    running = dep.db.crawls.count_documents({"outcome": "running"})
    if running:
        return False, f"{running} crawl run(s) running"
    status, out = dep.check()
    if status:
        bad = [line for line in out.splitlines() if line.startswith("FAIL")]
        return False, "fptrack check: " + "; ".join(bad)[:300]
    return True, ""


def wait_recovered(
    dep: Deployment, sampler: Sampler, expected: set[tuple[str, str]], fault: Fault
) -> None:
    why = [""]

    def ok() -> bool:
        done, why[0] = recovered(dep, sampler, expected)
        return done

    deadline = time.monotonic() + RECOVERY_TIMEOUT
    said = time.monotonic()
    while not ok():
        if time.monotonic() > deadline:
            fault.notes.append(f"not recovered after {RECOVERY_TIMEOUT:.0f} s: {why[0]}")
            log(f"{fault.name}: NOT recovered: {why[0]}")
            return
        if time.monotonic() - said > 30:
            log(f"{fault.name}: not yet: {why[0]}")
            said = time.monotonic()
        time.sleep(1.0)
    fault.recovered_s = time.monotonic() - fault.back_at
    log(f"{fault.name}: recovered {fault.recovered_s:.1f} s after the server was back")


# -- the run ----------------------------------------------------------------------------------


def split_sites(site: BenchSite, count: int) -> list[BenchSite]:
    """The site's pages dealt into ``count`` sites of their own (same works and chrome)."""
    return [
        BenchSite(site.works, site.pages[i::count], site.chrome, site.per_list)
        for i in range(count)
    ]


def fault_free(works_dir: Path, urls: list[str]) -> tuple[set[tuple[str, str]], float]:
    """The embedded scan's (url, work file) pairs, and its time."""
    from admin.scan import run_scan
    from matcher.index.maintenance import drop_indexes

    started = time.perf_counter()
    result, engine = run_scan(works_dir, urls)
    seconds = time.perf_counter() - started
    drop_indexes(engine)
    return {(m["url"], m["work"]) for m in result.matches}, seconds


def register(dep: Deployment, works_dir: Path, names: Sequence[str], reverse: bool) -> None:
    """Register works as ``fptrack works add`` does (here, in the benchmark's process); with
    ``reverse``, have the workers match each against the pages crawled before."""
    for name in names:
        text = (works_dir / name).read_text(encoding="utf-8")
        work_id = dep.engine.add_work(text, title=Path(name).stem, source=name, key=name)
        if reverse:
            dep.app.send_task("fptrack.match_work_against_pages", args=[work_id])


def crawl(dep: Deployment, name: str, url: str) -> None:
    from matcher.sites.site_config import SiteConfig

    dep.store.sites.save_site(
        SiteConfig(name=name, start_urls=(url,), schedule="never", max_depth=4)
    )
    dep.app.send_task("fptrack.crawl_site", args=[name])


def stored(dep: Deployment, name: str) -> int:
    return dep.db.pages.count_documents({"site": name})


def run(args: argparse.Namespace, texts: Sequence[str] | None = None) -> dict[str, Any]:
    from admin.scan import serve_directory

    if texts is None:
        from tests.sites.corpus import load_texts

        texts = load_texts(float("inf"))
    site = build_site(texts, args.works, args.pages, args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="fptrack-fault-bench-"))
    works_dir = site.write_works(workdir / "works")
    parts = split_sites(site, len(SITES))
    names = sorted(p.name for p in works_dir.iterdir())
    late = names[: max(1, round(len(names) * LATE_SHARE))]
    early = [n for n in names if n not in late]
    faults: list[Fault] = []
    dep = Deployment(workdir)
    with contextlib.ExitStack() as stack:
        urls = [
            stack.enter_context(serve_directory(part.write(workdir / f"site-{n}")))
            for n, part in zip(SITES, parts, strict=True)
        ]
        log(f"fault-free run: {len(names)} works, {site.records()} pages, {len(SITES)} sites")
        expected_all, scan_s = fault_free(works_dir, urls)
        log(f"fault-free: {len(expected_all)} (page, work) pairs in {scan_s:.1f} s")
        try:
            dep.start()
            sampler = Sampler(dep, expected_all)
            stack.callback(sampler.stop)
            sampler.start()
            register(dep, works_dir, early, reverse=False)
            done_sites: list[str] = []

            def expected() -> set[tuple[str, str]]:
                registered = set(early) | (set(late) if late_registered else set())
                crawled = tuple(urls[SITES.index(s)] for s in done_sites)
                return {
                    (u, w) for u, w in expected_all if w in registered and u.startswith(crawled)
                }

            late_registered = False

            def during_crawl(
                n: int, kind: str, strike: Callable[[Fault], None], label: str
            ) -> None:
                if kind not in args.faults:  # its site is not crawled either
                    log(f"not chosen: {label}")
                    return
                name = f"site-{SITES[n]}"
                crawl(dep, name, urls[n])
                total = parts[n].records()
                wait_for(lambda: stored(dep, name) >= FAULT_AT * total, 300, f"{name}'s pages")
                fault = Fault(label)
                log(f"fault: {label}")
                strike(fault)
                faults.append(fault)
                done_sites.append(SITES[n])
                wait_recovered(dep, sampler, expected(), fault)

            def master_restart(port_index: int) -> Callable[[Fault], None]:
                def strike(fault: Fault) -> None:
                    dep.cluster.restart_empty(dep.cluster.ports[port_index])
                    fault.back_at = time.monotonic()

                return strike

            def broker_restart(fault: Fault) -> None:
                dep.restart_broker()
                fault.back_at = time.monotonic()

            def worker_kill(fault: Fault) -> None:
                dep.workers[0].kill_tree()  # its restart loop starts it again
                fault.back_at = time.monotonic() + RESTART_SEC

            label = "index master restarted empty (crawl of site A)"
            during_crawl(0, "master", master_restart(0), label)
            during_crawl(1, "broker", broker_restart, "broker restarted empty (crawl of site B)")

            fault = Fault("SecantusDB killed and restarted (late works matched in reverse)")
            late_registered = True
            register(dep, works_dir, late, reverse=True)
            fault.back_at = time.monotonic()
            if "mongodb" in args.faults:
                log(f"fault: {fault.name}")
                dep.restart_mongo()
                fault.back_at = time.monotonic()
                faults.append(fault)
            wait_recovered(dep, sampler, expected(), fault)

            label = "a worker's process tree killed (crawl of site C)"
            during_crawl(2, "worker", worker_kill, label)

            def everything(fault: Fault) -> None:
                master_restart(1)(fault)
                dep.restart_broker()
                dep.workers[1].kill_tree()
                fault.back_at = time.monotonic()

            label = "master, broker and a worker at once (crawl of site D)"
            during_crawl(3, "together", everything, label)
            result = summary(dep, sampler, expected(), faults, scan_s)
        finally:
            dep.stop()
            if args.keep:
                log(f"the deployment's logs are in {workdir}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
    return result


def summary(
    dep: Deployment,
    sampler: Sampler,
    expected: set[tuple[str, str]],
    faults: list[Fault],
    scan_s: float,
) -> dict[str, Any]:
    active = sampler.pairs()
    pipeline = [{"$group": {"_id": {"p": "$page_id", "w": "$work_id"}, "n": {"$sum": 1}}}]
    duplicates = sum(d["n"] - 1 for d in dep.db.matches.aggregate(pipeline) if d["n"] > 1)
    by_url = [{"$group": {"_id": {"u": "$url", "w": "$work_id"}, "n": {"$sum": 1}}}]
    duplicates += sum(d["n"] - 1 for d in dep.db.matches.aggregate(by_url) if d["n"] > 1)
    recoveries = [f.recovered_s for f in faults]
    return {
        "expected_pairs": len(expected),
        "active_expected_at_end": len(expected & active),
        "lost": len(expected - active),
        "retracted": len(sampler.retracted),
        "duplicates": duplicates,
        "pending_pages": dep.db.pages.count_documents({"pending": True}),
        "runs_left_running": dep.db.crawls.count_documents({"outcome": "running"}),
        "unexpected_active": len(active - expected),
        "faults": [
            {"fault": f.name, "recovery_s": f.recovered_s, "notes": f.notes} for f in faults
        ],
        "max_recovery_s": None if None in recoveries else max(recoveries, default=0.0),
        "all_recovered": None not in recoveries,
        "worker_restarts": sum(w.restarts for w in dep.workers),
        "peak_rss_mb": round(sampler.peak_rss / 2**20, 1),
        "fault_free_scan_s": round(scan_s, 2),
        "targets": {
            "lost": 0,
            "retracted": 0,
            "duplicates": 0,
            "pending_pages": 0,
            "runs_left_running": 0,
            "recovery_s": TARGET_RECOVERY_S,
        },
    }


def print_report(r: dict[str, Any]) -> None:
    def verdict(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    print(f"expected (page, work) pairs (fault-free scan, {r['fault_free_scan_s']} s): "
          f"{r['expected_pairs']}")  # fmt: skip
    for key in ("lost", "retracted", "duplicates", "pending_pages", "runs_left_running"):
        print(f"  {key:<20} {r[key]:>6}   target 0   {verdict(r[key] == 0)}")
    print(f"  active at the end    {r['active_expected_at_end']:>6}")
    print(
        f"  unexpected active    {r['unexpected_active']:>6}   (matches the fault-free run lacks)"
    )
    for f in r["faults"]:
        took = "not recovered" if f["recovery_s"] is None else f"{f['recovery_s']:.1f} s"
        ok = f["recovery_s"] is not None and f["recovery_s"] <= TARGET_RECOVERY_S
        print(f"  {f['fault']:<72} {took:>14}   {verdict(ok)}")
        for note in f["notes"]:
            print(f"      {note}")
    print(f"  worker restarts by the restart loop: {r['worker_restarts']}")
    print(f"  peak memory of the deployment: {r['peak_rss_mb']} MB")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the figures here (default: none)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a small site ({QUICK['works']} works, {QUICK['pages']} pages), synthetic text",
    )
    parser.add_argument("--works", type=int, help=f"works (default {DEFAULTS['works']})")
    parser.add_argument("--pages", type=int, help=f"pages (default {DEFAULTS['pages']})")
    parser.add_argument("--seed", type=int, default=0, help="site generator seed (default 0)")
    parser.add_argument(
        "--keep", action="store_true", help="keep the processes' logs (default: deleted)"
    )
    parser.add_argument(
        "--faults",
        default=",".join(FAULTS),
        help=f"the faults to strike, comma-separated (default: all, {','.join(FAULTS)}); the "
        "site crawled under a fault not chosen is not crawled (the late works are matched "
        "in reverse either way), and the pairs expected are those of the sites crawled",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else DEFAULTS
    args.faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = set(args.faults) - set(FAULTS)
    if unknown:
        parser.error(f"unknown fault(s) {sorted(unknown)}: choose among {', '.join(FAULTS)}")
    args.works = args.works or sizes["works"]
    args.pages = args.pages or sizes["pages"]
    return args


def _stop_once(*_: Any) -> None:
    """SIGTERM: leave through the clean-up that stops the deployment, which a second SIGTERM
    (a ``timeout`` wrapper passes its own on) must not cut short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(1)


def main(argv: Sequence[str] | None = None, texts: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_once)
    if texts is None and args.quick:
        from tests.sites.eval_corpus import synthetic_texts

        texts = synthetic_texts(args.works * 4, args.seed)
    result = run(args, texts)
    print_report(result)
    if args.json:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    return result


if __name__ == "__main__":
    try:
        main()
    except (TimeoutError, OSError) as exc:
        raise SystemExit(f"fault_bench: {exc}") from None
