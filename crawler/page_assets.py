"""What a page needs besides its body to be read as a browser shows it, found in its HTML
and CSS (pure: plain values in, plain values out; the spider fetches what is found,
:mod:`crawler.asset_fetch`).

Issue 38 ("What the reader sees"): a pirate page may hide noise with a class of an external
stylesheet, draw its text with an obfuscating web font, or serve its chapter as images.
:func:`discover` finds, in a page:

- its external **stylesheets**: ``<link rel=stylesheet href>`` (not an ``alternate`` one,
  nor one for ``print`` only) and the ``@import`` rules of its ``<style>`` blocks, in
  document order (a stylesheet's own ``@import`` rules are found when it is fetched:
  :func:`css_needs`, and come before it, as the cascade takes them);
- the **fonts** its ``<style>`` blocks' ``@font-face`` rules name (a fetched stylesheet's are
  found by :func:`css_needs`, relative to the stylesheet's URL), one source per face:
  WOFF2 over WOFF over TrueType/OpenType (:func:`font_source`; EOT and SVG fonts are never
  taken), ``local()`` skipped; a ``data:`` URL is kept as it is, decoded where it stands
  (:func:`decode_data_url`), never fetched;
- the **images** placed in its content: the ``<img>`` of its body outside the site's chrome
  (``nav``, ``header``, ``footer``, ``aside``, and elements whose id or class is one of
  :data:`CHROME_NAMES`), or inside the site's ``content_selector`` when it has one, in
  document order, a lazy-loaded image by its ``data-original`` or ``data-src`` before its
  placeholder ``src``.

CSS is read with tinycss2 (a CSS Syntax Level 3 tokenizer: comments, escapes and strings as
a browser reads them). Hostile input is bounded: a page is looked at only when
:func:`may_need` finds one of the markers above in its bytes (a plain page costs that one
search), at most :data:`MAX_CSS_CHARS` of ``<style>`` text is parsed per page (the rest
counted, never read), at most :data:`MAX_FONT_FACES` ``@font-face`` rules and
:data:`MAX_FOUND` URLs of each kind are kept, and a ``data:`` URL is decoded only up to the
bytes its caller allows.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes, urljoin, urlsplit

STYLESHEET = "stylesheet"
FONT = "font"
IMAGE = "image"
KINDS = (STYLESHEET, FONT, IMAGE)

MAX_CSS_CHARS = 1 << 20
"""``<style>`` text parsed per page (characters); a page with more is read with the first."""
MAX_FONT_FACES = 64
"""``@font-face`` rules read per stylesheet (or per page's ``<style>`` blocks)."""
MAX_FOUND = 200
"""URLs of each kind kept from one page or stylesheet (the spider fetches far fewer)."""
MAX_URL_CHARS = 8 << 20
"""A URL longer than this is skipped (a ``data:`` URL of a font is as long as the font)."""
CHROME_TAGS = frozenset({"nav", "header", "footer", "aside"})
CHROME_NAMES = frozenset(
    {"nav", "navbar", "header", "footer", "aside", "sidebar", "menu", "topbar", "breadcrumb"}
)
"""An element whose id, or one of whose classes, is one of these is the site's chrome: its
images (logos, banners, icons) are not the page's content."""
LAZY_ATTRIBUTES = ("data-original", "data-src", "src")
"""Where an ``<img>`` names its image, first found first: lazy-loading sites put a
placeholder in ``src`` and the image in ``data-original`` or ``data-src``."""
FORMAT_RANK = {
    "woff2": 0,
    "woff": 1,
    "truetype": 2,
    "opentype": 2,
    "ttf": 2,
    "otf": 2,
}
"""Preferred font formats, best first (by ``format()`` hint, else by the URL's extension or
a ``data:`` URL's media type); unknown formats rank after these, EOT and SVG never."""
UNKNOWN_RANK = 3
NEVER_FORMATS = frozenset({"embedded-opentype", "eot", "svg"})
FONT_MEDIA = {
    "font/woff2": "woff2",
    "application/font-woff2": "woff2",
    "font/woff": "woff",
    "application/font-woff": "woff",
    "application/x-font-woff": "woff",
    "font/ttf": "ttf",
    "font/truetype": "ttf",
    "application/x-font-ttf": "ttf",
    "application/x-font-truetype": "ttf",
    "font/otf": "otf",
    "font/opentype": "otf",
    "application/x-font-opentype": "otf",
    "font/sfnt": "ttf",
    "application/vnd.ms-fontobject": "eot",
    "image/svg+xml": "svg",
}

_MARKERS = (b"<img", b"stylesheet", b"@import", b"@font-face")
_CSS_MARKERS = re.compile(r"@import|@font-face", re.IGNORECASE)


@dataclass(frozen=True)
class PageNeeds:
    """What :func:`discover` found in a page: the URLs to fetch (absolute; a font's or an
    image's may be a ``data:`` URL), each kind in document order without repeats, and how
    many were left out because a bound was reached (``beyond``: kind -> count)."""

    stylesheets: tuple[str, ...] = ()
    fonts: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    beyond: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.stylesheets or self.fonts or self.images)


@dataclass(frozen=True)
class CssNeeds:
    """A stylesheet's ``@import`` URLs and its fonts (one source per ``@font-face``), both
    absolute, in order."""

    imports: tuple[str, ...] = ()
    fonts: tuple[str, ...] = ()


def may_need(body: bytes) -> bool:
    """Whether a page's bytes hold a marker of something :func:`discover` finds (an
    ``<img``, ``stylesheet``, ``@import``, ``@font-face``): one search of the bytes, all a
    page without any of them costs.

    >>> may_need(b"<html><body><p>plain</p></body></html>")
    False
    >>> may_need(b'<link rel="StyleSheet" href="/a.css">')
    True
    """
    lowered = body.lower()  # one pass in C; each marker is then a memchr-fast search
    return any(marker in lowered for marker in _MARKERS)


def discover(html: str, url: str, content_selector: str = "") -> PageNeeds:
    """The stylesheets, fonts and content images of a page's decoded ``html`` at ``url``
    (see the module docstring). ``content_selector`` (CSS or XPath, the site's): when
    given, the images are those inside what it selects.

    >>> needs = discover('''<html><head><link rel="stylesheet" href="/s/a.css">
    ... <style>@import "b.css"; @font-face { font-family: x;
    ...   src: url(f.ttf) format("truetype"), url(f.woff2) format("woff2"); }</style></head>
    ... <body><div class="header"><img src="/logo.png"></div>
    ... <div id="content"><img src="/blank.gif" data-original="/c/1.png"><img src="2.jpg">
    ... </div></body></html>''', "http://h.example/book/1.html")
    >>> needs.stylesheets
    ('http://h.example/s/a.css', 'http://h.example/book/b.css')
    >>> needs.fonts
    ('http://h.example/book/f.woff2',)
    >>> needs.images
    ('http://h.example/c/1.png', 'http://h.example/book/2.jpg')
    """
    from crawler.extract import SELECTOR_ERRORS, _select, flatten_deep, parse_html

    page = parse_html(flatten_deep(html))
    root = page.root
    base = _base_url(root, url)
    sheets: list[str] = []
    fonts: list[str] = []
    beyond: dict[str, int] = {}
    css_left = MAX_CSS_CHARS
    for element in root.iter("link", "style"):
        if element.tag == "link":
            rel = {t.lower() for t in (element.get("rel") or "").split()}
            href = (element.get("href") or "").strip()
            if "stylesheet" in rel and "alternate" not in rel and href and _screen(element):
                _add(sheets, _absolute(base, href), beyond, STYLESHEET)
            continue
        css = element.text or ""
        if not _screen(element) or not css:
            continue
        if len(css) > css_left:
            beyond["style_chars"] = beyond.get("style_chars", 0) + len(css) - css_left
            css = css[:css_left]
        css_left -= len(css)
        found = css_needs(css, base)
        for link in found.imports:
            _add(sheets, link, beyond, STYLESHEET)
        for font in found.fonts:
            _add(fonts, font, beyond, FONT)
    images: list[str] = []
    if content_selector:
        try:
            scopes = [s.root for s in _select(page, content_selector)]
        except SELECTOR_ERRORS:
            scopes = []
        for scope in scopes:
            if not isinstance(scope, str):
                for image in scope.iter("img"):
                    _add_image(images, image, base, beyond)
    else:
        body = root.find("body")
        if body is not None:
            _content_images(body, base, images, beyond)
    return PageNeeds(tuple(sheets), tuple(fonts), tuple(images), beyond)


def css_needs(css: str, base: str) -> CssNeeds:
    """The ``@import`` URLs and the font of each ``@font-face`` rule of stylesheet ``css``,
    absolute against ``base`` (the stylesheet's own URL, or the page's for a ``<style>``
    block). A stylesheet without ``@import`` or ``@font-face`` is not parsed.

    >>> css_needs('@import url("x.css") screen; @font-face { src: local(A),'
    ...           ' url(/f.woff) format("woff"), url(/f.eot) }', "http://h/css/a.css")
    CssNeeds(imports=('http://h/css/x.css',), fonts=('http://h/f.woff',))
    """
    if not _CSS_MARKERS.search(css):
        return CssNeeds()
    import tinycss2

    imports: list[str] = []
    fonts: list[str] = []
    faces = 0
    for rule in tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True):
        if rule.type != "at-rule":
            continue
        keyword = rule.lower_at_keyword
        if keyword == "import" and len(imports) < MAX_FOUND:
            target = _first_url(rule.prelude)
            if target and not target.startswith("data:"):
                imports.append(_absolute(base, target))
        elif keyword == "font-face" and rule.content is not None and faces < MAX_FONT_FACES:
            faces += 1
            source = font_source(rule.content)
            if source and len(fonts) < MAX_FOUND:
                fonts.append(source if source.startswith("data:") else _absolute(base, source))
    return CssNeeds(tuple(dict.fromkeys(imports)), tuple(dict.fromkeys(fonts)))


def font_source(content: list[object]) -> str | None:
    """The URL (as written) of the source a browser would best use among an ``@font-face``
    rule's ``src`` declaration (its tinycss2 ``content``; the last ``src`` when it has
    several, as the cascade takes it): WOFF2 over WOFF over TrueType or OpenType, by
    ``format()`` hint, else the URL's extension or ``data:`` media type; in order when
    they rank the same. None when it names no usable URL (only ``local()``, EOT or SVG)."""
    import tinycss2

    sources = [
        d.value
        for d in tinycss2.parse_blocks_contents(content)
        if d.type == "declaration" and d.lower_name == "src"
    ]
    best: tuple[int, int, str] | None = None
    for i, entry in enumerate(_split_commas(sources[-1] if sources else [])):
        target = _first_url(entry)
        if not target:
            continue
        kind = _format_hint(entry) or _format_of(target)
        if kind in NEVER_FORMATS:
            continue
        rank = (FORMAT_RANK.get(kind, UNKNOWN_RANK), i, target)
        if best is None or rank < best:
            best = rank
    return best[2] if best else None


def decode_data_url(url: str, max_bytes: int) -> bytes | None:
    """The bytes a ``data:`` URL holds (base64 or percent-encoded), or None when it is not
    one, is malformed, or holds more than ``max_bytes``.

    >>> decode_data_url("data:font/woff2;base64,d09GMg==", 100)
    b'wOF2'
    >>> decode_data_url("data:,a%20b", 100), decode_data_url("data:,abc", 2)
    (b'a b', None)
    """
    if url[:5].lower() != "data:" or "," not in url:
        return None
    head, payload = url[5:].split(",", 1)
    if head.lower().endswith(";base64"):
        payload = "".join(payload.split())
        if len(payload) // 4 * 3 > max_bytes + 3:
            return None
        try:
            data = base64.b64decode(unquote_to_bytes(payload), validate=False)
        except (binascii.Error, ValueError):
            return None
    else:
        if len(payload) > 3 * max_bytes + 3:
            return None
        data = unquote_to_bytes(payload)
    return data if len(data) <= max_bytes else None


# helpers ------------------------------------------------------------------------------


def _add(found: list[str], url: str, beyond: dict[str, int], kind: str) -> None:
    if not url or url in found:
        return
    if len(found) >= MAX_FOUND:
        beyond[kind] = beyond.get(kind, 0) + 1
        return
    found.append(url)


def _add_image(images: list[str], element: object, base: str, beyond: dict[str, int]) -> None:
    get = getattr(element, "get", None)
    if get is None:
        return
    for name in LAZY_ATTRIBUTES:
        value = (get(name) or "").strip()
        if value:
            _add(images, _absolute(base, value), beyond, IMAGE)
            return


def _content_images(body: object, base: str, images: list[str], beyond: dict[str, int]) -> None:
    """The images under ``body`` outside the chrome, in document order (iteratively: a
    flattened page is at most :data:`crawler.extract.MAX_NESTING` deep anyway)."""
    stack = [iter([body])]
    while stack:
        element = next(stack[-1], None)
        if element is None:
            stack.pop()
            continue
        if not isinstance(element.tag, str):  # a comment, a processing instruction
            continue
        tag = element.tag.lower()
        if tag == "img":
            _add_image(images, element, base, beyond)
            continue
        if tag in CHROME_TAGS or _chrome_named(element) or tag in ("script", "style"):
            continue
        stack.append(iter(element))


def _chrome_named(element: object) -> bool:
    get = element.get  # type: ignore[attr-defined]
    names = (get("class") or "").lower().split()
    names.append((get("id") or "").lower())
    return any(name in CHROME_NAMES for name in names)


def _screen(element: object) -> bool:
    """Whether a ``<link>`` or ``<style>`` applies to the screen (no ``media``, or one
    naming ``screen`` or ``all``, or a media query)."""
    media = (element.get("media") or "").strip().lower()  # type: ignore[attr-defined]
    if not media:
        return True
    return "print" not in media or "screen" in media or "all" in media


def _base_url(root: object, url: str) -> str:
    """The page's URL, or its ``<base href>`` (absolute against it) when it has one."""
    for base in root.iter("base"):  # type: ignore[attr-defined]
        href = (base.get("href") or "").strip()
        if href:
            return _absolute(url, href) or url
        break
    return url


def _absolute(base: str, href: str) -> str:
    """``href`` absolute against ``base`` (its fragment dropped); a ``data:`` URL as it is;
    "" for anything but http(s) and data (``javascript:``, ``about:``) or too long."""
    href = href.strip()
    if len(href) > MAX_URL_CHARS:
        return ""
    if href[:5].lower() == "data:":
        return href
    try:
        absolute = urljoin(base, href)
        scheme = urlsplit(absolute).scheme.lower()
    except ValueError:
        return ""
    if scheme not in ("http", "https"):
        return ""
    return absolute.split("#", 1)[0]


def _split_commas(tokens: list[object]) -> list[list[object]]:
    parts: list[list[object]] = [[]]
    for token in tokens:
        if getattr(token, "type", "") == "literal" and getattr(token, "value", "") == ",":
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def _first_url(tokens: list[object]) -> str:
    """The first ``url(...)`` (or, in an ``@import`` prelude, a bare string) of tokens."""
    for token in tokens:
        kind = getattr(token, "type", "")
        if kind == "url":
            return str(token.value).strip()  # type: ignore[attr-defined]
        if kind == "string":
            return str(token.value).strip()  # type: ignore[attr-defined]
        if kind == "function" and token.lower_name == "url":  # type: ignore[attr-defined]
            for arg in token.arguments:  # type: ignore[attr-defined]
                if getattr(arg, "type", "") == "string":
                    return str(arg.value).strip()
            return ""
        if kind == "function" and token.lower_name == "local":  # type: ignore[attr-defined]
            return ""
    return ""


def _format_hint(tokens: list[object]) -> str:
    for token in tokens:
        if getattr(token, "type", "") == "function" and token.lower_name == "format":  # type: ignore[attr-defined]
            for arg in token.arguments:  # type: ignore[attr-defined]
                if getattr(arg, "type", "") in ("string", "ident"):
                    return str(arg.value).strip().lower()
    return ""


def _format_of(url: str) -> str:
    """A font's format from its ``data:`` media type or its path's extension ("" unknown)."""
    if url[:5].lower() == "data:":
        media = url[5:].split(",", 1)[0].split(";", 1)[0].strip().lower()
        return FONT_MEDIA.get(media, "")
    path = urlsplit(url).path.lower()
    extension = path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
    return extension if extension in FORMAT_RANK or extension in NEVER_FORMATS else ""
