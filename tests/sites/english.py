"""English text for the site benchmark: the sections of Debian's Developer's Reference.

:func:`english_sections` downloads the ``developers-reference`` package with ``apt-get
download`` (as :mod:`tests.sites.corpus` does for the Chinese corpus), reads the reStructuredText
sources it ships (``usr/share/developers-reference/_sources/*.rst.txt``), cuts them into
sections at their headings, strips the inline markup and caches the result as
``CACHE/english.json`` (never committed). Each section is a chapter file's name, a title
and paragraphs (one per line). None of this text is in the Chinese corpus.
:func:`synthetic_sections` makes English-like sections for tests that must not download.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.sites.corpus import bench_cache_dir, unpack_package

PACKAGE = "developers-reference"
SOURCES = "usr/share/developers-reference/_sources"
CACHE_FILE = "english.json"
FORMAT = 1
"""Bump when the conversion changes: a cache of another format is rebuilt."""
MIN_SECTION_CHARS = 400
"""A shorter section is joined to the next one of its chapter."""
MAX_SECTION_CHARS = 4000
"""A longer section is cut at paragraph ends into parts of about this many characters."""

_UNDERLINE = re.compile(r"^([=\-~*^\"'`#+.])\1{3,}\s*$")
_ROLE = re.compile(r":[a-z]+:`([^`<]*?)\s*(?:<[^>]*>)?`")
_LINK = re.compile(r"`([^`<]*?)\s*<[^>]*>`__?")
_LITERAL = re.compile(r"``(.+?)``")
_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}([^*\n]+?)\*{1,2}(?![\w*])")


@dataclass(frozen=True)
class Section:
    """One section of the manual: its chapter (source file stem), title and paragraphs."""

    chapter: str
    title: str
    paragraphs: tuple[str, ...]

    @property
    def text(self) -> str:
        """Title and paragraphs, one per line."""
        return "\n".join((self.title, *self.paragraphs))


def inline(text: str) -> str:
    """``text`` without reStructuredText inline markup (roles, links, literals, emphasis).

    >>> inline("see :ref:`the queue <delayed>` and ``Closes: #``\\\\ *nnnnn*")
    'see the queue and Closes: #nnnnn'
    """
    text = _ROLE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    return " ".join(text.replace("\\ ", "").replace("\\", "").split())


def rst_sections(chapter: str, source: str) -> list[Section]:
    """The sections of one reStructuredText file: heading, then its paragraphs.

    Directives (``.. name::`` and what is indented under them) and overlines are dropped;
    a blank line ends a paragraph; list items and literal blocks become paragraphs too.
    """
    lines = source.splitlines()
    sections: list[tuple[str, list[str]]] = []
    paragraph: list[str] = []
    in_directive = False

    def flush() -> None:
        if paragraph and sections:
            sections[-1][1].append(inline(" ".join(paragraph)))
        paragraph.clear()

    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if in_directive and (not line.strip() or line[:1].isspace()):
            continue
        in_directive = line.startswith("..")
        if in_directive or _UNDERLINE.match(line):
            flush()
            continue
        if line.strip() and _UNDERLINE.match(following) and len(following.strip()) >= 4:
            flush()
            sections.append((inline(line), []))
        elif line.strip():
            paragraph.append(line.strip().removeprefix("- ").strip())
        else:
            flush()
    flush()
    return [Section(chapter, t, tuple(p for p in ps if p)) for t, ps in sections]


def sized(sections: list[Section]) -> list[Section]:
    """Short sections joined to the next of the same chapter, long ones cut at paragraphs."""
    joined: list[Section] = []
    for section in sections:
        last = joined[-1] if joined else None
        if last and last.chapter == section.chapter and len(last.text) < MIN_SECTION_CHARS:
            merged = (*last.paragraphs, section.title, *section.paragraphs)
            joined[-1] = Section(last.chapter, last.title, merged)
        else:
            joined.append(section)
    out: list[Section] = []
    for section in joined:
        part: list[str] = []
        for paragraph in section.paragraphs:
            part.append(paragraph)
            if sum(map(len, part)) >= MAX_SECTION_CHARS:
                out.append(Section(section.chapter, section.title, tuple(part)))
                part = []
        if part or not section.paragraphs:
            out.append(Section(section.chapter, section.title, tuple(part)))
    return [s for s in out if len(s.text) >= MIN_SECTION_CHARS]


def _build(cache: Path) -> dict:
    work = Path(tempfile.mkdtemp(prefix="english-", dir=cache))
    try:
        root, version = unpack_package(PACKAGE, work)
        sections: list[Section] = []
        for path in sorted((root / SOURCES).glob("*.rst.txt")):
            chapter = path.name.removesuffix(".rst.txt")
            sections += sized(rst_sections(chapter, path.read_text(encoding="utf-8")))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [{"chapter": s.chapter, "title": s.title, "paragraphs": s.paragraphs} for s in sections]
    return {"format": FORMAT, "package": PACKAGE, "version": version, "sections": rows}


def english_sections(cache_dir: Path | None = None) -> list[Section]:
    """The manual's sections in reading order (downloaded and cached on first use)."""
    cache = bench_cache_dir(cache_dir)
    path = cache / CACHE_FILE
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if data.get("format") != FORMAT:
        cache.mkdir(parents=True, exist_ok=True)
        data = _build(cache)
        path.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
    return [
        Section(row["chapter"], row["title"], tuple(row["paragraphs"])) for row in data["sections"]
    ]


_WORDS = (
    "the package maintainer upload archive source binary release policy bug report tracker "
    "security team changelog version upstream patch build daemon mirror mailing list review "
    "sponsor developer testing unstable stable freeze migration porter architecture library "
    "dependency conflict control file rules copyright license documentation manual page "
    "should must may always never before after when each every new old other its their"
).split()


def synthetic_sections(count: int = 12, seed: int = 0) -> list[Section]:
    """English-like sections of the manual's vocabulary in random order, for tests that
    must not download: ``count`` sections of 3-5 paragraphs over 3 chapters."""
    rng = random.Random(f"{seed}:english")

    def sentence() -> str:
        return " ".join(rng.choices(_WORDS, k=rng.randint(8, 20))).capitalize() + "."

    return [
        Section(
            f"chapter-{n % 3}",
            " ".join(rng.sample(_WORDS, 3)).title(),
            tuple(" ".join(sentence() for _ in range(4)) for _ in range(rng.randint(3, 5))),
        )
        for n in range(count)
    ]
