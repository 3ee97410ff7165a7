"""``--synthetic COUNT[:SEED]``: a benchmark's run on synthetic text
(:func:`tests.sites.eval_corpus.synthetic_texts`) instead of the downloaded corpus; its smoke
test runs it so, as a command (``python -m bench.NAME --quick --synthetic 40:5 --json OUT``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def count_and_seed(value: str) -> tuple[int, int]:
    """``"40"`` -> ``(40, 0)``, ``"40:5"`` -> ``(40, 5)``."""
    count, _, seed = value.partition(":")
    try:
        return int(count), int(seed or 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"COUNT or COUNT:SEED expected, not {value!r}") from None


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--synthetic",
        type=count_and_seed,
        default=None,
        metavar="COUNT[:SEED]",
        help="COUNT synthetic texts (random words; SEED default 0) instead of the downloaded "
        "corpus (the smoke tests' runs)",
    )


def texts(args: argparse.Namespace, given: Sequence[str] | None) -> Sequence[str] | None:
    """``given`` if any, else the synthetic texts ``--synthetic`` asks for, else ``None``."""
    if given is not None or args.synthetic is None:
        return given
    from tests.sites.eval_corpus import synthetic_texts

    count, seed = args.synthetic
    return synthetic_texts(count, seed=seed)
