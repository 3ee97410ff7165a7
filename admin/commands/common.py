"""What the command modules share: option types for people (sizes, durations), the options
several commands take (``--json``, ``--max-bytes``, ``--wait``, the match filters), JSON
output and dates, and the admin's services (:mod:`admin.services`) built over a command's
context, one at a time, as the web's :mod:`admin.web.deps` hands them to the views. Light on
purpose: every ``fptrack COMMAND --help`` imports it.

Every option's help names its default; sizes and durations are written for people and read
back from what people write (``--max-bytes 64MiB``, ``--wait 1m``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from admin.errors import CommandError
from admin.human import parse_duration, parse_size, size

if TYPE_CHECKING:
    from admin.context import Context
    from admin.services.discovery import DiscoveryService
    from admin.services.matches import MatchService
    from admin.services.sites import SiteService
    from admin.services.works import WorkService

Run = Callable[[argparse.Namespace, "Context"], int]
"""A command's handler: the parsed arguments and a context in, the exit status out."""


def command(
    group: Any, name: str, run: Run, summary: str, description: str
) -> argparse.ArgumentParser:
    """A subcommand of ``group`` running ``run``. Its parser is kept in its arguments
    (``args.parser``) so that later checks report argument errors the way argparse does
    (usage, one line, exit status 2)."""
    p = group.add_parser(name, help=summary, description=description)
    p.set_defaults(func=run, parser=p)
    return p


def actions(parser: argparse.ArgumentParser, description: str) -> Any:
    """Make ``parser`` a group of subcommands (``fptrack works add``): their subparsers."""
    parser.description = description
    return parser.add_subparsers(dest="action", required=True, metavar="ACTION")


def leaf(parser: argparse.ArgumentParser, run: Run, description: str) -> None:
    """Make ``parser`` a command of its own (``fptrack check``) running ``run``."""
    parser.description = description
    parser.set_defaults(func=run, parser=parser)


def size_type(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def seconds_type(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def positive_type(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, got {text!r}")
    return value


def json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output (default: text)")


def max_bytes_option(p: argparse.ArgumentParser, what: str) -> None:
    from admin.reading import DEFAULT_MAX_BYTES

    p.add_argument(
        "--max-bytes",
        type=size_type,
        default=DEFAULT_MAX_BYTES,
        metavar="SIZE",
        help=f"{what} files larger than this, e.g. 10MiB (default: {size(DEFAULT_MAX_BYTES)})",
    )


def wait_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wait",
        type=seconds_type,
        default=0.0,
        metavar="DURATION",
        help="wait this long for MongoDB, Redis and the broker to answer, e.g. 60s or 2m "
        "(default: 0 s, check once)",
    )


def match_filter_options(p: argparse.ArgumentParser, until: bool = False) -> None:
    """The filters of ``matches list`` and ``report`` (read back by :func:`match_filters`)."""
    from matcher.store.statuses import STATUSES

    p.add_argument("--site", help="only this site, by name (default: every site)")
    p.add_argument("--work", help="only this work: id, title or source (default: every work)")
    p.add_argument(
        "--since",
        help="first seen at or after: YYYY-MM-DD, an ISO time or an age such as 7d or 12h "
        "(default: no limit)",
    )
    if until:
        p.add_argument(
            "--until", help="first seen before: YYYY-MM-DD or an ISO time (default: no limit)"
        )
    p.add_argument(
        "--status", choices=STATUSES, help="only this review status (default: every status)"
    )


def match_filters(args: argparse.Namespace, ctx: Context) -> dict[str, Any]:
    """The store's filters of the options :func:`match_filter_options` added (``--work``
    looked up by id, title or source)."""
    filters: dict[str, Any] = {}
    if args.site:
        filters["site"] = args.site
    if args.work:
        found = work_service(ctx).find(args.work)
        if len(found) != 1:
            raise CommandError(f"{len(found)} works match {args.work!r}; give its id", 2)
        filters["work_id"] = str(found[0]["_id"])
    if args.since:
        filters["since"] = parse_when(args.since)
    if getattr(args, "until", None):
        filters["until"] = parse_when(args.until)
    if args.status:
        filters["status"] = args.status
    return filters


def work_service(ctx: Context) -> WorkService:
    """The admin's works (:class:`admin.services.works.WorkService`) over ``ctx``, its
    engine opened only when a command matches or removes a work. ``fptrack works add``
    registers through the engine and matches each work itself: nothing is dispatched."""
    from admin.services.works import WorkService

    return WorkService(lambda: ctx.engine, ctx.store, added=lambda _work_id: None)


def site_service(ctx: Context, *, scheduled: bool = False) -> SiteService:
    """The admin's sites (:class:`admin.services.sites.SiteService`) over ``ctx``, with its
    beat schedules when ``scheduled`` (a Celery app made for them); it starts no crawl."""
    from admin.services.sites import SiteService

    return SiteService(ctx.store, ctx.schedules if scheduled else None)


def match_service(ctx: Context) -> MatchService:
    """The admin's matches (:class:`admin.services.matches.MatchService`) over ``ctx``, with
    no evidence archive: no command reads a match's archived exchange through it."""
    from admin.services.matches import MatchService

    return MatchService(ctx.store, None)


def discovery_service(ctx: Context) -> DiscoveryService:
    """The admin's discovered sites (:class:`admin.services.discovery.DiscoveryService`)
    over ``ctx``."""
    from admin.services.discovery import DiscoveryService

    return DiscoveryService(ctx.store, site_service(ctx))


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def dump_json(value: Any) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=2, default=_json_default)
    sys.stdout.write("\n")


def parse_when(text: str) -> datetime:
    """``YYYY-MM-DD``, an ISO date-time, or a age such as ``7d`` / ``12h`` (UTC)."""
    match = re.fullmatch(r"(\d+)([dh])", text)
    if match:
        amount = int(match.group(1))
        delta = timedelta(days=amount) if match.group(2) == "d" else timedelta(hours=amount)
        return datetime.now(UTC) - delta
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise CommandError(
            f"{text!r} is not a date (YYYY-MM-DD), a time or an age (7d, 12h)", 2
        ) from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)
