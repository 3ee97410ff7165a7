"""Chapters drawn by obfuscating web fonts (issue 38, technique 4), as techniques of
:data:`tests.sites.hiding_shape.TECHNIQUES`: ``disguise``, ``pua`` and ``shuffle``, each
``(title, text, rng) -> HiddenPage``.

The HTML holds private-use code points (``pua``) or the real characters shuffled
(``shuffle``: it shows 的 where a reader sees 是); the page's ``@font-face`` font, made for
this page alone by :func:`tests.sites.font_sites.obfuscate` from a CJK typeface of this machine
drawn per page (glyphs in a random order under random names, as real sites make one per
request), draws each as the real character. Drawn per page too: the format (WOFF2, WOFF or
TTF), and where the font is: by URL in the page's ``<style>``, by URL in an external
stylesheet (``<link rel=stylesheet>``, the font's URL relative to the site's root), or
inline as a ``data:`` URL in the ``<style>``. The text's 300 most common Han characters are
hidden (sites hide the few hundred most common ones), or every Han character on one page
in four. ``disguise`` draws the scheme too. Paths are drawn from ``rng``.
"""

from __future__ import annotations

import html
import random
import re

from tests.sites.font_sites import TYPEFACES, obfuscate
from tests.sites.hiding_shape import HiddenPage, chapter_page, token

esc = html.escape
FORMATS = ("woff2", "woff", "ttf")
PLACES = ("style", "stylesheet", "inline")
"""Where the ``@font-face`` rule names its font (module docstring)."""
_CLASS = re.compile(r"^\.([\w-]+) \{", re.MULTILINE)


def disguise(title: str, text: str, rng: random.Random) -> HiddenPage:
    """The chapter page, its text drawn by a font of a scheme drawn from ``rng``."""
    return _disguise(title, text, rng, rng.choice(("pua", "shuffle")))


def pua(title: str, text: str, rng: random.Random) -> HiddenPage:
    """The chapter page, its common characters shown as private-use code points."""
    return _disguise(title, text, rng, "pua")


def shuffle(title: str, text: str, rng: random.Random) -> HiddenPage:
    """The chapter page, its common characters shown as others of them."""
    return _disguise(title, text, rng, "shuffle")


def _disguise(title: str, text: str, rng: random.Random, scheme: str) -> HiddenPage:
    typefaces = [t for t in TYPEFACES.values() if t.available()]
    if not typefaces:
        raise RuntimeError("no CJK typeface to draw with: apt-get install fonts-wqy-zenhei")
    place = rng.choice(PLACES)
    page = obfuscate(
        text,
        rng.choice(typefaces),
        seed=rng.getrandbits(64),
        scheme=scheme,
        common=0 if rng.random() < 0.25 else 300,
        fmt=rng.choice(FORMATS),
        inline=place == "inline",
        title=title,
    )
    files: dict[str, bytes] = {}
    css = page.css
    if place != "inline":
        font_path = f"/{token(rng, 6)}/{page.font_url}"
        css = css.replace(f"url({page.font_url})", f"url({font_path})")
        files[font_path] = page.font
    head = f"<style>\n{css}\n</style>"
    if place == "stylesheet":
        sheet = f"/{token(rng, 6)}/{token(rng, 10)}.css"
        files[sheet] = f"body{{background:#fff}}\n{css}\n".encode()
        head = f'<link rel="stylesheet" type="text/css" href="{sheet}">'
    found = _CLASS.search(page.css)
    assert found is not None, "obfuscate's CSS names the text's class"
    paragraphs = "<br /><br />".join(
        f"&nbsp;&nbsp;&nbsp;&nbsp;{esc(line)}" for line in page.text.split("\n") if line.strip()
    )
    content = f'<div class="{found.group(1)}">{paragraphs}</div>'
    return HiddenPage(chapter_page(title, content, head=head), files)
