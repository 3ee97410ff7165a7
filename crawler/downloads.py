"""Whole-book downloads: a ZIP of text files, an EPUB, a 7z archive, read as a book.

Pirate novel sites offer the whole book for download ("TXT下载", "全本下载", "EPUB下载").
The spider follows such links as any other (their ``.zip``, ``.epub`` and ``.7z`` suffixes
are not skipped) and knows a download by its first bytes, whatever its name or
``Content-Type`` claims (:func:`kind_of`). :func:`read_book` unpacks it in memory, within
bounds, into its chapters in reading order: an EPUB's spine (ebooklib), an archive's members
in natural name order (``2.txt`` before ``10.txt``; :mod:`zipfile`, py7zr), each text member
cut at its chapter headings (第十二章 ...). :func:`book_parts` groups consecutive chapters
into parts of at most ``max_chars`` characters: a whole novel runs to millions of
characters, more than one page holds, so the spider stores a download as one page per part
(:mod:`crawler.spiders.site`), each matched on its own, the part's chapter titles in its
text.

Bounds (an archive past one is refused whole, with the reason, never read in part): at most
:data:`MAX_MEMBERS` members, :data:`MAX_UNPACKED` bytes unpacked in all, no member
unpacking to more than :data:`MAX_RATIO` times its packed size (a zip bomb), archives nested
at most :data:`MAX_NESTING` deep. A member whose name is absolute or climbs out (``..``) is
skipped, as are members that are neither text nor HTML nor an archive. Nothing an EPUB refers
to is fetched or run: only its documents' text is read (its OPF is parsed without entities).
"""

from __future__ import annotations

import io
import re
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

from crawler.encoding import UndecodableBody, decode_body
from crawler.extract import extract

MAX_MEMBERS = 5_000
"""At most this many members in a download (nested archives' included)."""
MAX_UNPACKED = 64 * 1024 * 1024
"""At most this many bytes unpacked from a download in all."""
MAX_RATIO = 200
"""No member may unpack to more than this many times its packed size (a zip bomb's is
thousands; text packs about 3 to 1)."""
MAX_NESTING = 2
"""An archive inside a download is read; one inside that is refused."""
TEXT_SUFFIXES = (".txt", ".text", ".md")
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".xml")
ARCHIVE_SUFFIXES = (".zip", ".epub", ".7z")
DOWNLOAD_SUFFIXES = frozenset({"zip", "epub", "7z"})
"""Link suffixes the spider follows as downloads (Scrapy's link extractor skips them)."""

_ZIP = (b"PK\x03\x04", b"PK\x05\x06")
_SEVEN_ZIP = b"7z\xbc\xaf\x27\x1c"
_EPUB_MIMETYPE = b"mimetypeapplication/epub+zip"
_HEADING = re.compile(
    r"^\s*(?:第\s*[0-9零〇一二三四五六七八九十百千两]{1,9}\s*[章回节節卷篇]"
    r"|(?:序章|楔子|引子|尾声|尾聲|后记|後記|番外))[^\n]{0,40}$",
    re.MULTILINE,
)
_NUMBER = re.compile(r"(\d+)")


class DownloadRefused(Exception):
    """A download past a bound, or not readable; the message says why, in one line."""


@dataclass(frozen=True)
class Chapter:
    title: str
    text: str


@dataclass(frozen=True)
class Book:
    """A download's title (the EPUB's, else its first chapter's) and chapters in order."""

    kind: str
    title: str
    chapters: tuple[Chapter, ...]


def kind_of(body: bytes) -> str:
    """``epub``, ``zip``, ``7z``, or "" (not a download), from the body's first bytes.

    >>> kind_of(b"PK\\x03\\x04" + bytes(26) + b"mimetypeapplication/epub+zip")
    'epub'
    >>> kind_of(b"7z\\xbc\\xaf\\x27\\x1c\\x00\\x04"), kind_of(b"<html>")
    ('7z', '')
    >>> kind_of(b"PK\\x05\\x06" + bytes(18))
    'zip'
    """
    if body.startswith(_SEVEN_ZIP):
        return "7z"
    if body.startswith(_ZIP):
        return "epub" if _EPUB_MIMETYPE in body[:100] else "zip"
    return ""


def read_book(body: bytes) -> Book:
    """The chapters of a download (see the module docstring); :class:`DownloadRefused`
    when it is past a bound, not an archive, or holds no text."""
    kind = kind_of(body)
    if not kind:
        raise DownloadRefused("not a ZIP, EPUB or 7z archive")
    budget = _Budget()
    title, chapters = _read(kind, body, budget, depth=1)
    chapters = [c for c in chapters if c.text.strip()]
    if not chapters:
        raise DownloadRefused(f"a {kind.upper()} archive with no text in it")
    return Book(kind, title or chapters[0].title, tuple(chapters))


def book_parts(book: Book, max_chars: int) -> list[Chapter]:
    """Consecutive chapters joined into parts of at most ``max_chars`` characters (a
    chapter longer than that is cut at line ends), each titled by its first and last
    chapter.

    >>> book = Book("zip", "书", tuple(Chapter(f"第{n}章", "字" * 40) for n in range(1, 6)))
    >>> [(p.title, len(p.text)) for p in book_parts(book, 100)]
    [('第1章 … 第2章', 89), ('第3章 … 第4章', 89), ('第5章', 44)]
    """
    parts: list[Chapter] = []
    group: list[Chapter] = []
    size = 0
    for chapter in (c for whole in book.chapters for c in _cut(whole, max_chars)):
        block = len(chapter.title) + 1 + len(chapter.text)
        if group and size + 1 + block > max_chars:
            parts.append(_joined(group))
            group, size = [], 0
        group.append(chapter)
        size += block + (1 if size else 0)
    if group:
        parts.append(_joined(group))
    return parts


def _joined(chapters: list[Chapter]) -> Chapter:
    title = chapters[0].title
    if len(chapters) > 1:
        title = f"{title} … {chapters[-1].title}"
    return Chapter(title, "\n".join(f"{c.title}\n{c.text}" for c in chapters))


def _cut(chapter: Chapter, max_chars: int) -> Iterator[Chapter]:
    """``chapter`` in pieces that fit ``max_chars`` with their title, cut at line ends (a
    line longer than that, at ``max_chars``)."""
    room = max(1, max_chars - len(chapter.title) - 1)
    if len(chapter.text) <= room:
        yield chapter
        return
    piece: list[str] = []
    size = 0
    for line in chapter.text.split("\n"):
        while len(line) > room:
            if piece:
                yield Chapter(chapter.title, "\n".join(piece))
                piece, size = [], 0
            yield Chapter(chapter.title, line[:room])
            line = line[room:]
        if piece and size + 1 + len(line) > room:
            yield Chapter(chapter.title, "\n".join(piece))
            piece, size = [], 0
        piece.append(line)
        size += len(line) + (1 if size else 0)
    if piece:
        yield Chapter(chapter.title, "\n".join(piece))


class _Budget:
    """What a download may still unpack: members and bytes, shared by nested archives."""

    def __init__(self) -> None:
        self.members = MAX_MEMBERS
        self.bytes = MAX_UNPACKED

    def admit(self, name: str, packed: int, unpacked: int) -> None:
        self.members -= 1
        if self.members < 0:
            raise DownloadRefused(f"more than {MAX_MEMBERS:,} members")
        if unpacked > MAX_RATIO * max(packed, 1) and unpacked > 1024 * 1024:
            raise DownloadRefused(
                f"member {_shown(name)} unpacks {packed:,} bytes to {unpacked:,}"
                f" (over {MAX_RATIO} to 1: a zip bomb)"
            )
        self.bytes -= unpacked
        if self.bytes < 0:
            raise DownloadRefused(f"more than {MAX_UNPACKED // 2**20} MiB unpacked")


def _read(kind: str, body: bytes, budget: _Budget, depth: int) -> tuple[str, list[Chapter]]:
    if depth > MAX_NESTING:
        raise DownloadRefused(f"archives nested more than {MAX_NESTING} deep")
    if kind == "epub":
        return _epub(body, budget)
    members = _seven_zip(body, budget) if kind == "7z" else _zip(body, budget)
    chapters: list[Chapter] = []
    for name, data in sorted(members, key=lambda m: _natural(m[0])):
        inner = kind_of(data)
        if inner:
            chapters += _read(inner, data, budget, depth + 1)[1]
        else:
            chapters += _member_chapters(name, data)
    return "", chapters


def _zip(body: bytes, budget: _Budget) -> list[tuple[str, bytes]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise DownloadRefused(f"not a readable ZIP archive: {exc}") from None
    out = []
    with archive:
        infos = archive.infolist()
        for info in infos:
            if info.is_dir() or not _wanted(info.filename):
                continue
            budget.admit(info.filename, info.compress_size, info.file_size)
            try:
                with archive.open(info) as stream:
                    data = stream.read(info.file_size + 1)
            except (zipfile.BadZipFile, OSError, RuntimeError, EOFError, ValueError) as exc:
                raise DownloadRefused(f"member {_shown(info.filename)}: {exc}") from None
            if len(data) > info.file_size:
                raise DownloadRefused(f"member {_shown(info.filename)} is larger than declared")
            out.append((info.filename, data))
    return out


def _seven_zip(body: bytes, budget: _Budget) -> list[tuple[str, bytes]]:
    import py7zr
    from py7zr.io import BytesIOFactory

    try:
        with py7zr.SevenZipFile(io.BytesIO(body)) as archive:
            if archive.needs_password():
                raise DownloadRefused("a 7z archive that needs a password")
            listed = archive.list()
            wanted = [f for f in listed if not f.is_directory and _wanted(f.filename)]
            packed = max(len(body), 1)
            total = sum(int(f.uncompressed or 0) for f in listed)
            for f in wanted:
                # 7z packs members together: each is held to the whole archive's ratio
                share = packed * int(f.uncompressed or 0) // max(total, 1)
                budget.admit(f.filename, share, int(f.uncompressed or 0))
            largest = max((int(f.uncompressed or 0) for f in wanted), default=0)
            factory = BytesIOFactory(limit=largest + 1)
            archive.extract(targets=[f.filename for f in wanted], factory=factory)
    except DownloadRefused:
        raise
    except Exception as exc:  # py7zr raises many kinds for a damaged archive
        raise DownloadRefused(f"not a readable 7z archive: {type(exc).__name__}: {exc}") from None
    out = []
    for f in wanted:
        product = factory.products.get(f.filename)
        if product is not None:
            product.seek(0)
            out.append((f.filename, product.read()))
    return out


def _epub(body: bytes, budget: _Budget) -> tuple[str, list[Chapter]]:
    from ebooklib import ITEM_DOCUMENT, epub

    try:  # every member within the bounds, by its declared size, before ebooklib reads one
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            for info in archive.infolist():
                budget.admit(info.filename, info.compress_size, info.file_size)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise DownloadRefused(f"not a readable EPUB: {exc}") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            book = epub.read_epub(io.BytesIO(body), {"ignore_ncx": True})
    except Exception as exc:  # ebooklib raises many kinds for a damaged book
        raise DownloadRefused(f"not a readable EPUB: {type(exc).__name__}: {exc}") from None
    titles = book.get_metadata("DC", "title")
    title = str(titles[0][0]).strip() if titles else ""
    chapters = []
    for ref in book.spine:
        item = book.get_item_with_id(ref[0] if isinstance(ref, tuple) else ref)
        if item is None or item.get_type() != ITEM_DOCUMENT:
            continue
        chapters += _member_chapters(item.get_name() or "chapter.xhtml", item.get_content())
    return title, chapters


def _member_chapters(name: str, data: bytes) -> list[Chapter]:
    """A text or HTML member's chapters (:func:`text_chapters`; an HTML member's title
    names the text before its first heading)."""
    try:
        if name.lower().endswith(HTML_SUFFIXES):
            html, _ = decode_body(data, "text/html")
            page = extract(html, "", "body")
            text, first = page.text, page.title
        else:
            text, _ = decode_body(data, "text/plain")
            first = ""
    except UndecodableBody:
        return []
    return text_chapters(text, first)


def text_chapters(text: str, title: str = "") -> list[Chapter]:
    """A text's chapters, cut at its chapter headings (the text before the first under
    ``title``); one without a heading is one chapter titled ``title`` or its first line.

    >>> [(c.title, c.text) for c in text_chapters("书名\\n第一章 起\\n甲\\n第二章 承\\n乙")]
    [('', '书名'), ('第一章 起', '甲'), ('第二章 承', '乙')]
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    headings = list(_HEADING.finditer(text))
    if not headings:
        lines = text.split("\n", 1)
        return [Chapter(title or lines[0].strip()[:80], text)]
    chapters = []
    if text[: headings[0].start()].strip():
        chapters.append(Chapter(title, text[: headings[0].start()].strip()))
    for n, heading in enumerate(headings):
        end = headings[n + 1].start() if n + 1 < len(headings) else len(text)
        chapters.append(Chapter(heading.group().strip(), text[heading.end() : end].strip()))
    return chapters


def _wanted(name: str) -> bool:
    """A member worth reading: text, HTML or an archive, under a name that stays inside."""
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
        return False
    return name.lower().endswith(TEXT_SUFFIXES + HTML_SUFFIXES + ARCHIVE_SUFFIXES)


def _natural(name: str) -> list[object]:
    """Sort key: numbers by value (``2.txt`` before ``10.txt``)."""
    return [int(p) if p.isdigit() else p for p in _NUMBER.split(name.lower())]


def _shown(name: str) -> str:
    return repr(name[:80])
