"""The operator's commands over the store and indexes: works, sites, matches, reports, index.

Each ``cmd_*`` takes the parsed arguments and a :class:`Context`, prints to stdout and
returns the exit status; a :class:`CommandError` is printed as one line by the CLI.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tqdm import tqdm

from admin import report_html
from admin.context import Context
from admin.errors import CommandError
from admin.human import duration
from admin.reading import ReadError, WorkFile, iter_work_files, read_text_file
from admin.report import row, to_csv
from admin.report_html import when
from fingerprint.document import DocumentParams, fingerprint_document
from matcher import crawl_runs
from matcher.errors import MatcherError
from matcher.jobs import prune_archive
from matcher.keys import TAG_GROUPS
from matcher.maintenance import rebuild_indexes
from matcher.sites import SiteConfig


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


# fingerprint ---------------------------------------------------------------------------


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
        dump_json(result)
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


# works ---------------------------------------------------------------------------------


def cmd_works_add(args: argparse.Namespace, ctx: Context) -> int:
    paths = [Path(p) for p in args.paths]
    files: Iterable[WorkFile] = iter_work_files(paths, args.max_bytes)  # one at a time
    if args.title:
        files = list(files)
        if len(files) != 1:
            raise CommandError("--title needs exactly one work file", 2)
    engine = ctx.engine
    added, failed, matches = 0, 0, 0
    for work in tqdm(files, desc="works", unit="work", disable=None, file=sys.stderr):
        if work.error:
            print(f"fptrack: skipped {work.error}", file=sys.stderr)
            failed += 1
            continue
        source = work.source
        title = args.title or Path(work.name).stem
        try:
            work_id = engine.add_work(work.text, title=title, source=source, author=args.author)
        except MatcherError as exc:
            print(f"fptrack: skipped {work.name}: {exc}", file=sys.stderr)
            failed += 1
            continue
        added += 1
        note = ctx.ops.same_text_note(work_id)
        if note:
            print(f"fptrack: {title}: {note}", file=sys.stderr)
        if not args.no_match:
            matches += len(engine.match_work_against_pages(work_id, ctx.ops.authorised_sites()))
        print(f"{work_id}\t{title}\t{source}")
    note = "" if args.no_match else f", {matches} match(es) among pages already crawled"
    print(f"{added} work(s) registered, {failed} skipped{note}", file=sys.stderr)
    return 1 if failed else 0


def cmd_works_list(args: argparse.Namespace, ctx: Context) -> int:
    works = ctx.ops.list_works()
    if args.json:
        dump_json(
            [
                {
                    **w,
                    "_id": str(w["_id"]),
                    "same_text_as": str(w.get("same_text_as") or ""),
                    "near_twin": bool(w.get("near_twin")),
                }
                for w in works
            ]
        )
        return 0
    for w in works:
        nearly = "nearly the " if w.get("near_twin") else ""
        twin = f"\t{nearly}same text as {w['same_text_as']}" if w.get("same_text_as") else ""
        line = f"{w['_id']}\t{w.get('title', '')}\t{w.get('author', '')}\t{w.get('source', '')}"
        print(line + twin)
    print(f"{len(works)} work(s)", file=sys.stderr)
    return 0


def cmd_works_remove(args: argparse.Namespace, ctx: Context) -> int:
    status = 0
    for ref in args.refs:
        found = ctx.ops.find_works(ref)
        if not found:
            print(f"fptrack: error: no work with id, title or source {ref!r}", file=sys.stderr)
            status = 1
            continue
        if len(found) > 1 and not args.all:
            raise CommandError(f"{len(found)} works match {ref!r}; give an id or --all")
        for work in found:
            ctx.engine.remove_work(str(work["_id"]))
            print(f"removed {work['_id']}\t{work.get('title', '')}")
    return status


# sites ---------------------------------------------------------------------------------


def cmd_sites_add(args: argparse.Namespace, ctx: Context) -> int:
    from urllib.parse import urlsplit

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
    _, created = ctx.ops.save_site(site)
    scheduled = ctx.schedules.sync_site(site)
    when = f"schedule {site.schedule}" if scheduled else "not scheduled"
    if site.recrawl != "never":
        when += f", incremental crawl {site.recrawl}"
    print(f"{'added' if created else 'updated'} site {site.name} ({when})")
    return 0


def cmd_sites_list(args: argparse.Namespace, ctx: Context) -> int:
    sites = ctx.ops.list_sites()
    latest = ctx.ops.latest_crawls()
    last = {}
    for s in sites:
        run = latest.get(s.name)
        matched = ctx.ops.crawl_progress(run)["matched"] if run else None
        last[s.name] = crawl_runs.outline(run, matched)
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


def cmd_sites_remove(args: argparse.Namespace, ctx: Context) -> int:
    if not ctx.ops.delete_site(args.name):
        raise CommandError(f"no site named {args.name!r}")
    ctx.schedules.remove_site(args.name)
    print(f"removed site {args.name} and its schedule")
    return 0


def cmd_schedules(args: argparse.Namespace, ctx: Context) -> int:
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


def fetch_url(
    url: str, *, allow_private: bool = True, deadline: float = 20.0, max_bytes: int = 10 * 1024**2
) -> str:
    """The main text of one web page (:func:`admin.fetch.fetch`, then the crawler's decoding
    and extraction); :class:`admin.fetch.FetchError` when it cannot be had. The command
    line may fetch private addresses (its operator's own network); the admin may not unless
    ``FPTRACK_QUERY_ALLOW_PRIVATE`` says so."""
    from admin.fetch import FetchError, fetch
    from crawler.encoding import decode_body
    from crawler.extract import extract

    body, header = fetch(url, allow_private=allow_private, deadline=deadline, max_bytes=max_bytes)
    try:
        text, _ = decode_body(body, header)
    except ValueError as exc:
        raise FetchError(f"{url}: {exc}") from exc
    return extract(text, url).text


def cmd_match(args: argparse.Namespace, ctx: Context) -> int:
    target = args.target
    if re.match(r"^https?://", target):
        from admin.fetch import FetchError

        try:
            text = fetch_url(
                target, deadline=ctx.settings.query_deadline,
                max_bytes=ctx.settings.query_max_bytes,
            )  # fmt: skip
        except FetchError as exc:
            raise CommandError(exc.detail) from None
    else:
        try:
            text, _ = read_text_file(Path(target), args.max_bytes)
        except ReadError as exc:
            raise CommandError(str(exc), 2 if exc.missing else 1) from exc
    try:
        records = ctx.engine.match_text(text)
    except MatcherError as exc:
        raise CommandError(f"{target}: {exc}") from exc
    records.sort(key=lambda r: -r["score"])
    if args.json:
        dump_json(
            [
                {k: v for k, v in r.items() if k not in ("alignment",)}
                | {"work_id": str(r["work_id"])}
                for r in records
            ]
        )
        return 0
    if not records:
        print("no registered work is copied in this text")
    for r in records:
        print(
            f"{r['work_title']} ({r['work_source']}): score {r['score']:.3f}, work contained "
            f"{r['containment_work']:.3f}, text contained {r['containment_page']:.3f}, "
            f"methods {', '.join(r['methods'])}"
        )
        for e in r["evidence"][: args.passages]:
            print(f"  text {e['page_span']} = work {e['work_span']}: {e['text'][:80]}")
    return 0


def _filters(args: argparse.Namespace, ctx: Context) -> dict[str, Any]:
    filters: dict[str, Any] = {}
    if args.site:
        filters["site"] = args.site
    if args.work:
        found = ctx.ops.find_works(args.work)
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


def cmd_matches_list(args: argparse.Namespace, ctx: Context) -> int:
    matches = ctx.ops.list_matches(limit=args.limit, **_filters(args, ctx))
    if args.json:
        dump_json([{**row(m), "id": str(m["_id"])} for m in matches])
        return 0
    for m in matches:
        r = row(m)
        print(
            f"{m['_id']}\t{when(m.get('first_seen'))}\t{r['status']}\t{r['site']}\t{r['score']:.3f}"
            f"\t{r['work']}\t{r['url']}"
        )
    print(f"{len(matches)} match(es)", file=sys.stderr)
    return 0


def cmd_report(args: argparse.Namespace, ctx: Context) -> int:
    matches = list(ctx.ops.iter_matches(**_filters(args, ctx)))
    if args.format == "csv":
        output = to_csv(matches)
    elif args.format == "json":
        output = json.dumps([row(m) for m in matches], ensure_ascii=False, indent=2) + "\n"
    else:
        store = ctx.engine.store
        output = report_html.render(
            matches, lambda m: report_html.match_texts(store, m), title="fptrack report"
        )
    if args.out:
        Path(args.out).write_text(output, encoding="utf-8")
        print(f"{len(matches)} match(es) written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(output)
    return 0


def cmd_archive_prune(args: argparse.Namespace, ctx: Context) -> int:
    if ctx.archive is None:
        print("fptrack: no evidence archive (FPTRACK_ARCHIVE=none): nothing to prune")
        return 0
    deleted = prune_archive(ctx.engine, ctx.archive)["deleted"]
    print(f"{deleted} archived exchange(s) deleted")
    return 0


def cmd_index_rebuild(args: argparse.Namespace, ctx: Context) -> int:
    if args.if_incomplete:
        lost = ctx.engine.integrity.snapshot().lost
        if not lost:
            print(f"the indexes are whole: all {TAG_GROUPS} tag groups hold their marker")
            return 0
        ctx.engine.ready()
        print(f"rebuilt {len(lost)} of {TAG_GROUPS} tag groups Redis had lost")
        return 0
    with tqdm(total=2, desc="rebuilding", unit="index", disable=None, file=sys.stderr) as bar:
        counts = rebuild_indexes(ctx.engine)
        bar.update(2)
    print(f"rebuilt: {counts.get('work', 0)} work segment(s), {counts.get('page', 0)} page(s)")
    return 0
