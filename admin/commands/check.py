"""``fptrack check``: the health of the deployment, one line per check."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from admin.commands.common import dump_json, json_option, leaf

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "Report MongoDB, Redis, the broker, the workers, beat, the indexes and the "
        "schedules, one line each; a server that does not answer is named. Exit status 0 "
        "only when all are healthy. Name checks to run only those (and the ones they need), "
        "e.g. `fptrack check beat` as a container's health check.",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="CHECK",
        help="mongodb, redis, broker, workers, beat, indexes or schedules (default: all)",
    )
    parser.add_argument(
        "--this-host",
        action="store_true",
        help="count only the workers of this machine, named NAME@<its host name> "
        "(default: every worker)",
    )
    json_option(parser)


STARTING_EXIT = 3
"""``fptrack check``'s exit status when nothing failed but a worker or beat is starting."""


def run(args: argparse.Namespace, ctx: Context) -> int:
    from admin.health import NAMES, checks, this_host

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
