"""Run crawls: in process on the shared reactor, or as ``python -m crawler.run``.

:func:`crawl_in_process` crawls several sites at once (one Scrapy crawler per site, each
with its own settings from :func:`crawler.settings.crawl_settings`, so robots.txt and limits
are per site) on the process's one reactor (:mod:`crawler.reactor`); it may be called any
number of times in a process. It returns each site's final Scrapy stats as plain JSON
values (datetimes as ISO 8601 strings).

The command line crawls one site with the production pipeline (MongoDB store, Celery
``fptrack.process_page`` tasks; see :mod:`crawler.pipelines`); the Celery ``crawl_site``
task launches it in a subprocess::

    python -m crawler.run --site-json '{"name": "demo", "start_urls": ["https://..."]}' \\
        [--stats-json PATH] [--log-level INFO] [--timeout SECONDS] \\
        [--frontier redis|memory] [--announce] [--incremental]

It prints the stats as JSON (or writes them to ``--stats-json``). ``--frontier redis`` (the
default) crawls on the site's shared frontier in the Redis of ``FPTRACK_REDIS_URL``, under
``FPTRACK_REDIS_PREFIX``, with leases of ``FPTRACK_CRAWL_LEASE`` seconds (settings read
once, here, with the store's and the broker's, and passed to the pipeline in
``FPTRACK_SETTINGS``): the process joins the crawl under way, or resumes the one a crash left, or
starts a new one; ``memory`` keeps the frontier in this process. ``--incremental`` runs the
site's incremental crawl (:mod:`crawler.incremental`) instead of a full one: its queue is in
this process whatever ``--frontier`` says, and with ``--frontier redis`` it takes the site's
recrawl lease first (:class:`crawler.lease.RecrawlLease`: exit status 3 while another
incremental crawl or a full crawl of the site runs). ``--announce`` prints one
JSON line (run id, slot, token, host, pid) on stdout when the crawl starts. SIGTERM stops
the crawl gracefully, like ``--timeout``. Exit status: 0 when the crawl ran, 1 when it
failed, a start URL gave no page, or no page could be fetched while its run lasted (the
error on one line on stderr, :func:`crawl_problem`; a run whose frontier Redis lost is not
a failure), 2 for a bad
configuration or bad arguments (one line on stderr), 3 when every crawler slot of the site
(its ``crawlers``) is held by another process. Defaults: ``--log-level`` INFO, no
``--timeout``, ``--frontier redis``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import date, datetime
from pathlib import Path
from typing import Any

import redis

from crawler import reactor as shared_reactor
from crawler.extract import SelectorError, check_selector
from crawler.lease import CrawlLease, FullCrawlRunning, LeaseCallback, RecrawlLease, RedisFrontiers
from crawler.scheduler import frontier_settings
from crawler.settings import SETTINGS_SETTING, crawl_settings
from crawler.spiders.site import SiteSpider, site_config
from matcher.errors import MatcherError
from matcher.sites.crawl_runs import RENDER_UNAVAILABLE, start_problem, state_lost
from matcher.sites.site_config import SiteConfig, SiteConfigError

Stats = dict[str, Any]
BUSY = "crawlers_busy"


class CrawlFailed(RuntimeError):
    """A crawler could not run (bad settings, a pipeline that cannot open...).

    ``stats`` holds every site's stats, those that ran included; ``errors`` maps the failed
    sites to their error.
    """

    def __init__(self, errors: dict[str, str], stats: dict[str, Stats]) -> None:
        super().__init__("; ".join(f"site {name}: {err}" for name, err in errors.items()))
        self.errors = errors
        self.stats = stats


def crawl_in_process(
    sites: Sequence[SiteConfig],
    settings_overrides: dict[str, Any] | None = None,
    timeout: float | None = None,
    frontiers: RedisFrontiers | None = None,
    on_lease: LeaseCallback | None = None,
    incremental: bool = False,
) -> dict[str, Stats]:
    """Crawl ``sites`` together on the shared reactor; ``{site name: stats}``.

    ``settings_overrides`` apply to every site (e.g. ``AUTOTHROTTLE_ENABLED: False`` or an
    in-process ``FPTRACK_INGEST``). After ``timeout`` seconds the crawls are asked to stop
    gracefully (finish reason ``shutdown``): no new request starts, downloads in flight end
    within ``DOWNLOAD_TIMEOUT``, and the stats are returned. Raises
    :class:`CrawlFailed` when a crawler could not run, after the others finished.

    Without ``frontiers`` (the default) each crawl keeps its queue and dupefilter in this
    process (Scrapy's scheduler): nothing outlives the call. With ``frontiers`` each site is
    crawled on its shared frontier in Redis (:mod:`crawler.frontier`), under a lease
    (``on_lease`` is called with it before the crawl starts); a site whose
    ``crawlers`` slots are all held is not crawled (finish reason :data:`BUSY`). Either way
    the stats hold ``fptrack/frontier/...`` facts only for frontier crawls.

    ``incremental`` runs each site's incremental crawl (:mod:`crawler.incremental`), its queue
    in this process; with ``frontiers`` it first takes the site's recrawl lease, and a site
    whose lease is held, or whose full crawl is running, is not crawled (:data:`BUSY`, with
    the reason in ``fptrack/busy``).
    """
    names = [site.name for site in sites]
    if len(set(names)) != len(names):
        raise SiteConfigError(f"site names must be distinct, got {names}")
    for site in sites:
        check_selector(site.content_selector)
    reactor_path = shared_reactor.reactor_setting()
    runs: dict[str, Any] = {}
    leases: dict[str, CrawlLease] = {}
    recrawls: dict[str, RecrawlLease] = {}
    busy: dict[str, str] = {}
    try:
        for site in sites if frontiers is not None else ():
            if incremental:
                try:
                    recrawl = frontiers.recrawl_lease(site)  # type: ignore[union-attr]
                except FullCrawlRunning as exc:
                    busy[site.name] = str(exc)
                    continue
                if recrawl is None:
                    busy[site.name] = f"an incremental crawl of {site.name} is running"
                else:
                    recrawls[site.name] = recrawl
                continue
            lease = frontiers.lease(site)  # type: ignore[union-attr]
            if lease is not None:
                leases[site.name] = lease
                if on_lease is not None:
                    on_lease(site, lease)
            else:
                busy[site.name] = f"all {site.crawlers} crawler slot(s) are held"
        crawled = [s for s in sites if s.name not in busy]
        results = _crawl(
            crawled, settings_overrides, timeout, leases, reactor_path, runs, incremental
        )
    finally:
        for lease in [*leases.values(), *recrawls.values()]:
            lease.release()
    stats = {
        site.name: jsonable_stats(runs[site.name])
        if site.name in runs
        else _busy(site, busy.get(site.name, ""))
        for site in sites
    }
    errors = {
        site.name: f"{type(result.value).__name__}: {result.value}"
        for site, (ok, result) in zip(crawled, results, strict=True)
        if not ok
    }
    if errors:
        raise CrawlFailed(errors, stats)
    return stats


def _crawl(
    sites: Sequence[SiteConfig],
    settings_overrides: dict[str, Any] | None,
    timeout: float | None,
    leases: dict[str, CrawlLease],
    reactor_path: str | None,
    runs: dict[str, Any],
    incremental: bool = False,
) -> list[tuple[bool, Any]]:
    """Run one crawler per site on the reactor; their results (``DeferredList``'s)."""
    if not sites:
        return []

    def start() -> Any:
        from scrapy.crawler import Crawler, CrawlerRunner
        from twisted.internet.defer import DeferredList

        runner = CrawlerRunner({"TWISTED_REACTOR": reactor_path})
        runs["runner"] = runner
        deferreds = []
        for site in sites:
            overrides = dict(settings_overrides or {})
            if site.name in leases:
                overrides.update(frontier_settings(leases[site.name]))
            settings = crawl_settings(site, overrides)
            settings.set("TWISTED_REACTOR", reactor_path, priority="cmdline")
            crawler = Crawler(SiteSpider, settings)
            runs[site.name] = crawler
            deferreds.append(runner.crawl(crawler, site=site, incremental=incremental))
        return DeferredList(deferreds, consumeErrors=True)

    done = shared_reactor.call_in_reactor(start)
    try:
        return done.result(timeout)
    except FutureTimeout:
        return _stop_and_wait(runs, done)
    except KeyboardInterrupt:
        _stop_and_wait(runs, done)
        raise


def _busy(site: SiteConfig, reason: str) -> Stats:
    """The stats of a site not crawled because its crawler slots (or its recrawl lease, or a
    full crawl) held it."""
    return {
        "finish_reason": BUSY,
        "fptrack/frontier/crawlers": site.crawlers,
        "fptrack/busy": reason,
    }


STOP_AGAIN_S = 1.0
"""How often the crawls' engines still running are asked again to stop, once a deadline
passed, until every crawl ended."""


def _stop_and_wait(runs: dict[str, Any], done: Any) -> Any:
    """Stop the crawls of ``runs`` and wait for their end. Scrapy's ``Crawler.stop_async``
    acts only on a running engine: a stop that comes before the reactor started the crawls,
    or while a crawler still opens its spider, is lost and the crawl would run to its
    natural end (on a loaded machine a 1.5 s deadline passed so, and a crawl never ended).
    So the engines that run are asked again every :data:`STOP_AGAIN_S` until all ended."""
    runner = runs.get("runner")
    if runner is not None:
        shared_reactor.call_in_reactor(runner.stop)
    while True:
        try:
            return done.result(STOP_AGAIN_S)
        except FutureTimeout:
            shared_reactor.call_in_reactor(_stop_running_engines, runs)


def _stop_running_engines(runs: dict[str, Any]) -> None:
    """In the reactor: ask every crawler's engine that runs to stop (its spider closes with
    the reason ``shutdown``, as a stopped crawler's does)."""
    from scrapy.utils.defer import deferred_from_coro

    for name, crawler in runs.items():
        if name == "runner":
            continue
        try:
            engine = crawler.engine
        except (AttributeError, RuntimeError):  # not made yet: its crawl has not started
            continue
        if engine is not None and engine.running:
            deferred_from_coro(engine.stop_async())


def jsonable_stats(crawler: Any) -> Stats:
    """A crawler's stats with JSON values only (datetimes as ISO 8601 strings)."""
    try:
        raw = crawler.stats.get_stats()
    except (AttributeError, RuntimeError):  # the crawl failed before its stats existed
        raw = {}
    return {str(key): _jsonable(value) for key, value in sorted(raw.items())}


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def crawl_problem(stats: Stats) -> str | None:
    """A one-line reason when a finished crawl failed: its pages cannot be rendered, a start
    URL gave no page (:func:`matcher.sites.crawl_runs.start_problem`: not 2xx, robots.txt forbids
    it, redirected off the site, not a page), or nothing at all could be fetched; else None.

    Nothing fetched is no failure when the run's state in Redis went away first
    (:func:`matcher.sites.crawl_runs.state_lost`): Redis was emptied before the start request was
    fetched, or the lease was lost (the run is interrupted, and its job starts another), or
    another process ended the run (nothing was left to fetch)."""
    if stats.get(RENDER_UNAVAILABLE):
        return f"its pages cannot be rendered: {stats[RENDER_UNAVAILABLE]}"
    start = start_problem(stats)
    if start:
        return start
    if stats.get("downloader/response_count", 0) > 0 or state_lost(stats):
        return None
    errors = sorted(k.removeprefix("fptrack/errors/") for k in stats if "/errors/" in k)
    if errors:
        return f"no page could be fetched ({', '.join(errors)})"
    return "no page could be fetched"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m crawler.run",
        description="Crawl one watched site into the fptrack store (production pipeline).",
    )
    parser.add_argument("--site-json", required=True, help="the site configuration (a JSON object)")
    parser.add_argument("--stats-json", type=Path, help="write the crawl's stats here (JSON)")
    parser.add_argument(
        "--log-level", default="INFO", help="Scrapy's log level (default: %(default)s)"
    )
    parser.add_argument(
        "--timeout", type=float, help="stop gracefully after this many seconds (default: none)"
    )
    parser.add_argument(
        "--frontier",
        choices=("redis", "memory"),
        default="redis",
        help="the site's shared frontier in Redis, or one in this process (default: redis)",
    )
    parser.add_argument(
        "--incremental",
        action="store_true",
        help="run the site's incremental crawl (start pages, sitemaps, feeds, new pages only)",
    )
    parser.add_argument(
        "--announce",
        action="store_true",
        help="print the crawl's lease (one JSON line) on stdout when it starts",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; see the module docstring."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed a one-line usage error
        return int(exc.code or 0) and 2
    try:
        site = site_config(args.site_json)
        check_selector(site.content_selector)
    except (SiteConfigError, SelectorError) as exc:
        print(f"crawler.run: bad site configuration: {_one_line(exc)}", file=sys.stderr)
        return 2
    from scrapy.utils.log import configure_logging

    from matcher.settings import Settings

    configure_logging({"LOG_LEVEL": args.log_level})
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        settings = Settings.from_env()
        frontiers = RedisFrontiers.connect(settings) if args.frontier == "redis" else None
        on_lease = _announce if args.announce else None
        overrides = {SETTINGS_SETTING: settings, **settings.crawl_overrides}
        all_stats = crawl_in_process(
            [site], overrides, args.timeout, frontiers, on_lease, args.incremental
        )
        if all_stats[site.name].get("finish_reason") == BUSY:
            reason = all_stats[site.name].get("fptrack/busy", "")
            print(f"crawler.run: site {site.name}: {reason}", file=sys.stderr)
            return 3
        error = crawl_problem(all_stats[site.name])
    except CrawlFailed as exc:
        all_stats, error = exc.stats, str(exc)
    except (MatcherError, redis.RedisError) as exc:
        print(f"crawler.run: site {site.name}: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("crawler.run: interrupted", file=sys.stderr)
        return 130
    output = json.dumps(all_stats[site.name], indent=2, sort_keys=True, ensure_ascii=False)
    if args.stats_json:
        args.stats_json.write_text(output + "\n", encoding="utf-8")
    else:
        print(output)
    if error:
        print(f"crawler.run: site {site.name}: {_one_line(error)}", file=sys.stderr)
        return 1
    return 0


def _announce(site: SiteConfig, lease: CrawlLease) -> None:
    print(json.dumps({"site": site.name, **lease.describe()}), flush=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _one_line(error: object) -> str:
    return " ".join(str(error).split())


if __name__ == "__main__":
    sys.exit(main())
