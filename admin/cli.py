"""The ``fptrack`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import ClassVar

from fingerprint.base import FingerprintError
from fingerprint.decode import decode
from fingerprint.document import DocumentParams, fingerprint_document

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 1 or 2."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def read_text_file(path: Path, max_bytes: int) -> tuple[str, str]:
    """Read and decode a text or HTML file; returns (text, encoding)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}", 2) from exc
    if path.is_dir():
        raise CommandError(f"{path} is a directory, not a file", 2)
    if size > max_bytes:
        raise CommandError(f"{path} is {size} bytes, over the --max-bytes limit of {max_bytes}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}", 2) from exc
    try:
        decoded = decode(data)
    except FingerprintError as exc:
        raise CommandError(f"{path}: {exc}") from exc
    text = decoded.text
    if path.suffix.lower() in (".html", ".htm") or text.lstrip()[:1] == "<":
        text = html_to_text(text)
    return text, decoded.encoding


def html_to_text(markup: str) -> str:
    """Visible text of an HTML document, block elements on their own lines."""
    from html.parser import HTMLParser

    class _Text(HTMLParser):
        blocks: ClassVar[frozenset[str]] = frozenset(
            {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section"}
        )

        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []
            self.skip = 0

        def handle_starttag(self, tag: str, attrs) -> None:
            if tag in ("script", "style", "noscript", "template"):
                self.skip += 1
            elif tag in self.blocks:
                self.parts.append("\n")

        def handle_endtag(self, tag: str) -> None:
            if tag in ("script", "style", "noscript", "template"):
                self.skip = max(0, self.skip - 1)
            elif tag in self.blocks:
                self.parts.append("\n")

        def handle_data(self, data: str) -> None:
            if not self.skip:
                self.parts.append(data)

    parser = _Text()
    parser.feed(markup)
    parser.close()
    return "".join(parser.parts)


def cmd_fingerprint(args: argparse.Namespace) -> int:
    text, encoding = read_text_file(Path(args.file), args.max_bytes)
    fp = fingerprint_document(text, DocumentParams())
    result = {
        "file": args.file,
        "encoding": encoding,
        "chars": len(text),
        "normalized_chars": len(fp.normalized.text),
        "fingerprints": fp.to_dict(),
    }
    if args.json:
        json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fptrack",
        description="Track copies of Chinese web text by fingerprint.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    fp = commands.add_parser(
        "fingerprint",
        help="print every fingerprint of a text or HTML file",
        description="Print every default fingerprint of a text or HTML file (encoding "
        "detected: UTF-8/16/32, GB18030/GBK, Big5).",
    )
    fp.add_argument("file", help="a .txt, .md or .html file")
    fp.add_argument(
        "--json", action="store_true", help="machine-readable output (default: a summary)"
    )
    fp.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        help=f"refuse files larger than this (default: {DEFAULT_MAX_BYTES})",
    )
    fp.set_defaults(func=cmd_fingerprint)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CommandError as exc:
        print(f"fptrack: error: {exc}", file=sys.stderr)
        return exc.status
    except BrokenPipeError:
        # The reader went away (``fptrack ... | head``): stop quietly, as the Python docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
