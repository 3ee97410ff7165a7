"""``fptrack works``: the mother corpus (add, list, remove)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from admin.commands.common import (
    actions,
    command,
    dump_json,
    json_option,
    max_bytes_option,
    work_service,
)
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context
    from admin.reading import WorkFile
    from admin.services.works import WorkService
    from matcher.matching.registry import Registration


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from admin.reading import KINDS
    from matcher.settings import Settings

    near_twin_share = Settings().near_twin_share
    works = actions(parser, "The mother corpus: the original works whose copies fptrack looks for.")
    p = command(
        works,
        "add",
        run_add,
        "register works (.txt .md .html .zip, folders recursive)",
        "Register works: each file (or each file of a folder or a .zip, recursively) is one "
        f"work, its encoding detected; other files ({KINDS} are works) are named and "
        "ignored. A work registered again (same path) is updated in place, and said to be "
        "already registered. A work registered again after it was removed (same path, or "
        "same text) takes back its archived matches with their reviews; each is active "
        "again once its page is matched with the work again, and one whose page no longer "
        "matches its text stays archived (matches list --archived). Each new work is "
        "matched at once against the pages already crawled. A work "
        "with the same text as one registered earlier is stored as its twin, not indexed: "
        "its copies are recorded under the earlier work. One with nearly its text (each "
        f"lying at least FPTRACK_NEAR_TWIN_SHARE, default {near_twin_share}, inside the "
        "other) is said to be its near twin and indexed as an edition: a copy goes to the "
        "edition that explains it best, or names a tie.",
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
        "List the registered works, newest first (by registration time, then id), under a "
        "header: id, registered (UTC), title, author, source, and the work it is a twin of.",
    )
    json_option(p)
    p = command(
        works,
        "remove",
        run_remove,
        "remove works (and their index entries)",
        "Remove works by id, title or source, with their index entries. Their matches are "
        "archived with their reviews (matches list --archived), never deleted: registering "
        "the work again (same path, or same text) gives them back.",
    )
    p.add_argument("refs", nargs="+", metavar="REF", help="a work's id, title or source")
    p.add_argument(
        "--all", action="store_true", help="remove every work a title matches (default: one)"
    )


@dataclass
class _Added:
    """What ``works add`` did, counted for its last line."""

    new: int = 0
    unchanged: int = 0
    changed: int = 0
    skipped: int = 0
    ignored: int = 0
    matches: int = 0

    def line(self, matched: bool) -> str:
        """``N work(s) registered, ...`` (``matched``: with the matches found)."""
        again = self.unchanged + self.changed
        line = f"{self.new} work(s) registered"
        if again:
            how = [f"{self.unchanged} unchanged"] * bool(self.unchanged)
            how += [f"{self.changed} with a new text"] * bool(self.changed)
            line += f", {again} already registered ({', '.join(how)})"
        line += f", {self.skipped} skipped"
        if self.ignored:
            line += f", {self.ignored} ignored (not work files)"
        if matched:
            line += f", {self.matches} match(es) among pages already crawled"
        return line


def run_add(args: argparse.Namespace, ctx: Context) -> int:
    from tqdm import tqdm

    from admin.reading import KINDS, iter_work_files
    from matcher.errors import MatcherError

    done = _Added()

    def ignored(shown: str) -> None:
        done.ignored += 1
        print(f"fptrack: ignored {shown}: not a work file ({KINDS})", file=sys.stderr)

    paths = [Path(p) for p in args.paths]
    files: Iterable[WorkFile] = iter_work_files(paths, args.max_bytes, ignored)  # one at a time
    if args.title:
        files = list(files)
        if len(files) != 1:
            raise CommandError("--title needs exactly one work file", 2)
    engine = ctx.engine
    works = work_service(ctx)
    for work in tqdm(files, desc="works", unit="work", disable=None, file=sys.stderr):
        if work.error:
            print(f"fptrack: skipped {work.error}", file=sys.stderr)
            done.skipped += 1
            continue
        title = args.title or Path(work.name).stem
        try:
            registered = engine.register_work(
                work.text, title=title, source=work.source, author=args.author
            )
        except MatcherError as exc:
            print(f"fptrack: skipped {work.shown}: {exc}", file=sys.stderr)
            done.skipped += 1
            continue
        work_id = registered.work_id
        _say_registered(work, registered, done)
        note = works.same_text_note(work_id)
        if note:
            print(f"fptrack: {work.shown}: {note}", file=sys.stderr)
        if not args.no_match:
            found = works.match_against_pages(work_id)
            done.matches += len(found)
        _say_restored(works, work, registered, matched=not args.no_match)
        print(f"{work_id}\t{title}\t{work.source}")
    print(done.line(not args.no_match), file=sys.stderr)
    return 1 if done.skipped else 0


def _say_registered(work: WorkFile, registered: Registration, done: _Added) -> None:
    """Count a work registered, and say so when it was registered already."""
    if registered.created:
        done.new += 1
    elif registered.changed:
        done.changed += 1
        print(
            f"fptrack: {work.shown}: already registered (work {registered.work_id}); "
            "its text changed: indexed again",
            file=sys.stderr,
        )
    else:
        done.unchanged += 1
        print(
            f"fptrack: {work.shown}: already registered (work {registered.work_id}), unchanged",
            file=sys.stderr,
        )


def _say_restored(
    works: WorkService, work: WorkFile, registered: Registration, matched: bool
) -> None:
    """Say what became of the archived matches a work registered again took back, and
    (``matched``: once it was matched against the pages) which of its matches stay
    archived: those whose page its text does not explain."""
    kept = 0
    own = registered.holder == registered.work_id  # not recorded under a work it repeats
    if matched and (registered.restored or not registered.created):
        kept = works.archived_matches(registered.work_id)
    if registered.restored:
        line = (
            f"fptrack: {work.shown}: {registered.restored} match(es) of its earlier "
            "registration given back with their review"
        )
        if not own:
            line += f", to work {registered.holder} that records its copies"
        if not matched:
            line += ", archived until their page is matched with it again"
        elif own and registered.created:
            line += f": {registered.restored - kept} active again"
        print(line, file=sys.stderr)
    if kept:
        print(
            f"fptrack: {work.shown}: {kept} match(es) stay archived with their review: their "
            "page does not match its text (fptrack matches list --archived)",
            file=sys.stderr,
        )


LIST_HEADER = ("id", "registered", "title", "author", "source", "twin of")
"""The columns of ``works list``."""


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    from admin.report.html_report import when

    works = work_service(ctx).all_works()
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
    if works:
        print("\t".join(LIST_HEADER))
    for w in works:
        nearly = "nearly the " if w.get("near_twin") else ""
        twin = f"{nearly}same text as {w['same_text_as']}" if w.get("same_text_as") else ""
        cells = (
            w["_id"], when(w.get("registered_at")), w.get("title", ""), w.get("author", ""),
            w.get("source", ""), twin,
        )  # fmt: skip
        print("\t".join(str(c) for c in cells))
    print(f"{len(works)} work(s)", file=sys.stderr)
    return 0


def run_remove(args: argparse.Namespace, ctx: Context) -> int:
    works = work_service(ctx)
    status = 0
    for ref in args.refs:
        found = works.find(ref)
        if not found:
            print(f"fptrack: error: no work with id, title or source {ref!r}", file=sys.stderr)
            status = 1
            continue
        if len(found) > 1 and not args.all:
            raise CommandError(f"{len(found)} works match {ref!r}; give an id or --all")
        for work in found:
            work_id = str(work["_id"])
            works.remove(work_id)
            print(f"removed {work_id}\t{work.get('title', '')}")
            archived = works.archived_matches(work_id)
            if archived:
                print(
                    f"fptrack: {archived} match(es) of {work.get('title', '')!r} archived with "
                    "their review (fptrack matches list --archived); registering the work "
                    "again gives them back",
                    file=sys.stderr,
                )
    return status
