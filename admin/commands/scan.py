"""``fptrack scan``: the embedded one-shot scan, its JSON and HTML outputs, ``--serve``.

The scan's Redis keys (on the server of ``FPTRACK_REDIS_URL``, when set) live under a prefix
of their own and are deleted however the command ends: normally, on an error, on Ctrl-C or
on SIGTERM (turned into the same interruption as Ctrl-C while the command runs).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from admin.commands.common import positive_type
from admin.context import Context
from admin.errors import CommandError

if TYPE_CHECKING:
    import redis

    from matcher.matching.engine import Engine


def add_arguments(p: argparse.ArgumentParser) -> None:
    from admin import scan_defaults
    from crawler import defaults as crawl_defaults
    from matcher.settings import Settings

    defaults = Settings()
    p.description = (
        "Register every .txt, .md and .html file under --works as a work, crawl each site "
        "(links within its host), match every page and write the results as JSON (and an "
        "HTML report). Everything runs in this process: MongoDB is an in-memory mongomock, "
        "Redis is fakeredis unless FPTRACK_REDIS_URL names a server (then the scan's keys are "
        "deleted when it ends). Works with the same text as an earlier file are listed in "
        "'duplicates' and their copies reported under the earlier file (its 'twins'); "
        "those with nearly its text (FPTRACK_NEAR_TWIN_SHARE, default "
        f"{defaults.near_twin_share}) are listed there too ('near') and matched as "
        "editions. Editions of one "
        "work (each lying at least FPTRACK_POLICY_EDITION_SHARE, default "
        f"{defaults.policy.edition_share}, inside the other) are all matched: a copy of "
        "their text is reported under the edition that explains it best, the others in its "
        "'siblings' (those explaining it as well in 'tied'). Every work is "
        "read and registered before any page is fetched: a file that cannot be is named "
        "at once, and when none can, nothing is crawled (exit status 1). "
        "Give at least one --site or --site-dir."
    )
    p.set_defaults(func=run, parser=p, validate=_need_a_site)
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
        default=scan_defaults.MAX_PAGES,
        help="distinct pages stored per site at most: aliases, dead links and link lists "
        f"do not count (default: {scan_defaults.MAX_PAGES:,})",
    )
    p.add_argument(
        "--max-depth",
        type=int,
        default=scan_defaults.MAX_DEPTH,
        help="links from the start URL at most; a page's next and previous pages and "
        "chapters (下一页, 下一章 ...) are not a level deeper "
        f"(default: {scan_defaults.MAX_DEPTH})",
    )
    p.add_argument(
        "--deadline",
        type=int,
        default=scan_defaults.DEADLINE,
        metavar="SECONDS",
        help="stop crawling a site after this long (its downloads and page reading end "
        "by then too); pages not reached are reported "
        f"(default: {scan_defaults.DEADLINE}; 0: none)",
    )
    p.add_argument(
        "--max-links",
        type=positive_type,
        default=crawl_defaults.MAX_LINKS_PER_PAGE,
        metavar="N",
        help="links followed from one page, the first in it; the others are counted as "
        "links_capped (FPTRACK_MAX_LINKS_PER_PAGE, "
        f"default: {crawl_defaults.MAX_LINKS_PER_PAGE:,})",
    )
    p.add_argument(
        "--max-pending",
        type=positive_type,
        default=crawl_defaults.MAX_PENDING,
        metavar="N",
        help="requests queued and not yet fetched, per site: the bound of the crawl's memory; "
        "new links beyond it are counted as pending_capped "
        f"(FPTRACK_MAX_PENDING, default: {crawl_defaults.MAX_PENDING:,})",
    )
    p.add_argument(
        "--outage-wait",
        type=float,
        default=scan_defaults.OUTAGE_WAIT,
        metavar="SECONDS",
        help="with FPTRACK_REDIS_URL: how long to wait, after the crawl, for a Redis that "
        "stopped answering, so that the pages that met the outage are matched "
        f"(default: {scan_defaults.OUTAGE_WAIT})",
    )
    p.add_argument(
        "--render",
        action="store_true",
        help="open every page in headless Chromium "
        f"(FPTRACK_CHROMIUM, default {crawl_defaults.CHROMIUM}) "
        "and read the text its scripts load, for sites that load their "
        "text by script; needs Chromium (default: off, only the pages whose text "
        "is built by script are rendered: see --no-auto-render)",
    )
    p.add_argument(
        "--no-auto-render",
        dest="auto_render",
        action="store_false",
        default=crawl_defaults.AUTO_RENDER,
        help="read every page as served, those whose text is built by script too "
        "(FPTRACK_AUTO_RENDER=0; default: on: such a page, little text and a script that "
        "builds it, is rendered in Chromium when it is installed, else counted as not "
        "crawled, needs_browser, with a hint)",
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


def _need_a_site(args: argparse.Namespace) -> None:
    if not args.site and not args.site_dir:
        args.parser.error("give at least one --site URL or --site-dir DIR")


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While the block runs, SIGTERM interrupts the main thread as Ctrl-C does."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def drop_keys(client: redis.Redis, prefix: str) -> None:
    """Delete every key under ``prefix:`` (the scan's indexes, whatever state they are in)."""
    from matcher.index.redis_io import delete_matching
    from matcher.keys import Keys

    delete_matching(client, Keys(prefix).everything, "deleting the scan's keys")


def _check_arguments(args: argparse.Namespace) -> None:
    error = args.parser.error
    if not Path(args.works).is_dir():
        error(f"--works {args.works}: not a directory")
    for url in args.site:
        if not url.startswith(("http://", "https://")):
            error(f"--site {url!r}: not an http(s) URL")
    for folder in args.site_dir:
        if not Path(folder, "index.html").is_file():
            error(f"--site-dir {folder}: no index.html there")
    if args.max_pages < 1:
        error("--max-pages must be at least 1")
    if args.max_depth < 0:
        error("--max-depth must be at least 0")
    if not Path(args.json).parent.is_dir():
        error(f"--json {args.json}: folder {Path(args.json).parent} does not exist")
    for flag, value in (("--html", args.html), ("--warc", args.warc)):
        if value and not Path(value).parent.is_dir():
            error(f"{flag} {value}: folder {Path(value).parent} does not exist")
    if args.serve is not None:
        host, _, port = args.serve.rpartition(":")
        if not host or not port.isdigit():
            error(f"--serve {args.serve!r}: give HOST:PORT")


def run(args: argparse.Namespace, ctx: Context) -> int:
    import redis

    from admin import outage
    from admin.context import redis_client
    from admin.scan import scan_settings

    _check_arguments(args)
    settings = scan_settings(ctx.settings)
    # Only a Redis named in the environment: the scan's default is fakeredis, in process.
    redis_url = ctx.settings.redis_url if "redis_url" in ctx.settings.explicit else None
    with ExitStack() as stack:
        stack.enter_context(sigterm_interrupts())
        if redis_url:
            client = redis_client(redis_url, "FPTRACK_REDIS_URL")
            try:
                client.ping()
            except redis.RedisError as exc:
                raise CommandError(outage.line("Redis", redis_url, exc)) from exc
            stack.callback(drop_keys, client, settings.redis_prefix)
        return _scan(args, settings, redis_url, stack, ctx.settings.crawl_overrides)


def _scan(
    args: argparse.Namespace,
    settings: Any,
    redis_url: str | None,
    stack: ExitStack,
    crawl_settings: dict[str, Any],
) -> int:
    """The scan itself (``env``: the settings from the environment: the browser, whether
    pages built by script are rendered)."""
    from tqdm import tqdm

    from admin.scan import run_scan, serve_directory
    from matcher.sites.crawl_runs import hints, named_lines

    urls = list(args.site)
    site_dirs: dict[str, Path] = {}
    for folder in args.site_dir:
        base = stack.enter_context(serve_directory(Path(folder)))
        site_dirs[base] = Path(folder)
        urls.append(base + "index.html")
    archive = None
    if args.warc:
        from matcher.evidence.archive import DirectoryArchive

        archive = DirectoryArchive(Path(stack.enter_context(tempfile.TemporaryDirectory())))
    works_bar = tqdm(desc="works", unit="work", disable=None, file=sys.stderr)
    pages_bar = tqdm(desc="pages", unit="page", disable=None, file=sys.stderr)
    said: list[str] = []

    def work_error(error: str) -> None:  # at once: before the crawl, which may be long
        said.append(error)
        tqdm.write(f"fptrack: error: {error}", file=sys.stderr)

    try:
        result, engine = run_scan(
            Path(args.works),
            urls,
            max_pages=args.max_pages,
            max_depth=args.max_depth,
            deadline=args.deadline,
            redis_url=redis_url,
            settings=settings,
            on_work=lambda w: works_bar.update(1),
            on_page=lambda u: pages_bar.update(1),
            outage_wait=args.outage_wait,
            on_wait=lambda line: print(f"fptrack scan: {line}", file=sys.stderr),
            on_error=work_error,
            index_pages=args.serve is not None,
            archive=archive,
            render=args.render,
            crawl_overrides={
                **crawl_settings,
                "FPTRACK_AUTO_RENDER": args.auto_render and crawl_settings["FPTRACK_AUTO_RENDER"],
                "FPTRACK_MAX_LINKS_PER_PAGE": args.max_links,
                "FPTRACK_MAX_PENDING": args.max_pending,
            },
        )
    finally:
        works_bar.close()
        pages_bar.close()
    out = Path(args.json)
    out.write_text(
        json.dumps(result.to_json(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    if result.refused:
        print(f"fptrack scan: --works {args.works}: {result.refused}", file=sys.stderr)
        return 1
    if args.html:
        write_html_report(engine, result, Path(args.html), site_dirs)
    if archive is not None:
        write_warc(engine, archive, Path(args.warc))
    print(
        f"{result.works} work(s), {result.pages} page(s), {len(result.matches)} match(es) -> {out}",
        file=sys.stderr,
    )
    for url, skipped in result.not_crawled.items():
        reasons = ", ".join(f"{n} {why}" for why, n in skipped.items())
        print(f"{url}: not crawled: {reasons}", file=sys.stderr)
        for line in named_lines(result.not_crawled_urls.get(url, {})):
            print(f"  {line}", file=sys.stderr)
    for name, url in result.site_urls.items():
        for hint in hints(result.crawl_stats.get(name, {})):
            print(f"{url}: {hint}", file=sys.stderr)
    for warning in result.warnings:
        print(f"fptrack: warning: {warning}", file=sys.stderr)
    for error in result.errors[len(said) :]:
        print(f"fptrack: error: {error}", file=sys.stderr)
    if args.serve is not None:
        serve_scan(engine, args.serve, archive, crawl_settings)
    return 1 if result.errors else 0


def write_warc(engine: Engine, archive: Any, path: Path) -> None:
    """The WARC files of the scan's matches (each exchange once, by page URL), one after the
    other: gzipped WARC files concatenate into one."""
    from matcher.evidence.archive import bundle

    refs = {}
    for match in sorted(engine.store.matches.active_matches(), key=lambda m: m["url"]):
        if match.get("archive"):
            refs.setdefault(match["archive"]["sha256"], match["url"])
    with path.open("wb") as out:
        bundle(archive, list(refs), out)


def write_html_report(engine: Engine, result: Any, path: Path, site_dirs: dict[str, Path]) -> None:
    """The scan's HTML report (:mod:`admin.report.html_report`): each site named by the URL
    scanned; pages (and sites) of ``--site-dir`` folders by their file (folder), since the
    scan's server for them is gone once it ends."""
    from admin.report import html_report as report_html

    def texts(match: Any) -> tuple[Any, str]:
        return report_html.match_texts(engine.store, match)

    folders = {base: str(folder) for base, folder in site_dirs.items()}
    page = report_html.render(
        engine.store.matches.active_matches(),
        texts,
        title="fptrack scan",
        counts=report_html.Counts(works=result.works, pages=result.pages),
        page_label=report_html.served_folders(folders),
        site_urls=result.site_urls,
    )
    path.write_text(page, encoding="utf-8")


def serve_scan(
    engine: Engine, bind: str, archive: Any = None, crawl_overrides: dict[str, Any] | None = None
) -> None:
    """Serve the admin platform over the scan's in-memory results until interrupted.

    One account, ``admin``, with a random password printed once: there is no default one.
    """
    import secrets
    import threading

    from werkzeug.serving import make_server

    from admin.services.accounts import Users
    from admin.services.dispatch import InlineDispatch
    from admin.web.app import create_app

    host, _, port = bind.rpartition(":")
    ctx = Context(engine=engine, archive=archive)
    password = secrets.token_urlsafe(12)
    Users(engine.store).create("admin", password, "admin", replace=True)
    lock = threading.RLock()
    app = create_app(
        ctx,
        dispatch=InlineDispatch(ctx, lock, crawl_overrides),
        lock=lock,
        schedules=False,
        secret_key=secrets.token_hex(32),
    )
    try:
        server = make_server(host, int(port), app, threaded=True)
    except OSError as exc:
        raise CommandError(f"--serve {bind}: cannot listen there: {exc.strerror or exc}") from exc
    try:
        # Inside the try: a Ctrl-C or SIGTERM sent as soon as the line is read stops the
        # server as cleanly as one sent while it serves.
        print(
            f"admin: http://{host}:{server.server_port}/  user admin, password {password}"
            "  (Ctrl-C stops; the results live in this process only)",
            file=sys.stderr,
            flush=True,
        )
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
