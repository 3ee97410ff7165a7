"""The commands that run or watch the services: worker, beat, admin, crawl, check.

``worker``, ``beat`` and ``admin serve`` check MongoDB, Redis and the broker before they
start (:func:`admin.health.require_stores`) and exit 1 with one line when one does not
answer, rather than starting as if all were well. Once started they ride outages out and
never exit for one: the worker reconnects to the broker for as long as it takes and its
tasks retry, beat waits (:mod:`matcher.beat`), the admin's requests fail until the server
is back; each names the server that stopped answering in one line at once, and again when
it answers (:class:`admin.health.Watch`, and beat itself).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from admin.context import Context
from admin.errors import CommandError
from admin.health import NAMES, Watch, checks, mark_starting, require_stores, this_host
from matcher import jobs
from matcher.celery_app import BEAT_SCHEDULER
from matcher.sites import SiteConfig

if TYPE_CHECKING:
    from celery import Celery

STARTING_EXIT = 3
"""``fptrack check``'s exit status when nothing failed but a worker or beat is starting."""
WORKER_OPTIONS = ("--without-gossip", "--without-mingle")
"""Celery's worker-to-worker chatter, which fptrack does not use (and whose restart after a
broker outage fails with a traceback in Celery 5)."""


def cmd_crawl(args: argparse.Namespace, ctx: Context) -> int:
    site = ctx.ops.get_site(args.site)
    if site is None:
        raise CommandError(f"no site named {args.site!r} (see `fptrack sites list`)")
    if not args.here and not args.inline:
        task = "fptrack.recrawl_site" if args.incremental else "fptrack.crawl_site"
        kind = "incremental crawl" if args.incremental else "crawl"
        task_id = ctx.send(task, site.name)
        print(f"{kind} of {site.name} enqueued: task {task_id}", flush=True)
        if not args.wait:
            return 0
        from admin.crawl_wait import wait_for_crawl

        return wait_for_crawl(ctx.ops, site.name, task_id, poll=args.poll, timeout=args.timeout)
    if args.wait:
        args.parser.error("--wait follows an enqueued crawl: not with --here or --inline")
    from crawler.run import crawl_in_process, crawl_problem
    from matcher.ingest import Ingest

    engine = ctx.engine
    authorised = ctx.ops.authorised_sites()
    bar = tqdm(desc=f"crawling {site.name}", unit="page", disable=None, file=sys.stderr)

    def enqueue(page_id: str) -> None:
        if args.inline:
            engine.process_stored_page(page_id, authorised)
        else:
            ctx.send("fptrack.process_page", page_id)
        bar.update(1)

    leases: list[dict[str, Any]] = []

    def started(site: SiteConfig, lease: Any) -> None:
        leases.append(lease.describe())
        jobs.record_crawler_started(ctx.ops, site.name, leases[0])

    frontiers = _shared_frontier(ctx) if args.here else None
    try:
        stats = crawl_in_process(
            [site],
            {
                "FPTRACK_INGEST": Ingest(engine.store, enqueue),
                "FPTRACK_CHROMIUM": ctx.settings.chromium,
            },
            None,
            frontiers,
            started,
            incremental=args.incremental,
        )
    finally:
        bar.close()
    s = stats.get(site.name, {})
    if s.get("finish_reason") == "crawlers_busy":
        busy = s.get("fptrack/busy") or f"all {site.crawlers} crawler slot(s) are held"
        raise CommandError(f"{site.name}: {busy}")
    error = crawl_problem(s) or ""
    if leases:
        outcome = "failed" if error else "finished"
        jobs.record_crawler_ended(ctx.ops, site.name, leases[0], outcome, s, error)
    if error:
        raise CommandError(f"site {site.name}: {error}")
    counts = ""
    if args.incremental:
        inc = "fptrack/incremental/"
        counts = ", ".join(f"{s.get(inc + k, 0)} {k}" for k in ("new", "changed", "unchanged"))
        counts = f" ({counts})"
    print(
        f"{site.name}: {s.get('fptrack/pages', 0)} page(s){counts}, "
        f"{s.get('response_received_count', 0)} response(s), "
        f"{sum(v for k, v in s.items() if k.startswith('fptrack/errors/'))} error(s)"
    )
    return 0


def _shared_frontier(ctx: Context) -> Any:
    """The sites' frontiers in the Redis of ``FPTRACK_REDIS_URL``."""
    from crawler.lease import RedisFrontiers
    from matcher.redis_clients import connect_server

    settings = ctx.settings
    client = connect_server(settings.redis_target)
    return RedisFrontiers(client, settings.redis_prefix, settings.crawl_lease)


def cmd_admin_serve(args: argparse.Namespace, ctx: Context) -> int:
    from admin.web.serve import serve, worker_timeout

    if args.workers < 1:
        args.parser.error("--workers must be at least 1")
    if args.threads < 1:
        args.parser.error("--threads must be at least 1")
    host, _, port = args.bind.rpartition(":")
    if not host or not port.isdigit():
        args.parser.error(f"--bind {args.bind!r}: give HOST:PORT")
    require_stores(ctx, args.wait)
    ctx.engine.store.ensure_indexes()
    Watch(ctx, "admin").start()
    if not ctx.ops.has_users():
        print(
            "fptrack: no account yet: create one with"
            " `fptrack admin create-user NAME --role admin`",
            file=sys.stderr,
        )
    timeout = worker_timeout(ctx.settings)
    serve(args.bind, args.workers, args.secure_cookies, args.access_log, timeout, args.threads)
    return 0


def cmd_admin_create_user(args: argparse.Namespace, ctx: Context) -> int:
    import getpass

    from admin.web.users import UserError, Users

    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        try:
            password = getpass.getpass(f"password for {args.username}: ")
            again = getpass.getpass("again: ")
        except EOFError as exc:
            raise CommandError("no password given (use --password-stdin to pipe one)", 2) from exc
        if password != again:
            raise CommandError("the two passwords differ", 2)
    try:
        user = Users(ctx.engine.store).create(args.username, password, args.role, args.replace)
    except UserError as exc:
        raise CommandError(str(exc), 2) from exc
    print(f"user {user.username} ({user.role}) {'reset' if args.replace else 'created'}")
    return 0


def cmd_admin_recount(args: argparse.Namespace, ctx: Context) -> int:
    written = ctx.ops.recount()
    print(f"dashboard counters rebuilt: {written} document(s)")
    return 0


def cmd_migrate(args: argparse.Namespace, ctx: Context) -> int:
    from matcher.migration import migrate
    from matcher.store import shard_commands

    if args.shard_commands:
        print(shard_commands(ctx.settings.mongo_db), end="")
        return 0
    done = migrate(ctx.engine.store)
    print(
        f"migrated: {done.pages} page id(s) ({done.matches} match record(s),"
        f" {done.fingerprints} fingerprint document(s)), {done.counters} counter stripe(s),"
        f" {done.tallies} tally document(s) rebuilt"
    )
    return 0


def cmd_worker(args: argparse.Namespace, ctx: Context) -> int:
    if args.concurrency < 0:
        args.parser.error("--concurrency must be 0 (one per core) or more")
    up = mark_starting(ctx, "worker")  # `check` says "starting" until it is ready
    require_stores(ctx, args.wait)
    argv = ["worker", f"--loglevel={args.loglevel}", f"--queues={args.queues}"]
    # Celery's default name, celery@host, is the same for every worker of a host: replies
    # to ping and inspect, and the broker's worker events, would take two for one.
    argv.append(f"--hostname={args.hostname or f'fptrack-{os.getpid()}@%h'}")
    if args.concurrency:
        argv.append(f"--concurrency={args.concurrency}")
    argv.extend(WORKER_OPTIONS)
    _ride_out_outages(ctx.app)
    from celery.signals import worker_ready

    worker_ready.connect(up, weak=False)
    Watch(ctx, "worker").start()
    ctx.app.worker_main(argv)
    return 0


def _ride_out_outages(app: Celery) -> None:
    """Make a worker reconnect to the broker for as long as it takes (Celery gives up after
    100 tries, about 45 minutes, and exits)."""
    from celery.signals import worker_ready

    app.conf.broker_connection_max_retries = None

    def quiet(**kwargs: Any) -> None:  # after Celery set its own warning filters
        # Celery's notice of a default it will change in 6.0, printed at every reconnection.
        warnings.filterwarnings("ignore", r"\s*In Celery 5.1 we introduced an optional breaking")

    worker_ready.connect(quiet, weak=False)


def cmd_beat(args: argparse.Namespace, ctx: Context) -> int:
    mark_starting(ctx, "beat")  # until it holds redbeat's lock, or the grace ends
    require_stores(ctx, args.wait)
    ctx.schedules.save_all(ctx.settings, ctx.ops.list_sites())
    ctx.app.start(["beat", "-S", BEAT_SCHEDULER, f"--loglevel={args.loglevel}"])
    return 0


def cmd_check(args: argparse.Namespace, ctx: Context) -> int:
    from admin.commands import dump_json

    unknown = sorted(set(args.names) - set(NAMES))
    if unknown:
        args.parser.error(f"no check named {', '.join(unknown)} (checks: {', '.join(NAMES)})")
    found = checks(ctx, args.names, this_host() if args.this_host else None)
    healthy = all(c.ok for c in found)
    failed = sum(not c.ok and not c.starting for c in found)
    booting = sum(c.starting for c in found)
    if args.json:
        dump_json({"healthy": healthy, "checks": [c.to_dict() for c in found]})
    else:
        for c in found:
            print(f"{c.state:<8}  {c.name:<9}  {c.detail}")
        if healthy:
            print("all healthy", file=sys.stderr)
        else:
            note = f", {booting} starting" if booting else ""
            print(f"{failed} problem(s){note}", file=sys.stderr)
    if healthy:
        return 0
    return 1 if failed else STARTING_EXIT
