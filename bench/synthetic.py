"""``--synthetic COUNT[:SEED]`` or ``--texts JSON``: a benchmark's run on synthetic text
(:func:`tests.sites.eval_corpus.synthetic_texts`), or on the texts of a JSON list, instead of
the downloaded corpus; its smoke test runs it so, as a command (``python -m bench.NAME
--quick --synthetic 40:5 --json OUT``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path


def count_and_seed(value: str) -> tuple[int, int]:
    """``"40"`` -> ``(40, 0)``, ``"40:5"`` -> ``(40, 5)``."""
    count, _, seed = value.partition(":")
    try:
        return int(count), int(seed or 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"COUNT or COUNT:SEED expected, not {value!r}") from None


def add_option(parser: argparse.ArgumentParser) -> None:
    """``--synthetic`` and ``--texts``, one or the other."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--synthetic",
        type=count_and_seed,
        default=None,
        metavar="COUNT[:SEED]",
        help="COUNT synthetic texts (random words; SEED default 0) instead of the downloaded "
        "corpus (the smoke tests' runs)",
    )
    group.add_argument(
        "--texts",
        type=Path,
        default=None,
        metavar="JSON",
        help="a JSON list of texts instead of the downloaded corpus (default: none)",
    )


def texts(args: argparse.Namespace, given: Sequence[str] | None) -> Sequence[str] | None:
    """``given`` if any, else the texts of ``--texts``, else the synthetic texts
    ``--synthetic`` asks for, else ``None``."""
    if given is not None:
        return given
    if args.texts is not None:
        return texts_file(args.texts)
    if args.synthetic is None:
        return None
    from tests.sites.eval_corpus import synthetic_texts

    count, seed = args.synthetic
    return synthetic_texts(count, seed=seed)


def texts_file(path: Path) -> list[str]:
    """The texts of a JSON list in ``path``; anything else stops the run with one line."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SystemExit(f"--texts {path}: {exc}") from None
    if not isinstance(found, list) or not all(isinstance(t, str) for t in found):
        raise SystemExit(f"--texts {path}: not a JSON list of strings")
    return found
