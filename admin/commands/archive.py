"""``fptrack archive``: the evidence archive (prune)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from admin.commands.common import actions, command

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    archive = actions(parser, "The evidence archive (FPTRACK_ARCHIVE).")
    command(
        archive,
        "prune",
        run_prune,
        "delete archived exchanges no page or match refers to",
        "Delete the archived HTTP exchanges superseded by a page's later text that no match "
        "refers to, stored more than a day before (the daily job daily:prune-archive does the "
        "same). Each page's current exchange and every match's exchange are kept.",
    )


def run_prune(args: argparse.Namespace, ctx: Context) -> int:
    from matcher.worker.jobs import prune_archive

    if ctx.archive is None:
        print("fptrack: no evidence archive (FPTRACK_ARCHIVE=none): nothing to prune")
        return 0
    deleted = prune_archive(ctx.engine, ctx.archive)["deleted"]
    print(f"{deleted} archived exchange(s) deleted")
    return 0
