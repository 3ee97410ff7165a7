"""The ``fptrack`` commands, one module each, on the model of Scrapy's ``scrapy/commands/``:
a command's module holds its options and their help (``add_arguments(parser)``), its
description and its handlers (``run(args, ctx) -> int``; a command with actions, such as
``fptrack works add``, one handler per action).

The table :data:`COMMANDS` names them with their one-line help, so that ``fptrack --help``
lists them without importing any; :func:`build_parser` imports only the module of the
command being run (:func:`load`), or all of them when asked (the tests, the reference).
A mistyped command or action is named with the one meant, in one line (:class:`Parser`).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

COMMANDS: dict[str, tuple[str, str]] = {
    "scan": ("scan", "one-shot scan: works x sites, no server needed"),
    "works": ("works", "register, list and remove works"),
    "sites": ("sites", "watched sites and their schedules"),
    "alerts": ("alerts", "alert rules: who is told of new matches"),
    "schedules": ("schedules", "list the beat schedules (crawls, daily jobs)"),
    "crawl": ("crawl", "crawl a site now (default: enqueued for the workers)"),
    "match": ("match", "check one text file or URL now: which works it copies"),
    "matches": ("matches", "recorded matches"),
    "report": ("report", "export matches as CSV, JSON or HTML"),
    "takedowns": ("takedowns", "takedown notices sent and rechecked until removed"),
    "index": ("index", "the Redis indexes"),
    "archive": ("archive", "the evidence archive"),
    "evidence": ("evidence", "trusted timestamps of the evidence: stamp, verify"),
    "admin": ("admin", "the admin web platform"),
    "worker": ("worker", "run a Celery worker (pages, works, crawls)"),
    "beat": ("beat", "run the scheduler (redbeat; one at a time)"),
    "check": ("check", "report the health of the deployment"),
    "migrate": ("migrate", "convert the database to the current (shardable) layout"),
    "fingerprint": ("fingerprint", "print every fingerprint of a text or HTML file"),
}
"""Each command's name: its module in this package and its one-line help, in the order of
``fptrack --help``."""


class Parser(argparse.ArgumentParser):
    """argparse's parser, naming the choice meant when a word is none of an argument's
    choices, as Python 3.14's ``suggest_on_error`` does (fptrack runs on 3.11): a mistyped
    command or action ends the command with one line and exit status 2 (``fptrack: error:
    unknown command 'wroks': did you mean works?``), a mistyped option value with argparse's
    usage and that line."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        if action.choices is None or value in action.choices:
            return
        hint = suggestion(str(value), [str(choice) for choice in action.choices])
        if isinstance(action, argparse._SubParsersAction):
            what = (action.metavar or action.dest or "command").lower()
            self.exit(2, f"{self.prog}: error: unknown {what} {value!r}{hint}\n")
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint}")


def suggestion(word: str, choices: Iterable[str]) -> str:
    """``: did you mean CHOICE?`` for the choice closest to ``word`` (:mod:`difflib`), or
    the list of choices when none is close.

    >>> suggestion("wroks", ["scan", "works", "sites"])
    ': did you mean works?'
    >>> suggestion("zzz", ["scan", "works"])
    ' (choose from scan, works)'
    """
    from difflib import get_close_matches

    choices = list(choices)
    close = get_close_matches(word, choices, n=1)
    return f": did you mean {close[0]}?" if close else f" (choose from {', '.join(choices)})"


def fptrack_version() -> str:
    try:
        return version("fptrack")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def load(name: str) -> ModuleType:
    """The module of command ``name`` (imported now, with what it imports)."""
    return importlib.import_module(f"{__name__}.{COMMANDS[name][0]}")


def build_parser(only: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The ``fptrack`` parser: every command listed with its one-line help, and the options
    of the commands in ``only`` (default: all of them, importing every module)."""
    from matcher.settings import Settings

    defaults = Settings()
    parser = Parser(
        prog="fptrack",
        description="Track copies of Chinese web text by fingerprint. Connections come from "
        f"FPTRACK_MONGO_URI (default {defaults.mongo_uri}), FPTRACK_REDIS_URL (default "
        f"{defaults.redis_url}) and the other FPTRACK_* variables listed in docs/configuration.md.",
    )
    parser.add_argument("--version", action="version", version=f"fptrack {fptrack_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = set(COMMANDS if only is None else only)
    for name, (_, summary) in COMMANDS.items():
        p = sub.add_parser(name, help=summary)
        if name in chosen:
            load(name).add_arguments(p)
    return parser


def chosen_command(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option of ``fptrack``
    itself (which takes none with a value); None when there is none or it is unknown."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def parse(argv: list[str]) -> argparse.Namespace:
    """Parsed arguments, importing only the chosen command's module; argument errors exit 2
    with argparse's usage line."""
    name = chosen_command(argv)
    args = build_parser(() if name is None else (name,)).parse_args(argv)
    validate = getattr(args, "validate", None)
    if validate is not None:  # checks across options, reported as argparse does
        validate(args)
    return args
