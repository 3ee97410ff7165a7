"""The ``fptrack`` parser: every command described, every default named, sizes for people.
Bad command lines and their one error line are in ``test_cli_bad_input.BAD_ARGUMENTS``."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from importlib.metadata import version

import pytest

from admin.commands import build_parser, parse
from admin.reading import DEFAULT_MAX_BYTES


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command's parser (the leaves), with its words."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield path, parser
    for group in groups:
        for name, sub in group.choices.items():
            yield from commands(sub, (*path, name))


LEAVES = dict(commands(build_parser()))


def test_the_commands_are_all_there() -> None:
    names = {" ".join(words) for words in LEAVES}
    assert {"scan", "check", "worker", "beat", "admin serve", "index rebuild"} <= names
    names_here = {"archive prune", "sites search", "sites hosting", "takedowns export-delisting"}
    assert names_here <= names and len(names) == 36


@pytest.mark.parametrize("words", sorted(LEAVES), ids=" ".join)
def test_every_command_has_a_description_and_documented_arguments(words) -> None:
    parser = LEAVES[words]
    assert parser.description and len(parser.description) > 40, words
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help, (words, action.dest)
        if action.option_strings and not action.required:
            assert "default" in action.help, (words, action.option_strings)
        # sizes and durations written for people: no raw byte counts
        assert not re.search(r"\d{5,}", action.help), (words, action.help)


def test_repeatable_options_say_so() -> None:
    scan = LEAVES[("scan",)]
    helps = {a.dest: a.help for a in scan._actions}
    assert "repeat" in helps["site_dir"] and "repeat" in helps["site"]


def test_sizes_are_shown_and_read_for_people() -> None:
    help_text = LEAVES[("works", "add")].format_help()
    assert "(default: 64 MiB)" in " ".join(help_text.split())
    assert parse(["fingerprint", "x.txt", "--max-bytes", "10MiB"]).max_bytes == 10 * 1024**2
    assert parse(["fingerprint", "x.txt"]).max_bytes == DEFAULT_MAX_BYTES
    assert parse(["worker", "--wait", "2m"]).wait == 120.0


def test_version(capsys) -> None:
    with pytest.raises(SystemExit) as exit:
        parse(["--version"])
    assert exit.value.code == 0
    assert capsys.readouterr().out.strip() == f"fptrack {version('fptrack')}"


def test_check_help_names_every_check() -> None:
    """``fptrack check --help`` describes every check the command has (the crawls and the
    evidence were missing), from the table that ``--help`` reads without importing them."""
    from admin.commands.check import CHECKS
    from admin.health import NAMES

    assert tuple(CHECKS) == NAMES
    text = " ".join(LEAVES[("check",)].format_help().split())
    for name, what in CHECKS.items():
        assert f"{name}: {' '.join(what.split())}" in text, name
    assert "crawls, evidence (default: all)" in text
    assert "--ack SITE" in text and "--timeout DURATION" in text
