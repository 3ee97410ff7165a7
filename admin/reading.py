"""Reading works from files: .txt, .md, .html/.htm and .zip archives of them, recursively.

Encodings are detected (:func:`fingerprint.decode.decode`: UTF-8/16/32, GB18030/GBK, Big5);
HTML is reduced to its visible text. A file that cannot be read is reported as a
:class:`WorkFile` with an ``error`` and never stops the others.

Folders are walked without recursion, at most :data:`MAX_DEPTH` levels deep (deeper folders
are reported); a work file that is not a regular file once its symbolic links are followed
(a dangling link, a FIFO, a device such as ``/dev/zero``), or that lies under ``/proc``,
``/sys`` or ``/dev`` (a link to ``/proc/self/environ``), is reported and never opened; a
name that is not valid UTF-8 is shown with replacement characters (the file is still read).
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from admin.human import size
from fingerprint.base import FingerprintError
from fingerprint.decode import decode

WORK_SUFFIXES = (".txt", ".md", ".html", ".htm")
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64
SYSTEM_ROOTS = (("proc",), ("sys",), ("dev",))
SYSTEM_NOTE = "under /proc, /sys or /dev: not read"
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
    def shown(self) -> str:
        """Its path as messages name it: the path given joined with the file's (and a zip
        member's name), printable (:func:`printable`)."""
        path = printable(self.path)
        return f"{path}/{printable(self.member)}" if self.member else path

    @property
    def source(self) -> str:
        """Where the work came from: its absolute path (``archive.zip/member`` in a zip),
        printable (:func:`printable`)."""
        path = printable(str(Path(self.path).absolute()))
        return f"{path}/{self.member}" if self.member else path


def printable(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (kept by Python as lone surrogates,
    which no JSON, BSON or terminal takes) become U+FFFD.

    >>> printable(os.fsdecode(b"\\xb5\\xc6\\xcb\\xfe.txt"))
    '\ufffd\ufffd\ufffd\ufffd.txt'
    """
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


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
    shown = printable(str(path))
    if path.is_dir():
        raise ReadError(f"{shown} is a directory, not a file", missing=True)
    if path.is_symlink() and not path.exists():
        raise ReadError(f"{shown} is a symbolic link to nothing", missing=True)
    if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
        raise ReadError(f"{shown} is not a regular file (a FIFO, device or socket)", missing=True)
    if _system_file(path):
        raise ReadError(f"{shown} is a file of the system ({SYSTEM_NOTE})", missing=True)
    try:
        n = path.stat().st_size
        if n > max_bytes:
            limit = size(max_bytes)
            raise ReadError(f"{shown} is {size(n)}, over the --max-bytes limit of {limit}")
        data = path.read_bytes()
    except OSError as exc:
        raise ReadError(f"cannot read {shown}: {exc.strerror or exc}", missing=True) from exc
    return text_of(data, shown)


KINDS = " ".join((*WORK_SUFFIXES, ".zip"))
"""The kinds of files read as works, as messages name them."""


def _unheard(shown: str) -> None:
    """The default listener of the files that are not works: nobody."""


def iter_work_files(
    paths: Iterable[Path],
    max_bytes: int = DEFAULT_MAX_BYTES,
    ignored: Callable[[str], None] = _unheard,
) -> Iterator[WorkFile]:
    """Every work under ``paths`` (files, folders searched recursively, zip archives).

    Names are relative to the folder given (a file given directly keeps its own name; a zip
    member is ``archive.zip/member``). Files of other kinds inside folders and zip archives
    are skipped, each named to ``ignored`` (its path as messages show it: the path given
    joined with the file's, :attr:`WorkFile.shown`).
    """
    for root in paths:
        shown = printable(str(root))
        if root.is_dir():
            found, problems, others = _walk(root)
            yield from problems
            for path in others:
                ignored(printable(str(path)))
            if not found and not problems:
                yield WorkFile(shown, str(root), error=f"{shown}: no work file ({KINDS}) there")
            for path in found:
                name = printable(path.relative_to(root).as_posix())
                yield from _one(path, name, max_bytes, ignored)
        elif root.exists() or root.is_symlink():
            yield from _one(root, printable(root.name), max_bytes, ignored)
        else:
            yield WorkFile(shown, str(root), error=f"{shown}: no such file or directory")


def _walk(root: Path) -> tuple[list[Path], list[WorkFile], list[Path]]:
    """The work files under ``root`` (sorted), what could not be read there (folders
    deeper than :data:`MAX_DEPTH`, unreadable folders), and the files of other kinds
    (sorted). Iterative (no recursion limit); symbolic links to folders are not followed."""
    found: list[Path] = []
    others: list[Path] = []
    problems: list[WorkFile] = []
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            shown = printable(str(folder))
            problems.append(WorkFile(shown, str(folder), error=f"cannot list {shown}: {exc}"))
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_DEPTH:
                    shown = printable(entry.path)
                    error = f"{shown}: folders deeper than {MAX_DEPTH} levels are not read"
                    problems.append(WorkFile(shown, entry.path, error=error))
                else:
                    stack.append((path, depth + 1))
            elif path.suffix.lower() in (*WORK_SUFFIXES, ".zip"):
                found.append(path)  # not a regular file: _one says so, without opening it
            else:
                others.append(path)
    return sorted(found), problems, sorted(others)


def _not_regular(path: Path) -> str:
    """Why ``path`` (its links followed) cannot be read as a file, or ""."""
    shown = printable(str(path))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if path.is_symlink():
            return f"{shown} is a symbolic link to nothing"
        return f"{shown}: no such file"
    except OSError as exc:
        return f"cannot read {shown}: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return f"{shown} is a directory, not a file"
    if not stat.S_ISREG(mode):
        return f"{shown} is not a regular file (a FIFO, device or socket)"
    if _system_file(path):
        return f"{shown} is a file of the system ({SYSTEM_NOTE})"
    return ""


def _system_file(path: Path) -> bool:
    """Whether ``path``, its links followed, lies in ``/proc``, ``/sys`` or ``/dev``: never a
    work, and reading it would put the machine's secrets (``/proc/self/environ``) in a
    report."""
    return Path(os.path.realpath(path)).parts[1:2] in SYSTEM_ROOTS


def _one(
    path: Path, name: str, max_bytes: int, ignored: Callable[[str], None] = _unheard
) -> Iterator[WorkFile]:
    problem = _not_regular(path)
    if problem:
        yield WorkFile(name, str(path), error=problem)
        return
    if path.suffix.lower() == ".zip":
        yield from _zip(path, name, max_bytes, ignored)
        return
    try:
        text, encoding = read_text_file(path, max_bytes)
    except ReadError as exc:
        yield WorkFile(name, str(path), error=str(exc))
        return
    yield WorkFile(name, str(path), text, encoding)


def _zip(
    path: Path, name: str, max_bytes: int, ignored: Callable[[str], None] = _unheard
) -> Iterator[WorkFile]:
    """The works of a zip archive. A member's bytes are read through a stream that stops
    at ``max_bytes``, whatever size the archive declares for it (a member may lie); a
    member whose name is absolute or climbs out (``..``) is refused. Messages name a member
    by the archive's path joined with the member's name (:attr:`WorkFile.shown`)."""
    shown = printable(str(path))
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        yield WorkFile(name, str(path), error=f"{shown}: not a readable zip archive: {exc}")
        return
    limit = f"the --max-bytes limit of {size(max_bytes)}"
    with archive:
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            member = f"{name}/{info.filename}"
            where = printable(f"{shown}/{info.filename}")
            if info.is_dir():
                continue
            if not info.filename.lower().endswith(WORK_SUFFIXES):
                ignored(where)
                continue
            parts = info.filename.replace("\\", "/").split("/")
            if info.filename.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
                error = f"{where}: an absolute or climbing name (..) in the archive: refused"
                yield WorkFile(member, str(path), error=error)
                continue
            if info.file_size > max_bytes:
                yield WorkFile(member, str(path), error=f"{where} is over {limit}")
                continue
            try:
                with archive.open(info) as stream:
                    data = stream.read(max_bytes + 1)
                if len(data) > max_bytes:
                    error = f"{where} is over {limit} (the archive declared {size(info.file_size)})"
                    yield WorkFile(member, str(path), error=error)
                    continue
                text, encoding = text_of(data, where)
            except ReadError as exc:
                yield WorkFile(member, str(path), error=str(exc))
                continue
            except (OSError, zipfile.BadZipFile, RuntimeError, EOFError) as exc:
                yield WorkFile(member, str(path), error=f"{where}: {exc}")
                continue
            yield WorkFile(member, str(path), text, encoding, member=info.filename)
