"""The admin dashboard's response time at 10k and at 1M recorded matches, and a naive peer.

Run from the repository root as ``python -m bench.admin_bench`` (or ``python
bench/admin_bench.py``); ``--help`` lists the options. No server is needed: each size gets
its own in-memory mongomock store, the embedded scan's
(:func:`matcher.store.memory.memory_client`; indexes from ``Store.ensure_indexes()``), and
the engine's Redis client points at a port where nothing listens, so any Redis call from the
dashboard would fail the run.

Data, the same shape at both sizes: ``--sites`` sites (default 50, three of them
authorised, sizes skewed), ``--works`` works (default 2,000, popularity skewed), pages
fetched over the last ``--days`` days (default 90), one match per page or two (a quarter of
the pages), every review status (``authorised`` on the authorised sites), 5% of the pages'
matches no longer active; two crawl runs per site and a few task failures. Documents are
kept small (no page or work text, no evidence): about 1 KB of Python objects per match.

How each store is written (mongomock checks a unique index by scanning the collection at
every insert, so writing a million matches one at a time would take days):

- the small store (``--small``, default 10,000): works and pages are inserted in bulk
  before the indexes are built, their tallies sent by :class:`matcher.store.tallies.Changes`
  (the code the store's own writes use); then every match goes through the real
  :meth:`matcher.store.matches.Matches.upsert_match` one at a time (so the tallies are kept by the
  write path for real) and the inactive ones through ``deactivate_matches``. Then
  :func:`matcher.store.tallies.recount` rebuilds the tallies and the benchmark checks that it
  finds exactly what the writes kept (``recount_agrees``), which is what makes the bulk
  path of the large store equivalent;
- the large store (``--large``, default 1,000,000): works, pages and match documents are
  inserted with ``insert_many`` in chunks of ``--chunk``, then the indexes are built, then
  ``recount(db)`` computes the tallies.

The store's cursors step through their results by index
(:class:`matcher.store.memory.LinearCursor`): mongomock's own copy the rest of their results
at every step, which for the recount of a million matches would take hours.

Timing: the real Flask app of each store (``create_app``) is served by werkzeug's
``make_server`` in a thread on 127.0.0.1 (HTTP/1.1, one keep-alive connection); a client on
``http.client`` logs in through the form and times ``--requests`` GETs of ``/`` (the
dashboard, rendered with its charts), after ``--warmup`` untimed ones, from sending the
request to reading the whole body. Once both stores are built, every object alive is moved
out of the cyclic garbage collector's reach (``gc.freeze()``): the mock database lives in
this process's heap, and a real server's would not be walked by the web process's collector.

Peer, in the same run: the dashboard's figures computed the naive way, by
``count_documents`` and aggregations over ``matches`` and ``pages`` (:func:`naive_summary`),
called in process ``--peer-calls`` times per size in each of the first ``--peer-rounds``
rounds (default 1: at 1M one call takes minutes), against the real
``DashboardService(store).summary()`` called in process ``--calls`` times. Both are checked
to give the same figures. mongomock copies a collection before each aggregation, so the
naive figures overstate what a MongoDB server would spend; what they show is the growth
with the data.

Targets: the p95 at the large size within 20% of the p95 at the small size, and under
300 ms, each PASS or MISS. mongomock reads no index: every query scans its whole collection,
so on it the dashboard costs in proportion to the number of tally documents (one per work,
site, day and site-day that has a match: bounded by the works, sites and days, not by the
matches, but more of them are filled at 1M than at 10k); the report prints both counts.
MongoDB reads the same few documents through the ``scope`` indexes instead.

Every measurement runs in ``--rounds`` rounds (default 3, the order of the sizes
alternating); medians are reported with [min-max]. ``--json OUT`` writes
``dashboard_p95_ms_10k`` and ``dashboard_p95_ms_1m`` (the small and large sizes, whatever
``--small`` and ``--large`` are), ``p95_ratio`` and the details. ``--quick`` is the smoke
run: 1,000 and 10,000 matches, 20 requests, one round.
"""

from __future__ import annotations

import argparse
import bisect
import gc
import http.client
import itertools
import json
import os
import platform
import random
import re
import resource
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bson import ObjectId
from flask import Flask
from werkzeug.serving import WSGIRequestHandler

from admin.context import Context
from admin.services.accounts import Users
from admin.services.dashboard import SITE_TRENDS, TOP, TREND_DAYS, DashboardService
from admin.web.app import create_app
from matcher.index.redis_clients import COMMAND, connect_url
from matcher.matching.engine import Engine
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from matcher.store import STATUSES, Store, now, tallies
from matcher.store.memory import memory_client
from tests.servers.http_server import WSGIServer

DEFAULTS = {
    "small": 10_000,
    "large": 1_000_000,
    "requests": 200,
    "warmup": 20,
    "rounds": 3,
    "calls": 20,
    "peer_calls": 1,
    "peer_rounds": 1,
}
QUICK = {
    "small": 1_000,
    "large": 10_000,
    "requests": 20,
    "warmup": 3,
    "rounds": 1,
    "calls": 3,
    "peer_calls": 1,
    "peer_rounds": 1,
}
DEFAULT_SITES, DEFAULT_WORKS, DEFAULT_DAYS, DEFAULT_CHUNK = 50, 2_000, 90, 50_000
SLOTS = ("10k", "1m")
"""The JSON names of the small and large sizes (the issue's), whatever the sizes are."""
TARGET_DIFFERENCE = 0.20
TARGET_P95_MS = 300.0
AUTHORISED_SITES = 3
SECOND_MATCH = 0.25
INACTIVE = 0.05
STATUS_WEIGHTS = {"new": 45, "confirmed": 25, "takedown_sent": 20, "false_positive": 10}
USER, PASSWORD = "bench", "bench-password-1"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
DEAD_REDIS = "redis://127.0.0.1:1/0"


def log(message: str) -> None:
    print(f"[admin] {message}", file=sys.stderr, flush=True)


def size_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1_000 and n % 1_000 == 0:
        return f"{n // 1_000}k"
    return f"{n:,}"


def rss_mb() -> float:
    """The process's resident set now, MiB."""
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, min and max of ``values``."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def percentiles_ms(samples: Sequence[float]) -> dict[str, float]:
    """p50, p95, p99 of durations in seconds, in ms."""
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50_ms": cuts[49] * 1e3, "p95_ms": cuts[94] * 1e3, "p99_ms": cuts[98] * 1e3}


# -- data -----------------------------------------------------------------------------------


@dataclass
class Shape:
    """Sites, works and the skewed weights the data are drawn with."""

    sites: list[str]
    authorised: frozenset[str]
    site_weights: list[float]
    works: list[ObjectId]
    titles: list[str]
    work_weights: list[float]
    days: int

    @classmethod
    def make(cls, sites: int, works: int, days: int, seed: int) -> Shape:
        rng = random.Random(seed)
        names = [f"site-{i + 1:02d}.example" for i in range(sites)]
        site_weights = list(itertools.accumulate(1 / (i + 1) ** 0.8 for i in range(sites)))
        work_weights = list(itertools.accumulate(1 / (i + 1) ** 0.7 for i in range(works)))
        ids = [ObjectId() for _ in range(works)]
        rng.shuffle(ids)  # popularity unrelated to insertion order
        return cls(
            sites=names,
            authorised=frozenset(names[-AUTHORISED_SITES:]),
            site_weights=site_weights,
            works=ids,
            titles=[f"作品 {i + 1}" for i in range(works)],
            work_weights=work_weights,
            days=days,
        )

    def pick(self, rng: random.Random, cumulative: list[float]) -> int:
        return bisect.bisect(cumulative, rng.random() * cumulative[-1])


def ms(when: datetime) -> datetime:
    """``when`` at MongoDB's millisecond precision."""
    return when.replace(microsecond=when.microsecond // 1000 * 1000)


def generate(
    n: int, shape: Shape, seed: int, end: datetime
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]], bool]]:
    """``(page document, its match records, inactive)`` until ``n`` matches are made.

    A record is what the engine gives :meth:`store.matches.upsert_match` (small: no evidence) plus
    ``status``, the status it is recorded with.
    """
    rng = random.Random(seed)
    statuses, cum_status = list(STATUS_WEIGHTS), list(itertools.accumulate(STATUS_WEIGHTS.values()))
    made = 0
    for seq in itertools.count(1):
        if made >= n:
            return
        site = shape.sites[shape.pick(rng, shape.site_weights)]
        fetched = ms(end - timedelta(seconds=rng.random() * shape.days * 86_400))
        url = f"https://{site}/book/{seq}.html"
        page = {
            "_id": ObjectId(),
            "url": url,
            "seq": seq,
            "site": site,
            "title": "",
            "content_hash": f"{seq:016x}",
            "status": 200,
            "encoding": "utf-8",
            "fetched_at": fetched,
            "first_seen": fetched,
            "last_seen": fetched,
            "pending": False,
        }
        count = 2 if rng.random() < SECOND_MATCH and n - made >= 2 else 1
        chosen: list[int] = []
        while len(chosen) < count:
            work = shape.pick(rng, shape.work_weights)
            if work not in chosen:
                chosen.append(work)
        records = []
        for work in chosen:
            if site in shape.authorised:
                status = "authorised"
            else:
                status = statuses[bisect.bisect(cum_status, rng.random() * cum_status[-1])]
            records.append(
                {
                    "page_id": page["_id"],
                    "work_id": shape.works[work],
                    "work_title": shape.titles[work],
                    "url": url,
                    "site": site,
                    "score": round(0.3 + 0.7 * rng.random(), 3),
                    "last_seen": fetched,
                    "status": status,
                }
            )
        made += count
        yield page, records, rng.random() < INACTIVE


def work_docs(shape: Shape, end: datetime) -> list[dict[str, Any]]:
    registered = end - timedelta(days=shape.days + 30)
    return [
        {
            "_id": oid,
            "key": f"works/{i + 1}.txt",
            "seq": i + 1,
            "title": title,
            "author": "",
            "source": f"works/{i + 1}.txt",
            "owner": "",
            "tags": [],
            "text": "",
            "content_hash": f"w{i + 1:015x}",
            "registered_at": registered,
            "updated_at": registered,
            "first_seen": registered,
        }
        for i, (oid, title) in enumerate(zip(shape.works, shape.titles, strict=True))
    ]


def match_doc(record: dict[str, Any], inactive: bool) -> dict[str, Any]:
    """The document ``upsert_match`` would have stored for ``record``."""
    doc = {k: v for k, v in record.items() if k != "status"}
    doc.update(status=record["status"], first_seen=record["last_seen"], active=not inactive)
    return doc


def chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    while batch := list(itertools.islice(items, size)):
        yield batch


@dataclass
class Built:
    """One store, its context and app, and how it was made."""

    label: str
    ctx: Context
    app: Flask
    info: dict[str, Any]


def context(db: Any) -> Context:
    """A context over ``db`` whose Redis client has no server behind it, and no evidence
    archive (GridFS needs a real MongoDB client, and the bench stores no evidence)."""
    settings = Settings(redis_prefix="fptrack-admin-bench", archive="none")
    engine = Engine(settings, Store(db), connect_url(DEAD_REDIS, COMMAND))
    return Context(settings=settings, engine=engine)


class NoDispatch:
    """The dashboard starts nothing; any attempt fails the run."""

    def crawl(self, site: SiteConfig) -> str:
        raise RuntimeError("the benchmark starts no crawl")

    def work_added(self, work_id: str) -> None:
        raise RuntimeError("the benchmark registers no work")


def add_sites_and_runs(store: Store, shape: Shape, end: datetime, seed: int) -> None:
    """The sites, two crawl runs of each, and a few task failures."""
    rng = random.Random(seed + 7)
    for name in shape.sites:
        store.sites.save_site(
            SiteConfig(
                name=name,
                start_urls=(f"https://{name}/",),
                schedule="daily",
                authorised=name in shape.authorised,
            )
        )
        for run in range(2):
            started = end - timedelta(days=run, hours=rng.random() * 12)
            stats = {
                "fptrack/pages": rng.randrange(50, 5000),
                "fptrack/errors/http": rng.randrange(0, 20),
                "fptrack/errors/extract": rng.randrange(0, 5),
            }
            store.crawls.record_crawl(
                f"{name}-{run}",
                name,
                started_at=started,
                finished_at=started + timedelta(minutes=rng.randrange(2, 90)),
                outcome="finished",
                stats=stats,
            )
    for i in range(12):
        store.failure_log.record_failure("fptrack.process_page", str(ObjectId()), f"error {i}", 3)


def build_small(n: int, shape: Shape, seed: int, end: datetime, chunk: int) -> Built:
    """Pages and works in bulk, then every match through ``store.matches.upsert_match``."""
    started = time.perf_counter()
    db = memory_client()["fptrack_admin_bench"]
    store = Store(db)
    plan = list(generate(n, shape, seed, end))
    works = work_docs(shape, end)
    db.works.insert_many(works)
    for batch in chunks((page for page, _, _ in plan), chunk):
        db.pages.insert_many(batch)
    store.ensure_indexes()
    changes = tallies.Changes()
    changes.work(len(works))
    for page, _, _ in plan:
        changes.page(page["site"], page["fetched_at"], created=True)
    changes.apply(db)
    bulk_s = time.perf_counter() - started
    written = 0
    for page, records, inactive in plan:
        for record in records:
            status = record["status"]
            store.matches.upsert_match({k: v for k, v in record.items() if k != "status"}, status)
            written += 1
            if written % 1000 == 0:
                log(f"  {size_label(n)}: {written:,}/{n:,} matches written by upsert_match")
        if inactive:
            store.matches.deactivate_matches("page_id", page["_id"], keep=[])
    upsert_s = time.perf_counter() - started - bulk_s
    agrees, differences, recount_s = check_recount(db)
    ctx = context(db)
    add_sites_and_runs(ctx.store, shape, end, seed)
    info = {
        "matches": db.matches.count_documents({}),
        "method": "upsert_match one at a time (pages and works in bulk)",
        "upsert_match_s": upsert_s,
        "recount_s": recount_s,
        "recount_agrees": agrees,
        "recount_differences": differences,
    }
    return finish(size_label(n), ctx, info, started)


def build_large(n: int, shape: Shape, seed: int, end: datetime, chunk: int) -> Built:
    """Works, pages and matches with ``insert_many``, then the indexes, then ``recount``."""
    started = time.perf_counter()
    db = memory_client()["fptrack_admin_bench"]
    db.works.insert_many(work_docs(shape, end))
    written = 0
    for batch in chunks(generate(n, shape, seed, end), max(1, chunk // 2)):
        db.pages.insert_many([page for page, _, _ in batch])
        docs = [match_doc(r, inactive) for _, records, inactive in batch for r in records]
        db.matches.insert_many(docs)
        written += len(docs)
        if written // chunk != (written - len(docs)) // chunk:
            log(f"  {size_label(n)}: {written:,}/{n:,} matches inserted, RSS {rss_mb():,.0f} MiB")
    insert_s = time.perf_counter() - started
    Store(db).ensure_indexes()
    index_s = time.perf_counter() - started - insert_s
    tallies.recount(db)
    recount_s = time.perf_counter() - started - insert_s - index_s
    ctx = context(db)
    add_sites_and_runs(ctx.store, shape, end, seed)
    info = {
        "matches": db.matches.count_documents({}),
        "method": "insert_many in chunks, then ensure_indexes, then tallies.recount",
        "insert_many_s": insert_s,
        "ensure_indexes_s": index_s,
        "recount_s": recount_s,
    }
    return finish(size_label(n), ctx, info, started)


def finish(label: str, ctx: Context, info: dict[str, Any], started: float) -> Built:
    db = ctx.engine.store.db
    Users(ctx.engine.store).create(USER, PASSWORD, "viewer")
    app = create_app(ctx, dispatch=NoDispatch(), secret_key="admin-bench", schedules=False)
    info.update(
        pages=db.pages.count_documents({}),
        works=db.works.count_documents({}),
        tallies=sum(db[name].count_documents({}) for name in tallies.COLLECTIONS),
        build_s=time.perf_counter() - started,
        rss_mb_after=rss_mb(),
    )
    return Built(label, ctx, app, info)


def flat(doc: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A tally document's fields, nested ones dotted, zero counts left out."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        elif value != 0 or isinstance(value, bool):
            out[f"{prefix}{key}"] = value
    return out


def check_recount(db: Any) -> tuple[bool, int, float]:
    """Whether ``recount`` finds the tallies the writes kept; differing documents; seconds."""
    kept = {key: flat(d) for key, d in tallies.snapshot(db).items()}
    started = time.perf_counter()
    tallies.recount(db)
    seconds = time.perf_counter() - started
    rebuilt = {key: flat(d) for key, d in tallies.snapshot(db).items()}
    differing = sum(1 for key in kept.keys() | rebuilt.keys() if kept.get(key) != rebuilt.get(key))
    return differing == 0, differing, seconds


# -- the naive peer -------------------------------------------------------------------------


def naive_summary(store: Store) -> dict[str, Any]:
    """:meth:`admin.services.dashboard.DashboardService.summary`'s figures counted from the
    data every time."""
    db = store.db
    today = now().date()
    days = [(today - timedelta(days=TREND_DAYS - 1 - i)).isoformat() for i in range(TREND_DAYS)]
    since = datetime.fromisoformat(days[0]).replace(tzinfo=UTC)

    def per_day(field: str) -> dict[str, Any]:
        return {"$dateToString": {"format": "%Y-%m-%d", "date": f"${field}"}}

    by_status = {s: db.matches.count_documents({"active": True, "status": s}) for s in STATUSES}
    matches_by_day = {
        row["_id"]: row["n"]
        for row in db.matches.aggregate(
            [
                {"$match": {"first_seen": {"$gte": since}}},
                {"$group": {"_id": per_day("first_seen"), "n": {"$sum": 1}}},
            ]
        )
    }
    pages_by_day = {
        row["_id"]: row["n"]
        for row in db.pages.aggregate(
            [
                {"$match": {"fetched_at": {"$gte": since}}},
                {"$group": {"_id": per_day("fetched_at"), "n": {"$sum": 1}}},
            ]
        )
    }
    hit = {"active": True, "status": {"$nin": sorted(tallies.NOT_INFRINGING)}}

    def top(field: str) -> list[dict[str, Any]]:
        return list(
            db.matches.aggregate(
                [
                    {"$match": hit},
                    {"$group": {"_id": f"${field}", "n": {"$sum": 1}}},
                    {"$sort": {"n": -1}},
                    {"$limit": TOP},
                ]
            )
        )

    top_sites, top_works = top("site"), top("work_id")
    titles = {
        w["_id"]: w.get("title", "")
        for w in db.works.find({"_id": {"$in": [r["_id"] for r in top_works]}}, {"title": 1})
    }
    names = [r["_id"] for r in top_sites[:SITE_TRENDS]]
    trends: dict[str, dict[str, int]] = defaultdict(dict)
    for row in db.matches.aggregate(
        [
            {"$match": {"site": {"$in": names}, "first_seen": {"$gte": since}}},
            {"$group": {"_id": {"site": "$site", "day": per_day("first_seen")}, "n": {"$sum": 1}}},
        ]
    ):
        trends[row["_id"]["site"]][row["_id"]["day"]] = row["n"]
    health = []
    for site in store.sites.list_sites():
        last = store.crawls.last_crawls(site.name, 1)
        health.append({"site": site.name, "crawl": last[0] if last else None})
    return {
        "works": db.works.count_documents({}),
        "pages": db.pages.count_documents({}),
        "by_status": by_status,
        "infringing": sum(n for s, n in by_status.items() if s not in tallies.NOT_INFRINGING),
        "matches_by_day": [(d, matches_by_day.get(d, 0)) for d in days],
        "pages_by_day": [(d, pages_by_day.get(d, 0)) for d in days],
        "per_site": [(name, [(d, trends[name].get(d, 0)) for d in days]) for name in names],
        "top_sites": [(r["_id"], r["n"]) for r in top_sites],
        "top_works": [(titles.get(r["_id"], ""), r["n"], str(r["_id"])) for r in top_works],
        "health": health,
        "failures": db.failures.count_documents({}),
    }


def same_figures(naive: dict[str, Any], kept: dict[str, Any]) -> bool:
    """The totals and trends equal, the top lists' counts equal (ties may order apart)."""
    keys = ("works", "pages", "by_status", "infringing", "matches_by_day", "pages_by_day")
    if any(naive[k] != kept[k] for k in (*keys, "failures")):
        return False
    return [n for _, n in naive["top_sites"]] == [n for _, n in kept["top_sites"]] and [
        n for _, n, _ in naive["top_works"]
    ] == [n for _, n, _ in kept["top_works"]]


# -- serving and timing ---------------------------------------------------------------------


class QuietHandler(WSGIRequestHandler):
    """HTTP/1.1 (keep-alive) and no request log lines."""

    protocol_version = "HTTP/1.1"

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


class Served:
    """An app served by werkzeug on 127.0.0.1 in a thread, and a logged-in client of it."""

    def __init__(self, app: Flask) -> None:
        self.server = WSGIServer(app, threaded=False, request_handler=QuietHandler).start()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=600)
        self.cookies: dict[str, str] = {}

    def fetch(
        self, method: str, path: str, form: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """``(status, body)`` of one request on the kept connection, cookies kept."""
        headers = {"Host": f"127.0.0.1:{self.server.port}"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        for header in response.msg.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response.status, data

    def login(self) -> None:
        status, page = self.fetch("GET", "/login")
        found = CSRF.search(page.decode("utf-8"))
        if status != 200 or not found:
            raise RuntimeError(f"no login form (HTTP {status})")
        form = {"username": USER, "password": PASSWORD, "csrf_token": found.group(1)}
        status, _ = self.fetch("POST", "/login", form)
        if status != 302:
            raise RuntimeError(f"login refused (HTTP {status})")

    def dashboard(self) -> float:
        """Seconds of one GET / (whole body read)."""
        start = time.perf_counter()
        status, body = self.fetch("GET", "/")
        elapsed = time.perf_counter() - start
        if status != 200 or b'id="crawl-health"' not in body:
            raise RuntimeError(f"GET / answered HTTP {status} without the dashboard")
        return elapsed

    def close(self) -> None:
        self.conn.close()
        self.server.stop()


def calls(fn: Callable[[], object], count: int) -> list[float]:
    out = []
    for _ in range(count):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


# -- the run --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    shape = Shape.make(args.sites, args.works, args.days, args.seed)
    end = now()
    built = {}
    for slot, n, build in (("10k", args.small, build_small), ("1m", args.large, build_large)):
        log(f"building the {size_label(n)} store ({'upsert_match' if slot == '10k' else 'bulk'})")
        built[slot] = build(n, shape, args.seed, end, args.chunk)
        info = built[slot].info
        log(
            f"  {size_label(n)}: {info['matches']:,} matches, {info['pages']:,} pages, "
            f"{info['tallies']:,} tallies in {info['build_s']:.1f} s, "
            f"RSS {info['rss_mb_after']:,.0f} MiB"
        )
    gc.collect()
    gc.freeze()
    served = {slot: Served(b.app) for slot, b in built.items()}
    for client in served.values():
        client.login()
    samples: dict[str, dict[str, list[float]]] = {s: defaultdict(list) for s in SLOTS}
    agree: dict[str, bool] = {}
    try:
        for r in range(args.rounds):
            for slot in SLOTS if r % 2 == 0 else SLOTS[::-1]:
                b, client, row = built[slot], served[slot], samples[slot]
                log(f"round {r + 1}/{args.rounds}: {b.label}: {args.requests} x GET /")
                for _ in range(args.warmup):
                    client.dashboard()
                for name, value in percentiles_ms(
                    [client.dashboard() for _ in range(args.requests)]
                ).items():
                    row[name].append(value)
                board = DashboardService(b.ctx.store)
                row["summary_ms"].append(statistics.median(calls(board.summary, args.calls)) * 1e3)
                if r >= args.peer_rounds:
                    continue
                log(f"round {r + 1}/{args.rounds}: {b.label}: naive dashboard x {args.peer_calls}")
                naive, figures = [], {}
                for _ in range(args.peer_calls):
                    start = time.perf_counter()
                    figures = naive_summary(b.ctx.store)
                    naive.append(time.perf_counter() - start)
                row["naive_ms"].append(statistics.median(naive) * 1e3)
                agree[slot] = agree.get(slot, True) and same_figures(figures, board.summary())
    finally:
        for client in served.values():
            client.close()
        gc.unfreeze()
    return report_dict(args, built, samples, agree)


def report_dict(
    args: argparse.Namespace,
    built: dict[str, Built],
    samples: dict[str, dict[str, list[float]]],
    agree: dict[str, bool],
) -> dict[str, Any]:
    per_size: dict[str, Any] = {}
    for slot in SLOTS:
        figures = {name: spread(values) for name, values in samples[slot].items()}
        per_size[slot] = {
            "label": built[slot].label,
            **{k: figures[k]["median"] for k in figures},
            "spreads": figures,
            "naive_over_tallies": figures["naive_ms"]["median"] / figures["summary_ms"]["median"],
            "naive_agrees": agree[slot],
            "build": built[slot].info,
        }
    small, large = per_size["10k"]["p95_ms"], per_size["1m"]["p95_ms"]
    ratio = large / small
    met = {
        "difference": abs(ratio - 1) < TARGET_DIFFERENCE,
        "p95_ms": max(small, large) < TARGET_P95_MS,
    }
    return {
        "dashboard_p95_ms_10k": small,
        "dashboard_p95_ms_1m": large,
        "p95_ratio": ratio,
        "p95_difference": abs(ratio - 1),
        "targets": {"difference": TARGET_DIFFERENCE, "p95_ms": TARGET_P95_MS},
        "met": met,
        "naive_growth": per_size["1m"]["naive_ms"] / per_size["10k"]["naive_ms"],
        "summary_growth": per_size["1m"]["summary_ms"] / per_size["10k"]["summary_ms"],
        "recount_agrees": built["10k"].info["recount_agrees"],
        "sizes": {
            "10k": args.small,
            "1m": args.large,
            "sites": args.sites,
            "works": args.works,
            "days": args.days,
            "requests": args.requests,
            "warmup": args.warmup,
            "rounds": args.rounds,
            "calls": args.calls,
            "peer_calls": args.peer_calls,
            "peer_rounds": args.peer_rounds,
            "seed": args.seed,
        },
        "per_size": per_size,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
    }


def report(r: dict[str, Any]) -> str:
    sizes, per = r["sizes"], r["per_size"]
    small, large = per["10k"]["label"], per["1m"]["label"]
    lines = [
        f"admin dashboard benchmark: {small} and {large} matches, {sizes['sites']} sites, "
        f"{sizes['works']:,} works, {sizes['requests']} requests x {sizes['rounds']} rounds "
        f"({r['machine']}); medians of rounds [min-max]"
    ]
    for slot in SLOTS:
        b = per[slot]["build"]
        lines.append(
            f"  built {per[slot]['label']:>4}: {b['method']}: {b['build_s']:.1f} s, "
            f"{b['matches']:,} matches, {b['pages']:,} pages, {b['tallies']:,} tallies"
        )

    def cell(slot: str, name: str) -> str:
        s = per[slot]["spreads"][name]
        return f"{s['median']:>8.1f} [{s['min']:.1f}-{s['max']:.1f}]"

    lines.append(f"  {'GET / over HTTP, ms':<22} {'p50':>22} {'p95':>22} {'p99':>22}")
    for slot in SLOTS:
        row = " ".join(f"{cell(slot, n):>22}" for n in ("p50_ms", "p95_ms", "p99_ms"))
        lines.append(f"  {per[slot]['label']:<22} {row}")
    verdict = "PASS" if r["met"]["difference"] else "MISS"
    lines.append(
        f"  p95 {large} / {small}: {r['p95_ratio']:.3f} (difference {r['p95_difference']:.1%})"
        f"  target < {r['targets']['difference']:.0%}: {verdict}"
    )
    verdict = "PASS" if r["met"]["p95_ms"] else "MISS"
    worst = max(r["dashboard_p95_ms_10k"], r["dashboard_p95_ms_1m"])
    lines.append(
        f"  p95, worse size: {worst:.1f} ms  target < {r['targets']['p95_ms']:.0f} ms: {verdict}"
    )
    lines.append(
        "  in process, ms:        summary() from tallies    naive (count/aggregate)  naive/tallies"
    )
    for slot in SLOTS:
        lines.append(
            f"  {per[slot]['label']:<22} {cell(slot, 'summary_ms'):>24} "
            f"{cell(slot, 'naive_ms'):>24} {per[slot]['naive_over_tallies']:>13.0f}x"
        )
    lines.append(
        f"  growth {small} -> {large}: tallies x{r['summary_growth']:.2f}, "
        f"naive x{r['naive_growth']:.1f}"
    )
    lines.append(
        f"  checks: recount finds the tallies upsert_match kept: {r['recount_agrees']}; "
        f"naive figures = tallies' figures: {small} {per['10k']['naive_agrees']}, "
        f"{large} {per['1m']['naive_agrees']}; max RSS {r['max_rss_mb']:,.0f} MiB"
    )
    lines.append(
        f"  note: mongomock reads no index, so each dashboard query scans the whole tallies "
        f"collection ({per['10k']['build']['tallies']:,} documents at {small}, "
        f"{per['1m']['build']['tallies']:,} at {large}); MongoDB reads them by index"
    )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.admin_bench",
        description="The admin dashboard's p95 at 10k and 1M matches, against a naive peer.",
    )
    helps = {
        "small": "matches of the small store, written by upsert_match",
        "large": "matches of the large store, bulk-inserted then recounted",
        "requests": "timed GET / per size and round",
        "warmup": "untimed GET / before them",
        "rounds": "rounds",
        "calls": "in-process summary() calls per size and round",
        "peer_calls": "naive dashboard calls per size and round",
        "peer_rounds": "rounds that run the naive dashboard",
    }
    for name, value in DEFAULTS.items():
        flag = "--" + name.replace("_", "-")
        p.add_argument(
            flag,
            type=int,
            default=None,
            help=f"{helps[name]} (default {value:,}; quick {QUICK[name]:,})",
        )
    p.add_argument("--sites", type=int, default=DEFAULT_SITES, help="default %(default)s")
    p.add_argument("--works", type=int, default=DEFAULT_WORKS, help="default %(default)s")
    p.add_argument(
        "--days", type=int, default=DEFAULT_DAYS, help="days of data (default %(default)s)"
    )
    p.add_argument(
        "--chunk", type=int, default=DEFAULT_CHUNK, help="insert_many chunk (default %(default)s)"
    )
    p.add_argument("--seed", type=int, default=0, help="default %(default)s")
    p.add_argument("--quick", action="store_true", help="smoke sizes (see the module docstring)")
    p.add_argument(
        "--json",
        type=Path,
        default=None,
        metavar="OUT",
        help="write the figures here (default: none)",
    )
    args = p.parse_args(argv)
    sizes = QUICK if args.quick else DEFAULTS
    for name, value in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
        if getattr(args, name) < (0 if name == "warmup" else 1):
            p.error(f"--{name.replace('_', '-')} is too small")
    if args.sites <= AUTHORISED_SITES or args.works < 2 or args.days < 1 or args.chunk < 2:
        p.error(f"--sites must be > {AUTHORISED_SITES}, --works >= 2, --days >= 1, --chunk >= 2")
    if args.requests < 2:
        p.error("--requests must be at least 2 (percentiles)")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Build the stores, time the dashboard and the peer, print and return the figures."""
    args = parse_args(argv)
    result = run(args)
    print(report(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
