"""The ``fptrack`` argument parser: one function per command group, a description per command.

Every option's help names its default; sizes and durations are written for people and read
back from what people write (``--max-bytes 64MiB``, ``--wait 1m``). Each command's parser
is kept in its arguments (``args.parser``) so that later checks report argument errors the
way argparse does (usage, one line, exit status 2). The module is long because it is a
declaration: twenty commands, each with its description and the help of every option.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from admin import alert_commands as a
from admin import commands as c
from admin import service_commands as s
from admin.crawl_wait import DEFAULT_POLL, DEFAULT_TIMEOUT
from admin.human import parse_duration, parse_size, size
from admin.reading import DEFAULT_MAX_BYTES
from admin.scan import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_PAGES,
    DEFAULT_OUTAGE_WAIT,
)
from admin.scan_command import cmd_scan
from crawler.render import CHROMIUM, RENDER_SECONDS, SETTLE_SECONDS
from crawler.settings import FPTRACK_MAX_LINKS_PER_PAGE, FPTRACK_MAX_PENDING
from matcher.settings import Settings
from matcher.store import STATUSES

Command = Callable[[argparse.Namespace, Any], int]
DEFAULTS = Settings()


def fptrack_version() -> str:
    try:
        return version("fptrack")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _seconds(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, got {text!r}")
    return value


def _command(
    group: Any, name: str, func: Command, summary: str, description: str
) -> argparse.ArgumentParser:
    p = group.add_parser(name, help=summary, description=description)
    p.set_defaults(func=func, parser=p)
    return p


def _group(sub: Any, name: str, summary: str, description: str) -> Any:
    p = sub.add_parser(name, help=summary, description=description)
    return p.add_subparsers(dest="action", required=True, metavar="ACTION")


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output (default: text)")


def _max_bytes(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--max-bytes",
        type=_size,
        default=DEFAULT_MAX_BYTES,
        metavar="SIZE",
        help=f"{what} files larger than this, e.g. 10MiB (default: {size(DEFAULT_MAX_BYTES)})",
    )


def _wait(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wait",
        type=_seconds,
        default=0.0,
        metavar="DURATION",
        help="wait this long for MongoDB, Redis and the broker to answer, e.g. 60s or 2m "
        "(default: 0 s, check once)",
    )


def add_scan(sub: Any) -> None:
    p = _command(
        sub,
        "scan",
        cmd_scan,
        "one-shot scan: works x sites, no server needed",
        "Register every .txt, .md and .html file under --works as a work, crawl each site "
        "(links within its host), match every page and write the results as JSON (and an "
        "HTML report). Everything runs in this process: MongoDB is an in-memory mongomock, "
        "Redis is fakeredis unless FPTRACK_REDIS_URL names a server (then the scan's keys are "
        "deleted when it ends). Works with the same text as an earlier file, or nearly "
        f"(FPTRACK_NEAR_TWIN_SHARE, default {DEFAULTS.near_twin_share}), are listed in "
        "'duplicates' and their copies reported under the earlier file. "
        "Give at least one --site or --site-dir.",
    )
    p.add_argument("--works", required=True, metavar="DIR", help="folder of works (recursive)")
    p.add_argument(
        "--site",
        action="append",
        default=[],
        metavar="URL",
        help="site to crawl from this URL (repeat for several; default: none)",
    )
    p.add_argument(
        "--site-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder served on 127.0.0.1 for the scan and crawled from its index.html "
        "(repeat for several; default: none)",
    )
    p.add_argument("--json", required=True, metavar="OUT", help="write the results here")
    p.add_argument(
        "--max-pages",
        type=int,
        default=DEFAULT_MAX_PAGES,
        help=f"pages per site at most (default: {DEFAULT_MAX_PAGES:,})",
    )
    p.add_argument(
        "--max-depth",
        type=int,
        default=DEFAULT_MAX_DEPTH,
        help="links from the start URL at most; a page's next and previous pages and "
        f"chapters (下一页, 下一章 ...) are not a level deeper (default: {DEFAULT_MAX_DEPTH})",
    )
    p.add_argument(
        "--deadline",
        type=int,
        default=DEFAULT_DEADLINE,
        metavar="SECONDS",
        help="stop crawling a site after this long (its downloads and page reading end "
        "by then too); pages not reached are reported "
        f"(default: {DEFAULT_DEADLINE}; 0: none)",
    )
    p.add_argument(
        "--max-links",
        type=_positive,
        default=FPTRACK_MAX_LINKS_PER_PAGE,
        metavar="N",
        help="links followed from one page, the first in it; the others are counted as "
        f"links_capped (FPTRACK_MAX_LINKS_PER_PAGE, default: {FPTRACK_MAX_LINKS_PER_PAGE:,})",
    )
    p.add_argument(
        "--max-pending",
        type=_positive,
        default=FPTRACK_MAX_PENDING,
        metavar="N",
        help="requests queued and not yet fetched, per site: the bound of the crawl's memory; "
        "new links beyond it are counted as pending_capped "
        f"(FPTRACK_MAX_PENDING, default: {FPTRACK_MAX_PENDING:,})",
    )
    p.add_argument(
        "--outage-wait",
        type=float,
        default=DEFAULT_OUTAGE_WAIT,
        metavar="SECONDS",
        help="with FPTRACK_REDIS_URL: how long to wait, after the crawl, for a Redis that "
        "stopped answering, so that the pages that met the outage are matched "
        f"(default: {DEFAULT_OUTAGE_WAIT})",
    )
    p.add_argument(
        "--render",
        action="store_true",
        help=f"open every page in headless Chromium (FPTRACK_CHROMIUM, default {CHROMIUM}) "
        "and read the text its scripts load, for sites that load their "
        "text by script; needs the extra 'render' (default: off, pages read as served)",
    )
    p.add_argument("--html", metavar="OUT", help="also write an HTML report here (default: none)")
    p.add_argument(
        "--warc",
        metavar="OUT",
        help="also write the evidence archive here: the HTTP exchange of every matched page "
        "as fetched, WARC records, gzipped (OUT.warc.gz; default: none)",
    )
    p.add_argument(
        "--serve",
        nargs="?",
        const="127.0.0.1:8000",
        metavar="HOST:PORT",
        help="then serve the admin platform over the results until Ctrl-C or SIGTERM "
        "(127.0.0.1:8000 when given alone; port 0 picks a free one; default: do not serve)",
    )


def add_works(sub: Any) -> None:
    works = _group(
        sub,
        "works",
        "register, list and remove works",
        "The mother corpus: the original works whose copies fptrack looks for.",
    )
    p = _command(
        works,
        "add",
        c.cmd_works_add,
        "register works (.txt .md .html .zip, folders recursive)",
        "Register works: each file (or each file of a folder or a .zip, recursively) is one "
        "work, its encoding detected. A work registered again (same path) is updated in "
        "place. Each new work is matched at once against the pages already crawled. A work "
        "with the same text as one registered earlier, or nearly (each lying at least "
        f"FPTRACK_NEAR_TWIN_SHARE, default {DEFAULTS.near_twin_share}, inside the other), is "
        "stored as its twin, not indexed: its copies are recorded under the earlier work.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a work file, a folder or a .zip")
    p.add_argument("--title", help="title (one file only; default: the file name)")
    p.add_argument("--author", default="", help="author (default: none)")
    p.add_argument(
        "--no-match",
        action="store_true",
        help="do not match against pages already crawled now; the daily job will "
        "(default: match now)",
    )
    _max_bytes(p, "skip")
    p = _command(
        works,
        "list",
        c.cmd_works_list,
        "list registered works",
        "List the registered works, newest first: id, title, author and source.",
    )
    _json(p)
    p = _command(
        works,
        "remove",
        c.cmd_works_remove,
        "remove works (and their index entries)",
        "Remove works by id, title or source; their index entries and unreviewed matches go "
        "too (reviewed matches stay as records).",
    )
    p.add_argument("refs", nargs="+", metavar="REF", help="a work's id, title or source")
    p.add_argument(
        "--all", action="store_true", help="remove every work a title matches (default: one)"
    )


def add_sites(sub: Any) -> None:
    sites = _group(
        sub,
        "sites",
        "watched sites and their schedules",
        "The sites fptrack crawls, each with its crawl rules and schedule.",
    )
    p = _command(
        sites,
        "add",
        c.cmd_sites_add,
        "add a site, or change one (same --name)",
        "Add a watched site, or change one (same --name). Its schedule is saved in Redis at "
        "once, so a running beat picks it up within 5 s.",
    )
    p.add_argument("url", help="the start URL")
    p.add_argument("--name", help="site name (default: the URL's host)")
    p.add_argument(
        "--start",
        action="append",
        default=[],
        metavar="URL",
        help="another start URL (repeatable; default: none)",
    )
    p.add_argument(
        "--domain",
        action="append",
        default=[],
        help="allowed domain (repeatable; default: hosts of the start URLs)",
    )
    p.add_argument("--depth", type=int, default=5, help="link depth at most (default: 5)")
    p.add_argument(
        "--max-pages",
        type=int,
        default=0,
        help="pages per crawl (per crawler process) at most (default: 0, no limit)",
    )
    p.add_argument(
        "--deadline",
        type=int,
        default=0,
        metavar="SECONDS",
        help="stop a crawl after this long; the rest is left to the next crawl "
        "(default: 0, none beyond FPTRACK_CRAWL_TIMEOUT)",
    )
    p.add_argument(
        "--crawlers",
        type=int,
        default=1,
        help="crawler processes crawling the site at once, on any workers, sharing one "
        "frontier in Redis (default: 1; at most 16)",
    )
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="REGEX",
        help="follow only URLs matching this (repeatable; default: every URL)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="REGEX",
        help="never follow URLs matching this (repeatable; default: none)",
    )
    p.add_argument(
        "--selector",
        default="",
        help="CSS (or XPath from /) of the main text (default: extracted automatically)",
    )
    p.add_argument(
        "--no-join",
        action="store_true",
        help="do not record next/previous page links (下一页/上一页): chapters split over "
        "pages are then matched page by page only (default: recorded, split chapters are "
        "matched as a whole too)",
    )
    p.add_argument(
        "--ignore-robots", action="store_true", help="do not obey robots.txt (default: obey)"
    )
    p.add_argument(
        "--schedule",
        default="daily",
        help="daily, daily@HH:MM (UTC), hourly, 'every N m|h|s', 'cron M H DOM MON DOW' or "
        "never (default: daily, at a minute derived from the name)",
    )
    p.add_argument(
        "--recrawl",
        default="never",
        metavar="SCHEDULE",
        help="schedule of the incremental crawl besides the full one (same forms as --schedule, "
        "e.g. 'every 2m'): start pages, sitemaps, RSS/Atom feeds and new pages only, stored "
        "pages asked for conditionally; never while a full crawl of the site runs "
        "(default: never)",
    )
    p.add_argument(
        "--authorised",
        action="store_true",
        help="a licensed site: its matches are recorded as authorised (default: not)",
    )
    p.add_argument(
        "--render",
        action="store_true",
        help=f"open each page in headless Chromium (FPTRACK_CHROMIUM, default {CHROMIUM}) "
        "and read the text its scripts load; needs the extra 'render' (pip install "
        f"'fptrack[render]'). A page waits at most {RENDER_SECONDS:g} s for its load event, "
        f"then at most {SETTLE_SECONDS:g} s for its network to settle (default: off, pages "
        "read as served)",
    )
    p = _command(
        sites,
        "list",
        c.cmd_sites_list,
        "list sites",
        "List the watched sites: name, schedule, start URLs.",
    )
    _json(p)
    p = _command(
        sites,
        "remove",
        c.cmd_sites_remove,
        "remove a site and its schedule (its pages stay)",
        "Remove a site and its crawl schedule. Its pages and matches stay.",
    )
    p.add_argument("name", help="the site's name (see fptrack sites list)")


def add_alerts(sub: Any) -> None:
    group = _group(
        sub,
        "alerts",
        "alert rules: who is told of new matches",
        "Rules that tell of new matches, per work, per site or all, at once or in a daily "
        "digest, by signed webhook or email (README: Alerts).",
    )
    p = _command(
        group,
        "add",
        a.cmd_alerts_add,
        "add a rule",
        "Add an alert rule. A webhook rule prints its secret (the key of its signatures).",
    )
    p.add_argument("name", help="the rule's name")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "--work", metavar="WORK_ID", help="only this work's matches (default: every match)"
    )
    scope.add_argument("--site", help="only this site's matches (default: every match)")
    p.add_argument(
        "--mode",
        choices=("immediate", "daily"),
        default="immediate",
        help="one message per new match, or one digest a day at FPTRACK_DIGEST_AT "
        f"(default: immediate; digests at {DEFAULTS.digest_at} UTC)",
    )
    channel = p.add_mutually_exclusive_group(required=True)
    channel.add_argument(
        "--webhook", metavar="URL", help="POST to this http(s) URL (no default: this or --email)"
    )
    channel.add_argument(
        "--email",
        action="append",
        metavar="ADDRESS",
        help="mail this address (repeatable; no default: this or --webhook)",
    )
    p.add_argument("--secret", help="the webhook's secret (default: a random one)")
    p = _command(
        group,
        "list",
        a.cmd_alerts_list,
        "list rules",
        "List the alert rules: id, name, scope, mode, channel and where it sends (never a secret).",
    )
    _json(p)
    p = _command(
        group,
        "remove",
        a.cmd_alerts_remove,
        "remove a rule",
        "Remove an alert rule; its unsent messages are dropped.",
    )
    p.add_argument("id", help="the rule's id (see fptrack alerts list)")
    p = _command(
        group,
        "test",
        a.cmd_alerts_test,
        "send a rule a test message",
        "Send an alert rule a message about a made-up match now; exit status 1 if it fails.",
    )
    p.add_argument("id", help="the rule's id (see fptrack alerts list)")


def add_matching(sub: Any) -> None:
    p = _command(
        sub,
        "schedules",
        c.cmd_schedules,
        "list the beat schedules (crawls, daily jobs)",
        "List the schedules beat runs, as saved in Redis (redbeat): each site's crawl and the "
        "daily jobs, with the next time each is due.",
    )
    _json(p)
    p = _command(
        sub,
        "crawl",
        s.cmd_crawl,
        "crawl a site now (default: enqueued for the workers)",
        "Crawl a site now. By default the crawl is a task for the workers, which start the "
        "site's crawler processes on its shared Redis frontier; --here crawls in this process "
        "as one more crawler of that frontier (joining or resuming its crawl) and sends each "
        "page to the workers; --inline also matches each page here, with no worker at all "
        "and the frontier in memory (nothing shared or resumed).",
    )
    p.add_argument("site", help="the site's name (see fptrack sites list)")
    p.add_argument(
        "--here",
        action="store_true",
        help="crawl in this process, as one more crawler of the site's shared Redis frontier; "
        "pages go to the workers (default: enqueue the crawl)",
    )
    p.add_argument(
        "--inline",
        action="store_true",
        help="crawl and match in this process, no worker, frontier in memory (default: "
        "enqueue the crawl)",
    )
    p.add_argument(
        "--incremental",
        action="store_true",
        help="the site's incremental crawl (start pages, sitemaps, feeds, new pages only; "
        "stored pages asked for conditionally) instead of a full one (default: full)",
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="follow the enqueued crawl (pages stored, matched) and exit with its outcome: "
        "0 finished, 1 failed (with its reason), 3 interrupted, 4 --timeout passed "
        "(default: exit once enqueued)",
    )
    p.add_argument(
        "--poll",
        type=_seconds,
        default=DEFAULT_POLL,
        metavar="SECONDS",
        help="with --wait: seconds between two looks at the crawl (default: %(default)s)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="with --wait: stop waiting after this long, exit 4; the crawl goes on "
        "(default: 0, as long as the crawl runs)",
    )
    p = _command(
        sub,
        "match",
        c.cmd_match,
        "check one text file or URL now: which works it copies",
        "Match one text against the registered works and print the works it copies, with "
        "evidence passages. Nothing is stored.",
    )
    p.add_argument(
        "target",
        help="a .txt, .md or .html file, or an http(s) URL (fetched within "
        "FPTRACK_QUERY_DEADLINE, default 20 s, at most FPTRACK_QUERY_MAX_BYTES, default 10 MiB)",
    )
    _json(p)
    p.add_argument(
        "--passages", type=int, default=5, help="evidence passages shown per work (default: 5)"
    )
    _max_bytes(p, "refuse")
    matches = _group(sub, "matches", "recorded matches", "The recorded matches.")
    p = _command(
        matches,
        "list",
        c.cmd_matches_list,
        "list matches, newest first",
        "List recorded matches, newest first, with their status, site, score, work and URL.",
    )
    _match_filters(p)
    p.add_argument("--limit", type=int, default=100, help="at most this many (default: 100)")
    _json(p)
    p = _command(
        sub,
        "report",
        c.cmd_report,
        "export matches as CSV, JSON or HTML",
        "Export the recorded matches that the filters select. CSV cells are made inert for "
        "spreadsheets; the HTML report is escaped and runs no script from the data.",
    )
    _match_filters(p, until=True)
    p.add_argument(
        "--format", choices=("csv", "json", "html"), default="csv", help="(default: csv)"
    )
    p.add_argument("--out", help="write to this file (default: standard output)")


def _match_filters(p: argparse.ArgumentParser, until: bool = False) -> None:
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


def add_services(sub: Any) -> None:
    index = _group(sub, "index", "the Redis indexes", "The Redis indexes of works and pages.")
    p = _command(
        index,
        "rebuild",
        c.cmd_index_rebuild,
        "rebuild every Redis index from MongoDB",
        "Delete the Redis indexes and rebuild them from the fingerprints stored in MongoDB. "
        "Safe on empty stores (a new deployment's first step). Workers and beat's heal job "
        "rebuild the tag groups Redis lost on their own; this is for a changed setting "
        "(FPTRACK_WINDOW_BUCKET_BITS ...) or an index of an older layout.",
    )
    p.add_argument(
        "--if-incomplete",
        action="store_true",
        help="rebuild only the tag groups Redis lost (none: nothing is done), as the heal "
        "job does (default: rebuild everything)",
    )
    archive = _group(
        sub, "archive", "the evidence archive", "The evidence archive (FPTRACK_ARCHIVE)."
    )
    p = _command(
        archive,
        "prune",
        c.cmd_archive_prune,
        "delete archived exchanges no page or match refers to",
        "Delete the archived HTTP exchanges superseded by a page's later text that no match "
        "refers to, stored more than a day before (the daily job daily:prune-archive does the "
        "same). Each page's current exchange and every match's exchange are kept.",
    )
    admin = _group(
        sub,
        "admin",
        "the admin web platform",
        "The admin web platform: its server, its accounts and its dashboard counters.",
    )
    p = _command(
        admin,
        "serve",
        s.cmd_admin_serve,
        "serve the admin platform (gunicorn)",
        "Serve the admin platform with gunicorn over MongoDB and Redis. It checks both at "
        "start and exits 1 with one line if one does not answer (see --wait); once running, "
        "it waits out their restarts. It also serves the deployment's Prometheus metrics at "
        "/metrics: to a viewer's API token (Authorization: Bearer), or without one to the "
        "addresses of FPTRACK_METRICS_ALLOW (default: none); figures are computed from "
        "MongoDB and Redis and kept FPTRACK_METRICS_CACHE_SECONDS (default: 15) per process. "
        "Each gunicorn worker (gthread) serves --threads requests at once, so a query by URL "
        "or a webhook test waiting on a slow server holds one thread until its own deadline "
        "(FPTRACK_QUERY_DEADLINE, 20 s; FPTRACK_ALERT_TIMEOUT, 10 s), never the other "
        "users' pages. gunicorn's worker timeout (a worker whose main loop stopped) is 120 s, "
        "or the longest of those deadlines plus 60 s when that is longer.",
    )
    p.add_argument("--bind", default="127.0.0.1:8000", help="HOST:PORT (default: 127.0.0.1:8000)")
    p.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default: 2)")
    p.add_argument(
        "--threads",
        type=int,
        default=4,
        help="requests each worker serves at once, in threads (default: 4)",
    )
    p.add_argument(
        "--secure-cookies",
        action="store_true",
        help="send the session cookie over HTTPS only, behind a TLS proxy (default: off)",
    )
    p.add_argument("--access-log", action="store_true", help="log each request (default: off)")
    _wait(p)
    p = _command(
        admin,
        "create-user",
        s.cmd_admin_create_user,
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
    _command(
        admin,
        "recount",
        s.cmd_admin_recount,
        "rebuild the dashboard counters from the data",
        "Recount the dashboard's counters from the works, pages and matches stored.",
    )
    p = _command(
        sub,
        "worker",
        s.cmd_worker,
        "run a Celery worker (pages, works, crawls)",
        "Run a Celery worker: it fingerprints and matches pages, indexes works and runs "
        "crawls. It checks MongoDB, Redis and the broker at start and exits 1 with one line "
        "if one does not answer (see --wait); once running, it waits out their restarts.",
    )
    p.add_argument(
        "--queues", default="fptrack,fptrack.crawl", help="(default: fptrack,fptrack.crawl)"
    )
    p.add_argument(
        "--concurrency", type=int, default=0, help="processes (default: 0, one per core)"
    )
    p.add_argument(
        "-n",
        "--hostname",
        default="",
        help="the worker's name, %%h for the host (default: fptrack-<pid>@<host>, one per process)",
    )
    p.add_argument("--loglevel", default="INFO", help="(default: INFO)")
    _wait(p)
    p = _command(
        sub,
        "beat",
        s.cmd_beat,
        "run the scheduler (redbeat; one at a time)",
        "Run the scheduler: it saves the daily jobs and every site's schedule in Redis, then "
        "sends the tasks when due. Run exactly one (a second one waits on redbeat's lock). It "
        "checks MongoDB, Redis and the broker at start (see --wait); once running, it waits "
        "out their restarts and saves the schedules again if Redis lost them.",
    )
    p.add_argument("--loglevel", default="INFO", help="(default: INFO)")
    _wait(p)
    p = _command(
        sub,
        "check",
        s.cmd_check,
        "report the health of the deployment",
        "Report MongoDB, Redis, the broker, the workers, beat, the indexes and the "
        "schedules, one line each; a server that does not answer is named. Exit status 0 "
        "only when all are healthy. Name checks to run only those (and the ones they need), "
        "e.g. `fptrack check beat` as a container's health check.",
    )
    p.add_argument(
        "names",
        nargs="*",
        metavar="CHECK",
        help="mongodb, redis, broker, workers, beat, indexes or schedules (default: all)",
    )
    p.add_argument(
        "--this-host",
        action="store_true",
        help="count only the workers of this machine, named NAME@<its host name> "
        "(default: every worker)",
    )
    _json(p)
    p = _command(
        sub,
        "migrate",
        s.cmd_migrate,
        "convert the database to the current (shardable) layout",
        "Convert a database of an earlier layout: pages get ids derived from their URLs, the "
        "id counters and dashboard tallies are striped, indexes that would stop sharding are "
        "replaced. Safe to run again; stop the workers first. With --shard-commands, print "
        "the mongosh commands that shard every collection instead (nothing is changed).",
    )
    p.add_argument(
        "--shard-commands",
        action="store_true",
        help="print the sh.shardCollection commands of the database (default: migrate)",
    )


def add_fingerprint(sub: Any) -> None:
    p = _command(
        sub,
        "fingerprint",
        c.cmd_fingerprint,
        "print every fingerprint of a text or HTML file",
        "Print every fingerprint of one file (simhash, MinHash, pinyin windows, winnowed "
        "8-grams, longest sentences). Needs no server.",
    )
    p.add_argument("file", help="a .txt, .md or .html file")
    p.add_argument("--json", action="store_true", help="every value as JSON (default: a summary)")
    _max_bytes(p, "refuse")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fptrack",
        description="Track copies of Chinese web text by fingerprint. Connections come from "
        f"FPTRACK_MONGO_URI (default {DEFAULTS.mongo_uri}), FPTRACK_REDIS_URL (default "
        f"{DEFAULTS.redis_url}) and the other FPTRACK_* variables listed in the README.",
    )
    parser.add_argument("--version", action="version", version=f"fptrack {fptrack_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (
        add_scan,
        add_works,
        add_sites,
        add_alerts,
        add_matching,
        add_services,
        add_fingerprint,
    ):
        add(sub)
    return parser


def parse(argv: list[str] | None) -> argparse.Namespace:
    """Parsed arguments; argument errors exit 2 with argparse's usage line."""
    args = build_parser().parse_args(argv)
    if args.command == "scan" and not args.site and not args.site_dir:
        args.parser.error("give at least one --site URL or --site-dir DIR")
    return args
