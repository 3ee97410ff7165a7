"""``fptrack schedules``: the beat schedules as saved in Redis (redbeat)."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from admin.commands.common import dump_json, json_option, leaf
from admin.human import duration

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "List the schedules beat runs, as saved in Redis (redbeat): each site's crawl and the "
        "daily jobs, with the next time each is due.",
    )
    json_option(parser)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from admin.report.html_report import when

    entries = ctx.schedules.entries()
    if args.json:
        dump_json(entries)
        return 0
    now = datetime.now(UTC)
    for e in entries:
        due = "not due"
        if e["due_at"]:
            at = datetime.fromisoformat(e["due_at"])
            due = f"next {when(at)} (in {duration(max(0.0, (at - now).total_seconds()))})"
        print(f"{e['name']}\t{e['task']}\t{describe_schedule(e['schedule'])}\t{due}")
    return 0


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
