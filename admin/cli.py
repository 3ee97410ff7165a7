"""The ``fptrack`` command line: works, sites, crawls, matches, reports, services, the scan.

Every command fails with a one-line ``fptrack: error: ...`` and a non-zero exit status on
bad input or an unreachable server (1; 2 for bad arguments); nothing already stored is lost.
Connections come from the ``FPTRACK_*`` environment variables (see the README), read once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from admin import commands as c
from admin.commands import CommandError
from admin.context import Context
from admin.reading import DEFAULT_MAX_BYTES, ReadError, read_text_file
from admin.scan import DEFAULT_MAX_PAGES
from fingerprint.document import DocumentParams, fingerprint_document
from matcher import jobs
from matcher.errors import MatcherError
from matcher.maintenance import drop_indexes
from matcher.sites import SiteConfig, SiteConfigError
from matcher.store import STATUSES


def cmd_fingerprint(args: argparse.Namespace, ctx: Context) -> int:
    try:
        text, encoding = read_text_file(Path(args.file), args.max_bytes)
    except ReadError as exc:
        raise CommandError(str(exc), 2 if exc.missing else 1) from exc
    fp = fingerprint_document(text, DocumentParams())
    result = {
        "file": args.file,
        "encoding": encoding,
        "chars": len(text),
        "normalized_chars": len(fp.normalized.text),
        "fingerprints": fp.to_dict(),
    }
    if args.json:
        c.dump_json(result)
        return 0
    print(f"file              {args.file}")
    print(f"encoding          {encoding}")
    print(f"characters        {len(text)} ({len(fp.normalized.text)} after normalisation)")
    print(f"simhash           {fp.simhash.to_hex()}")
    print(
        f"minhash           {fp.minhash.params.num_perm} values over {fp.minhash.size} "
        f"3-grams ({fp.minhash.params.scheme}), first {fp.minhash.to_hex()[:32]}..."
    )
    print(f"pinyin windows    {len(fp.pinyin)} windows, {len(fp.pinyin.keyset())} distinct dnas")
    print(
        f"pinyin anchored   {len(fp.pinyin_anchored)} windows, "
        f"{len(fp.pinyin_anchored.keyset())} distinct dnas"
    )
    print(f"winnowed 8-grams  {len(fp.winnow)}")
    print(f"longest sentences {len(fp.sentences.spans)}")
    for start, end in fp.sentences.spans:
        print(f"  {fp.normalized.quote(start, end)[:60]}")
    return 0


def cmd_scan(args: argparse.Namespace, ctx: Context) -> int:
    from contextlib import ExitStack

    from admin.report import match_texts, to_html
    from admin.scan import run_scan, serve_directory

    works_dir = Path(args.works)
    if not works_dir.is_dir():
        raise CommandError(f"--works {works_dir}: not a directory", 2)
    if not args.site and not args.site_dir:
        raise CommandError("give at least one --site URL (or --site-dir FOLDER)", 2)
    for url in args.site:
        if not url.startswith(("http://", "https://")):
            raise CommandError(f"--site {url!r}: not an http(s) URL", 2)
    if args.max_pages < 1:
        raise CommandError("--max-pages must be at least 1", 2)
    out = Path(args.json)
    if not out.parent.is_dir():
        raise CommandError(f"--json {out}: folder {out.parent} does not exist", 2)
    with ExitStack() as stack:
        urls = list(args.site)
        for folder in args.site_dir:
            if not Path(folder, "index.html").is_file():
                raise CommandError(f"--site-dir {folder}: no index.html there", 2)
            urls.append(stack.enter_context(serve_directory(Path(folder))) + "index.html")
        works_bar = tqdm(desc="works", unit="work", disable=None, file=sys.stderr)
        pages_bar = tqdm(desc="pages", unit="page", disable=None, file=sys.stderr)
        try:
            result, engine = run_scan(
                works_dir,
                urls,
                max_pages=args.max_pages,
                redis_url=os.environ.get("FPTRACK_REDIS_URL") or None,
                on_work=lambda w: works_bar.update(1),
                on_page=lambda u: pages_bar.update(1),
            )
        finally:
            works_bar.close()
            pages_bar.close()
    try:
        out.write_text(
            json.dumps(result.to_json(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
        if args.html:
            matches = list(engine.store.db.matches.find({"active": True}).sort("url", 1))
            Path(args.html).write_text(
                to_html(
                    matches,
                    lambda m: match_texts(engine.store, m),
                    "fptrack scan",
                    {"works": result.works, "pages": result.pages, "matches": len(matches)},
                ),
                encoding="utf-8",
            )
        print(
            f"{result.works} work(s), {result.pages} page(s), {len(result.matches)} match(es)"
            f" -> {out}",
            file=sys.stderr,
        )
        for error in result.errors:
            print(f"fptrack: error: {error}", file=sys.stderr)
        if args.serve is not None:
            serve_scan(engine, args.serve)
    finally:
        if os.environ.get("FPTRACK_REDIS_URL"):
            drop_indexes(engine)
    return 1 if result.errors else 0


def serve_scan(engine: Any, bind: str) -> None:
    """Serve the admin platform over the scan's in-memory results until interrupted.

    One account, ``admin``, with a random password printed once: there is no default one.
    """
    import secrets
    import threading

    from werkzeug.serving import make_server

    from admin.web.app import create_app
    from admin.web.dispatch import InlineDispatch
    from admin.web.users import Users

    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit():
        raise CommandError(f"--serve {bind!r}: give HOST:PORT", 2)
    ctx = Context(engine=engine)
    password = secrets.token_urlsafe(12)
    Users(engine.store).create("admin", password, "admin", replace=True)
    lock = threading.RLock()
    app = create_app(
        ctx,
        dispatch=InlineDispatch(ctx, lock),
        lock=lock,
        schedules=False,
        secret_key=secrets.token_hex(32),
    )
    server = make_server(host, int(port), app, threaded=True)
    print(
        f"admin: http://{host}:{server.server_port}/  user admin, password {password}"
        "  (Ctrl-C stops; the results live in this process only)",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def cmd_crawl(args: argparse.Namespace, ctx: Context) -> int:
    site = ctx.ops.get_site(args.site)
    if site is None:
        raise CommandError(f"no site named {args.site!r} (see `fptrack sites list`)")
    if not args.here and not args.inline:
        print(f"crawl of {site.name} enqueued: task {ctx.send('fptrack.crawl_site', site.name)}")
        return 0
    from crawler.run import crawl_in_process
    from matcher.ingest import Ingest

    engine = ctx.engine
    authorised = ctx.ops.authorised_sites()
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
        jobs.record_crawler_started(ctx.ops, site.name, leases[0])

    frontiers = _shared_frontier(ctx) if args.here else None
    try:
        stats = crawl_in_process(
            [site], {"FPTRACK_INGEST": Ingest(engine.store, enqueue)}, None, frontiers, started
        )
    finally:
        bar.close()
    s = stats.get(site.name, {})
    if s.get("finish_reason") == "crawlers_busy":
        raise CommandError(f"all {site.crawlers} crawler slot(s) of {site.name} are held")
    if leases:
        jobs.record_crawler_ended(ctx.ops, site.name, leases[0], "finished", s)
    print(
        f"{site.name}: {s.get('fptrack/pages', 0)} page(s), "
        f"{s.get('response_received_count', 0)} response(s), "
        f"{sum(v for k, v in s.items() if k.startswith('fptrack/errors/'))} error(s)"
    )
    return 0


def _shared_frontier(ctx: Context) -> Any:
    """The sites' frontiers in the Redis of ``FPTRACK_REDIS_URL``."""
    import redis

    from crawler.lease import RedisFrontiers

    settings = ctx.settings
    client = redis.Redis.from_url(settings.redis_url)
    return RedisFrontiers(client, settings.redis_prefix, settings.crawl_lease)


def cmd_admin_serve(args: argparse.Namespace, ctx: Context) -> int:
    from admin.web.serve import serve

    if args.workers < 1:
        raise CommandError("--workers must be at least 1", 2)
    host, _, port = args.bind.rpartition(":")
    if not host or not port.isdigit():
        raise CommandError(f"--bind {args.bind!r}: give HOST:PORT", 2)
    ctx.engine.store.ensure_indexes()
    if not ctx.engine.store.db.users.find_one({}, {"_id": 1}):
        print(
            "fptrack: no account yet: create one with"
            " `fptrack admin create-user NAME --role admin`",
            file=sys.stderr,
        )
    serve(args.bind, args.workers, args.secure_cookies, args.access_log)
    return 0


def cmd_admin_create_user(args: argparse.Namespace, ctx: Context) -> int:
    import getpass

    from admin.web.users import UserError, Users

    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"password for {args.username}: ")
        if password != getpass.getpass("again: "):
            raise CommandError("the two passwords differ", 2)
    try:
        user = Users(ctx.engine.store).create(args.username, password, args.role, args.replace)
    except UserError as exc:
        raise CommandError(str(exc), 2) from exc
    print(f"user {user.username} ({user.role}) {'reset' if args.replace else 'created'}")
    return 0


def cmd_admin_recount(args: argparse.Namespace, ctx: Context) -> int:
    from matcher.tallies import recount

    written = recount(ctx.engine.store.db)
    print(f"dashboard counters rebuilt: {written} document(s)")
    return 0


def cmd_worker(args: argparse.Namespace, ctx: Context) -> int:
    argv = ["worker", f"--loglevel={args.loglevel}", f"--queues={args.queues}"]
    if args.concurrency:
        argv.append(f"--concurrency={args.concurrency}")
    ctx.app.worker_main(argv)
    return 0


def cmd_beat(args: argparse.Namespace, ctx: Context) -> int:
    ctx.schedules.ensure_daily(ctx.settings)
    for site in ctx.ops.list_sites():
        ctx.schedules.sync_site(site)
    ctx.app.start(["beat", "-S", "redbeat.RedBeatScheduler", f"--loglevel={args.loglevel}"])
    return 0


def _match_filters(p: argparse.ArgumentParser, until: bool = False) -> None:
    p.add_argument("--site", help="only this site (its name)")
    p.add_argument("--work", help="only this work (id, title or source)")
    p.add_argument("--since", help="first seen at or after: YYYY-MM-DD, ISO time, or age 7d/12h")
    if until:
        p.add_argument("--until", help="first seen before: YYYY-MM-DD or ISO time")
    p.add_argument("--status", choices=STATUSES, help="only this review status")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fptrack",
        description="Track copies of Chinese web text by fingerprint. Connections come from "
        "FPTRACK_MONGO_URI (default mongodb://127.0.0.1:27017), FPTRACK_REDIS_URL (default "
        "redis://127.0.0.1:6379/0) and the other FPTRACK_* variables listed in the README.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("scan", help="one-shot scan: works x sites, no server needed")
    p.add_argument("--works", required=True, help="folder of works (.txt .md .html, recursive)")
    p.add_argument("--site", action="append", default=[], help="site URL to crawl (repeatable)")
    p.add_argument(
        "--site-dir",
        action="append",
        default=[],
        help="serve this folder on 127.0.0.1 for the scan and crawl it from index.html",
    )
    p.add_argument("--json", required=True, help="write the results here")
    p.add_argument(
        "--max-pages",
        type=int,
        default=DEFAULT_MAX_PAGES,
        help=f"pages per site at most (default: {DEFAULT_MAX_PAGES})",
    )
    p.add_argument("--html", help="also write an HTML report with highlighted evidence")
    p.add_argument(
        "--serve",
        nargs="?",
        const="127.0.0.1:8000",
        metavar="HOST:PORT",
        help="then serve the admin platform over the results (default 127.0.0.1:8000;"
        " port 0 picks a free one) until Ctrl-C",
    )
    p.set_defaults(func=cmd_scan)

    works = sub.add_parser("works", help="register, list and remove works").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    p = works.add_parser("add", help="register works (.txt .md .html .zip, folders recursive)")
    p.add_argument("paths", nargs="+", help="files or folders")
    p.add_argument("--title", help="title (one file only; default: the file name)")
    p.add_argument("--author", default="", help="author (default: none)")
    p.add_argument(
        "--no-match",
        action="store_true",
        help="do not match against pages already crawled now (the daily job will)",
    )
    p.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        help=f"skip larger files (default: {DEFAULT_MAX_BYTES})",
    )
    p.set_defaults(func=c.cmd_works_add)
    p = works.add_parser("list", help="list registered works")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=c.cmd_works_list)
    p = works.add_parser("remove", help="remove works (and their index entries)")
    p.add_argument("refs", nargs="+", help="work id, title or source")
    p.add_argument("--all", action="store_true", help="remove every work a title matches")
    p.set_defaults(func=c.cmd_works_remove)

    sites = sub.add_parser("sites", help="watched sites and their schedules").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    p = sites.add_parser("add", help="add a site, or change one (same --name)")
    p.add_argument("url", help="start URL")
    p.add_argument("--name", help="site name (default: the URL's host)")
    p.add_argument("--start", action="append", default=[], help="another start URL")
    p.add_argument(
        "--domain",
        action="append",
        default=[],
        help="allowed domain (default: hosts of the start URLs)",
    )
    p.add_argument("--depth", type=int, default=5, help="link depth at most (default: 5)")
    p.add_argument(
        "--max-pages",
        type=int,
        default=0,
        help="pages per crawl (per crawler process) at most (default: 0, no limit)",
    )
    p.add_argument(
        "--crawlers",
        type=int,
        default=1,
        help="crawler processes crawling the site at once, on any workers, sharing one "
        "frontier in Redis (default: 1; at most 16)",
    )
    p.add_argument(
        "--include", action="append", default=[], help="follow only URLs matching this regex"
    )
    p.add_argument(
        "--exclude", action="append", default=[], help="never follow URLs matching this regex"
    )
    p.add_argument(
        "--selector", default="", help="CSS (or XPath from /) of the main text (default: extracted)"
    )
    p.add_argument(
        "--no-join",
        action="store_true",
        help="do not record next/previous page links (下一页/上一页): chapters split over "
        "pages are then matched page by page only",
    )
    p.add_argument(
        "--ignore-robots", action="store_true", help="do not obey robots.txt (default: obey)"
    )
    p.add_argument(
        "--schedule",
        default="daily",
        help="daily (default), daily@HH:MM, hourly, 'every N m|h|s', 'cron M H DOM MON DOW', never",
    )
    p.add_argument(
        "--authorised", action="store_true", help="licensed site: its matches are authorised"
    )
    p.set_defaults(func=c.cmd_sites_add)
    p = sites.add_parser("list", help="list sites")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=c.cmd_sites_list)
    p = sites.add_parser("remove", help="remove a site and its schedule (its pages stay)")
    p.add_argument("name")
    p.set_defaults(func=c.cmd_sites_remove)

    p = sub.add_parser("schedules", help="list the beat schedules (crawls, daily jobs)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=c.cmd_schedules)

    p = sub.add_parser(
        "crawl",
        help="crawl a site now (default: enqueued for the workers, which start the site's "
        "crawlers processes on its shared Redis frontier)",
    )
    p.add_argument("site", help="site name")
    p.add_argument(
        "--here",
        action="store_true",
        help="crawl in this process, as one more crawler of the site's shared Redis frontier "
        "(joining or resuming its crawl); pages go to the workers",
    )
    p.add_argument(
        "--inline",
        action="store_true",
        help="crawl and match in this process (no worker, frontier in memory: nothing shared "
        "or resumed)",
    )
    p.set_defaults(func=cmd_crawl)

    p = sub.add_parser("match", help="check one text file or URL now: which works it copies")
    p.add_argument("target", help="a .txt/.md/.html file or an http(s) URL")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--passages", type=int, default=5, help="evidence passages shown per work (default: 5)"
    )
    p.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        help=f"refuse larger files (default: {DEFAULT_MAX_BYTES})",
    )
    p.set_defaults(func=c.cmd_match)

    matches = sub.add_parser("matches", help="recorded matches").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    p = matches.add_parser("list", help="list matches, newest first")
    _match_filters(p)
    p.add_argument("--limit", type=int, default=100, help="at most this many (default: 100)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=c.cmd_matches_list)

    p = sub.add_parser("report", help="export matches as CSV, JSON or HTML")
    _match_filters(p, until=True)
    p.add_argument("--format", choices=("csv", "json", "html"), default="csv", help="default: csv")
    p.add_argument("--out", help="write to this file (default: standard output)")
    p.set_defaults(func=c.cmd_report)

    index = sub.add_parser("index", help="the Redis indexes").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    p = index.add_parser("rebuild", help="rebuild every Redis index from MongoDB")
    p.set_defaults(func=c.cmd_index_rebuild)

    admin = sub.add_parser("admin", help="the admin web platform").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    p = admin.add_parser("serve", help="serve the admin platform (gunicorn)")
    p.add_argument("--bind", default="127.0.0.1:8000", help="HOST:PORT (default: 127.0.0.1:8000)")
    p.add_argument("--workers", type=int, default=2, help="gunicorn workers (default: 2)")
    p.add_argument(
        "--secure-cookies",
        action="store_true",
        help="send the session cookie over HTTPS only (behind a TLS proxy; default: off)",
    )
    p.add_argument("--access-log", action="store_true", help="log each request (default: off)")
    p.set_defaults(func=cmd_admin_serve)
    p = admin.add_parser("create-user", help="add an account (the password is asked for)")
    p.add_argument("username")
    p.add_argument(
        "--role", choices=("viewer", "reviewer", "admin"), default="viewer", help="default: viewer"
    )
    p.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    p.add_argument("--replace", action="store_true", help="reset an existing account")
    p.set_defaults(func=cmd_admin_create_user)
    p = admin.add_parser("recount", help="rebuild the dashboard counters from the data")
    p.set_defaults(func=cmd_admin_recount)

    p = sub.add_parser("worker", help="run a Celery worker (pages, works, crawls)")
    p.add_argument(
        "--queues", default="fptrack,fptrack.crawl", help="default: fptrack,fptrack.crawl"
    )
    p.add_argument("--concurrency", type=int, default=0, help="processes (default: one per core)")
    p.add_argument("--loglevel", default="INFO", help="default: INFO")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("beat", help="run the scheduler (redbeat; one at a time)")
    p.add_argument("--loglevel", default="INFO", help="default: INFO")
    p.set_defaults(func=cmd_beat)

    p = sub.add_parser("fingerprint", help="print every fingerprint of a text or HTML file")
    p.add_argument("file", help="a .txt, .md or .html file")
    p.add_argument(
        "--json", action="store_true", help="machine-readable output (default: a summary)"
    )
    p.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        help=f"refuse files larger than this (default: {DEFAULT_MAX_BYTES})",
    )
    p.set_defaults(func=cmd_fingerprint)
    return parser


def main(argv: list[str] | None = None, context: Context | None = None) -> int:
    args = build_parser().parse_args(argv)
    ctx = context or Context()
    try:
        return args.func(args, ctx)
    except CommandError as exc:
        print(f"fptrack: error: {exc}", file=sys.stderr)
        return exc.status
    except (SiteConfigError, ValueError) as exc:
        print(f"fptrack: error: {exc}", file=sys.stderr)
        return 2
    except MatcherError as exc:
        print(f"fptrack: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (``fptrack ... | head``): stop quietly, as the Python docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
