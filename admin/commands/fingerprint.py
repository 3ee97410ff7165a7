"""``fptrack fingerprint``: every fingerprint of one text or HTML file (no server needed)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from admin.commands.common import dump_json, leaf, max_bytes_option
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    leaf(
        parser,
        run,
        "Print every fingerprint of one file (simhash, MinHash, pinyin windows, winnowed "
        "8-grams, longest sentences). Needs no server.",
    )
    parser.add_argument("file", help="a .txt, .md or .html file")
    parser.add_argument(
        "--json", action="store_true", help="every value as JSON (default: a summary)"
    )
    max_bytes_option(parser, "refuse")


def run(args: argparse.Namespace, ctx: Context) -> int:
    from admin.reading import ReadError, read_text_file
    from fingerprint.document import DocumentParams, fingerprint_document

    try:
        text, encoding = read_text_file(Path(args.file), args.max_bytes)
    except ReadError as exc:
        raise CommandError(str(exc), 2 if exc.missing else 1) from exc
    fp = fingerprint_document(text, DocumentParams())
    result = {
        "file": args.file,
        "encoding": encoding,
        "chars": len(text),
        "normalized_chars": len(fp.normalized.text),
        "fingerprints": fp.to_dict(),
    }
    if args.json:
        dump_json(result)
        return 0
    print(f"file              {args.file}")
    print(f"encoding          {encoding}")
    print(f"characters        {len(text)} ({len(fp.normalized.text)} after normalisation)")
    print(f"simhash           {fp.simhash.to_hex()}")
    print(
        f"minhash           {fp.minhash.params.num_perm} values over {fp.minhash.size} "
        f"3-grams ({fp.minhash.params.scheme}), first {fp.minhash.to_hex()[:32]}..."
    )
    print(f"pinyin windows    {len(fp.pinyin)} windows, {len(fp.pinyin.keyset())} distinct dnas")
    print(
        f"pinyin anchored   {len(fp.pinyin_anchored)} windows, "
        f"{len(fp.pinyin_anchored.keyset())} distinct dnas"
    )
    print(f"winnowed 8-grams  {len(fp.winnow)}")
    print(f"longest sentences {len(fp.sentences.spans)}")
    for start, end in fp.sentences.spans:
        print(f"  {fp.normalized.quote(start, end)[:60]}")
    return 0


# works ---------------------------------------------------------------------------------
