"""The text a person sees in a browser: a page's own CSS cascade, web fonts and image texts
applied to its tree before its main text is extracted (docs/pipeline.md, "Visible text").

Pirate sites put random characters every few characters of a chapter in elements a browser
does not show (issue 38): hidden by a class of an external stylesheet, a ``<style>`` block,
an inline ``style``, or ``<font color=#fff>`` on a white page. :func:`make_visible` reads the
page's stylesheets (the external ones the spider fetched, :class:`crawler.reading.PageAssets`,
placed where their ``<link rel=stylesheet>`` is, and its ``<style>`` blocks, in document
order, each parsed once per process, :data:`SHEET_CACHE`), its ``style`` attributes and the
presentational attributes (``hidden``, ``<font color>``, ``bgcolor``), matches the
selectors against the lxml tree with cssselect2 and computes, for every element of the
body, the properties that decide whether its text is seen, with the CSS cascade
(origin, ``!important``, specificity, order) and inheritance:

- *the element and all it holds* are dropped (their text and their children's, never the
  text after them) when: ``display: none`` (the ``hidden`` attribute too, which author
  CSS may override); ``opacity`` at most :data:`MIN_OPACITY`; ``content-visibility:
  hidden``; a box that is not inline whose ``width``, ``height``, ``max-width`` or
  ``max-height`` is at most :data:`TINY_PX` with ``overflow`` other than visible; moved
  off-screen: ``position`` absolute, fixed or relative with ``left``, ``top`` or
  ``right`` at most -:data:`OFFSCREEN_PX` (or ``left`` at least that), a ``margin-left``
  or ``margin-top`` or a ``transform: translate`` that far, a ``text-indent`` at most
  -:data:`OFFSCREEN_PX` (or -100%) on a box that is not inline; ``transform: scale(0)``;
  a ``clip: rect()`` of no area on an absolute or fixed box; a ``clip-path`` of no area
  (``inset()`` of 50% or more, ``circle(0)``, ``ellipse(0 0)``);
- *the element's own text* (its text nodes, not its children's, which may say otherwise) is
  dropped when: ``visibility`` hidden or collapse (inherited; a child ``visible`` is seen);
  a computed ``font-size`` under :data:`MIN_FONT_PX` (``0``, ``0.01em`` of a normal size,
  ``font: 0/0 a``); a text colour (``color``, or ``-webkit-text-fill-color`` when set) of
  alpha at most :data:`MIN_OPACITY` (``transparent``), or of contrast under
  :data:`MIN_CONTRAST` (WCAG's ratio) against the colour behind it: the nearest
  ``background-color`` (``bgcolor``, ``background``) of the element or an ancestor,
  blended when translucent, the page white (:data:`PAGE_BACKGROUND`) when none is set; a
  background image or gradient there makes it unknown, and the text is kept; so is text
  with a ``text-shadow`` or ``-webkit-text-stroke``.

Colours are read by tinycss2 (CSS Color 3: names, ``#rgb``, ``#rrggbb``, ``rgb()``,
``rgba()``, ``hsl()``, ``transparent``, ``currentColor``); lengths in ``px``, ``pt``,
``pc``, ``in``, ``cm``, ``mm``, ``em``, ``rem``, ``ex``, ``ch``, ``%`` (of the parent's font
size for ``font-size``), font-size keywords; ``inherit``, ``initial`` and ``unset``;
custom properties and ``var()`` (inherited, :data:`MAX_VAR_DEPTH` substitutions deep);
``@media`` rules apply when their query holds for a desktop screen
:data:`SCREEN_WIDTH` pixels wide (unknown features hold); ``@supports`` and ``@layer``
blocks apply; nested rules (CSS Nesting) are read :data:`MAX_NESTING_RULES` deep.
Pseudo-elements and dynamic pseudo-classes (``:hover``) never match.

A page pays for this only when it can hide something: without a declaration that could
hide text (a colour counts only when some background of the page, or the white page, is
within :data:`MIN_CONTRAST` of it, or it is transparent), a ``hidden`` attribute or a
``<font color>`` that could, the cascade is not computed and the tree is left as it is.

**Web fonts** (:mod:`crawler.webfont`): the text of an element whose computed
``font-family`` first names a family of an ``@font-face`` rule whose font the spider
fetched (``PageAssets.fonts``, by the absolute URL of its ``src``) or that the rule holds as
a ``data:`` URL (base64, at most :data:`crawler.webfont.FontLimits.max_bytes`) is decoded
by glyph shape (:class:`crawler.webfont.FontDecoder`, one per process and reference font,
:func:`crawler.webfont.shared_reference`), each font's mapping applied to the text that
font draws only, at most :data:`MAX_FONTS` fonts a page. A font refused, or a reference
font missing, leaves the text as it is (:attr:`Visible.fonts_refused` says why).

**Image texts**: an ``<img>`` still shown whose absolute ``src`` (or ``data-src``,
``data-original``) has a text in ``PageAssets.image_texts`` becomes a ``<p>`` of that
text (a ``<br>`` per line), where it was.

Bounds (hostile stylesheets): at most :data:`MAX_CSS_CHARS` characters of CSS per page are
parsed (each sheet cut there), :data:`MAX_SELECTORS` selectors compiled (each at most
:data:`MAX_SELECTOR_CHARS` characters and :data:`MAX_COMBINATORS` combinators; longer
ones are skipped), :data:`MAX_ELEMENTS` elements styled (a page with more is read as it
is), :data:`MAX_FONT_FACES` ``@font-face`` rules. The tree is walked without recursion.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes, urljoin

import cssselect2
import tinycss2
import tinycss2.color3
from lxml import etree

from crawler.extract import content_chars

MAX_CSS_CHARS = 512 * 1024
"""Characters of CSS parsed per page, its sheets in order (tinycss2 reads about 0.7 MB/s)."""
MAX_SELECTORS = 4000
"""Selectors compiled per page (cssselect2 compiles each to a Python function)."""
MAX_SELECTOR_CHARS = 400
MAX_COMBINATORS = 8
"""Combinators in one selector: each descendant combinator may visit every ancestor."""
MAX_NESTING_RULES = 4
MAX_TOKEN_DEPTH = 12
"""Brackets and functions nested in a selector or a value; deeper ones are skipped (the
parser's serialiser recurses)."""
"""Levels of nested style rules read (CSS Nesting)."""
MAX_ELEMENTS = 30_000
"""Elements of a body styled; a page with more is read as it is (without the cascade)."""
HIDDEN_COUNTED = 10_000
"""Hidden letters and CJK characters counted at most (:attr:`Visible.hidden_chars`)."""
MAX_FONT_FACES = 64
MAX_FONTS = 8
"""Web fonts decoded per page."""
MAX_VAR_DEPTH = 8
SHEET_CACHE = 256
"""Parsed stylesheets kept per process (least recently used out), by the SHA-256 of their
text and base URL: a site's pages share their stylesheets."""
DECLARATION_CACHE = 4096
"""Parsed ``style`` attributes kept per process, by their text."""

MIN_FONT_PX = 3.0
"""Text whose computed font size is under this many CSS pixels is not seen."""
MIN_OPACITY = 0.05
MIN_CONTRAST = 1.1
"""Text whose colour's contrast ratio (WCAG 2) with the colour behind it is under this is
not seen (#fefefe on white: 1.01; #eee on white: 1.16)."""
TINY_PX = 1.0
OFFSCREEN_PX = 1000.0
DEFAULT_FONT_PX = 16.0
SCREEN_WIDTH = 1280
PAGE_BACKGROUND = (1.0, 1.0, 1.0)

RGBA = tuple[float, float, float, float]

# --- declarations --------------------------------------------------------------------------
INHERITED = frozenset(
    {"visibility", "font-size", "color", "font-family", "text-indent", "-webkit-text-fill-color"}
)
STYLED = frozenset(
    {
        "display", "visibility", "font-size", "font-family", "opacity", "width", "height",
        "max-width", "max-height", "overflow", "overflow-x", "overflow-y", "position", "left",
        "top", "right", "text-indent", "clip", "clip-path", "transform", "color",
        "-webkit-text-fill-color", "background-color", "margin-left", "margin-top", "float",
        "text-shadow", "-webkit-text-stroke", "-webkit-text-stroke-width",
        "content-visibility",
    }
)  # fmt: skip
"""Properties read (after shorthands are expanded)."""
SHORTHANDS = frozenset({"font", "background", "margin", "inset"})
INLINE_TAGS = frozenset(
    "a abbr b bdi bdo big cite code data del dfn em font i img ins kbd mark q s samp small"
    " span strike strong sub sup time tt u var br wbr label".split()
)
_LENGTH = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)([a-z%]*)$")
_VAR = re.compile(r"var\(\s*(--[\w-]+)\s*(?:,([^()]*(?:\([^()]*\)[^()]*)*))?\)")
_FONT_SIZE = re.compile(
    r"(?:^|\s)((?:[+-]?(?:\d+\.?\d*|\.\d+))(?:px|pt|pc|in|cm|mm|em|rem|ex|ch|%)?"
    r"|xx-small|x-small|small|medium|large|x-large|xx-large|xxx-large|smaller|larger)"
    r"(?:\s*/\s*\S+)?\s+(.+)$"
)
_KEYWORD_SIZES = {
    "xx-small": 9.0, "x-small": 10.0, "small": 13.0, "medium": 16.0, "large": 18.0,
    "x-large": 24.0, "xx-large": 32.0, "xxx-large": 48.0,
}  # fmt: skip
_UNITS = {"px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4}
_CAN_HIDE = re.compile(
    r"display|visibility|font|opacity|width|height|overflow|position|left|top|right|indent"
    r"|clip|transform|color|background|margin|content-visibility|inset|var\(",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Declaration:
    """One declaration of a rule: a property read here, its value (lowercase, serialised)."""

    name: str
    value: str
    important: bool


@dataclass(frozen=True)
class Rule:
    """A style rule's compiled selectors and its declarations that matter here."""

    selectors: tuple[object, ...]  # cssselect2 CompiledSelector
    declarations: tuple[Declaration, ...]


@dataclass(frozen=True)
class FontFace:
    """An ``@font-face`` rule: its family (casefolded) and its sources' absolute URLs."""

    family: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Summary:
    """What declarations could hide text: one that hides by itself (colours aside), and the
    text and background colours declared (:func:`_can_hide`)."""

    hides: bool = False
    colors: frozenset[str] = frozenset()
    backgrounds: frozenset[tuple[float, float, float]] = frozenset()

    @classmethod
    def of(cls, declarations: Iterable[Declaration]) -> Summary:
        hides, colors, backgrounds = False, set(), set()
        for d in declarations:
            if d.name.startswith("--") or "var(" in d.value:
                hides = True
                continue
            for name, value in _expand(d):
                if name == "background-color":
                    parsed = parse_color(value) if value != "image" else None
                    if isinstance(parsed, tuple):
                        backgrounds.add(parsed[:3])
                elif name in ("color", "-webkit-text-fill-color"):
                    colors.add(value)
                elif _declaration_hides(name, value):
                    hides = True
        return cls(hides, frozenset(colors), frozenset(backgrounds))

    def __or__(self, other: Summary) -> Summary:
        return Summary(
            self.hides or other.hides,
            self.colors | other.colors,
            self.backgrounds | other.backgrounds,
        )

    def can_hide(self) -> bool:
        """Whether some declaration hides, or some text colour is transparent or within
        :data:`MIN_CONTRAST` of a background declared or of the white page."""
        if self.hides:
            return True
        backgrounds = [PAGE_BACKGROUND, *self.backgrounds]
        for value in self.colors:
            parsed = parse_color(value)
            if not isinstance(parsed, tuple):
                continue
            if parsed[3] <= MIN_OPACITY:
                return True
            if any(contrast(_blend(parsed, bg), bg) < MIN_CONTRAST for bg in backgrounds):
                return True
        return False


@dataclass(frozen=True)
class Sheet:
    """A parsed stylesheet: its rules in order, its ``@font-face`` rules, the selectors it
    skipped (over the bounds or not understood) and whether it was cut."""

    rules: tuple[Rule, ...]
    faces: tuple[FontFace, ...]
    skipped: int = 0
    cut: bool = False
    summary: Summary = field(default_factory=lambda: Summary())

    @property
    def selectors(self) -> int:
        return sum(len(r.selectors) for r in self.rules)


@dataclass
class Visible:
    """What :func:`make_visible` did to a page."""

    styled: bool = False  # the cascade was computed
    dropped: int = 0  # elements dropped with all they hold
    muted: int = 0  # elements whose own text was dropped
    images: int = 0  # images replaced by their text
    fonts: int = 0  # web fonts applied
    fonts_refused: list[str] = field(default_factory=list)
    selectors: int = 0
    selectors_skipped: int = 0
    css_cut: bool = False
    too_large: bool = False  # over MAX_ELEMENTS: not styled
    hidden_chars: int = 0  # letters and CJK characters dropped (counted to HIDDEN_COUNTED)

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.muted or self.images or self.fonts)


# --- parsing -------------------------------------------------------------------------------
_sheet_cache: OrderedDict[str, Sheet] = OrderedDict()
_inline_cache: OrderedDict[str, tuple[Declaration, ...]] = OrderedDict()


def _lru_put(cache: OrderedDict, key: str, value: object, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


def parse_sheet(css: str, base_url: str, budget: int = MAX_SELECTORS) -> Sheet:
    """The rules of ``css`` that matter here (see the module docstring), ``@font-face``
    sources resolved against ``base_url``; at most ``budget`` selectors compiled. Cached
    per process by the text, base URL and budget."""
    key = hashlib.sha256(f"{budget}\0{base_url}\0{css}".encode("utf-8", "replace")).hexdigest()
    cached = _sheet_cache.get(key)
    if cached is not None:
        _sheet_cache.move_to_end(key)
        return cached
    cut = len(css) > MAX_CSS_CHARS
    css = css[:MAX_CSS_CHARS]
    if not _CAN_HIDE.search(css):
        sheet = Sheet((), (), 0, cut)
    else:
        state = _SheetState(base_url, budget)
        nodes = tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)
        state.read(nodes, (), 0)
        summary = Summary.of(d for rule in state.rules for d in rule.declarations)
        sheet = Sheet(tuple(state.rules), tuple(state.faces), state.skipped, cut, summary)
    _lru_put(_sheet_cache, key, sheet, SHEET_CACHE)
    return sheet


class _SheetState:
    def __init__(self, base_url: str, budget: int) -> None:
        self.base_url = base_url
        self.budget = budget
        self.rules: list[Rule] = []
        self.faces: list[FontFace] = []
        self.skipped = 0

    def read(self, nodes: Iterable[object], parents: tuple[str, ...], depth: int) -> None:
        for node in nodes:
            kind = getattr(node, "type", "")
            if kind not in ("qualified-rule", "at-rule"):
                continue
            if token_depth(node.prelude) > MAX_TOKEN_DEPTH:  # type: ignore[attr-defined]
                self.skipped += 1
            elif kind == "qualified-rule":
                self.style_rule(node, parents, depth)
            else:
                self.at_rule(node, parents, depth)

    def at_rule(self, node: object, parents: tuple[str, ...], depth: int) -> None:
        name = node.lower_at_keyword  # type: ignore[attr-defined]
        content = node.content  # type: ignore[attr-defined]
        if content is None:
            return
        if name == "font-face":
            if len(self.faces) < MAX_FONT_FACES:
                face = _font_face(content, self.base_url)
                if face:
                    self.faces.append(face)
            return
        if name == "media" and not media_applies(tinycss2.serialize(node.prelude)):  # type: ignore[attr-defined]
            return
        groups = ("media", "supports", "layer", "document", "scope", "container")
        if name not in groups or depth >= MAX_NESTING_RULES:
            return
        if parents:  # a group rule nested in a style rule holds declarations and rules
            inner = tinycss2.parse_blocks_contents(
                content, skip_comments=True, skip_whitespace=True
            )
            self.declarations_into(inner, parents)
        else:
            inner = tinycss2.parse_rule_list(content, skip_comments=True, skip_whitespace=True)
        self.read(inner, parents, depth + 1)

    def style_rule(self, node: object, parents: tuple[str, ...], depth: int) -> None:
        prelude = tinycss2.serialize(node.prelude).strip()  # type: ignore[attr-defined]
        items = tinycss2.parse_blocks_contents(
            node.content,  # type: ignore[attr-defined]
            skip_comments=True,
            skip_whitespace=True,
        )
        selectors = _nest(prelude, parents)
        declarations = _declarations(items)
        if declarations:
            self.add(selectors, declarations)
        if depth < MAX_NESTING_RULES:
            nested = [i for i in items if getattr(i, "type", "") in ("qualified-rule", "at-rule")]
            if nested:
                self.read(nested, tuple(selectors), depth + 1)

    def declarations_into(self, items: Sequence[object], parents: tuple[str, ...]) -> None:
        declarations = _declarations(items)
        if declarations:
            self.add(list(parents), declarations)

    def add(self, selectors: Sequence[str], declarations: tuple[Declaration, ...]) -> None:
        compiled = []
        for text in selectors:
            if self.budget <= 0:
                self.skipped += 1
                continue
            if len(text) > MAX_SELECTOR_CHARS or _combinators(text) > MAX_COMBINATORS:
                self.skipped += 1
                continue
            self.budget -= 1
            try:
                compiled += [
                    s
                    for s in cssselect2.compile_selector_list(text)
                    if s.pseudo_element is None and not s.never_matches
                ]
            except (cssselect2.SelectorError, SyntaxError, RecursionError, MemoryError,
                    ValueError, TypeError, IndexError):  # fmt: skip
                self.skipped += 1
        if compiled:
            self.rules.append(Rule(tuple(compiled), declarations))


def token_depth(tokens: Iterable[object] | None) -> int:
    """How deep blocks and functions nest in ``tokens`` (walked without recursion, up to
    :data:`MAX_TOKEN_DEPTH` + 1)."""
    deepest = 0
    stack = [(iter(tokens or ()), 0)]
    while stack:
        items, depth = stack[-1]
        token = next(items, None)
        if token is None:
            stack.pop()
            continue
        inner = getattr(token, "arguments", None)
        if inner is None:
            inner = getattr(token, "content", None) if getattr(token, "type", "") in (
                "() block", "[] block", "{} block"
            ) else None  # fmt: skip
        if inner is not None:
            deepest = max(deepest, depth + 1)
            if deepest > MAX_TOKEN_DEPTH:
                return deepest
            stack.append((iter(inner), depth + 1))
    return deepest


def _combinators(selector: str) -> int:
    return len(re.findall(r"\s*[>+~]\s*|\s+", selector.strip()))


def _split_selectors(prelude: str) -> list[str]:
    """``prelude`` cut at its top-level commas."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(prelude):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(prelude[start:i].strip())
            start = i + 1
    out.append(prelude[start:].strip())
    return [s for s in out if s]


def _nest(prelude: str, parents: tuple[str, ...]) -> list[str]:
    """The selectors of a rule, nested in ``parents`` (CSS Nesting: ``&`` is the parent,
    else the rule is a descendant of it)."""
    own = _split_selectors(prelude)
    if not parents:
        return own
    parent = f":is({', '.join(parents)})"
    return [s.replace("&", parent) if "&" in s else f"{parent} {s}" for s in own]


def _declarations(items: Iterable[object]) -> tuple[Declaration, ...]:
    out = []
    for item in items:
        if getattr(item, "type", "") != "declaration":
            continue
        name = item.lower_name  # type: ignore[attr-defined]
        if token_depth(item.value) > MAX_TOKEN_DEPTH:  # type: ignore[attr-defined]
            continue
        if name in STYLED or name in SHORTHANDS or name.startswith("--"):
            value = " ".join(tinycss2.serialize(item.value).split())  # type: ignore[attr-defined]
            important = bool(item.important)  # type: ignore[attr-defined]
            if not name.startswith("--"):
                value = value.lower()
            out.append(Declaration(name, value, important))
    return tuple(out)


def parse_inline(style: str) -> tuple[Declaration, ...]:
    """The declarations of a ``style`` attribute that matter here (cached per process)."""
    cached = _inline_cache.get(style)
    if cached is not None:
        return cached
    if _CAN_HIDE.search(style) or "--" in style:
        found = _declarations(
            tinycss2.parse_blocks_contents(style, skip_comments=True, skip_whitespace=True)
        )
    else:
        found = ()
    _lru_put(_inline_cache, style, found, DECLARATION_CACHE)
    return found


def _font_face(content: Sequence[object], base_url: str) -> FontFace | None:
    items = tinycss2.parse_blocks_contents(content, skip_comments=True, skip_whitespace=True)
    family = ""
    sources: list[str] = []
    for item in items:
        if getattr(item, "type", "") != "declaration" or token_depth(item.value) > 2:
            continue
        name = item.lower_name  # type: ignore[attr-defined]
        if name == "font-family":
            names = _families(tinycss2.serialize(item.value))  # type: ignore[attr-defined]
            family = names[0] if names else ""
        elif name == "src":
            for token in item.value:  # type: ignore[attr-defined]
                if token.type == "url":
                    sources.append(token.value)
                elif token.type == "function" and token.lower_name == "url":
                    sources += [a.value for a in token.arguments if a.type == "string"][:1]
    if not family or not sources:
        return None
    resolved = tuple(s if s.startswith("data:") else urljoin(base_url, s.strip()) for s in sources)
    return FontFace(family, resolved)


def _families(value: str) -> tuple[str, ...]:
    """The family names of a ``font-family`` value, casefolded, quotes dropped."""
    out = []
    for part in value.split(","):
        name = " ".join(part.strip().strip("\"'").split()).casefold()
        if name:
            out.append(name)
    return tuple(out)


def media_applies(query: str) -> bool:
    """Whether a media query list holds for a desktop screen :data:`SCREEN_WIDTH` wide.

    >>> media_applies("print"), media_applies("screen and (max-width: 600px)")
    (False, False)
    >>> media_applies("all and (min-width: 768px)"), media_applies("")
    (True, True)
    """
    query = query.strip().lower()
    if not query:
        return True
    return any(_one_query(q) for q in _split_selectors(query) or [""])


def _one_query(query: str) -> bool:
    negate = query.startswith("not ")
    query = query.removeprefix("not ").removeprefix("only ").strip()
    words = re.split(r"\s+and\s+", query)
    holds = True
    for word in words:
        word = word.strip()
        if not word:
            continue
        if not word.startswith("("):
            holds = holds and word in ("all", "screen")
            continue
        m = re.match(r"\(\s*(min|max)-width\s*:\s*([\d.]+)(px|em|rem)?\s*\)", word)
        if m:
            px = float(m.group(2)) * (16.0 if m.group(3) in ("em", "rem") else 1.0)
            holds = holds and (px <= SCREEN_WIDTH if m.group(1) == "min" else px >= SCREEN_WIDTH)
    return holds != negate


# --- values --------------------------------------------------------------------------------
_color_cache: dict[str, RGBA | str | None] = {}


def parse_color(value: str) -> RGBA | str | None:
    """An RGBA (0-1 floats) of a CSS colour, ``"currentcolor"``, or None when it is none.

    >>> parse_color("#FFF"), parse_color("rgba(0, 0, 0, 0)")[3], parse_color("white")
    ((1.0, 1.0, 1.0, 1.0), 0, (1.0, 1.0, 1.0, 1.0))
    """
    if value in _color_cache:
        return _color_cache[value]
    try:
        parsed = tinycss2.color3.parse_color(value)
    except (ValueError, TypeError, IndexError):
        parsed = None
    if parsed == "currentColor":
        out: RGBA | str | None = "currentcolor"
    elif parsed is None:
        out = None
    else:
        out = (parsed.red, parsed.green, parsed.blue, parsed.alpha)
    if len(_color_cache) < DECLARATION_CACHE:
        _color_cache[value] = out
    return out


def length(value: str, font_px: float = DEFAULT_FONT_PX, percent_of: float | None = None) -> (
    float | None
):  # fmt: skip
    """CSS pixels of a length (``em`` of ``font_px``; ``%`` of ``percent_of``, else None).

    >>> length("-9999px"), length("2em", 10), length("0"), length("50%")
    (-9999.0, 20.0, 0.0, None)
    """
    m = _LENGTH.match(value.strip())
    if not m:
        return None
    number, unit = float(m.group(1)), m.group(2)
    if not math.isfinite(number):
        return None
    if unit in _UNITS:
        return number * _UNITS[unit]
    if unit in ("em", "ex", "ch"):
        return number * font_px * (1.0 if unit == "em" else 0.5)
    if unit == "rem":
        return number * DEFAULT_FONT_PX
    if unit == "%":
        return None if percent_of is None else number * percent_of / 100
    if unit == "":
        return number if number == 0 or percent_of == -1 else None
    if unit in ("vw", "vh", "vmin", "vmax"):
        return number * SCREEN_WIDTH / 100
    return None


def _luminance(rgb: Sequence[float]) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: Sequence[float], b: Sequence[float]) -> float:
    """WCAG 2's contrast ratio of two colours (1: the same; 21: black on white).

    >>> round(contrast((1, 1, 1), (0, 0, 0)), 1), contrast((1, 1, 1), (1, 1, 1))
    (21.0, 1.0)
    """
    la, lb = _luminance(a), _luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def _blend(top: RGBA, under: tuple[float, float, float]) -> tuple[float, float, float]:
    alpha = top[3]
    return tuple(alpha * t + (1 - alpha) * u for t, u in zip(top[:3], under, strict=True))  # type: ignore[return-value]


# --- the cascade -------------------------------------------------------------------------
@dataclass
class _Style:
    """The computed values of one element that decide what of its text is seen."""

    values: dict[str, str]  # property -> specified value after the cascade (inherited ones too)
    font_px: float
    backdrop: tuple[float, float, float] | None  # the colour behind its text; None: unknown
    color: RGBA
    family: tuple[str, ...]
    custom: Mapping[str, str]


_ROOT_STYLE = _Style({}, DEFAULT_FONT_PX, PAGE_BACKGROUND, (0.0, 0.0, 0.0, 1.0), (), {})


def _expand(declaration: Declaration) -> Iterator[tuple[str, str]]:
    """A declaration as (property, value) pairs of :data:`STYLED` (shorthands expanded)."""
    name, value = declaration.name, declaration.value
    if name == "font":
        if value in ("inherit", "initial", "unset"):
            yield "font-size", value
            yield "font-family", value
            return
        m = _FONT_SIZE.search(value)
        if m:
            yield "font-size", m.group(1)
            yield "font-family", m.group(2)
    elif name == "background":
        if "url(" in value or "gradient(" in value:
            yield "background-color", "image"
            return
        colors = [parse_color(part) for part in value.replace(",", " ").split()]
        color = next((c for c in colors if c is not None), None)
        if value in ("none", "transparent") or color is None:
            yield "background-color", "transparent"
        else:
            part = next(p for p in value.split() if parse_color(p) is not None)
            yield "background-color", part
    elif name in ("margin", "inset"):
        parts = value.split()
        if not parts or "(" in value:
            return
        top = parts[0]
        left = parts[{1: 0, 2: 1, 3: 1}.get(len(parts), 3)]
        yield ("margin-top" if name == "margin" else "top"), top
        yield ("margin-left" if name == "margin" else "left"), left
    else:
        yield name, value


def _substitute(value: str, custom: Mapping[str, str]) -> str:
    for _ in range(MAX_VAR_DEPTH):
        if "var(" not in value:
            return value
        value = _VAR.sub(lambda m: custom.get(m.group(1), m.group(2) or "").strip(), value)
    return value if "var(" not in value else ""


class Cascade:
    """The page's rules in cascade order, matched with one :class:`cssselect2.Matcher`."""

    def __init__(self, sheets: Sequence[Sheet]) -> None:
        self.matcher = cssselect2.Matcher()
        for sheet in sheets:
            for rule in sheet.rules:
                for selector in rule.selectors:
                    self.matcher.add_selector(selector, rule.declarations)

    def specified(
        self, element: cssselect2.ElementWrapper, hints: Sequence[Declaration]
    ) -> dict[str, str]:
        """The winning declaration of each property on ``element``: UA defaults and
        presentational ``hints`` first, then the rules by specificity and order, the
        ``style`` attribute, then the important ones in the same order."""
        matched = self.matcher.match(element)
        tree = element.etree_element
        inline = parse_inline(tree.get("style") or "") if "style" in tree.attrib else ()
        chosen: dict[str, str] = {}
        important: dict[str, str] = {}
        layers: list[Iterable[Declaration]] = [hints]
        layers += [declarations for _, _, _, declarations in matched]
        layers.append(inline)
        for declarations in layers:
            for d in declarations:
                if d.important:
                    important[d.name] = d.value
                else:
                    chosen[d.name] = d.value
        chosen.update(important)
        return chosen


def _hints(element: etree._Element) -> list[Declaration]:
    """The UA's and the presentational attributes' declarations of ``element``."""
    out = []
    if element.get("hidden") is not None:
        out.append(Declaration("display", "none", False))
    tag = element.tag
    if tag == "font" and element.get("color"):
        out.append(Declaration("color", _legacy_color(element.get("color")), False))
    if element.get("bgcolor") and tag in ("body", "table", "tr", "td", "th"):
        out.append(Declaration("background-color", _legacy_color(element.get("bgcolor")), False))
    return out


def _legacy_color(value: str) -> str:
    """A legacy colour attribute as CSS: ``fff`` and ``#fff`` alike."""
    value = value.strip().lower()
    if re.fullmatch(r"[0-9a-f]{3}|[0-9a-f]{6}", value):
        return "#" + value
    return value


@dataclass
class _Verdict:
    gone: bool = False  # the element and all it holds are not seen
    mute: bool = False  # its own text is not seen


def compute(
    element: cssselect2.ElementWrapper,
    specified: dict[str, str],
    parent: _Style,
) -> tuple[_Style, _Verdict]:
    """The computed :class:`_Style` of an element and whether its text is seen."""
    custom = parent.custom
    own_custom = {k: v for k, v in specified.items() if k.startswith("--")}
    if own_custom:
        custom = {**custom, **own_custom}
    values: dict[str, str] = {}
    for name, value in parent.values.items():
        if name in INHERITED:
            values[name] = value
    set_here: set[str] = set()
    for raw_name, raw_value in specified.items():
        if raw_name.startswith("--"):
            continue
        value = _substitute(raw_value, custom) if "var(" in raw_value else raw_value
        for name, v in _expand(Declaration(raw_name, value, False)):
            if v == "inherit":
                if name in parent.values:
                    values[name] = parent.values[name]
                else:
                    values.pop(name, None)
            elif v in ("initial", "unset", "revert", "revert-layer"):
                if v == "unset" and name in INHERITED:
                    continue
                values.pop(name, None)
                set_here.add(name)
            else:
                values[name] = v
                set_here.add(name)
    font_px = parent.font_px  # inherited as a computed length
    if "font-size" in set_here:
        font_px = _font_px(values.get("font-size", "medium"), parent.font_px)
    color = parent.color
    if "color" in set_here:
        parsed = parse_color(values.get("color", "black"))
        if isinstance(parsed, tuple):
            color = parsed
    text_color = color
    fill = values.get("-webkit-text-fill-color")
    if fill:
        parsed = parse_color(fill)
        if isinstance(parsed, tuple):
            text_color = parsed
    backdrop = parent.backdrop  # what is behind the text
    bg = values.get("background-color") if "background-color" in set_here else None
    if bg == "image":
        backdrop = None
    elif bg:
        parsed = parse_color(bg)
        if parsed == "currentcolor":
            parsed = color
        if isinstance(parsed, tuple) and parsed[3] >= 1:
            backdrop = parsed[:3]  # type: ignore[assignment]
        elif isinstance(parsed, tuple) and parsed[3] > 0 and backdrop is not None:
            backdrop = _blend(parsed, backdrop)
    family = parent.family
    if "font-family" in set_here:
        family = _families(values.get("font-family", ""))
    # background-color is not inherited: keep it out of the children's values
    values.pop("background-color", None)
    style = _Style(values, font_px, backdrop, color, family, custom)
    return style, _verdict(element, values, font_px, text_color, backdrop)


def _font_px(value: str, parent_px: float) -> float:
    if value in _KEYWORD_SIZES:
        return _KEYWORD_SIZES[value]
    if value == "smaller":
        return parent_px / 1.2
    if value == "larger":
        return parent_px * 1.2
    if value.startswith(("calc(", "clamp(", "min(", "max(")):
        numbers = [length(n, parent_px, parent_px) for n in re.findall(r"[\d.]+[a-z%]*", value)]
        if any(n is not None and n == 0 for n in numbers) and value.startswith(("calc(", "min(")):
            return 0.0 if "*" in value or value.startswith("min(") else parent_px
        return parent_px
    px = length(value, parent_px, parent_px)
    return parent_px if px is None else max(px, 0.0)


def _verdict(
    element: cssselect2.ElementWrapper,
    values: Mapping[str, str],
    font_px: float,
    text_color: RGBA,
    backdrop: tuple[float, float, float] | None,
) -> _Verdict:
    get = values.get
    display = get("display") or ("inline" if element.local_name in INLINE_TAGS else "block")
    if display == "none" or get("content-visibility") == "hidden":
        return _Verdict(gone=True)
    opacity = get("opacity")
    if opacity is not None:
        number = length(opacity, percent_of=1.0) if opacity.endswith("%") else _number(opacity)
        if number is not None and number <= MIN_OPACITY:
            return _Verdict(gone=True)
    position = get("position", "static")
    boxed = display not in ("inline", "contents") or position in ("absolute", "fixed") or (
        get("float", "none") != "none"
    )  # fmt: skip
    if boxed and _overflows_hidden(values):
        for name in ("width", "height", "max-width", "max-height"):
            v = get(name)
            if v is not None:
                px = length(v, font_px)
                if px is not None and px <= TINY_PX:
                    return _Verdict(gone=True)
    if position in ("absolute", "fixed", "relative") and _offscreen(values, font_px):
        return _Verdict(gone=True)
    for name in ("margin-left", "margin-top"):
        px = length(get(name, "0"), font_px)
        if px is not None and px <= -OFFSCREEN_PX:
            return _Verdict(gone=True)
    indent = get("text-indent")
    if boxed and indent:
        px = length(indent, font_px, percent_of=SCREEN_WIDTH)
        if (px is not None and px <= -OFFSCREEN_PX) or indent.startswith("-100%"):
            return _Verdict(gone=True)
    transform = get("transform")
    if transform and transform != "none" and _transform_hides(transform, font_px):
        return _Verdict(gone=True)
    clip = get("clip")
    if clip and position in ("absolute", "fixed") and _clip_hides(clip, font_px):
        return _Verdict(gone=True)
    clip_path = get("clip-path")
    if clip_path and _clip_path_hides(clip_path):
        return _Verdict(gone=True)
    if get("visibility") in ("hidden", "collapse"):
        return _Verdict(mute=True)
    if font_px < MIN_FONT_PX:
        return _Verdict(mute=True)
    if text_color[3] <= MIN_OPACITY:
        return _Verdict(mute=True)
    if backdrop is not None and contrast(_blend(text_color, backdrop), backdrop) < MIN_CONTRAST:
        shadow = get("text-shadow", "none")
        stroke = get("-webkit-text-stroke", get("-webkit-text-stroke-width", "0"))
        if shadow == "none" and (stroke in ("0", "0px", "none") or stroke.startswith("0 ")):
            return _Verdict(mute=True)
    return _Verdict()


def _number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _overflows_hidden(values: Mapping[str, str]) -> bool:
    return any(
        values.get(name, "visible").split()[0] not in ("visible", "inherit", "initial", "unset")
        for name in ("overflow", "overflow-x", "overflow-y")
        if values.get(name)
    )


def _offscreen(values: Mapping[str, str], font_px: float) -> bool:
    for name in ("left", "top", "right"):
        v = values.get(name)
        if v is None:
            continue
        px = length(v, font_px, percent_of=SCREEN_WIDTH)
        if px is None:
            continue
        if px <= -OFFSCREEN_PX or (name == "left" and px >= OFFSCREEN_PX * 5):
            return True
    return False


_TRANSLATE = re.compile(r"translate(?:x|y|3d)?\(\s*([^,)\s]+)(?:\s*,\s*([^,)\s]+))?")
_SCALE = re.compile(r"scale(?:x|y|3d)?\(\s*([^,)\s]+)(?:\s*,\s*([^,)\s]+))?")


def _transform_hides(value: str, font_px: float) -> bool:
    for m in _TRANSLATE.finditer(value):
        for part in m.groups():
            px = length(part, font_px, percent_of=SCREEN_WIDTH) if part else None
            if px is not None and px <= -OFFSCREEN_PX:
                return True
    for m in _SCALE.finditer(value):
        for part in m.groups():
            number = _number(part) if part else None
            if number is not None and abs(number) < 0.01:
                return True
    return False


def _clip_hides(value: str, font_px: float) -> bool:
    m = re.match(r"rect\(([^)]*)\)", value)
    if not m:
        return False
    parts = [p for p in re.split(r"[\s,]+", m.group(1).strip()) if p]
    if len(parts) != 4:
        return False
    edges = [None if p == "auto" else length(p, font_px) for p in parts]
    top, right, bottom, left = edges
    return (top is not None and bottom is not None and bottom <= top) or (
        left is not None and right is not None and right <= left
    )


def _clip_path_hides(value: str) -> bool:
    m = re.match(r"inset\(([^)]*)\)", value)
    if m:
        parts = [p for p in m.group(1).split() if p != "round"][:4]
        percents = [_number(p[:-1]) for p in parts if p.endswith("%")]
        if parts and len(percents) == len(parts) and all(p is not None for p in percents):
            tops = percents + percents[: 4 - len(percents)] if len(percents) < 4 else percents
            return (tops[0] or 0) + (tops[2 % len(tops)] or 0) >= 100 or min(
                p or 0 for p in percents
            ) >= 50
        return False
    m = re.match(r"(circle|ellipse)\(\s*0(?:px|%)?(?:\s+0(?:px|%)?)?\s*(?:at|\))", value)
    return bool(m)


# --- applying it to a tree -----------------------------------------------------------------
def page_sheets(
    root: etree._Element, base_url: str, stylesheets: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The page's (CSS text, base URL) in cascade order: its ``<link rel=stylesheet>`` (the
    text the spider fetched, by absolute URL) and ``<style>`` blocks in document order,
    after the fetched sheets no link names (``@import``-ed ones)."""
    fetched = dict(stylesheets)
    placed: set[str] = set()
    ordered: list[tuple[str, str]] = []
    for element in root.iter("style", "link"):
        media = element.get("media") or ""
        if media and not media_applies(media):
            continue
        if element.tag == "style":
            ordered.append((element.text or "", base_url))
            continue
        rels = set((element.get("rel") or "").lower().split())
        href = (element.get("href") or "").strip()
        if "stylesheet" not in rels or "alternate" in rels or not href:
            continue
        url = urljoin(base_url, href).split("#", 1)[0]
        if url in fetched and url not in placed:
            placed.add(url)
            ordered.append((fetched[url], url))
    unplaced = [(css, url) for url, css in stylesheets if url not in placed]
    return unplaced + ordered


def document_base(root: etree._Element, url: str) -> str:
    """The URL relative links resolve against: the page's ``<base href>``, if any."""
    for base in root.iter("base"):
        href = base.get("href")
        if href:
            return urljoin(url, href.strip())
    return url


def make_visible(
    root: etree._Element,
    url: str,
    stylesheets: Sequence[tuple[str, str]] = (),
    fonts: Sequence[tuple[str, bytes]] = (),
    image_texts: Sequence[tuple[str, str]] = (),
    font_decoder: object | None = None,
) -> Visible:
    """Drop from the tree under ``root`` what a browser would not show, decode the text
    of its web fonts and put image texts in place of their images (module docstring).

    ``font_decoder`` is a :class:`crawler.webfont.FontDecoder`, or a callable returning one
    (called only when a page has a font to decode), or None (fonts are not decoded).
    """
    seen = Visible()
    body = next(root.iter("body"), None)
    if body is None:
        return seen
    base = document_base(root, url)
    sheets, remaining = [], MAX_SELECTORS
    css_chars = 0
    for css, sheet_base in page_sheets(root, base, stylesheets):
        if css_chars >= MAX_CSS_CHARS:
            seen.css_cut = True
            break
        if len(css) > MAX_CSS_CHARS - css_chars:
            css, seen.css_cut = css[: MAX_CSS_CHARS - css_chars], True
        css_chars += len(css)
        sheet = parse_sheet(css, sheet_base, remaining)
        remaining -= sheet.selectors
        seen.selectors += sheet.selectors
        seen.selectors_skipped += sheet.skipped
        sheets.append(sheet)
    faces = [face for sheet in sheets for face in sheet.faces][:MAX_FONT_FACES]
    available = _font_files(faces, fonts) if font_decoder is not None else {}
    if _can_hide(sheets, body) or available:
        elements = sum(1 for _ in body.iter())
        if elements > MAX_ELEMENTS:
            seen.too_large = True
        else:
            seen.styled = True
            _apply_cascade(body, sheets, available, font_decoder, seen)
    if image_texts:
        _place_image_texts(body, base, image_texts, seen)
    return seen


def _font_files(faces: Sequence[FontFace], fonts: Sequence[tuple[str, bytes]]) -> dict[str, bytes]:
    """The font file of each ``@font-face`` family whose source was fetched or is a
    ``data:`` URL (its first such source), by family."""
    from crawler.webfont import FontLimits

    fetched = dict(fonts)
    out: dict[str, bytes] = {}
    for face in faces:
        if face.family in out:
            continue
        for source in face.sources:
            data = _data_url(source, FontLimits().max_bytes) if source.startswith("data:") else (
                fetched.get(source)
            )  # fmt: skip
            if data:
                out[face.family] = data
                break
    return out


def _data_url(url: str, limit: int) -> bytes | None:
    """The bytes of a ``data:`` URL (base64 or percent-encoded), None over ``limit``."""
    head, _, payload = url.partition(",")
    if len(payload) > limit * 4 // 3 + 4:
        return None
    try:
        if head.endswith(";base64"):
            return base64.b64decode(payload, validate=False)
        return unquote_to_bytes(payload)
    except (binascii.Error, ValueError):
        return None


_HINTED = etree.XPath(
    "descendant-or-self::*[@style or @hidden or @bgcolor or (self::font and @color)]"
)


def _can_hide(sheets: Sequence[Sheet], body: etree._Element) -> bool:
    """Whether anything of the page could hide text (module docstring): the cascade is
    computed only then. The sheets' summaries are computed once per sheet; the body's
    attributes are found by one XPath."""
    summary = Summary()
    for sheet in sheets:
        summary |= sheet.summary
    if summary.hides:
        return True
    declarations: list[Declaration] = []
    html = body.getparent()
    for element in [*_HINTED(body), *([html] if html is not None else [])]:
        if element.get("hidden") is not None:
            return True
        style = element.get("style")
        if style:
            declarations += parse_inline(style)
        declarations += _hints(element)
    return (summary | Summary.of(declarations)).can_hide()


def _declaration_hides(name: str, value: str) -> bool:
    """Whether one declaration could hide text (colours aside)."""
    if name == "display":
        return value in ("none", "inherit")
    if name == "visibility":
        return value in ("hidden", "collapse", "inherit")
    if name == "content-visibility":
        return value == "hidden"
    if name == "font-size":
        if value in _KEYWORD_SIZES or value in ("inherit", "initial", "unset", "larger"):
            return False
        px = length(value, DEFAULT_FONT_PX, DEFAULT_FONT_PX)
        return px is None or px < MIN_FONT_PX * 4  # relative sizes compound
    if name == "opacity":
        number = _number(value.rstrip("%"))
        return number is None or number <= MIN_OPACITY * (100 if value.endswith("%") else 1)
    if name in ("width", "height", "max-width", "max-height"):
        px = length(value)
        return px is not None and px <= TINY_PX
    if name in ("left", "top", "right", "margin-left", "margin-top", "text-indent"):
        px = length(value, percent_of=SCREEN_WIDTH)
        return px is not None and (px <= -OFFSCREEN_PX or (name == "left" and px >= OFFSCREEN_PX))
    if name in ("clip", "clip-path", "transform"):
        return value not in ("none", "auto", "initial", "unset")
    return False


def _apply_cascade(
    body: etree._Element,
    sheets: Sequence[Sheet],
    available: Mapping[str, bytes],
    font_decoder: object | None,
    seen: Visible,
) -> None:
    cascade = Cascade(sheets)
    start = _body_style(body, cascade)
    gone: list[etree._Element] = []
    muted: list[etree._Element] = []
    by_font: dict[str, list[etree._Element]] = {}
    root = cssselect2.ElementWrapper.from_html_root(body.getroottree())
    wrapper = next((w for w in root.iter_children() if w.etree_element is body), None)
    if wrapper is None:
        return
    stack: list[tuple[cssselect2.ElementWrapper, _Style]] = [(wrapper, start)]
    while stack:
        element, parent = stack.pop()
        tree = element.etree_element
        specified = cascade.specified(element, _hints(tree))
        style, verdict = compute(element, specified, parent)
        if verdict.gone and tree is not body:
            gone.append(tree)
            continue
        if verdict.mute:
            muted.append(tree)
        elif available:
            family = next((f for f in style.family if f in available), None)
            if family is not None and style.family and style.family[0] == family:
                by_font.setdefault(family, []).append(tree)
        children = list(element.iter_children())
        stack.extend((child, style) for child in reversed(children))
    seen.hidden_chars = _hidden_chars(gone, muted)
    for tree in muted:
        tree.text = None
        for child in tree:
            child.tail = None
        if len(tree) == 0 and tree is not body:  # nothing of it is seen: gone as a whole
            gone.append(tree)
    seen.muted = len(muted)
    if by_font and font_decoder is not None:
        _apply_fonts(by_font, available, font_decoder, seen)
    for tree in gone:
        _drop(tree)
    seen.dropped = len(gone) - sum(1 for tree in muted if len(tree) == 0 and tree is not body)


def _hidden_chars(gone: Sequence[etree._Element], muted: Sequence[etree._Element]) -> int:
    """Letters and CJK characters of the text about to be dropped, links' text aside (at most
    :data:`HIDDEN_COUNTED`): a page that hides most of its text may show it once its scripts
    run (:func:`crawler.scripted.needs_browser`)."""
    count = 0
    for tree in gone:
        for element in tree.iter():
            if element.tag != "a" and not _in_link(element, tree):
                count += content_chars(element.text or "")
            if element is not tree and not _in_link(element.getparent(), tree):
                count += content_chars(element.tail or "")
        if count >= HIDDEN_COUNTED:
            return HIDDEN_COUNTED
    for tree in muted:
        count += content_chars(tree.text or "") + sum(content_chars(c.tail or "") for c in tree)
        if count >= HIDDEN_COUNTED:
            return HIDDEN_COUNTED
    return count


def _in_link(element: etree._Element | None, top: etree._Element) -> bool:
    """Whether ``element`` is a link or inside one, up to ``top`` (a hidden menu's links are
    no hidden text)."""
    while element is not None:
        if element.tag == "a":
            return True
        if element is top:
            return False
        element = element.getparent()
    return False


def _body_style(body: etree._Element, cascade: Cascade) -> _Style:
    """The computed style of ``<html>`` (the root), inherited by the body."""
    html = body.getparent()
    if html is None:
        return _ROOT_STYLE
    wrapper = cssselect2.ElementWrapper.from_html_root(html.getroottree())
    specified = cascade.specified(wrapper, _hints(html))
    style, _ = compute(wrapper, specified, _ROOT_STYLE)
    return style


def _drop(element: etree._Element) -> None:
    """Remove ``element`` and all it holds, keeping the text after it."""
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


def _own_texts(element: etree._Element) -> Iterator[tuple[etree._Element, str]]:
    """(holder, attribute) of each text node that is ``element``'s own."""
    yield element, "text"
    for child in element:
        yield child, "tail"


def _apply_fonts(
    by_font: Mapping[str, Sequence[etree._Element]],
    available: Mapping[str, bytes],
    font_decoder: object,
    seen: Visible,
) -> None:
    from crawler.webfont import FontRefused, ReferenceMissing

    decoder = font_decoder if hasattr(font_decoder, "decode") else None
    for n, (family, elements) in enumerate(by_font.items()):
        if n >= MAX_FONTS:
            seen.fonts_refused.append(f"{family}: over {MAX_FONTS} fonts on the page")
            continue
        slots = [(holder, attr) for e in elements for holder, attr in _own_texts(e)]
        text = "".join(getattr(h, a) or "" for h, a in slots)
        if not text.strip():
            continue
        try:
            if decoder is None:
                decoder = font_decoder()  # type: ignore[operator]
            decoded = decoder.decode(available[family], text)  # type: ignore[union-attr]
        except FontRefused as refused:
            seen.fonts_refused.append(f"{family}: {refused}")
            continue
        except ReferenceMissing as missing:
            seen.fonts_refused.append(f"{family}: {missing}")
            return
        if not decoded.mapping:
            continue
        for holder, attr in slots:
            value = getattr(holder, attr)
            if value:
                setattr(holder, attr, decoded.apply(value))
        seen.fonts += 1


_IMAGE_SOURCES = ("src", "data-src", "data-original")


def _place_image_texts(
    body: etree._Element, base: str, image_texts: Sequence[tuple[str, str]], seen: Visible
) -> None:
    texts = dict(image_texts)
    for img in list(body.iter("img")):
        text = None
        for attr in _IMAGE_SOURCES:
            value = (img.get(attr) or "").strip()
            if value and not value.startswith("data:"):
                text = texts.get(urljoin(base, value).split("#", 1)[0])
                if text is not None:
                    break
        if text is None or img.getparent() is None:
            continue
        paragraph = etree.Element("p")
        lines = [line for line in text.splitlines() if line.strip()]
        if lines:
            paragraph.text = lines[0]
            for line in lines[1:]:
                br = etree.SubElement(paragraph, "br")
                br.tail = line
        paragraph.tail = img.tail
        img.getparent().replace(img, paragraph)
        seen.images += 1
