"""``fptrack check``: the health of the deployment, one line per check; and the
acknowledgement of failed crawls (``--ack``), which clears them from the report."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from admin.commands import suggestion
from admin.commands.common import dump_json, json_option, leaf, seconds_type, site_service
from admin.context import CONNECT_TIMEOUT_S
from admin.errors import CommandError
from admin.health_limits import DEFAULT_TIMEOUT_S, FAILED_CRAWL_WINDOW, PENDING_AFTER
from admin.human import duration

if TYPE_CHECKING:
    from admin.context import Context

_WINDOW = duration(FAILED_CRAWL_WINDOW.total_seconds())
_AFTER = duration(PENDING_AFTER.total_seconds())
CHECKS: dict[str, str] = {
    "mongodb": "MongoDB answers: its version, the database's works, pages and matches",
    "redis": "the Redis of FPTRACK_REDIS_URL answers, and the index Redis where it is apart",
    "broker": "the Celery broker answers: tasks queued and taken",
    "workers": "workers answer a ping (with --this-host, this machine's); starting while one boots",
    "beat": "a beat holds redbeat's lock; starting while one boots",
    "indexes": "the Redis indexes are whole, not rebuilding, and in step with the store",
    "schedules": "the daily jobs and each scheduled site's crawl are saved in redbeat",
    "crawls": f"no crawl failure of the last {_WINDOW} left to see to, no page waiting for "
    f"its match over {_AFTER}, no crawl run past its lease; catching-up while crawled pages "
    "wait for their match",
    "evidence": "the trusted timestamps (with FPTRACK_TSA_URL): the last stamping run, "
    "files waiting",
}
"""Every check, in the order of the report, and what it reports (``--help``; the checks
themselves are :data:`admin.health.CHECKS`)."""

STARTING_EXIT = 3
"""``fptrack check``'s exit status when nothing failed but a worker or beat is starting."""
CATCHING_UP_EXIT = 4
"""``fptrack check``'s exit status when nothing failed and nothing is starting, but crawled
pages are still waiting for their match (``catching-up``)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "Report the health of the deployment, one line per check. A server that does not "
        f"answer within {duration(CONNECT_TIMEOUT_S)} is named down, and only the servers "
        "that are down are named; the checks run at once, each once its servers answered, "
        "so the whole answers in seconds whatever hangs. Exit "
        f"status 0 only when all are healthy, 1 when one failed, {STARTING_EXIT} when "
        f"nothing failed but a worker or beat is starting, {CATCHING_UP_EXIT} when nothing "
        "failed but crawled pages are still waiting for their match (catching-up). Name "
        "checks to run only those (and those of the servers they read), e.g. `fptrack "
        "check beat` as a container's health check. The checks: "
        + "; ".join(f"{name}: {what}" for name, what in CHECKS.items())
        + ".",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="CHECK",
        help=f"{', '.join(CHECKS)} (default: all)",
    )
    parser.add_argument(
        "--this-host",
        action="store_true",
        help="count only the workers of this machine, named NAME@<its host name> "
        "(default: every worker)",
    )
    parser.add_argument(
        "--ack",
        action="append",
        default=[],
        metavar="SITE",
        help="acknowledge the failed crawls of SITE before checking (repeatable): the "
        "crawls check no longer reports them; who and when are recorded (default: none)",
    )
    parser.add_argument(
        "--by",
        default=None,
        metavar="NAME",
        help="who acknowledges, recorded with --ack (default: your login name)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds_type,
        default=DEFAULT_TIMEOUT_S,
        metavar="DURATION",
        help="report a check still running this long after the servers answered failed, "
        f"e.g. 10s (default: {duration(DEFAULT_TIMEOUT_S)})",
    )
    json_option(parser)
    parser.set_defaults(quick_exit=True)  # admin.cli._quick_exit


def run(args: argparse.Namespace, ctx: Context) -> int:
    from admin.health import NAMES, checks, this_host

    unknown = [name for name in args.names if name not in NAMES]
    if unknown:
        args.parser.error(f"no check named {unknown[0]}{suggestion(unknown[0], NAMES)}")
    for site in args.ack:
        acknowledge(ctx, site, args.by or login_name())
    found = checks(ctx, args.names, this_host() if args.this_host else None, args.timeout)
    healthy = all(c.ok for c in found)
    failed = sum(c.state == "FAIL" for c in found)
    booting = sum(c.starting for c in found)
    behind = sum(c.catching_up for c in found)
    if args.json:
        dump_json({"healthy": healthy, "checks": [c.to_dict() for c in found]})
    else:
        for c in found:
            print(f"{c.state:<11}  {c.name:<9}  {c.detail}")
        if healthy:
            print("all healthy", file=sys.stderr)
        else:
            notes = [f"{booting} starting"] * bool(booting) + ["catching up"] * bool(behind)
            print(", ".join([f"{failed} problem(s)", *notes]), file=sys.stderr)
    if healthy:
        return 0
    if failed:
        return 1
    return STARTING_EXIT if booting else CATCHING_UP_EXIT


def acknowledge(ctx: Context, site: str, by: str) -> None:
    """Acknowledge the failed crawls of ``site`` not yet acknowledged, by ``by``, now; say
    how many on stderr. A name that is neither a watched site nor one with failed crawls
    is a bad argument (exit status 2)."""
    sites = site_service(ctx)
    count = sites.acknowledge_all(site, by=by)
    if count:
        print(f"acknowledged {count} failed crawl(s) of {site} (by {by})", file=sys.stderr)
    elif sites.get(site) is not None:
        print(f"no failed crawl of {site} left to acknowledge", file=sys.stderr)
    else:
        raise CommandError(f"--ack {site}: no site named {site} (see fptrack sites list)", 2)


def login_name() -> str:
    """The name of the user running the command (``cli`` when the system has none)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no USER variable and no passwd entry (a container's uid)
        return "cli"
