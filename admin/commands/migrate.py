"""``fptrack migrate``: convert the database to the current (shardable) layout."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from admin.commands.common import leaf

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "Convert a database of an earlier layout: pages get ids derived from their URLs, the "
        "pages keep their fingerprints on their own documents and name the pages they link "
        "with, the id counters and dashboard "
        "tallies are striped, indexes that would stop sharding are "
        "replaced. Safe to run again; stop the workers first. With --shard-commands, print "
        "the mongosh commands that shard every collection instead (nothing is changed).",
    )
    parser.add_argument(
        "--shard-commands",
        action="store_true",
        help="print the sh.shardCollection commands of the database (default: migrate)",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    from matcher.store import shard_commands
    from matcher.store.migration import migrate

    if args.shard_commands:
        print(shard_commands(ctx.settings.mongo_db), end="")
        return 0
    done = migrate(ctx.engine.store)
    print(
        f"migrated: {done.pages} page id(s) ({done.matches} match record(s),"
        f" {done.fingerprints} fingerprint document(s)), {done.page_fingerprints} page"
        f" fingerprint document(s) moved onto their pages, {done.around} page(s) given"
        f" their links' ids, {done.names} their names' ids, {done.counters} counter stripe(s),"
        f" {done.tallies} tally document(s) rebuilt"
    )
    return 0
