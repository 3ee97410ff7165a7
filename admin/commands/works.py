"""``fptrack works``: the mother corpus (add, list, remove)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from admin.commands.common import actions, command, dump_json, json_option, max_bytes_option
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context
    from admin.reading import WorkFile


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from matcher.settings import Settings

    near_twin_share = Settings().near_twin_share
    works = actions(parser, "The mother corpus: the original works whose copies fptrack looks for.")
    p = command(
        works,
        "add",
        run_add,
        "register works (.txt .md .html .zip, folders recursive)",
        "Register works: each file (or each file of a folder or a .zip, recursively) is one "
        "work, its encoding detected. A work registered again (same path) is updated in "
        "place. Each new work is matched at once against the pages already crawled. A work "
        "with the same text as one registered earlier, or nearly (each lying at least "
        f"FPTRACK_NEAR_TWIN_SHARE, default {near_twin_share}, inside the other), is "
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
    max_bytes_option(p, "skip")
    p = command(
        works,
        "list",
        run_list,
        "list registered works",
        "List the registered works, newest first: id, title, author and source.",
    )
    json_option(p)
    p = command(
        works,
        "remove",
        run_remove,
        "remove works (and their index entries)",
        "Remove works by id, title or source; their index entries and unreviewed matches go "
        "too (reviewed matches stay as records).",
    )
    p.add_argument("refs", nargs="+", metavar="REF", help="a work's id, title or source")
    p.add_argument(
        "--all", action="store_true", help="remove every work a title matches (default: one)"
    )


def run_add(args: argparse.Namespace, ctx: Context) -> int:
    from tqdm import tqdm

    from admin.reading import iter_work_files
    from matcher.errors import MatcherError

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


def run_list(args: argparse.Namespace, ctx: Context) -> int:
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


def run_remove(args: argparse.Namespace, ctx: Context) -> int:
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
