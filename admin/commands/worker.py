"""``fptrack worker``: a Celery worker (pages, works, crawls) that checks the stores at start
and rides out their outages once running."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any

from admin.commands.common import leaf, wait_option
from admin.errors import CommandError

if TYPE_CHECKING:
    from celery import Celery

    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "Run a Celery worker: it fingerprints and matches pages, indexes works and runs "
        "crawls. It checks MongoDB, Redis and the broker at start and exits 1 with one line "
        "if one does not answer (see --wait); once running, it waits out their restarts. "
        "Stopped by SIGTERM or Ctrl-C it exits 0; stopped by anything else (an error Celery "
        "cannot recover from) it exits 1, so that its service manager starts it again.",
    )
    parser.add_argument(
        "--queues", default="fptrack,fptrack.crawl", help="(default: fptrack,fptrack.crawl)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=0, help="processes (default: 0, one per core)"
    )
    parser.add_argument(
        "-n",
        "--hostname",
        default="",
        help="the worker's name, %%h for the host (default: fptrack-<pid>@<host>, one per process)",
    )
    parser.add_argument("--loglevel", default="INFO", help="(default: INFO)")
    wait_option(parser)


WORKER_OPTIONS = ("--without-gossip", "--without-mingle")
"""Celery's worker-to-worker chatter, which fptrack does not use (and whose restart after a
broker outage fails with a traceback in Celery 5)."""


def run(args: argparse.Namespace, ctx: Context) -> int:
    from admin.health import Watch, mark_starting, require_stores

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
    _one_line_lost_acks()
    from celery.signals import worker_ready

    worker_ready.connect(up, weak=False)
    asked = _stop_requests()
    Watch(ctx, "worker").start()
    try:
        status = ctx.app.start(argv)
    except Exception as exc:  # 1 whatever it is: never 2, which no service manager restarts
        raise CommandError(f"the worker stopped on an error: {exc}", 1) from exc
    return exit_status(status, asked)


def _stop_requests() -> list[str]:
    """The stop signals Celery's handlers will receive (SIGTERM, SIGINT, SIGQUIT), filled
    as they come."""
    from celery.signals import worker_shutting_down

    asked: list[str] = []

    def heard(sig: str = "", **kwargs: Any) -> None:
        asked.append(sig)

    worker_shutting_down.connect(heard, weak=False)
    return asked


def exit_status(status: int | None, asked: list[str]) -> int:
    """The exit status of a worker whose Celery returned ``status`` after the stop signals
    ``asked``: a failure Celery reports as such; else 0 after a stop signal, and 1, with one
    line, when the worker stopped without being asked to. Celery 5.7's ``app.start`` returns
    nothing (click's status is dropped): a worker that logged ``Unrecoverable error`` exited
    0, and a service manager restarting failures only left it stopped."""
    if status:
        return int(status)
    if asked:
        return 0
    print(
        "fptrack worker: stopped on an error, not asked to (see the log above): exit status 1",
        file=sys.stderr,
        flush=True,
    )
    return 1


def _ride_out_outages(app: Celery) -> None:
    """Make a worker reconnect to the broker for as long as it takes (Celery gives up after
    100 tries, about 45 minutes, and exits)."""
    from celery.signals import worker_ready

    app.conf.broker_connection_max_retries = None

    def quiet(**kwargs: Any) -> None:  # after Celery set its own warning filters
        # Celery's notice of a default it will change in 6.0, printed at every reconnection.
        warnings.filterwarnings("ignore", r"\s*In Celery 5.1 we introduced an optional breaking")

    worker_ready.connect(quiet, weak=False)


ACK_LOGGERS = ("celery.worker.request", "celery.worker.consumer.consumer")
"""The loggers that kombu's ``Message.ack_log_error`` and ``reject_log_error`` write to
when a task's acknowledgement is lost with the broker's connection."""


class LostAck(logging.Filter):
    """One line, no traceback, for an acknowledgement the broker's outage swallowed: the
    message stays unacknowledged and the broker delivers it again (every task is idempotent),
    so nothing is lost, and the worker's log says so plainly."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and str(record.msg).startswith(("Couldn't ack", "Couldn't reject")):
            exc = record.exc_info[1]
            verb = "acknowledge" if str(record.msg).startswith("Couldn't ack") else "reject"
            record.msg = (
                f"fptrack worker: could not {verb} a task message (broker connection lost: "
                f"{type(exc).__name__}); the broker will deliver it again"
            )
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _one_line_lost_acks() -> None:
    for name in ACK_LOGGERS:
        logging.getLogger(name).addFilter(LostAck())
