"""``fptrack crawl``: crawl a site now: enqueued for the workers, here on the shared frontier,
or inline with no worker."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from admin.commands.common import leaf, seconds_type
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context
    from matcher.sites.site_config import SiteConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from admin.crawl_wait import DEFAULT_POLL, DEFAULT_TIMEOUT

    leaf(
        parser,
        run,
        "Crawl a site now. By default the crawl is a task for the workers, which start the "
        "site's crawler processes on its shared Redis frontier; --here crawls in this process "
        "as one more crawler of that frontier (joining or resuming its crawl) and sends each "
        "page to the workers; --inline also matches each page here, with no worker at all "
        "and the frontier in memory (nothing shared or resumed).",
    )
    parser.add_argument("site", help="the site's name (see fptrack sites list)")
    parser.add_argument(
        "--here",
        action="store_true",
        help="crawl in this process, as one more crawler of the site's shared Redis frontier; "
        "pages go to the workers (default: enqueue the crawl)",
    )
    parser.add_argument(
        "--inline",
        action="store_true",
        help="crawl and match in this process, no worker, frontier in memory (default: "
        "enqueue the crawl)",
    )
    parser.add_argument(
        "--incremental",
        action="store_true",
        help="the site's incremental crawl (start pages, sitemaps, feeds, new pages only; "
        "stored pages asked for conditionally) instead of a full one (default: full)",
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="follow the enqueued crawl (pages stored; matches new since it started and all "
        "the site has) and exit with its outcome: "
        "0 finished, 1 failed (with its reason), 3 interrupted, 4 --timeout passed; a store "
        "that stops answering meanwhile is waited for, as the services do (default: exit "
        "once enqueued)",
    )
    parser.add_argument(
        "--poll",
        type=seconds_type,
        default=DEFAULT_POLL,
        metavar="SECONDS",
        help="with --wait: seconds between two looks at the crawl (default: %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds_type,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="with --wait: stop waiting after this long, exit 4; the crawl goes on "
        "(default: 0, as long as the crawl runs)",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    site = ctx.store.sites.get_site(args.site)
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

        servers = {"MongoDB": ctx.settings.mongo_uri, "Redis": ctx.settings.redis_url}
        return wait_for_crawl(
            ctx.store, site.name, task_id, poll=args.poll, timeout=args.timeout, servers=servers
        )
    if args.wait:
        args.parser.error("--wait follows an enqueued crawl: not with --here or --inline")
    from tqdm import tqdm

    from admin.crawl_wait import matches_line
    from admin.human import crawl_error
    from crawler.run import crawl_in_process, crawl_problem
    from matcher.store import now
    from matcher.worker import jobs
    from matcher.worker.ingest import Ingest

    engine = ctx.engine
    authorised = ctx.store.sites.authorised_sites()
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
        jobs.record_crawler_started(ctx.store, site.name, leases[0])

    frontiers = _shared_frontier(ctx) if args.here else None
    began = now()
    try:
        stats = crawl_in_process(
            [site],
            {
                "FPTRACK_INGEST": Ingest(engine.store, enqueue),
                **ctx.settings.crawl_overrides,
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
        jobs.record_crawler_ended(ctx.store, site.name, leases[0], outcome, s, error)
    if error:
        raise CommandError(f"site {site.name}: {crawl_error(error)}")
    counts = ""
    if args.incremental:
        inc = "fptrack/incremental/"
        counts = ", ".join(f"{s.get(inc + k, 0)} {k}" for k in ("new", "changed", "unchanged"))
        counts = f" ({counts})"
    matches = ""
    if args.inline:  # matched here: the site's matches are known now
        new = ctx.store.matches.count(site=site.name, since=began, active_only=True)
        matches = f"; matches: {matches_line(ctx.store, site.name, new)}"
    from matcher.sites.crawl_runs import hints

    for hint in hints(s):
        print(f"{site.name}: {hint}", file=sys.stderr)
    print(
        f"{site.name}: {s.get('fptrack/pages', 0)} page(s){counts}, "
        f"{s.get('response_received_count', 0)} response(s), "
        f"{sum(v for k, v in s.items() if k.startswith('fptrack/errors/'))} error(s){matches}"
    )
    return 0


def _shared_frontier(ctx: Context) -> Any:
    """The sites' frontiers in the Redis of ``FPTRACK_REDIS_URL``."""
    from crawler.lease import RedisFrontiers

    return RedisFrontiers.connect(ctx.settings)
