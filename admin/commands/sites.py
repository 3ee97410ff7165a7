"""``fptrack sites``: the watched sites and their crawl schedules (add, list, remove), the
pirate sites found from them (discover) or through a search engine (search), and who hosts
the sites with matches (hosting: RDAP)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from admin.commands.common import (
    actions,
    command,
    discovery_service,
    dump_json,
    json_option,
    site_service,
)
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context
    from matcher.sites.discovery import Candidate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from crawler.render import CHROMIUM, RENDER_SECONDS, SETTLE_SECONDS

    sites = actions(parser, "The sites fptrack crawls, each with its crawl rules and schedule.")
    p = command(
        sites,
        "add",
        run_add,
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
        "and read the text its scripts load. A page waits at most "
        f"{RENDER_SECONDS:g} s for its load event, "
        f"then at most {SETTLE_SECONDS:g} s for its network to settle (default: off, pages "
        "read as served)",
    )
    p = command(
        sites,
        "list",
        run_list,
        "list sites",
        "List the watched sites: name, schedule, start URLs.",
    )
    json_option(p)
    p = command(
        sites,
        "remove",
        run_remove,
        "remove a site and its schedule (its pages stay)",
        "Remove a site and its crawl schedule. Its pages and matches stay.",
    )
    p.add_argument("name", help="the site's name (see fptrack sites list)")
    p = command(
        sites,
        "discover",
        run_discover,
        "find pirate sites the watched ones lead to, and rank them",
        "From the watched sites (a bounded crawl of each, --harvest pages), collect the hosts "
        "they lead to: outbound links, redirects and new addresses announced in their text "
        "(新地址, 最新网址 ...). Crawl a sample of each (--sample pages, robots.txt obeyed), "
        "match its pages against the registered works, and rank the candidates: works "
        "copied, then the share of pages copying. Candidates are kept for the admin's "
        "Discovery page; dismissed ones are not sampled again. A host that is or resolves "
        "to an internal address (private, loopback, link-local ...) is neither requested "
        "nor kept, only listed as refused, unless FPTRACK_OUTBOUND_ALLOW_PRIVATE=true "
        "(default false; a watched site's own host may always be internal).",
    )
    p.add_argument(
        "--sample",
        type=int,
        help="pages sampled per candidate (default: FPTRACK_DISCOVER_SAMPLE, 10)",
    )
    p.add_argument(
        "--harvest", type=int,
        help="pages read per watched site (default: FPTRACK_DISCOVER_HARVEST, 20)",
    )  # fmt: skip
    json_option(p)
    p = command(
        sites,
        "search",
        run_search,
        "find pirate sites through a search engine, and rank them",
        "Ask the SearXNG instance of FPTRACK_SEARCH_URL (its JSON format enabled) for "
        "distinctive sentences of the chapters not searched for yet (a work's chapters, or "
        "pieces of a work without headings; of a work registered again with more chapters, "
        "the new ones): --queries per chapter (default FPTRACK_SEARCH_QUERIES_PER_CHAPTER, "
        "1), long sentences said once, none that another registered work holds (the works' "
        "index; by the text alone when it cannot be read, said in the summary), the longest "
        "first, each an exact phrase. Round-robin over the works, newest first, one chapter "
        "of each in turn, within FPTRACK_SEARCH_DAILY_QUERIES queries a UTC day (default 100)"
        " and FPTRACK_SEARCH_RESULTS result URLs a query (default 10). The hosts of the "
        "results that are not watched are sampled (--sample pages, default "
        "FPTRACK_DISCOVER_SAMPLE, 10; robots.txt and the outbound policy obeyed), matched and"
        " ranked as `sites discover` ranks its candidates, and kept for the admin's Discovery"
        " page. A failure of the search engine (rate-limited, no answer, not its JSON) ends "
        "the run with one line and exit status 1, what was found until then kept.",
    )
    p.add_argument(
        "--queries",
        type=int,
        help="sentences searched per chapter (default: FPTRACK_SEARCH_QUERIES_PER_CHAPTER, 1)",
    )
    p.add_argument(
        "--works", type=int, default=100,
        help="works searched for at most, newest first (default 100)",
    )  # fmt: skip
    p.add_argument(
        "--sample",
        type=int,
        help="pages sampled per candidate (default: FPTRACK_DISCOVER_SAMPLE, 10)",
    )
    json_option(p)
    p = command(
        sites,
        "hosting",
        run_hosting,
        "look up who hosts the sites with matches (RDAP)",
        "Look up who hosts each watched site with matches whose hosting was last looked up "
        "7 days ago or never (all of them with --refresh; the named SITEs now, matches or "
        "not): its addresses, the owner and abuse contact of each address's network (the "
        "RIR's RDAP server), and its domain's registrar and abuse contact (the registry's "
        "RDAP server, and the registrar's when the registry refers to it). The servers come "
        "from the RDAP bootstrap files of FPTRACK_RDAP_BOOTSTRAP_URL (default "
        "https://data.iana.org/rdap/), kept a week in the store. Each request takes at most "
        "FPTRACK_RDAP_DEADLINE s (default 10), a site at most FPTRACK_RDAP_MAX_REQUESTS "
        "RDAP requests (default 6). An RDAP server on an internal address is refused unless "
        "FPTRACK_OUTBOUND_ALLOW_PRIVATE=true (default false). A lookup that finds nothing "
        "keeps the contacts found earlier; each failure is a line of its errors. A network "
        "owner found becomes the site's provider unless one was edited. Beat's sites:hosting "
        "does the same every FPTRACK_HOSTING_EVERY s (default a week). Exit status 1 when "
        "every lookup failed.",
    )
    p.add_argument(
        "sites", nargs="*", metavar="SITE", help="look up these sites now (default: due ones)"
    )
    p.add_argument(
        "--refresh",
        action="store_true",
        help="look up every site with matches now, however recent its lookup (default: "
        "those last looked up 7 days ago or never)",
    )
    p.add_argument(
        "--limit", type=int, default=500,
        help="sites looked up at most (default 500)",
    )  # fmt: skip
    json_option(p)


HOSTING_COLUMNS = (
    "site", "addresses", "network owner", "abuse email", "registrar", "registrar abuse email",
    "looked up", "errors",
)  # fmt: skip


def run_hosting(args: argparse.Namespace, ctx: Context) -> int:
    from admin.services.takedowns import TakedownService
    from matcher.sites.site_config import SiteConfigError
    from matcher.store.common import StoreError

    if not 1 <= args.limit <= 100_000:
        raise CommandError("--limit takes 1 to 100000", 2)
    try:
        done = TakedownService(ctx).look_up_hosting(
            args.sites, refresh=args.refresh, limit=args.limit
        )
    except KeyError as exc:
        raise CommandError(f"no site {exc.args[0]} (see fptrack sites list)") from None
    except (StoreError, SiteConfigError) as exc:
        raise CommandError(str(exc), 2) from None
    if args.json:
        keys = ("site", "requests", "bootstrap_requests", "hosting")
        dump_json([{k: getattr(d, k) for k in keys} for d in done])
    else:
        print("\t".join(HOSTING_COLUMNS))
        for d in done:
            print("\t".join(hosting_row(d.site, d.hosting)))
        requests = sum(d.requests for d in done)
        fetched = sum(d.bootstrap_requests for d in done)
        print(
            f"{len(done)} site(s) looked up: {requests} RDAP request(s), "
            f"{fetched} bootstrap file(s) fetched, {sum(d.failed for d in done)} failed",
            file=sys.stderr,
        )
    return 1 if done and all(d.failed for d in done) else 0


def hosting_row(site: str, hosting: dict[str, Any]) -> list[str]:
    """A site's hosting as the cells of :data:`HOSTING_COLUMNS` ("-" for unknown)."""
    networks = hosting.get("networks") or []
    registrar = hosting.get("registrar") or {}
    owners = sorted({n["name"] for n in networks if n.get("name")})
    abuse = sorted({n["abuse_email"] for n in networks if n.get("abuse_email")})
    looked = hosting.get("looked_up_at")
    cells = [
        site,
        " ".join(hosting.get("addresses") or []),
        ", ".join(owners),
        ", ".join(abuse),
        registrar.get("name", ""),
        registrar.get("abuse_email", ""),
        looked.strftime("%Y-%m-%d %H:%M UTC") if isinstance(looked, datetime) else "",
        "; ".join(hosting.get("errors") or []),
    ]
    return [" ".join(c.split()) or "-" for c in cells]


def run_search(args: argparse.Namespace, ctx: Context) -> int:
    from crawler.sample_crawl import sampler
    from matcher.sites.discovery import candidate_doc
    from matcher.sites.search import SearchEngine, SearchError

    settings = ctx.settings
    if not settings.search_url:
        raise CommandError(
            "no search engine: set FPTRACK_SEARCH_URL to a SearXNG instance "
            "(http(s)://HOST[:PORT], its JSON format enabled)",
            2,
        )
    queries = settings.search_queries_per_chapter if args.queries is None else args.queries
    sample = settings.discover_sample if args.sample is None else args.sample
    if not 1 <= queries <= 100 or not 1 <= sample <= 1000 or not 1 <= args.works <= 10000:
        raise CommandError("--queries takes 1 to 100, --sample 1 to 1000, --works 1 to 10000", 2)
    try:
        engine = SearchEngine.from_settings(settings)
    except SearchError as exc:
        raise CommandError(f"FPTRACK_SEARCH_URL: {exc.detail}", 2) from None
    run = discovery_service(ctx).search(
        ctx.engine, sampler(settings), engine, budget=settings.search_daily_queries,
        queries_per_chapter=queries, sample_pages=sample, works=args.works,
    )  # fmt: skip
    if args.json:
        dump_json(
            {
                "works": run.works,
                "chapters": run.chapters,
                "queries": run.queries,
                "results": run.results,
                "budget_spent": run.budget_spent,
                "error": run.error,
                "index": run.index,
                "candidates": [candidate_doc(c) for c in run.candidates],
            }
        )
    else:
        print_candidates(run.candidates)
        print(
            f"{run.chapters} chapter(s) searched for, {run.works} work(s) done: "
            f"{run.queries} quer(ies), {run.results} result(s)"
        )
        if run.index:
            print(f"the sentences were not chosen by the works' index: {run.index}")
        if run.budget_spent:
            print(
                f"the day's {settings.search_daily_queries} queries are spent "
                "(FPTRACK_SEARCH_DAILY_QUERIES): the other chapters wait for tomorrow"
            )
    if run.error:
        print(f"fptrack sites search: {run.error}", file=sys.stderr)
        return 1
    return 0


def run_discover(args: argparse.Namespace, ctx: Context) -> int:
    from crawler.sample_crawl import sampler
    from matcher.sites.discovery import candidate_doc

    settings = ctx.settings
    sample = settings.discover_sample if args.sample is None else args.sample
    harvest = settings.discover_harvest if args.harvest is None else args.harvest
    if not 1 <= sample <= 1000 or not 1 <= harvest <= 1000:
        raise CommandError("--sample and --harvest take 1 to 1000 pages", 2)

    found = discovery_service(ctx).discover(
        ctx.engine, sampler(settings), harvest=harvest, sample_pages=sample
    )
    if args.json:
        dump_json([candidate_doc(c) for c in found])
        return 0
    print_candidates(found)
    return 0


def print_candidates(found: list[Candidate]) -> None:
    """The candidates ranked, a line each, then how many (and how many were refused)."""
    for c in found:
        kinds = ", ".join(sorted({lead.kind for lead in c.leads}))
        if c.refused:
            print(f"   -     refused {c.host}\tnot requested: {c.refused}; from"
                  f" {', '.join(c.linked_from)} ({kinds})")  # fmt: skip
            continue
        verdict = "pirate" if c.pirate else "-     "
        print(
            f"{c.score():7.2f}  {verdict}  {c.host}\t{len(c.works)} work(s),"
            f" {c.copying_pages}/{c.pages} page(s) copying;"
            f" from {', '.join(c.linked_from)} ({kinds})"
        )
    pirates = sum(c.pirate for c in found)
    refused = sum(bool(c.refused) for c in found)
    print(f"{len(found) - refused} candidate(s), {pirates} pirate")
    if refused:
        print(
            f"{refused} host(s) refused by the outbound policy, not kept"
            " (FPTRACK_OUTBOUND_ALLOW_PRIVATE=true allows internal addresses)"
        )


def run_add(args: argparse.Namespace, ctx: Context) -> int:
    from urllib.parse import urlsplit

    from matcher.sites.site_config import SiteConfig

    name = args.name or (urlsplit(args.url).hostname or "").replace(":", "-")
    try:
        site = SiteConfig(
            name=name,
            start_urls=(args.url, *args.start),
            allowed_domains=tuple(args.domain),
            max_depth=args.depth,
            max_pages=args.max_pages,
            deadline=args.deadline,
            crawlers=args.crawlers,
            include=tuple(args.include),
            exclude=tuple(args.exclude),
            content_selector=args.selector,
            join_next_pages=not args.no_join,
            obey_robots=not args.ignore_robots,
            schedule=args.schedule,
            recrawl=args.recrawl,
            authorised=args.authorised,
            render=args.render,
        )
    except ValueError as exc:
        raise CommandError(str(exc), 2) from exc
    created, scheduled = site_service(ctx, scheduled=True).put(site)
    when = f"schedule {site.schedule}" if scheduled else "not scheduled"
    if site.recrawl != "never":
        when += f", incremental crawl {site.recrawl}"
    print(f"{'added' if created else 'updated'} site {site.name} ({when})")
    return 0


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    sites, last = site_service(ctx).listed()
    if args.json:
        dump_json([{**s.to_dict(), "last_crawl": last[s.name]} for s in sites])
        return 0
    for s in sites:
        flags = (" authorised" if s.authorised else "") + (" render" if s.render else "")
        print(
            f"{s.name}\t{s.schedule}\t{' '.join(s.start_urls)}{flags}\t{last_crawl(last[s.name])}"
        )
    print(f"{len(sites)} site(s)", file=sys.stderr)
    return 0


def last_crawl(outline: dict[str, Any] | None) -> str:
    """A site's last crawl in one line: when, outcome, pages, matches, errors, why it failed."""
    if outline is None:
        return "never crawled"
    started = outline["started_at"]
    when = started.strftime("%Y-%m-%d %H:%M UTC") if isinstance(started, datetime) else "?"
    line = (
        f"last crawl {when} {outline['outcome']}, {outline['pages']} page(s), "
        f"{outline['matches'] or 0} match(es), {outline['errors']} error(s)"
    )
    return line + (f": {outline['error']}" if outline["error"] else "")


def run_remove(args: argparse.Namespace, ctx: Context) -> int:
    if not site_service(ctx, scheduled=True).delete(args.name):
        raise CommandError(f"no site named {args.name!r}")
    print(f"removed site {args.name} and its schedule")
    return 0
