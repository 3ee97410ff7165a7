"""``fptrack admin``: the admin web platform: its server, its accounts, its dashboard counters."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from admin.commands.common import actions, command, wait_option
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    admin = actions(
        parser, "The admin web platform: its server, its accounts and its dashboard counters."
    )
    p = command(
        admin,
        "serve",
        run_serve,
        "serve the admin platform (gunicorn)",
        "Serve the admin platform with gunicorn over MongoDB and Redis. It checks both at "
        "start and exits 1 with one line if one does not answer (see --wait); once running, "
        "it waits out their restarts, and a page that needs one while it is away answers 503 "
        "(Retry-After: 5) saying so. It also serves the deployment's Prometheus metrics at "
        "/metrics: to a viewer's API token (Authorization: Bearer), or without one to the "
        "addresses of FPTRACK_METRICS_ALLOW (default: none); figures are computed from "
        "MongoDB and Redis and kept FPTRACK_METRICS_CACHE_SECONDS (default: 15) per process. "
        "Each gunicorn worker (asyncio) reads every request whole before the application "
        "sees it, so a client sending slowly holds no thread, and refuses (413) a body over "
        "its page's limit (64 KiB for forms and the login; 200 MiB for uploads) before "
        "reading it. It then runs --threads requests at once, so a query by URL or a webhook "
        "test waiting on a slow server holds one thread until its own deadline "
        "(FPTRACK_QUERY_DEADLINE, 20 s; FPTRACK_ALERT_TIMEOUT, 10 s), never the other "
        "users' pages. gunicorn's worker timeout (a worker whose event loop stopped) is "
        "120 s, or the longest of those deadlines plus 60 s when that is longer. No gunicorn "
        "control socket is made.",
    )
    p.add_argument("--bind", default="127.0.0.1:8000", help="HOST:PORT (default: 127.0.0.1:8000)")
    p.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default: 2)")
    p.add_argument(
        "--threads",
        type=int,
        default=4,
        help="requests each worker runs at once, in threads (default: 4)",
    )
    p.add_argument(
        "--secure-cookies",
        action="store_true",
        help="send the session cookie over HTTPS only, behind a TLS proxy (default: off)",
    )
    p.add_argument(
        "--header-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="a client's time to send a request's headers, from its connection or the answer "
        "before on a kept-alive one; then it is closed (default: 30)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=1000,
        metavar="N",
        help="connections each worker keeps open at once; one more is closed at once "
        "(default: 1000)",
    )
    p.add_argument("--access-log", action="store_true", help="log each request (default: off)")
    wait_option(p)
    p = command(
        admin,
        "create-user",
        run_create_user,
        "add an account (the password is asked for)",
        "Add an account to the admin platform. There is no default account: the first one "
        "comes from here. The password (10 characters or more) is asked for twice, or read "
        "from standard input.",
    )
    p.add_argument("username", help="the account's name")
    p.add_argument(
        "--role",
        choices=("viewer", "reviewer", "admin"),
        default="viewer",
        help="(default: viewer)",
    )
    p.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from standard input (default: ask twice)",
    )
    p.add_argument(
        "--replace", action="store_true", help="reset an existing account (default: refuse)"
    )
    command(
        admin,
        "recount",
        run_recount,
        "rebuild the dashboard counters from the data",
        "Recount the dashboard's counters from the works, pages and matches stored.",
    )


def run_serve(args: argparse.Namespace, ctx: Context) -> int:
    from admin.health import Watch, require_stores
    from admin.web.serve import Connections, serve, worker_timeout

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
    if not ctx.store.users.has_users():
        print(
            "fptrack: no account yet: create one with"
            " `fptrack admin create-user NAME --role admin`",
            file=sys.stderr,
        )
    timeout = worker_timeout(ctx.settings)
    serve(
        args.bind,
        args.workers,
        args.secure_cookies,
        args.access_log,
        timeout,
        args.threads,
        Connections(args.header_timeout, args.max_connections),
    )
    return 0


def run_create_user(args: argparse.Namespace, ctx: Context) -> int:
    import getpass

    from admin.services.accounts import UserError, Users

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


def run_recount(args: argparse.Namespace, ctx: Context) -> int:
    written = ctx.store.dashboard.recount()
    print(f"dashboard counters rebuilt: {written} document(s)")
    return 0
