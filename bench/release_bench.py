"""Release speed: from a chapter appearing on a pirate site to its match record.

Issue 16, part 5. Pirates copy a new chapter within minutes of its release; fptrack watches
a site with an incremental crawl (``SiteConfig.recrawl``, :mod:`crawler.incremental`) on a
short schedule besides the full one. The deployment is real: its own ``redis-server`` (index,
redbeat schedules, frontier leases, and the Celery broker in database 1) on a free port,
SecantusDB (MongoDB wire) in memory, one Celery worker of the page queue (``fptrack``),
one of the crawl queue (``fptrack.crawl``: every crawl a ``python -m crawler.run``
subprocess, production settings, AutoThrottle on) and Celery beat with redbeat, which sends
``fptrack.recrawl_site`` on the site's ``recrawl`` schedule (``--recrawl``, default
``every 2m``); processes of :mod:`bench.pipeline_support`.

The site (:mod:`bench.release_site`, served by the benchmark process) carries a novel of
``--existing`` chapters, with its index, sitemap (named in robots.txt) and RSS feed; every
chapter, including those still to appear, is a registered work (the rights holder's
chapters, registered in advance). Text: :func:`tests.sites.eval_corpus.synthetic_texts` (real
Chinese words; nothing is downloaded).

Each round: the store's pages and matches are emptied and the site reset to the existing
chapters; a **full crawl** (``fptrack.crawl_site``'s job, in the benchmark process) stores
them, and the workers match them; then an **incremental crawl** with nothing new (the
``recrawl_site`` job): requests, body bytes served and seconds of each, and their ratio.
Then **registration**: a chapter already crawled whose work was not registered is registered
(:meth:`Engine.add_work`, as the admin does) and ``fptrack.match_work_against_pages`` sent,
as the admin's ``CeleryDispatch.work_added`` does; the time to its match record (target
< 60 s). Then the site's schedule is saved in redbeat and ``--chapters`` new chapters
appear at uniformly random times over ``--window`` seconds (page, index link, sitemap and
feed entries at once); per chapter, the time from its appearance to the ``first_seen`` of
the match record of its page and its work in MongoDB. A chapter not matched within
``--window`` + 3 schedule intervals + 300 s counts as missed (reported).

Figures: p50 / p90 / max of the release delays over every chapter of every round (target
p50 < 300 s), and the median of the rounds' p50; the median registration delay; the crawl
costs (medians over rounds) and the incremental / full ratios; how many incremental crawls
beat ran and their new / unchanged counts. ``--json OUT`` writes them. Defaults: 6 chapters
per round over 480 s, 60 existing chapters, ``every 2m``, 2 rounds, seed 0. ``--quick``:
2 chapters over 10 s, 8 existing chapters, ``every 10s`` (a shorter schedule, printed as
such: its figures say nothing of the 2-minute target), 1 round.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from bench.pipeline_support import (
    Child,
    ChildFailed,
    ready_key,
    stop_children,
    wait_for,
)
from bench.release_site import NovelSite
from matcher.index.redis_clients import COMMAND, connect_url
from tests.servers.net import free_port

DEFAULTS = {"chapters": 6, "window": 480.0, "existing": 60, "recrawl": "every 2m", "rounds": 2}
QUICK = {"chapters": 2, "window": 10.0, "existing": 8, "recrawl": "every 10s", "rounds": 1}
TARGETS = {"p50_s": 300.0, "register_s": 60.0}
PREFIX = "fptrack-release-bench"
SITE = "novel"
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def log(message: str) -> None:
    print(f"release_bench: {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, linear between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    pos = (len(ordered) - 1) * q
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def chapter_texts(count: int, seed: int) -> list[str]:
    """``count`` chapter texts of real Chinese words, without the shared licence lines."""
    from tests.sites.eval_corpus import synthetic_texts

    texts = []
    for text in synthetic_texts(count, seed):
        lines = [x for x in text.splitlines() if "版权所有" not in x and "自由软件" not in x]
        texts.append("\n".join(lines))
    return texts


class Deployment:
    """The processes of the benchmark and the benchmark process's own clients."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.children: list[Child] = []
        self.redis_proc: subprocess.Popen | None = None
        self.client: Any = None

    def start(self, recrawl: str) -> None:
        from matcher.matching.engine import Engine
        from matcher.settings import Settings
        from matcher.store import Store
        from matcher.store.client import client_for
        from matcher.worker.celery_app import make_app
        from matcher.worker.schedules import Schedules

        port = free_port()
        self.redis_proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.index = connect_url(f"redis://127.0.0.1:{port}/0", COMMAND)
        wait_for(self._redis_up, 30, "redis-server")
        self.env = {
            **os.environ,
            "FPTRACK_REDIS_URL": f"redis://127.0.0.1:{port}/0",
            "FPTRACK_BROKER_URL": f"redis://127.0.0.1:{port}/1",
            "FPTRACK_REDIS_PREFIX": PREFIX,
            "FPTRACK_MONGO_DB": f"fptrack_release_bench_{secrets.token_hex(4)}",
        }
        self.env["FPTRACK_MONGO_URI"] = self.child("mongodb", ["mongo-server"]).detail
        self.settings = Settings.from_env(self.env)
        self.client = client_for(self.settings, timeout_ms=10_000)
        self.store = Store.open(self.settings, self.client)
        self.store.ensure_indexes()
        self.engine = Engine(self.settings, self.store, self.index)
        self.app = make_app(self.settings)
        self.schedules = Schedules(self.app)
        for name, queues in (("pages", "fptrack"), ("crawls", "fptrack.crawl")):
            worker = self.child(f"worker-{name}", ["worker", "--queues", queues])
            pid = int(worker.detail)
            wait_for(lambda pid=pid: self.index.exists(ready_key(PREFIX, pid)), 60, "a worker")
        self.child("beat", ["beat"])

    def _broker(self) -> redis.Redis:
        """A client of the broker's database (database 1 of the bench's server)."""
        port = self.index.connection_pool.connection_kwargs["port"]
        return connect_url(f"redis://127.0.0.1:{port}/1", COMMAND)

    def _redis_up(self) -> bool:
        try:
            return bool(self.index.ping())
        except redis.ConnectionError:
            return False

    def child(self, name: str, argv: list[str]) -> Child:
        child = Child(name, argv, self.workdir / f"{name}.log", self.env)
        self.children.append(child)
        child.wait_ready(90)
        return child

    def check_alive(self) -> None:
        for child in self.children:
            if not child.alive():
                raise ChildFailed(f"{child.name} died: {child.tail()}")

    def reset(self) -> None:
        """No page, match, page fingerprint or crawl; an empty queue; the works stay
        (:meth:`matcher.store.Store.reset_pages`)."""
        self.store.reset_pages(crawls=True)
        self.engine.pages.clear()
        self._broker().flushdb()

    def wait_crawls_done(self) -> None:
        """Wait until no crawl is queued, running or unrecorded (a chapter is matched before
        the crawl that found it ends and is recorded): no message in the crawl queue nor
        taken and unacknowledged (``task_acks_late``: a task's message is acknowledged once
        it returned, its run recorded; a message taken whose subprocess has not yet started
        holds no lock), and no recrawl lock; twice, half a second apart (a message is
        popped from the queue a moment before it is noted as unacknowledged)."""
        from matcher.keys import Keys
        from matcher.worker.celery_app import CRAWL_QUEUE

        lock = Keys(PREFIX).crawl(SITE).recrawl_lock
        broker = self._broker()

        def idle() -> bool:
            self.check_alive()
            return not (
                broker.llen(CRAWL_QUEUE) or broker.hlen("unacked") or self.index.exists(lock)
            )

        def settled() -> bool:
            return idle() and not time.sleep(0.5) and idle()

        wait_for(settled, self.settings.crawl_timeout, "the last incremental crawl")

    def pending(self) -> int:
        return self.store.page_marks.pending_page_count()

    def stop(self) -> None:
        stop_children(self.children, self.client, self.settings.mongo_db)
        if self.redis_proc is not None:
            self.redis_proc.terminate()
            self.redis_proc.wait(10)


def site_config(site: NovelSite, recrawl: str) -> Any:
    from matcher.sites.site_config import SiteConfig

    return SiteConfig(
        name=SITE, start_urls=(site.url("/book/"),), max_depth=3, schedule="never", recrawl=recrawl
    )


def crawl_cost(dep: Deployment, site: NovelSite, incremental: bool) -> dict[str, Any]:
    """One crawl by the production job (subprocess), and what it cost the site."""
    from matcher.worker import jobs

    started, wall = time.time(), time.perf_counter()
    if incremental:
        result = jobs.recrawl_site(dep.settings, dep.store, SITE, environ=dep.env)
    else:
        result = jobs.crawl_site(dep.settings, dep.store, SITE, environ=dep.env)
    seconds = time.perf_counter() - wall
    hits = site.hits_since(started)
    return {
        "seconds": seconds,
        "requests": len(hits),
        "bytes": sum(h.bytes for h in hits),
        "not_modified": sum(h.status == 304 for h in hits),
        "result": {k: v for k, v in result.items() if k != "run_id"},
    }


def matched_at(dep: Deployment, pairs: dict[tuple[str, str], Any]) -> dict[tuple[str, str], float]:
    """``first_seen`` (epoch seconds) of the match records of the (url, work id) pairs."""
    urls = sorted({u for u, _ in pairs})
    works = sorted({w for _, w in pairs})
    found = {}
    for m in dep.store.matches.of_pairs(urls, works):
        key = (m["url"], str(m["work_id"]))
        if key in pairs:
            seen = m["first_seen"]
            found[key] = (seen if seen.tzinfo else seen.replace(tzinfo=UTC)).timestamp()
    return found


def interval_seconds(spec: str) -> float:
    from matcher.worker.schedules import parse_schedule

    sched = parse_schedule(spec, SITE)
    return sched.run_every.total_seconds() if hasattr(sched, "run_every") else 3600.0


def run_round(
    args: argparse.Namespace, dep: Deployment, site: NovelSite, novel: dict[str, Any], r: int
) -> dict[str, Any]:
    rng = random.Random(f"{args.seed}:{r}:release")
    existing, new, late = novel["existing"], novel["new"], novel["late"][r]
    site.withdraw(list(site.chapters))
    dep.reset()
    for n, (title, text, _) in existing.items():
        site.publish(n, title, text)
    site.publish(late[0], late[1], late[2])  # on the site, its work not registered yet
    config = site_config(site, args.recrawl)
    dep.store.sites.save_site(config)

    full = crawl_cost(dep, site, incremental=False)
    wait_for(lambda: (dep.check_alive(), dep.pending() == 0)[1], 900, "the first pages' matching")
    quiet = crawl_cost(dep, site, incremental=True)
    log(
        f"round {r + 1}: full crawl {full['requests']} requests {full['seconds']:.1f} s, "
        f"incremental {quiet['requests']} requests {quiet['seconds']:.1f} s"
    )

    # registration: a chapter crawled before its work is registered
    url = site.url(f"/book/{late[0]}.html")
    started = time.time()
    work_id = dep.engine.add_work(late[2], title=late[1], source=f"late-{r}.txt")
    added = time.time() - started
    dep.app.send_task("fptrack.match_work_against_pages", args=[work_id])
    key = (url, work_id)
    wait_for(lambda: key in matched_at(dep, {key: 1}), 300, "the registered chapter's match")
    registered = matched_at(dep, {key: 1})[key] - started
    log(f"round {r + 1}: registered chapter matched {registered:.1f} s after registration")

    # releases
    dep.schedules.sync_site(config)
    offsets = sorted(rng.uniform(0, args.window) for _ in new)
    released: dict[tuple[str, str], float] = {}
    begin = time.monotonic()
    for offset, (n, (title, text, wid)) in zip(offsets, new.items(), strict=True):
        while time.monotonic() - begin < offset:
            time.sleep(0.2)
            dep.check_alive()
        released[(site.url(f"/book/{n}.html"), wid)] = site.publish(n, title, text)
    limit = args.window + 3 * interval_seconds(args.recrawl) + 300
    found: dict[tuple[str, str], float] = {}
    while time.monotonic() - begin < limit:
        found = matched_at(dep, released)
        if len(found) == len(released):
            break
        dep.check_alive()
        time.sleep(0.5)
    dep.schedules.remove_site(SITE)
    dep.wait_crawls_done()
    delays = sorted(found[k] - at for k, at in released.items() if k in found)
    beat_runs = [  # every incremental crawl but the quiet one measured above
        c.get("stats") or {} for c in dep.store.crawls.runs_of_kind("incremental")
    ][1:]
    log(
        f"round {r + 1}: {len(delays)}/{len(released)} chapters matched, delays "
        + ", ".join(f"{d:.0f}" for d in delays)
        + " s"
    )
    return {
        "delays_s": delays,
        "missed": len(released) - len(delays),
        "p50_s": percentile(delays, 0.5),
        "register_s": registered,
        "add_work_s": added,
        "full": full,
        "incremental": quiet,
        "recrawls": len(beat_runs),
        "recrawl_new": sum(c.get("fptrack/incremental/new", 0) for c in beat_runs),
        "recrawl_unchanged": sum(c.get("fptrack/incremental/unchanged", 0) for c in beat_runs),
    }


def build_novel(args: argparse.Namespace, dep: Deployment) -> dict[str, Any]:
    """Texts of every chapter; works of the existing and new ones registered."""
    total = args.existing + args.chapters + args.rounds
    texts = chapter_texts(total, args.seed)
    novel: dict[str, Any] = {"existing": {}, "new": {}, "late": []}
    for i, text in enumerate(texts):
        n = i + 1
        title = f"第{n}章"
        if n <= args.existing + args.chapters:
            wid = dep.engine.add_work(text, title=title, source=f"chapter-{n}.txt")
            part = "existing" if n <= args.existing else "new"
            novel[part][n] = (title, text, wid)
        else:
            novel["late"].append((n, title, text))
    return novel


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.release_bench",
        description="Time from a new chapter on a pirate site to its match record, with an "
        "incremental crawl on a short schedule run by real beat; crawl costs; registration.",
    )
    parser.add_argument(
        "--chapters", type=int, help=f"new chapters per round (default {DEFAULTS['chapters']})"
    )
    parser.add_argument(
        "--window",
        type=float,
        help=f"seconds over which they appear (default {DEFAULTS['window']:g})",
    )
    parser.add_argument(
        "--existing",
        type=int,
        help=f"chapters on the site at first (default {DEFAULTS['existing']})",
    )
    parser.add_argument(
        "--recrawl", help=f"the site's incremental crawl schedule (default {DEFAULTS['recrawl']!r})"
    )
    parser.add_argument("--rounds", type=int, help=f"rounds (default {DEFAULTS['rounds']})")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--json", type=Path, help="write the figures here (JSON)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 chapters over 10 s, 8 existing, 'every 10s', 1 round (a shorter schedule)",
    )
    parser.add_argument("--keep", type=Path, help="keep the processes' logs in this folder")
    args = parser.parse_args(argv)
    for name, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.chapters < 1 or args.rounds < 1 or args.existing < 1 or args.window < 0:
        parser.error("--chapters, --rounds and --existing must be >= 1, --window >= 0")
    from matcher.sites.site_config import SiteConfig, SiteConfigError

    try:
        SiteConfig(name="x", start_urls=("http://127.0.0.1/",), recrawl=args.recrawl)
    except SiteConfigError as exc:
        parser.error(str(exc))
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    mode = "quick (shorter schedule)" if args.quick else "full"
    log(
        f"{mode}: {args.rounds} round(s) of {args.chapters} chapters over {args.window:g} s, "
        f"{args.existing} existing, schedule {args.recrawl!r}"
    )
    with tempfile.TemporaryDirectory(prefix="fptrack-release-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        dep = Deployment(work)
        site = NovelSite().start()
        try:
            dep.start(args.recrawl)
            novel = build_novel(args, dep)
            rounds = [run_round(args, dep, site, novel, r) for r in range(args.rounds)]
        finally:
            site.stop()
            dep.stop()
    result = summarise(args, rounds)
    print_report(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return result


def summarise(args: argparse.Namespace, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    delays = sorted(d for r in rounds for d in r["delays_s"])

    def median(path: tuple[str, ...]) -> float:
        values = []
        for r in rounds:
            value: Any = r
            for key in path:
                value = value[key]
            values.append(value)
        return statistics.median(values)

    cost = {
        kind: {m: median((kind, m)) for m in ("requests", "bytes", "seconds")}
        for kind in ("full", "incremental")
    }
    ratio = {
        m: cost["incremental"][m] / cost["full"][m] if cost["full"][m] else math.nan
        for m in ("requests", "bytes", "seconds")
    }
    return {
        "mode": "quick" if args.quick else "full",
        "recrawl": args.recrawl,
        "rounds": args.rounds,
        "chapters": len(delays) + sum(r["missed"] for r in rounds),
        "missed": sum(r["missed"] for r in rounds),
        "p50_s": percentile(delays, 0.5),
        "p90_s": percentile(delays, 0.9),
        "max_s": max(delays) if delays else math.nan,
        "round_p50_median_s": statistics.median(r["p50_s"] for r in rounds),
        "register_s": median(("register_s",)),
        "add_work_s": median(("add_work_s",)),
        "cost": cost,
        "ratio": ratio,
        "recrawls": sum(r["recrawls"] for r in rounds),
        "targets": TARGETS,
        "host": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "details": rounds,
    }


def print_report(r: dict[str, Any]) -> None:
    print(
        f"release speed ({r['mode']}; incremental crawl {r['recrawl']!r}; {r['rounds']} round(s),"
        f" {r['chapters']} chapters, {r['missed']} missed)"
    )
    target = r["targets"]["p50_s"]
    print(f"  chapter -> match   p50 {r['p50_s']:7.1f} s   (target < {target:.0f} s)")
    print(f"                     p90 {r['p90_s']:7.1f} s")
    print(f"                     max {r['max_s']:7.1f} s")
    print(f"  median of the rounds' p50  {r['round_p50_median_s']:.1f} s")
    print(
        f"  registered chapter -> match  {r['register_s']:.2f} s "
        f"(target < {r['targets']['register_s']:.0f} s; add_work {r['add_work_s']:.2f} s)"
    )
    print("  crawl cost          requests      bytes   seconds")
    for kind in ("full", "incremental"):
        c = r["cost"][kind]
        print(f"    {kind:<16}{c['requests']:>10.0f} {c['bytes']:>10.0f} {c['seconds']:>9.1f}")
    q = r["ratio"]
    print(f"    ratio incr/full {q['requests']:>10.3f} {q['bytes']:>10.3f} {q['seconds']:>9.3f}")
    print(f"  incremental crawls run by beat: {r['recrawls']}")
    if r["mode"] == "quick":
        print("  (quick: a shorter schedule; these figures do not test the 2-minute target)")


if __name__ == "__main__":
    try:
        main()
    except (ChildFailed, OSError) as exc:
        print(f"release_bench: {' '.join(str(exc).split())}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
