"""Health: the start check of services, the watch of running ones, and ``fptrack check``.

:func:`require_stores` is what ``fptrack worker``, ``beat`` and ``admin serve`` run first:
MongoDB, Redis and the broker must answer (within ``wait`` seconds, retried), else the
command exits 1 with one line naming the server (:mod:`admin.outage`).

:class:`Watch` runs beside ``fptrack worker`` and ``admin serve`` once they started: a
server that stops answering is named in one line at once (``fptrack worker: waiting for
Redis at URL (cause)``), and again when it answers; the service itself rides the outage out
(Celery reconnects to the broker, tasks retry, the admin's requests fail until it is back).

:func:`checks` is ``fptrack check``: MongoDB, Redis, the broker, the workers, beat, the
indexes, the schedules, the crawls and the evidence, each healthy or not with a line saying
why; the command exits 0 only when every one is healthy. It answers in seconds whatever
hangs: every server it needs is asked at once, each in a thread of its own, and one that
has not answered within :data:`PROBE_S` is named down (a server stopped with SIGSTOP
accepts connections and never answers); the checks run at once too, each as soon as the
servers it reads answered (one whose server is down says ``not checked: <server> down``,
naming only the servers that are down), and one still running after the deadline
(``--timeout``, :data:`~admin.health_limits.DEFAULT_TIMEOUT_S`) is reported failed
(:mod:`admin.bounded`). A subset can be asked for (``fptrack check workers``: the checks of
the servers it needs run too).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO

import redis
from kombu.exceptions import OperationalError

from admin import outage
from admin.bounded import bounded, done_within, started
from admin.context import CONNECT_TIMEOUT_S, Context, redis_client
from admin.errors import CommandError
from admin.health_limits import DEFAULT_TIMEOUT_S, FAILED_CRAWL_WINDOW, PENDING_AFTER
from admin.human import duration, size
from matcher.errors import MatcherError, Retryable, StoreUnavailable
from matcher.sites import crawl_runs

if TYPE_CHECKING:
    from celery import Celery

RETRY_EVERY_S = 1.0
WORKER_PING_S = 1.0
WORKER_PING_AGAIN_S = 4.0
"""How long a second ping waits when workers are bound to the broadcast exchange but none
answered the first within :data:`WORKER_PING_S` (a worker just up, or busy on a loaded
machine, answers late; a killed one, whose binding stays behind, never does)."""
WATCH_EVERY_S = 1.0
"""How often :class:`Watch` asks each server while it answers (and while it does not)."""
STARTING_GRACE_S = 120
"""How long a worker or beat that started is reported ``starting`` rather than failed while
it boots (the life of its :meth:`matcher.keys.Keys.starting` record)."""
PROBE_S = CONNECT_TIMEOUT_S
"""``fptrack check`` names a server down when it has not answered a ping within this long."""

MONGODB, REDIS, BROKER, INDEX_REDIS = "MongoDB", "Redis", "the Celery broker", "the index Redis"
"""The servers fptrack needs, by the role each plays (their names in :mod:`admin.outage`)."""


@dataclass(frozen=True)
class Check:
    """One line of ``fptrack check``."""

    name: str
    ok: bool
    detail: str
    starting: bool = False
    """Not ok, but booting: a process started less than :data:`STARTING_GRACE_S` ago."""
    catching_up: bool = False
    """Not ok, but nothing failed: pages crawled are still waiting for their match (since
    less than :data:`~admin.health_limits.PENDING_AFTER`), after an outage or a crawl."""

    @property
    def state(self) -> str:
        """``ok``, ``starting``, ``catching-up`` or ``FAIL``."""
        if self.ok:
            return "ok"
        return "starting" if self.starting else ("catching-up" if self.catching_up else "FAIL")

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
        except (CommandError, Retryable, redis.RedisError, OperationalError, OSError) as exc:
            return exc
        except Exception as exc:
            import pymongo.errors  # loaded already when the probe's driver raised it

            if isinstance(exc, pymongo.errors.PyMongoError):
                return exc
            raise
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
        Server(MONGODB, settings.mongo_uri, partial(_mongodb_answers, ctx)),
        Server(REDIS, settings.redis_url, standalone.ping),
    ]
    broker = settings.celery_broker
    if broker != settings.redis_url:
        client = redis_client(broker, "FPTRACK_BROKER_URL")
        found.append(Server(BROKER, broker, client.ping))
    index = settings.index_redis.url
    if index != settings.redis_url:
        found.append(Server(INDEX_REDIS, index, lambda: ctx.redis_client.ping()))
    return found


def _mongodb_answers(ctx: Context) -> None:
    """Raises unless MongoDB answers a ping and a read of its storage: a server whose storage
    failed (a full disk under WiredTiger) still answers pings, but every read with an internal
    error (:func:`matcher.errors.store_failing`), which its outage line then names."""
    client = ctx.mongo_client
    client.admin.command("ping")
    client[ctx.settings.mongo_db]["works"].estimated_document_count()


def roles(found: list[Server]) -> dict[str, Server]:
    """The server of each role (:data:`MONGODB`, :data:`REDIS`, :data:`BROKER`,
    :data:`INDEX_REDIS`) among ``found`` (:func:`servers`): the broker and the index Redis
    are the Redis of ``FPTRACK_REDIS_URL`` unless set apart."""
    by_role = {server.service: server for server in found}
    by_role.setdefault(BROKER, by_role[REDIS])
    by_role.setdefault(INDEX_REDIS, by_role[REDIS])
    return by_role


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


def active_matches(ctx: Context) -> int:
    """The active matches (those ``fptrack matches list`` lists; archived and inactive
    records are not copies found now), as the dashboard counts them: the tallies, a read
    of a few documents whatever the number of matches (:mod:`matcher.store.tallies`)."""
    from matcher.store.tallies import counts

    return sum(counts(ctx.store.dashboard.tally_total()).values())


def check_mongodb(ctx: Context) -> Check:
    """MongoDB's version, and the counts of works, pages and matches (once it answered)."""
    settings = ctx.settings
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
    unless ``FPTRACK_INDEX_REDIS_URL`` puts them elsewhere, which must answer too): its
    version and memory (once both answered)."""
    settings = ctx.settings
    url = settings.redis_url
    client = redis_client(url, "FPTRACK_REDIS_URL")
    info = client.info("server") | client.info("memory")
    detail = (
        f"{outage.redact(url)} (Redis {info.get('redis_version', '?')}), "
        f"{size(int(info.get('used_memory', 0)))} used"
    )
    index = settings.index_redis.url
    if index != url:
        detail += f"; indexes at {outage.redact(index)}"
    return Check("redis", True, detail)


def check_broker(ctx: Context) -> Check:
    """The tasks waiting in the broker's queues and taken by workers (once it answered)."""
    from matcher.worker.celery_app import CRAWL_QUEUE, PAGE_QUEUE

    url = ctx.settings.celery_broker
    client = redis_client(url, "FPTRACK_BROKER_URL")
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
    that came up meanwhile is not reported missing. When workers are bound but none answered,
    they are pinged once more for :data:`WORKER_PING_AGAIN_S` before the answer is none."""
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
        if not names and (bound or now_bound):
            again = control.ping(timeout=WORKER_PING_AGAIN_S, limit=1, connection=conn)
            names.update(name for reply in again for name in reply)
    return sorted(names)


def check_workers(ctx: Context, host: str | None = None, records: bool = True) -> Check:
    """The workers that answer a ping (:func:`ping_workers`); with ``host``, only those of
    that machine (Celery names a worker ``NAME@HOST``). When none does, those starting
    (:func:`starting`; not with ``records`` False: the Redis that holds the records does not
    answer)."""
    try:
        names = ping_workers(ctx.app)
    except (OperationalError, redis.RedisError, OSError) as exc:
        broker = ctx.settings.celery_broker
        return Check("workers", False, outage.line(BROKER, broker, exc))
    where = ""
    if host is not None:
        names = [name for name in names if name.rpartition("@")[2] == host]
        where = f" on {host}"
    if not names:
        booting = starting(ctx, "worker", host) if records else ""
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
        return Check("beat", False, outage.line(REDIS, url, exc))
    if ttl < 0:
        booting = starting(ctx, "beat")
        if booting:
            return Check("beat", False, f"starting: {booting}", starting=True)
        return Check("beat", False, "not running (nobody holds redbeat's lock): start fptrack beat")
    return Check("beat", True, f"running (holds redbeat's lock, {duration(ttl / 1000)} left)")


def mark_starting(ctx: Context, service: str) -> Callable[[], None]:
    """Record that ``service`` (``worker``, ``beat``) starts on this machine, for
    :data:`STARTING_GRACE_S` seconds at most; returns what to call once it is up."""
    from matcher.keys import Keys
    from matcher.store import now

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
    are not up yet, and since when, in a few words ("" for none, and when the Redis of
    ``FPTRACK_REDIS_URL``, which holds the records, does not answer within :data:`PROBE_S`:
    the workers' check reads it though their ping goes through the broker)."""
    from matcher.keys import Keys
    from matcher.store import now

    keys = Keys(ctx.settings.redis_prefix)
    client = redis_client(ctx.settings.redis_url, "FPTRACK_REDIS_URL")

    def records() -> list[str]:
        found = [k.decode() for k in client.scan_iter(keys.starting_pattern(service), 100)]
        found = [k for k in found if host is None or k.split(":")[-2] == host]
        return [v.decode() for v in client.mget(found) if v] if found else []

    try:
        since = bounded(records, PROBE_S, "reading the starting records")
    except (redis.RedisError, TimeoutError):
        return ""
    if not since:
        return ""
    age = (now() - datetime.fromisoformat(min(since))).total_seconds()
    return (
        f"{len(since)} {service} process(es) started {duration(max(age, 0))} ago, not up yet"
        f" (grace {duration(STARTING_GRACE_S)})"
    )


def check_crawls(ctx: Context) -> Check:
    """The crawl failures still to be seen to (:func:`matcher.sites.crawl_runs.open_failures`:
    failed within :data:`~admin.health_limits.FAILED_CRAWL_WINDOW`, their site still
    watched and not crawled successfully since, nobody acknowledged them), pages pending
    their match for more than :data:`~admin.health_limits.PENDING_AFTER`, and runs
    recorded ``running`` for longer than a crawl may run and its lease
    (``FPTRACK_CRAWL_TIMEOUT`` + ``FPTRACK_CRAWL_LEASE``: their processes are gone; beat's
    ``resume_crawls`` closes them). With none of these, pages crawled and still waiting
    for their match (since less than ``PENDING_AFTER``) make it ``catching-up``, with their
    count: the workers are matching what a crawl stored, or what waited out an outage."""
    from matcher.store import now

    settings = ctx.settings
    store = ctx.store
    at = now()
    since = at - FAILED_CRAWL_WINDOW
    try:
        failed = store.crawls.failed_crawls(since)
        unseen = crawl_runs.open_failures(
            failed, store.sites.creation_times(), store.crawls.last_finished(since)
        )
        late = store.page_marks.pending_since(at - PENDING_AFTER)
        pending = store.page_marks.pending_page_count()
        stale = store.crawls.running_crawls_started_before(
            at - timedelta(seconds=settings.crawl_timeout + settings.crawl_lease)
        )
    except StoreUnavailable as exc:
        return Check("crawls", False, outage.line(MONGODB, settings.mongo_uri, exc))
    window = duration(FAILED_CRAWL_WINDOW.total_seconds())
    after = duration(PENDING_AFTER.total_seconds())
    problems = []
    if unseen:
        sites = sorted({run["site"] for run in unseen})
        last = unseen[0]
        problems.append(
            f"{len(unseen)} crawl(s) failed in the last {window}"
            f" ({', '.join(sites)}); last: {last['site']}: "
            + " ".join(str(last.get("error") or "no reason recorded").split())
            + f" (once seen to: fptrack check --ack {' --ack '.join(sites)})"
        )
    if late:
        problems.append(
            f"{late} page(s) waiting for their match for over {after} (are the workers up?)"
        )
    if stale:
        sites = sorted({run["site"] for run in stale})
        problems.append(
            f"{len(stale)} crawl run(s) still recorded running past their time and lease"
            f" ({', '.join(sites)}): is beat up (resume_crawls)?"
        )
    if problems:
        return Check("crawls", False, "; ".join(problems))
    cleared = len(failed) - len(unseen)
    seen = f" but {cleared} seen to (acknowledged, crawled since or site removed)"
    fine = (
        f"no crawl failed in the last {window}{seen if cleared else ''}, no page pending over"
        f" {after}, no run past its lease"
    )
    if pending:
        return Check(
            "crawls",
            False,
            f"catching up: {pending} page(s) crawled waiting for their match; {fine}",
            catching_up=True,
        )
    return Check("crawls", True, fine)


def check_indexes(ctx: Context) -> Check:
    """Every tag group of the indexes holds its marker (:mod:`matcher.index.integrity`), or is
    being rebuilt; every owner the store says is indexed is in its Redis index, and only
    those; both sides' postings indexes hold the parameters of the settings (an index built
    by an earlier version, or with another ``FPTRACK_WINDOW_BUCKET_BITS``, needs a
    rebuild)."""
    from matcher.keys import TAG_GROUPS
    from matcher.store import now
    from matcher.worker.schedules import HEAL_SECONDS

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
    from matcher.worker.schedules import (
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
        sites = ctx.store.sites.list_sites()
    except StoreUnavailable as exc:
        return Check("schedules", False, outage.line(MONGODB, ctx.settings.mongo_uri, exc))
    except MatcherError as exc:
        return Check("schedules", False, str(exc))
    try:
        names = {e["name"] for e in ctx.schedules.entries()}
    except Retryable as exc:  # redbeat's Redis, that of FPTRACK_REDIS_URL
        cause = exc.__cause__ or exc
        return Check("schedules", False, outage.line(REDIS, ctx.settings.redis_url, cause))
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
    """The trusted timestamps of the evidence (:mod:`matcher.evidence.stamping`), when a TSA is set:
    the last stamping run's failure, and files waiting longer than three runs' interval
    (is beat up?)."""
    from matcher.store import now

    settings = ctx.settings
    if not settings.tsa_url:
        return Check("evidence", True, "no trusted timestamps (FPTRACK_TSA_URL not set)")
    from matcher.evidence.stamping import STATE_KEY

    try:
        store = ctx.store
        waiting, oldest = store.stamps.waiting_count(), store.stamps.oldest_waiting()
        last = store.state.get_state(STATE_KEY) or {}
    except StoreUnavailable as exc:
        return Check("evidence", False, outage.line(MONGODB, settings.mongo_uri, exc))
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


NEEDS: dict[str, tuple[str, ...]] = {
    "mongodb": (MONGODB,),
    "redis": (REDIS, INDEX_REDIS),
    "broker": (BROKER,),
    "workers": (BROKER,),
    "beat": (REDIS,),
    "indexes": (MONGODB, INDEX_REDIS),
    "schedules": (MONGODB, REDIS),
    "crawls": (MONGODB,),
    "evidence": (MONGODB,),
}
"""The servers each check reads, by role: it runs once they answered."""
SERVER_CHECKS = {MONGODB: "mongodb", REDIS: "redis", INDEX_REDIS: "redis", BROKER: "broker"}
"""The check that reports each server (it names the server when it does not answer)."""


def _name(run: Callable[..., Check]) -> str:
    return run.__name__.removeprefix("check_")


NAMES = tuple(_name(run) for run in CHECKS)
"""The checks' names, in the order they are reported (``fptrack check NAME...``)."""


def needs(name: str, ctx: Context) -> tuple[str, ...]:
    """The roles of the servers check ``name`` reads (:data:`NEEDS`; the evidence reads
    MongoDB only with a TSA set)."""
    if name == "evidence" and not ctx.settings.tsa_url:
        return ()
    return NEEDS[name]


class Probes:
    """The servers of some roles, each asked once (a ping), all at once, each in a thread
    of its own (:mod:`admin.bounded`); each answer is waited for until :data:`PROBE_S` after
    its ping went out, and a server that did not answer by then is down ("no answer in
    time"): a server stopped with SIGSTOP accepts connections and never answers, and a
    client's own timeouts and retries would wait for it 20 s a command. MongoDB's ping
    thread imports its driver first (pymongo and the store's modules), while the command
    goes on: its start-up is spent while the pings are out."""

    def __init__(self, ctx: Context, wanted: Collection[str], within: float = PROBE_S) -> None:
        self.roles = roles(servers(ctx))
        self.within = within
        self.since = time.monotonic()
        self.asked: dict[str, _Ping] = {}
        for role in wanted:
            server = self.roles[role]
            if server.url not in self.asked:
                self.asked[server.url] = _Ping(server, driver=role == MONGODB)

    def failure(self, server: Server) -> BaseException | None:
        """Why ``server`` does not answer (``None``: it answered in time)."""
        ping = self.asked[server.url]
        ping.out.wait()
        if not done_within(ping.future, ping.at + self.within - time.monotonic()):
            return TimeoutError(f"timed out: no answer within {duration(self.within)}")
        return ping.future.result()

    def down(self, wanted: Collection[str]) -> list[tuple[Server, BaseException]]:
        """The servers of the roles ``wanted`` that do not answer, each once, and why."""
        found: dict[str, tuple[Server, BaseException]] = {}
        for role in wanted:
            server = self.roles[role]
            error = self.failure(server)
            if error is not None:
                found.setdefault(server.url, (server, error))
        return list(found.values())


class _Ping:
    """One server's ping in a thread of its own; ``out`` is set, and ``at`` is when, once it
    went out (after the import of MongoDB's driver, with ``driver``)."""

    def __init__(self, server: Server, driver: bool = False) -> None:
        self.out = threading.Event()
        self.at = time.monotonic()

        def ping() -> BaseException | None:
            try:
                if driver:
                    import matcher.store.client  # noqa: F401 - what its client is made with
            finally:
                self.at = time.monotonic()
                self.out.set()
            return server.failure()

        self.future = started(ping, f"ping {server.service}")


def _checked(ctx: Context, name: str, probes: Probes, host: str | None) -> Check:
    """Check ``name`` once the servers it reads answered: when one does not, the outage
    line of each that does not (a server's own check) or ``not checked``, naming them."""
    down = probes.down(needs(name, ctx))
    if down and name in SERVER_CHECKS.values():
        return Check(name, False, "; ".join(server.outage_line(error) for server, error in down))
    if down:
        names = " and ".join(server.service for server, _ in down)
        return Check(name, False, f"not checked: {names} down")
    if name == "workers":  # its starting records are in Redis, read if it answers
        return check_workers(ctx, host, records=not probes.down([REDIS]))
    return CHECKS[NAMES.index(name)](ctx)


def _prepare(ctx: Context, names: Collection[str]) -> None:
    """While the pings are out, in this thread: import what the checks ``names`` read with,
    so that no two of their threads import at once (a cycle of imports between threads can
    leave one with a module half made), and make Celery's app (Celery makes an app current
    in the thread that makes it)."""
    if {"workers", "beat", "schedules"} & set(names):
        _ = ctx.app
    for module in ("matcher.keys", "matcher.store"):
        importlib.import_module(module)
    for name, modules in PREPARE.items():
        if name in names:
            for module in modules:
                importlib.import_module(module)


PREPARE = {
    "broker": ("matcher.worker.celery_app",),
    "beat": ("redbeat.schedulers",),
    "indexes": ("matcher.index.index_view", "matcher.worker.schedules"),
    "schedules": ("matcher.worker.schedules",),
    "evidence": ("matcher.evidence.stamping",),
}
"""What each check imports besides the store and the key layout (:func:`_prepare`)."""


def checks(
    ctx: Context,
    only: Collection[str] = (),
    host: str | None = None,
    deadline: float = DEFAULT_TIMEOUT_S,
) -> list[Check]:
    """Every check (or those named in ``only``, and those of the servers they read), run
    at once, each as soon as its servers answered (:class:`Probes`); a check still running
    ``deadline`` seconds after the servers were asked is reported failed, the servers it
    reads named. ``host``: count only the workers of that machine (:func:`check_workers`).
    The whole takes about ``max(PROBE_S, deadline)`` at most, whatever hangs."""
    wanted = set(only or NAMES)
    for name in list(wanted):
        wanted.update(SERVER_CHECKS[role] for role in needs(name, ctx))
    names = [name for name in NAMES if name in wanted]
    asked = {role for name in names for role in needs(name, ctx)}
    probes = Probes(ctx, asked | ({REDIS} if "workers" in wanted else set()))
    _prepare(ctx, wanted)
    until = probes.since + max(deadline, probes.within)
    running = {
        name: started(partial(_checked, ctx, name, probes, host), f"check {name}") for name in names
    }
    out = []
    for name in names:
        if done_within(running[name], until - time.monotonic()):
            out.append(running[name].result())
            continue
        reads = " and ".join(sorted({probes.roles[role].service for role in needs(name, ctx)}))
        where = f" (reading {reads})" if reads else ""
        out.append(Check(name, False, f"no answer within {duration(deadline)}{where}"))
    return out


def this_host() -> str:
    """The host name Celery puts in the names of this machine's workers (``%h``)."""
    return socket.gethostname()
