"""Reading works from files: .txt, .md, .html/.htm and .zip archives of them, recursively.

Encodings are detected (:func:`fingerprint.decode.decode`: UTF-8/16/32, GB18030/GBK, Big5);
HTML is reduced to its visible text. A file that cannot be read is reported as a
:class:`WorkFile` with an ``error`` and never stops the others.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from admin.human import size
from fingerprint.base import FingerprintError
from fingerprint.decode import decode

WORK_SUFFIXES = (".txt", ".md", ".html", ".htm")
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_SKIP = frozenset({"script", "style", "noscript", "template"})
_BLOCKS = frozenset({"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section"})


class ReadError(Exception):
    """A file could not be read or decoded; the message says why, in one line.

    ``missing`` is true when the path itself is wrong (absent, a folder, unreadable), as
    opposed to a file whose content is refused.
    """

    def __init__(self, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


@dataclass(frozen=True)
class WorkFile:
    """One work read from disk: ``name`` is its path relative to the folder given."""

    name: str
    path: str
    text: str = ""
    encoding: str = ""
    error: str = ""
    member: str = ""

    @property
    def source(self) -> str:
        """Where the work came from: its absolute path (``archive.zip/member`` in a zip)."""
        path = str(Path(self.path).resolve())
        return f"{path}/{self.member}" if self.member else path


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """Visible text of an HTML document, block elements on their own lines.

    >>> html_to_text("<p>第一段</p><script>x()</script><p>第二段</p>").split()
    ['第一段', '第二段']
    """
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return "".join(parser.parts)


def text_of(data: bytes, name: str) -> tuple[str, str]:
    """Decode a file's bytes; HTML (by suffix or content) is reduced to text."""
    try:
        decoded = decode(data)
    except FingerprintError as exc:
        raise ReadError(f"{name}: {exc}") from exc
    text = decoded.text
    if name.lower().endswith((".html", ".htm")) or text.lstrip()[:1] == "<":
        text = html_to_text(text)
    return text, decoded.encoding


def read_text_file(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, str]:
    """Read and decode one text or HTML file; returns ``(text, encoding)``."""
    if path.is_dir():
        raise ReadError(f"{path} is a directory, not a file", missing=True)
    if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
        raise ReadError(f"{path} is not a regular file", missing=True)
    try:
        n = path.stat().st_size
        if n > max_bytes:
            raise ReadError(f"{path} is {size(n)}, over the --max-bytes limit of {size(max_bytes)}")
        data = path.read_bytes()
    except OSError as exc:
        raise ReadError(f"cannot read {path}: {exc.strerror or exc}", missing=True) from exc
    return text_of(data, str(path))


def iter_work_files(
    paths: Iterable[Path], max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[WorkFile]:
    """Every work under ``paths`` (files, folders searched recursively, zip archives).

    Names are relative to the folder given (a file given directly keeps its own name; a zip
    member is ``archive.zip/member``). Files of other kinds inside folders are skipped.
    """
    for root in paths:
        if root.is_dir():
            found = sorted(
                p
                for p in root.rglob("*")
                if p.is_file() and p.suffix.lower() in (*WORK_SUFFIXES, ".zip")
            )
            if not found:
                kinds = " ".join((*WORK_SUFFIXES, ".zip"))
                yield WorkFile(str(root), str(root), error=f"{root}: no work file ({kinds}) there")
            for path in found:
                yield from _one(path, path.relative_to(root).as_posix(), max_bytes)
        elif root.exists():
            yield from _one(root, root.name, max_bytes)
        else:
            yield WorkFile(str(root), str(root), error=f"{root}: no such file or directory")


def _one(path: Path, name: str, max_bytes: int) -> Iterator[WorkFile]:
    if path.suffix.lower() == ".zip":
        yield from _zip(path, name, max_bytes)
        return
    try:
        text, encoding = read_text_file(path, max_bytes)
    except ReadError as exc:
        yield WorkFile(name, str(path), error=str(exc))
        return
    yield WorkFile(name, str(path), text, encoding)


def _zip(path: Path, name: str, max_bytes: int) -> Iterator[WorkFile]:
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        yield WorkFile(name, str(path), error=f"{path}: not a readable zip archive: {exc}")
        return
    with archive:
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            member = f"{name}/{info.filename}"
            if info.is_dir() or not info.filename.lower().endswith(WORK_SUFFIXES):
                continue
            if info.file_size > max_bytes:
                limit = f"the --max-bytes limit of {size(max_bytes)}"
                yield WorkFile(member, str(path), error=f"{member} is over {limit}")
                continue
            try:
                text, encoding = text_of(archive.read(info), member)
            except (ReadError, OSError, zipfile.BadZipFile, RuntimeError) as exc:
                yield WorkFile(member, str(path), error=str(exc))
                continue
            yield WorkFile(member, str(path), text, encoding, member=info.filename)
