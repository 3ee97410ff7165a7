"""``fptrack index``: the Redis indexes (rebuild)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from admin.commands.common import actions, command

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    index = actions(parser, "The Redis indexes of works and pages.")
    p = command(
        index,
        "rebuild",
        run_rebuild,
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


def run_rebuild(args: argparse.Namespace, ctx: Context) -> int:
    from tqdm import tqdm

    from matcher.index.maintenance import rebuild_indexes
    from matcher.keys import TAG_GROUPS

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
