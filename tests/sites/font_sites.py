"""Pages whose text only an obfuscating web font makes readable, built as pirate sites do.

:func:`obfuscate` takes a chapter's text and a real CJK font of this machine
(:data:`TYPEFACES`, Debian's packages) and, from a seed (a site randomises per request):

- picks the characters to hide: the ``common`` most frequent Han characters of the text
  (sites hide the few hundred most common characters), or every Han character
  (``common=0``);
- gives each a code point: a random private-use one (``scheme="pua"``, U+E000-U+F8FF), or
  another character of the same set (``scheme="shuffle"``: the HTML shows wrong real
  characters, a random permutation of them); ``scheme="plain"`` keeps every character's
  own code point (a web font used for its looks, which a decoder must leave alone);
- builds a new font holding only those glyphs, redrawn from the typeface's outlines
  (TrueType quadratic ``glyf``, or CFF for ``otf``), in a shuffled glyph order under random
  glyph names, its character map sending each shown code point to its real character's
  glyph, and writes it as ``woff2``, ``woff``, ``ttf`` or ``otf``;
- writes the page: the text with its characters replaced, in a ``div`` whose randomly named
  class sets the font, the ``@font-face`` rule in the page's ``<style>`` (the font by URL,
  or inline as a ``data:`` URL with ``inline=True``).

:func:`write_site` writes such pages as a small site (an index and one chapter per page,
each with a font of its own) for crawls of a fixture server.

:class:`ObfuscatedPage` carries the truth (shown code point -> real character) beside the
page and its font file. Everything is drawn from ``random.Random(seed)``.
"""

from __future__ import annotations

import base64
import html
import io
import random
import string
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from fontTools.fontBuilder import FontBuilder
from fontTools.pens.cu2quPen import Cu2QuPen
from fontTools.pens.recordingPen import DecomposingRecordingPen
from fontTools.pens.t2CharStringPen import T2CharStringPen
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib import TTFont

PUA = (0xE000, 0xF8FF)
MIME = {"woff2": "font/woff2", "woff": "font/woff", "ttf": "font/ttf", "otf": "font/otf"}
CSS_FORMAT = {"woff2": "woff2", "woff": "woff", "ttf": "truetype", "otf": "opentype"}


@dataclass(frozen=True)
class Typeface:
    """A CJK font on this machine: a name, its file and its number in a collection."""

    name: str
    path: str
    number: int = 0
    package: str = ""

    @property
    def spec(self) -> str:
        """``PATH#N``, as the reference setting takes it."""
        return f"{self.path}#{self.number}"

    def available(self) -> bool:
        return Path(self.path).is_file()


TYPEFACES = {
    t.name: t
    for t in (
        Typeface("zenhei", "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", 0, "fonts-wqy-zenhei"),
        Typeface(
            "droid",
            "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
            0,
            "fonts-droid-fallback",
        ),
        Typeface(
            "noto-sans",
            "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
            2,
            "fonts-noto-cjk",
        ),
        Typeface(
            "noto-serif",
            "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
            2,
            "fonts-noto-cjk",
        ),
        Typeface("uming", "/usr/share/fonts/truetype/arphic/uming.ttc", 0, "fonts-arphic-uming"),
        Typeface("ukai", "/usr/share/fonts/truetype/arphic/ukai.ttc", 0, "fonts-arphic-ukai"),
    )
}
"""Typefaces the fixtures and the benchmark use, where installed: two Hei (sans) designs,
Noto Sans and Serif CJK SC, a Ming (serif) and a Kai (brush) one."""


@dataclass(frozen=True)
class ObfuscatedPage:
    """A page of hidden text, its font and the truth."""

    html: str
    text: str  # the hidden text as the HTML holds it
    source: str  # the real text
    font: bytes
    font_format: str
    font_url: str  # the font's file name (random), relative to the page
    css: str
    mapping: dict[int, str]  # shown code point -> real character
    typeface: str

    def files(self, page_name: str = "index.html") -> dict[str, bytes]:
        """The page and its font, by file name, ready to be served."""
        return {page_name: self.html.encode("utf-8"), self.font_url: self.font}


def is_han(ch: str) -> bool:
    """A CJK Unified Ideograph of the basic block or extension A.

    >>> is_han("书"), is_han("，"), is_han("a")
    (True, False, False)
    """
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf"


_fonts: dict[tuple[str, int], TTFont] = {}


def open_typeface(typeface: Typeface) -> TTFont:
    """The typeface's font, opened once per process."""
    key = (typeface.path, typeface.number)
    if key not in _fonts:
        _fonts[key] = TTFont(typeface.path, fontNumber=typeface.number, lazy=True)
    return _fonts[key]


def obfuscate(
    text: str,
    typeface: Typeface,
    *,
    seed: int | str = 0,
    scheme: str = "pua",
    common: int = 300,
    fmt: str = "woff2",
    inline: bool = False,
    title: str = "第一章",
) -> ObfuscatedPage:
    """The page of ``text`` hidden behind a font made from ``typeface`` (module docstring)."""
    if scheme not in ("pua", "shuffle", "plain"):
        raise ValueError(f"scheme must be pua, shuffle or plain, got {scheme!r}")
    if fmt not in MIME:
        raise ValueError(f"fmt must be one of {', '.join(MIME)}, got {fmt!r}")
    rng = random.Random(f"{seed}:{typeface.name}:{scheme}:{common}:{fmt}")
    source = open_typeface(typeface)
    source_cmap = source.getBestCmap()
    counts = Counter(ch for ch in text if is_han(ch) and ord(ch) in source_cmap)
    ranked = sorted(counts, key=lambda ch: (-counts[ch], ch))
    hidden = ranked[:common] if common else ranked
    if scheme == "pua":
        shown = [chr(cp) for cp in rng.sample(range(PUA[0], PUA[1] + 1), len(hidden))]
    elif scheme == "shuffle":
        shown = hidden[:]
        rng.shuffle(shown)
    else:
        shown = hidden[:]
    mapping = {ord(s): h for s, h in zip(shown, hidden, strict=True)}
    hide = {ord(h): s for s, h in zip(shown, hidden, strict=True)}
    font = build_font(source, mapping, rng, fmt)
    hidden_text = text.translate(hide)
    family = _name(rng, 8)
    css_class = _name(rng, 6)
    font_url = f"{_name(rng, 12)}.{fmt}"
    src = (
        f"data:{MIME[fmt]};base64,{base64.b64encode(font).decode('ascii')}" if inline else font_url
    )
    css = (
        f"@font-face {{ font-family: '{family}'; src: url({src}) format('{CSS_FORMAT[fmt]}'); }}\n"
        f".{css_class} {{ font-family: '{family}', sans-serif; }}"
    )
    paragraphs = "\n".join(
        f"<p>{html.escape(line)}</p>" for line in hidden_text.splitlines() if line.strip()
    )
    page = (
        '<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>\n<style>\n{css}\n</style></head>\n"
        f'<body><h1>{html.escape(title)}</h1>\n<div class="{css_class}">\n{paragraphs}\n'
        "</div></body></html>\n"
    )
    return ObfuscatedPage(page, hidden_text, text, font, fmt, font_url, css, mapping, typeface.name)


def write_site(
    root: Path,
    chapters: list[str],
    typeface: Typeface,
    *,
    seed: int | str = 0,
    scheme: str = "pua",
    common: int = 300,
    fmt: str = "woff2",
    inline: bool = False,
) -> dict[str, ObfuscatedPage]:
    """A small site in ``root``: ``index.html`` linking ``chapter-N.html``, each chapter
    hidden behind a font of its own (drawn anew per page, as per request) beside it. Returns
    each chapter page's file name with its page (the truth)."""
    root.mkdir(parents=True, exist_ok=True)
    pages = {}
    for n, chapter in enumerate(chapters, 1):
        page = obfuscate(chapter, typeface, seed=f"{seed}:{n}", scheme=scheme, common=common,
                         fmt=fmt, inline=inline, title=f"第{n}章")  # fmt: skip
        name = f"chapter-{n}.html"
        for file, data in page.files(name).items():
            if not (inline and file == page.font_url):
                (root / file).write_bytes(data)
        pages[name] = page
    links = "\n".join(f'<li><a href="{name}">{html.escape(p.source[:12])}</a></li>'
                      for name, p in pages.items())  # fmt: skip
    (root / "index.html").write_text(
        f'<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8"><title>目录</title>'
        f"</head><body><ul>\n{links}\n</ul></body></html>\n",
        encoding="utf-8",
    )
    return pages


def build_font(source: TTFont, mapping: dict[int, str], rng: random.Random, fmt: str) -> bytes:
    """A font whose character map sends each code point of ``mapping`` to a glyph drawn
    from ``source``'s glyph of its character, under random names in a random order."""
    glyph_set = source.getGlyphSet()
    cmap = source.getBestCmap()
    metrics = source["hmtx"].metrics
    em = source["head"].unitsPerEm
    cff = fmt == "otf"
    names = [".notdef"]
    used: set[str] = {".notdef"}
    drawn: dict[str, object] = {}
    widths: dict[str, tuple[int, int]] = {".notdef": (em, 0)}
    new_cmap: dict[int, str] = {}
    items = list(mapping.items())
    rng.shuffle(items)
    for shown, real in items:
        name = _name(rng, 10)
        while name in used:
            name = _name(rng, 10)
        used.add(name)
        names.append(name)
        glyph = cmap[ord(real)]
        recording = DecomposingRecordingPen(glyph_set)  # components drawn in place
        glyph_set[glyph].draw(recording)
        if cff:
            pen = T2CharStringPen(metrics[glyph][0], None)
            recording.replay(pen)
            drawn[name] = pen.getCharString()
        else:
            pen = TTGlyphPen(None)
            recording.replay(Cu2QuPen(pen, max_err=1.0, reverse_direction=False))
            drawn[name] = pen.glyph()
        widths[name] = (metrics[glyph][0], 0)
        new_cmap[shown] = name
    builder = FontBuilder(em, isTTF=not cff)
    builder.setupGlyphOrder(names)
    builder.setupCharacterMap(new_cmap)
    if cff:
        drawn[".notdef"] = T2CharStringPen(em, None).getCharString()
        family = _name(rng, 8)
        builder.setupCFF(family, {"FullName": family}, drawn, {})
    else:
        drawn[".notdef"] = TTGlyphPen(None).glyph()
        builder.setupGlyf(drawn)
    builder.setupHorizontalMetrics(widths)
    ascent = int(em * 0.88)
    builder.setupHorizontalHeader(ascent=ascent, descent=ascent - em)
    family = _name(rng, 8)
    builder.setupNameTable({"familyName": family, "styleName": "Regular"})
    builder.setupOS2(sTypoAscender=ascent, sTypoDescender=ascent - em, usWinAscent=ascent,
                     usWinDescent=em - ascent)  # fmt: skip
    builder.setupPost()
    font = builder.font
    font["head"].created = font["head"].modified = 3_786_825_600  # 2024: same seed, same bytes
    font.recalcTimestamp = False
    if fmt in ("woff", "woff2"):
        font.flavor = fmt
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


def _name(rng: random.Random, length: int) -> str:
    return rng.choice(string.ascii_lowercase) + "".join(
        rng.choices(string.ascii_lowercase + string.digits, k=length - 1)
    )


def decoded_accuracy(page: ObfuscatedPage, decoded_text: str) -> tuple[int, int, int]:
    """Over the hidden characters of the page: (positions read right, positions left as
    shown, positions read wrong). The texts align position by position (a glyph read as
    nothing makes them differ in length, and counts every position after it as wrong)."""
    right = kept = wrong = 0
    for shown, real, got in zip(page.text, page.source, decoded_text, strict=False):
        if ord(shown) not in page.mapping:
            continue
        if got == real:
            right += 1
        elif got == shown:
            kept += 1
        else:
            wrong += 1
    missing = sum(1 for ch in page.text[len(decoded_text) :] if ord(ch) in page.mapping)
    return right, kept, wrong + missing
