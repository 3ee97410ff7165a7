"""Health: the start check of services, the watch of running ones, and ``fptrack check``.

:func:`require_stores` is what ``fptrack worker``, ``beat`` and ``admin serve`` run first:
MongoDB, Redis and the broker must answer (within ``wait`` seconds, retried), else the
command exits 1 with one line naming the server (:mod:`admin.outage`).

:class:`Watch` runs beside ``fptrack worker`` and ``admin serve`` once they started: a
server that stops answering is named in one line at once (``fptrack worker: waiting for
Redis at URL (cause)``), and again when it answers; the service itself rides the outage out
(Celery reconnects to the broker, tasks retry, the admin's requests fail until it is back).

:func:`checks` is ``fptrack check``: MongoDB, Redis, the broker, the workers, beat, the
indexes and the schedules, each healthy or not with a line saying why (a server that does
not answer is named, the one that failed); the command exits 0 only when every one is
healthy. A subset can be asked for (``fptrack check workers``: the checks it needs run too).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TextIO

import pymongo.errors
import redis
from kombu.exceptions import OperationalError

from admin import outage
from admin.context import Context, redis_client
from admin.errors import CommandError
from admin.human import duration, size
from matcher.errors import MatcherError, Retryable, StoreUnavailable
from matcher.keys import Keys
from matcher.store import now

if TYPE_CHECKING:
    from celery import Celery

RETRY_EVERY_S = 1.0
WORKER_PING_S = 1.0
WATCH_EVERY_S = 1.0
"""How often :class:`Watch` asks each server while it answers (and while it does not)."""
STARTING_GRACE_S = 120
"""How long a worker or beat that started is reported ``starting`` rather than failed while
it boots (the life of its :meth:`matcher.keys.Keys.starting` record)."""
FAILED_CRAWL_WINDOW = timedelta(hours=24)
"""``fptrack check crawls`` reports the crawls that failed within this window."""
PENDING_AFTER = timedelta(minutes=30)
"""``fptrack check crawls`` reports pages still waiting for their match after this long."""


@dataclass(frozen=True)
class Check:
    """One line of ``fptrack check``."""

    name: str
    ok: bool
    detail: str
    starting: bool = False
    """Not ok, but booting: a process started less than :data:`STARTING_GRACE_S` ago."""

    @property
    def state(self) -> str:
        """``ok``, ``starting`` or ``FAIL``."""
        return "ok" if self.ok else ("starting" if self.starting else "FAIL")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "state": self.state, "detail": self.detail}


@dataclass(frozen=True)
class Server:
    """A server the services need: its name as :mod:`admin.outage` writes it, its URL, and a
    probe that raises when it does not answer."""

    service: str
    url: str
    probe: Callable[[], Any]

    def failure(self) -> BaseException | None:
        """Why the server does not answer (``None``: it does)."""
        try:
            self.probe()
        except (CommandError, Retryable, pymongo.errors.PyMongoError, redis.RedisError) as exc:
            return exc
        except (OperationalError, OSError) as exc:
            return exc
        return None

    def outage_line(self, error: BaseException) -> str:
        """``<service> unreachable at <url> (<cause>): start it, or set <variable>``."""
        if isinstance(error, CommandError):  # the client's own probe wrote the line
            return str(error)
        return outage.line(self.service, self.url, error)


def servers(ctx: Context) -> list[Server]:
    """MongoDB, the Redis of ``FPTRACK_REDIS_URL`` (redbeat, locks, frontiers), and the
    broker and the indexes' Redis where they are other servers."""
    settings = ctx.settings
    standalone = redis_client(settings.redis_url, "FPTRACK_REDIS_URL")
    found = [
        Server("MongoDB", settings.mongo_uri, lambda: ctx.mongo_client.admin.command("ping")),
        Server("Redis", settings.redis_url, standalone.ping),
    ]
    broker = settings.celery_broker
    if broker != settings.redis_url:
        client = redis_client(broker, "FPTRACK_BROKER_URL")
        found.append(Server("the Celery broker", broker, client.ping))
    index = settings.index_redis.url
    if index != settings.redis_url:
        found.append(Server("the index Redis", index, lambda: ctx.redis_client.ping()))
    return found


def store_problems(ctx: Context, found: list[Server] | None = None) -> list[str]:
    """The outage line of each server of :func:`servers` that does not answer."""
    problems = []
    for server in found if found is not None else servers(ctx):
        error = server.failure()
        if error is not None:
            problems.append(server.outage_line(error))
    return problems


def require_stores(ctx: Context, wait: float) -> None:
    """Return once MongoDB, Redis and the broker answer; after ``wait`` seconds, fail.

    Raises :class:`CommandError` with the first outage line (exit status 1).
    """
    deadline = time.monotonic() + max(0.0, wait)
    found = servers(ctx)
    while True:
        problems = store_problems(ctx, found)
        if not problems:
            return
        if time.monotonic() >= deadline:
            waited = f" (waited {duration(wait)})" if wait > 0 else ""
            raise CommandError(problems[0] + waited)
        time.sleep(RETRY_EVERY_S)


class Watch:
    """A daemon thread that names, in one line each, a server that stops answering and the
    moment it answers again (see the module docs)."""

    def __init__(
        self, ctx: Context, service: str, every: float = WATCH_EVERY_S, out: TextIO | None = None
    ) -> None:
        self.service = service
        self.every = every
        self.out = out
        self.servers = servers(ctx)
        self.down: dict[str, float] = {}
        """URL -> when each server that does not answer stopped answering (monotonic)."""

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name=f"{self.service} watch", daemon=True)
        thread.start()
        return thread

    def _run(self) -> None:
        while True:
            self.look()
            time.sleep(self.every)

    def look(self) -> list[str]:
        """Ask every server once; print (and return) a line for each change."""
        lines = []
        for server in self.servers:
            error = server.failure()
            where = f"{server.service} at {outage.redact(server.url)}"
            if error is not None and server.url not in self.down:
                self.down[server.url] = time.monotonic()
                lines.append(f"waiting for {where} ({outage.cause(error)})")
            elif error is None and server.url in self.down:
                waited = time.monotonic() - self.down.pop(server.url)
                lines.append(f"{where} answers again (after {duration(round(waited))})")
        for line in lines:
            print(f"fptrack {self.service}: {line}", file=self.out or sys.stderr, flush=True)
        return lines


# fptrack check -----------------------------------------------------------------------


def _down(service: str, uri: str, probe: Callable[[], Any]) -> str | None:
    """``None`` when ``probe`` succeeds, else the outage line of ``service``."""
    server = Server(service, uri, probe)
    error = server.failure()
    return None if error is None else server.outage_line(error)


def active_matches(ctx: Context) -> int:
    """The active matches (those ``fptrack matches list`` lists; archived and inactive
    records are not copies found now), as the dashboard counts them: the tallies, a read
    of a few documents whatever the number of matches (:mod:`matcher.store.tallies`)."""
    from matcher.store.tallies import counts

    return sum(counts(ctx.ops.tally_total()).values())


def check_mongodb(ctx: Context) -> Check:
    settings = ctx.settings
    problem = _down("MongoDB", settings.mongo_uri, lambda: ctx.mongo_client.admin.command("ping"))
    if problem:
        return Check("mongodb", False, problem)
    db = ctx.mongo_client[settings.mongo_db]
    version = ctx.mongo_client.server_info().get("version", "?")
    counts = ", ".join(
        f"{db[name].estimated_document_count()} {name}" for name in ("works", "pages")
    )
    counts += f", {active_matches(ctx)} active matches"
    detail = f"{outage.redact(settings.mongo_uri)} (server {version}), database {db.name}: {counts}"
    return Check("mongodb", True, detail)


def check_redis(ctx: Context) -> Check:
    """The Redis of ``FPTRACK_REDIS_URL`` (redbeat, locks, crawl frontiers, and the indexes
    unless ``FPTRACK_INDEX_REDIS_URL`` puts them elsewhere, which must answer too)."""
    settings = ctx.settings
    url = settings.redis_url
    client = redis_client(url, "FPTRACK_REDIS_URL")
    problem = _down("Redis", url, client.ping)
    if problem:
        return Check("redis", False, problem)
    info = client.info("server") | client.info("memory")
    detail = (
        f"{outage.redact(url)} (Redis {info.get('redis_version', '?')}), "
        f"{size(int(info.get('used_memory', 0)))} used"
    )
    index = settings.index_redis.url
    if index != url:
        problem = _down("the index Redis", index, lambda: ctx.redis_client.ping())
        if problem:
            return Check("redis", False, problem)
        detail += f"; indexes at {outage.redact(index)}"
    return Check("redis", True, detail)


def check_broker(ctx: Context) -> Check:
    from matcher.celery_app import CRAWL_QUEUE, PAGE_QUEUE

    url = ctx.settings.celery_broker
    client = redis_client(url, "FPTRACK_BROKER_URL")
    problem = _down("the Celery broker", url, client.ping)
    if problem:
        return Check("broker", False, problem)
    queued = ", ".join(f"{client.llen(q)} in {q}" for q in (PAGE_QUEUE, CRAWL_QUEUE))
    return Check("broker", True, f"{outage.redact(url)}: {queued}, {client.hlen('unacked')} taken")


def ping_workers(app: Celery, timeout: float = WORKER_PING_S) -> list[str]:
    """The names of the workers that answer a ping within ``timeout`` seconds, returned as
    soon as every worker that can answer did.

    Those are the queues bound to Celery's broadcast exchange (``celery.pidbox``) in the
    broker: kombu's binding table, one entry per worker consuming it, added as it starts
    and removed as it stops. The ping waits for that many replies (``limit``), so with every
    worker up it returns in milliseconds instead of after the whole timeout; a worker that
    does not answer (busy, or killed, which leaves its entry behind) makes it wait the
    timeout, as an unlimited ping always does. An empty table (none bound, or the broker
    lost it) leaves the ping unlimited. A worker that bound while the ping was out never
    received it (the broadcast goes to those listening): it is pinged again, once, so one
    that came up meanwhile is not reported missing."""
    control = app.control
    exchange = control.mailbox.exchange.name
    with app.connection_or_acquire() as conn:
        bound = set(conn.default_channel.get_table(exchange))
        replies = control.ping(timeout=timeout, limit=len(bound) or None, connection=conn)
        names = {name for reply in replies for name in reply}
        now_bound = set(conn.default_channel.get_table(exchange))
        if now_bound - bound:  # bound meanwhile: they did not hear the first ping
            replies = control.ping(timeout=timeout, limit=len(now_bound), connection=conn)
            names.update(name for reply in replies for name in reply)
    return sorted(names)


def check_workers(ctx: Context, host: str | None = None) -> Check:
    """The workers that answer a ping (:func:`ping_workers`); with ``host``, only those of
    that machine (Celery names a worker ``NAME@HOST``)."""
    try:
        names = ping_workers(ctx.app)
    except (OperationalError, redis.RedisError, OSError) as exc:
        broker = ctx.settings.celery_broker
        return Check("workers", False, outage.line("the Celery broker", broker, exc))
    where = ""
    if host is not None:
        names = [name for name in names if name.rpartition("@")[2] == host]
        where = f" on {host}"
    if not names:
        booting = starting(ctx, "worker", host)
        if booting:
            return Check("workers", False, f"starting{where}: {booting}", starting=True)
        return Check(
            "workers",
            False,
            f"none{where} answered within {duration(WORKER_PING_S)}: start fptrack worker",
        )
    return Check("workers", True, f"{len(names)}{where} answered: {', '.join(names)}")


def check_beat(ctx: Context) -> Check:
    """A beat holds redbeat's lock, in the Redis of ``FPTRACK_REDIS_URL`` (never the
    indexes' Redis, which may be a cluster)."""
    from redbeat.schedulers import ensure_conf

    conf = ensure_conf(ctx.app)
    url = ctx.settings.redis_url  # redbeat's Redis (a server, or Sentinel's primary)
    client = redis_client(url, "FPTRACK_REDIS_URL")
    try:
        ttl = client.pttl(conf.lock_key)
    except redis.RedisError as exc:
        return Check("beat", False, outage.line("Redis", url, exc))
    if ttl < 0:
        booting = starting(ctx, "beat")
        if booting:
            return Check("beat", False, f"starting: {booting}", starting=True)
        return Check("beat", False, "not running (nobody holds redbeat's lock): start fptrack beat")
    return Check("beat", True, f"running (holds redbeat's lock, {duration(ttl / 1000)} left)")


def mark_starting(ctx: Context, service: str) -> Callable[[], None]:
    """Record that ``service`` (``worker``, ``beat``) starts on this machine, for
    :data:`STARTING_GRACE_S` seconds at most; returns what to call once it is up."""
    key = Keys(ctx.settings.redis_prefix).starting(service, this_host(), os.getpid())
    client = redis_client(ctx.settings.redis_url, "FPTRACK_REDIS_URL")
    # the start check already waited for Redis; on an error only the "starting" note is lost
    with contextlib.suppress(redis.RedisError):
        client.set(key, now().isoformat(), ex=STARTING_GRACE_S)

    def up(**kwargs: Any) -> None:
        with contextlib.suppress(redis.RedisError):
            client.delete(key)

    return up


def starting(ctx: Context, service: str, host: str | None = None) -> str:
    """How many ``service`` processes (of ``host``, if given) started within the grace and
    are not up yet, and since when, in a few words ("" for none)."""
    keys = Keys(ctx.settings.redis_prefix)
    client = redis_client(ctx.settings.redis_url, "FPTRACK_REDIS_URL")
    try:
        found = [k.decode() for k in client.scan_iter(keys.starting_pattern(service), 100)]
        found = [k for k in found if host is None or k.split(":")[-2] == host]
        since = [v.decode() for v in client.mget(found) if v] if found else []
    except redis.RedisError:
        return ""
    if not since:
        return ""
    age = (now() - datetime.fromisoformat(min(since))).total_seconds()
    return (
        f"{len(since)} {service} process(es) started {duration(max(age, 0))} ago, not up yet"
        f" (grace {duration(STARTING_GRACE_S)})"
    )


def check_crawls(ctx: Context) -> Check:
    """Crawls that failed within :data:`FAILED_CRAWL_WINDOW`, pages pending their match for
    more than :data:`PENDING_AFTER`, and runs recorded ``running`` for longer than a crawl
    may run and its lease (``FPTRACK_CRAWL_TIMEOUT`` + ``FPTRACK_CRAWL_LEASE``: their
    processes are gone; beat's ``resume_crawls`` closes them)."""
    settings = ctx.settings
    at = now()
    try:
        failed = ctx.ops.failed_crawls(at - FAILED_CRAWL_WINDOW)
        pending = ctx.ops.pending_since(at - PENDING_AFTER)
        stale = ctx.ops.running_crawls_started_before(
            at - timedelta(seconds=settings.crawl_timeout + settings.crawl_lease)
        )
    except StoreUnavailable as exc:
        return Check("crawls", False, outage.line("MongoDB", settings.mongo_uri, exc))
    window = duration(FAILED_CRAWL_WINDOW.total_seconds())
    after = duration(PENDING_AFTER.total_seconds())
    problems = []
    if failed:
        sites = sorted({run["site"] for run in failed})
        last = failed[0]
        problems.append(
            f"{len(failed)} crawl(s) failed in the last {window}"
            f" ({', '.join(sites)}); last: {last['site']}: "
            + " ".join(str(last.get("error") or "no reason recorded").split())
        )
    if pending:
        problems.append(
            f"{pending} page(s) waiting for their match for over {after} (are the workers up?)"
        )
    if stale:
        sites = sorted({run["site"] for run in stale})
        problems.append(
            f"{len(stale)} crawl run(s) still recorded running past their time and lease"
            f" ({', '.join(sites)}): is beat up (resume_crawls)?"
        )
    if problems:
        return Check("crawls", False, "; ".join(problems))
    return Check(
        "crawls",
        True,
        f"no crawl failed in the last {window}, no page pending over"
        f" {after}, no run past its lease",
    )


def check_indexes(ctx: Context) -> Check:
    """Every tag group of the indexes holds its marker (:mod:`matcher.integrity`), or is
    being rebuilt; every owner the store says is indexed is in its Redis index, and only
    those; both sides' postings indexes hold the parameters of the settings (an index built
    by an earlier version, or with another ``FPTRACK_WINDOW_BUCKET_BITS``, needs a
    rebuild)."""
    from matcher.keys import TAG_GROUPS
    from matcher.schedules import HEAL_SECONDS

    indexes = ctx.indexes  # read without the matching engine
    try:
        snap = indexes.integrity.snapshot()
        rebuilding = indexes.integrity.state.rebuilding()
        stored = indexes.integrity.state.indexable()
        indexed = {"work": indexes.works.simhash.entries(), "page": indexes.pages.simhash.entries()}
        indexes.works.windows.records()
        indexes.pages.windows.records()
    except (MatcherError, ValueError) as exc:
        return Check("indexes", False, f"{exc}: run fptrack index rebuild")
    if rebuilding is not None:
        groups = len(rebuilding.get("groups") or ())
        since = rebuilding.get("since")
        took = f" for {duration((now() - since).total_seconds())}" if since else ""
        return Check(
            "indexes", False, f"rebuilding {groups} of {TAG_GROUPS} tag groups from the store"
            f"{took} (by {rebuilding['holder']}); matching waits for it",
        )  # fmt: skip
    if not snap.whole:
        return Check(
            "indexes", False, f"{len(snap.lost)} of {TAG_GROUPS} tag groups lost (Redis lost"
            f" their keys): the heal job rebuilds them within {HEAL_SECONDS} s, or run"
            " fptrack index rebuild --if-incomplete",
        )  # fmt: skip
    detail = "; ".join(
        f"{kind}s: {stored[kind]} stored, {indexed[kind]} indexed" for kind in ("work", "page")
    )
    if stored != indexed:
        return Check(
            "indexes", False, detail + " (if it persists, the heal job rebuilds the index)"
        )
    return Check("indexes", True, detail)


def check_schedules(ctx: Context) -> Check:
    """The fixed jobs and one crawl entry per scheduled site are saved in redbeat."""
    from matcher.schedules import (
        CRAWL_PREFIX,
        DAILY_DIGEST,
        DAILY_MATCH,
        DAILY_PRUNE,
        DAILY_REPORT,
        DELIVER_ALERTS,
        HEAL_INDEXES,
        REQUEUE_PENDING,
        RESUME_CRAWLS,
    )

    try:
        sites = ctx.ops.list_sites()
    except StoreUnavailable as exc:
        return Check("schedules", False, outage.line("MongoDB", ctx.settings.mongo_uri, exc))
    except MatcherError as exc:
        return Check("schedules", False, str(exc))
    try:
        names = {e["name"] for e in ctx.schedules.entries()}
    except Retryable as exc:  # redbeat's Redis, that of FPTRACK_REDIS_URL
        cause = exc.__cause__ or exc
        return Check("schedules", False, outage.line("Redis", ctx.settings.redis_url, cause))
    daily = {
        *(DAILY_MATCH, DAILY_REPORT, DAILY_PRUNE, DAILY_DIGEST, DELIVER_ALERTS),
        *(HEAL_INDEXES, REQUEUE_PENDING, RESUME_CRAWLS),
    }
    wanted = daily | {CRAWL_PREFIX + s.name for s in sites if s.schedule != "never"}
    missing = sorted(wanted - names)
    if missing:
        fix = "start fptrack beat (it saves the daily jobs)" if daily & set(missing) else ""
        fix = fix or "save the site again (fptrack sites add ... --name NAME)"
        return Check("schedules", False, f"missing {', '.join(missing)}: {fix}")
    crawls = len([n for n in names if n.startswith(CRAWL_PREFIX)])
    return Check("schedules", True, f"daily jobs and {crawls} site crawl(s) saved")


def check_evidence(ctx: Context) -> Check:
    """The trusted timestamps of the evidence (:mod:`matcher.stamping`), when a TSA is set:
    the last stamping run's failure, and files waiting longer than three runs' interval
    (is beat up?)."""
    settings = ctx.settings
    if not settings.tsa_url:
        return Check("evidence", True, "no trusted timestamps (FPTRACK_TSA_URL not set)")
    from matcher.stamping import STATE_KEY

    try:
        store = ctx.engine.store
        waiting, oldest = store.stamps.waiting_count(), store.stamps.oldest_waiting()
        last = store.state.get_state(STATE_KEY) or {}
    except StoreUnavailable as exc:
        return Check("evidence", False, outage.line("MongoDB", settings.mongo_uri, exc))
    late = timedelta(seconds=3 * settings.tsa_every)
    problems = []
    if last.get("error"):
        problems.append(f"the last stamping run failed: {last['error']}")
    if oldest is not None and now() - oldest > late:
        problems.append(
            f"{waiting} archive file(s) waiting for a timestamp, the oldest for over"
            f" {duration(late.total_seconds())} (is beat up?)"
        )
    if problems:
        return Check("evidence", False, "; ".join(problems))
    return Check("evidence", True, f"{waiting} archive file(s) waiting for the next stamping run")


CHECKS: tuple[Callable[[Context], Check], ...] = (
    check_mongodb,
    check_redis,
    check_broker,
    check_workers,
    check_beat,
    check_indexes,
    check_schedules,
    check_crawls,
    check_evidence,
)


NEEDS: dict[Callable[[Context], Check], tuple[str, ...]] = {
    check_workers: ("broker",),
    check_beat: ("redis",),
    check_indexes: ("mongodb", "redis"),
    check_schedules: ("mongodb", "redis"),
    check_crawls: ("mongodb",),
}
"""The checks that need others to have passed."""


def _name(run: Callable[..., Check]) -> str:
    return run.__name__.removeprefix("check_")


NAMES = tuple(_name(run) for run in CHECKS)
"""The checks' names, in the order they run (``fptrack check NAME...``)."""


def checks(ctx: Context, only: Collection[str] = (), host: str | None = None) -> list[Check]:
    """Every check (or those named in ``only``, and the ones they need); those that need a
    server that is down say so instead of running. ``host``: count only the workers of that
    machine (:func:`check_workers`)."""
    wanted = set(only or NAMES)
    for run in reversed(CHECKS):  # a check's needs come before it
        if _name(run) in wanted:
            wanted.update(NEEDS.get(run, ()))
    out: list[Check] = []
    for run in CHECKS:
        name = _name(run)
        if name not in wanted:
            continue
        down = [c.name for c in out if c.name in NEEDS.get(run, ()) and not c.ok]
        if down:
            out.append(Check(name, False, f"not checked: {' and '.join(down)} down"))
        elif run is check_workers:
            out.append(check_workers(ctx, host))
        else:
            out.append(run(ctx))
    return out


def this_host() -> str:
    """The host name Celery puts in the names of this machine's workers (``%h``)."""
    return socket.gethostname()
