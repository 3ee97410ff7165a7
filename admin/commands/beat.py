"""``fptrack beat``: the scheduler (redbeat; exactly one runs at a time)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from admin.commands.common import leaf, site_service, wait_option
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "Run the scheduler: it saves the daily jobs and every site's schedule in Redis, then "
        "sends the tasks when due. Run exactly one (a second one waits on redbeat's lock). It "
        "checks MongoDB, Redis and the broker at start (see --wait); once running, it waits "
        "out their restarts and saves the schedules again if Redis lost them. Stopped by "
        "SIGTERM or Ctrl-C it exits 0; stopped by an error it exits 1, so that its service "
        "manager starts it again.",
    )
    parser.add_argument("--loglevel", default="INFO", help="(default: INFO)")
    wait_option(parser)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from admin.health import mark_starting, require_stores
    from matcher.worker.celery_app import BEAT_SCHEDULER

    mark_starting(ctx, "beat")  # until it holds redbeat's lock, or the grace ends
    require_stores(ctx, args.wait)
    ctx.schedules.save_all(ctx.settings, site_service(ctx).all_sites())
    try:
        ctx.app.start(["beat", "-S", BEAT_SCHEDULER, f"--loglevel={args.loglevel}"])
    except Exception as exc:  # Celery logged it with its traceback
        # 1 whatever the error (a ValueError would be 2, which no service manager restarts)
        raise CommandError(f"beat stopped on an error (see the log above): {exc}", 1) from exc
    return 0
