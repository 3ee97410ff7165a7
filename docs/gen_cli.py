"""The command-line reference of the documentation site, generated from the commands.

MkDocs runs this module as a hook (``hooks:`` in ``mkdocs.yml``): at every build it builds
the ``fptrack`` parser with every command (:func:`admin.commands.build_parser`, which imports
each module of ``admin/commands/`` and calls its ``add_arguments``) and adds the page
``cli-reference.md`` to the site, so the page is always the ``--help`` of the code it is
built from. Nothing here changes the commands; it only reads their parsers.

It also points ``pymdownx.snippets`` at the repository's root, so that pages can include
files kept outside ``docs/`` (``deploy/README.md``, ``bench/README.md``, sections of the
README) wherever ``mkdocs build`` is run from.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = "cli-reference.md"
WIDTH = 88
"""Columns of the usage lines, fixed so the page does not depend on the terminal."""


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``parser``'s subcommands (name and parser), in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # an alias maps to the same parser
                    seen.add(id(sub))
                    yield name, sub


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command and action under ``parser`` (``("works",)``, ``("works", "add")`` ...),
    depth first, each before its own actions."""
    for name, sub in _subcommands(parser):
        yield (*path, name), sub
        yield from walk(sub, (*path, name))


def _escape(text: str) -> str:
    """Help text as Markdown that shows it as written (backquoted code stays code)."""
    text = " ".join(text.split())
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;")):
        text = text.replace(char, entity)
    for char in ("\\", "*", "[", "]", "|"):
        text = text.replace(char, "\\" + char)
    return text


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _arguments(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """(invocation, help) of each argument of ``parser`` but ``--help`` and subcommands."""
    formatter: Any = argparse.HelpFormatter(parser.prog, width=WIDTH)
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        invocation = formatter._format_action_invocation(action)
        text = formatter._expand_help(action) if action.help else ""
        rows.append((invocation, text))
    return rows


def command_summaries(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each subcommand's one-line help, as ``--help`` lists it."""
    out = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                out[choice.dest] = choice.help or ""
    return out


def reference(parser: argparse.ArgumentParser | None = None) -> str:
    """The reference page: ``fptrack`` and every command and action, with its usage line,
    description and arguments (their help as ``--help`` prints it, defaults included)."""
    if parser is None:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        from admin.commands import build_parser

        parser = build_parser()
    lines = [
        "# Command-line reference",
        "",
        "Generated from the command modules (`admin/commands/`) at every build of this site:",
        "each section is what `fptrack COMMAND --help` prints. Exit statuses, errors and the",
        "commands at a glance: [The `fptrack` command](cli.md).",
        "",
        "```text",
        _usage(parser),
        "```",
        "",
        _escape(parser.description or ""),
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for name, summary in command_summaries(parser).items():
        anchor = f"fptrack-{name}"
        lines.append(f"| [`{name}`](#{anchor}) | {_escape(summary)} |")
    lines.append("")
    for path, sub in walk(parser):
        level = "#" * (len(path) + 1)
        lines += [f"{level} `fptrack {' '.join(path)}`", "", "```text", _usage(sub), "```", ""]
        if sub.description:
            lines += [_escape(sub.description), ""]
        summaries = command_summaries(sub)
        if summaries:
            lines += ["| action | what it does |", "|---|---|"]
            lines += [f"| `{name}` | {_escape(text)} |" for name, text in summaries.items()]
            lines.append("")
        rows = _arguments(sub)
        if rows:
            lines += ["| argument | meaning |", "|---|---|"]
            lines += [f"| `{inv}` | {_escape(text)} |" for inv, text in rows]
            lines.append("")
    return "\n".join(lines)


# MkDocs hooks (https://www.mkdocs.org/user-guide/configuration/#hooks).


def on_config(config: Any) -> Any:
    """Include files relative to the repository's root, whatever the working folder."""
    snippets = config.mdx_configs.setdefault("pymdownx.snippets", {})
    snippets["base_path"] = [str(ROOT)]
    return config


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference page to the site's files."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=reference()))
    return files
