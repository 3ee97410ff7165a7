"""``fptrack schedules``: the beat schedules as saved in Redis (redbeat)."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from admin.commands.common import dump_json, json_option, leaf
from admin.context import CONNECT_TIMEOUT_S
from admin.errors import CommandError
from admin.human import duration

if TYPE_CHECKING:
    from admin.context import Context

READ_TIMEOUT_S = 10.0
"""How long ``fptrack schedules`` reads the entries before it gives up (after Redis answered
its ping, within :data:`~admin.context.CONNECT_TIMEOUT_S`)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "List the schedules beat runs, as saved in Redis (redbeat): each site's crawl and the "
        "daily jobs, with the next time each is due. A Redis that does not answer within "
        f"{duration(CONNECT_TIMEOUT_S)} is named down; the listing gives up after "
        f"{duration(READ_TIMEOUT_S)}.",
    )
    json_option(parser)
    parser.set_defaults(quick_exit=True)  # admin.cli._quick_exit


def run(args: argparse.Namespace, ctx: Context) -> int:
    entries = read_entries(ctx)
    if args.json:
        dump_json(entries)
        return 0
    from admin.report.html_report import when  # the report's templates: after the read

    now = datetime.now(UTC)
    for e in entries:
        due = "not due"
        if e["due_at"]:
            at = datetime.fromisoformat(e["due_at"])
            due = f"next {when(at)} (in {duration(max(0.0, (at - now).total_seconds()))})"
        print(f"{e['name']}\t{e['task']}\t{describe_schedule(e['schedule'])}\t{due}")
    return 0


def read_entries(ctx: Context) -> list[dict]:
    """The schedules' entries (:meth:`matcher.worker.schedules.Schedules.entries`), in seconds
    whatever hangs: redbeat's Redis (that of ``FPTRACK_REDIS_URL``) must answer a ping
    within :data:`~admin.context.CONNECT_TIMEOUT_S` (sent before Celery and redbeat are
    imported, which goes on meanwhile) and the entries be read within
    :data:`READ_TIMEOUT_S` (a server stopped with SIGSTOP accepts connections and never
    answers; the client's own timeouts and retry would wait 20 s a command). Raises
    :class:`CommandError` naming Redis otherwise; a client's own error is named by
    :mod:`admin.cli`."""
    import time

    from admin import outage
    from admin.bounded import bounded, done_within, started
    from admin.context import redis_client

    url = ctx.settings.redis_url
    asked = time.monotonic()
    ping = started(redis_client(url, "FPTRACK_REDIS_URL").ping, "Redis's ping")
    schedules = ctx.schedules  # made in this thread: Celery makes its app current here
    try:
        if not done_within(ping, asked + CONNECT_TIMEOUT_S - time.monotonic()):
            raise TimeoutError(f"timed out: no answer within {duration(CONNECT_TIMEOUT_S)}")
        ping.result()
        return bounded(schedules.entries, READ_TIMEOUT_S, "reading the schedules")
    except TimeoutError as exc:
        raise CommandError(outage.line("Redis", url, exc)) from None


def describe_schedule(text: str) -> str:
    """Celery's schedule text for people: ``cron 0 3 * * * (UTC)``, ``every 10 min``.

    >>> describe_schedule("<crontab: 30 2 * * * (m/h/dM/MY/d)>")
    'cron 30 2 * * * (UTC)'
    >>> describe_schedule("<freq: 10.00 minutes>")
    'every 10 min'
    """
    cron = re.fullmatch(r"<crontab: (.*) \(m/h/dM/MY/d\)>", text)
    if cron:
        return f"cron {cron.group(1)} (UTC)"
    freq = re.fullmatch(r"<freq: ([\d.]+) (second|minute|hour|day)s?>", text)
    if freq:
        unit = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}[freq.group(2)]
        return f"every {duration(float(freq.group(1)) * unit)}"
    return text


# matching ------------------------------------------------------------------------------
