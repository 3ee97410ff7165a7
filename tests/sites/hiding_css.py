"""Chapter pages whose noise is hidden by CSS (issue 38, technique 1), one function per
technique of :data:`tests.sites.hiding_shape.TECHNIQUES`, each ``(title, text, rng) ->``
:class:`tests.sites.hiding_shape.HiddenPage`.

The text shown is the chapter; between its characters, every few of them
(:func:`tests.sites.hiding_shape.noisy`), 1-2 random common characters sit in elements a browser
does not show, hidden by:

- ``css_external``: a class of an external stylesheet (``<link rel="stylesheet">`` to a
  file of its own, among decoy rules), ``display: none``, ``visibility: hidden`` or
  ``font-size: 0`` drawn per page;
- ``css_style_block``: a class of a ``<style>`` block, the same declarations;
- ``css_inline``: an inline ``style`` on each noise element;
- ``font_white``: ``<font color="#FFFFFF">`` (or ``#fff``, ``white``) on the white page;
- ``color_as_background``: the content's background set by a class (a sepia or a dark
  theme) and the noise's colour the same, by a class;
- ``offscreen``: ``position: absolute; left: -9999px``, or ``top: -9999px``, by a class;
- ``font_size_0``, ``opacity_0``, ``visibility_hidden``: those declarations, by a class;
- ``zero_size_overflow``: ``display: inline-block; width: 0; height: 0; overflow: hidden``;
- ``clip``: ``position: absolute; clip: rect(0 0 0 0)`` (the "visually hidden" pattern).

Class names, file names and decoy rules are drawn from ``rng``, so every page's differ.
"""

from __future__ import annotations

import html
import random

from tests.sites.hiding_shape import HiddenPage, br_paragraphs, chapter_page, noisy, token

esc = html.escape

HIDING = ("display:none", "visibility:hidden", "font-size:0")
"""What ``css_external`` and ``css_style_block`` hide the noise with, drawn per page."""
DECOYS = (
    "color:#333", "font-size:16px", "line-height:1.8", "margin:0 auto", "padding:10px",
    "text-align:center", "font-weight:bold", "border-bottom:1px solid #ddd", "width:960px",
)  # fmt: skip


def _decoys(rng: random.Random, count: int) -> str:
    return "\n".join(f".{token(rng)}{{{';'.join(rng.sample(DECOYS, 2))}}}" for _ in range(count))


def _classed(
    title: str, text: str, rng: random.Random, rule: str, extra_css: str = ""
) -> tuple[str, str, str]:
    """(content HTML, the noise's class, CSS) of a chapter whose noise wears a class that
    ``rule`` (declarations) hides."""
    name = token(rng)
    tag = rng.choice(("span", "i", "em", "b"))
    lines = [noisy(line, rng, lambda s: f'<{tag} class="{name}">{esc(s)}</{tag}>')
             for line in text.split("\n")]  # fmt: skip
    css = f"{_decoys(rng, 4)}\n.{name}{{{rule}}}\n{extra_css}{_decoys(rng, 3)}\n"
    return br_paragraphs(lines), name, css


def css_external(title: str, text: str, rng: random.Random) -> HiddenPage:
    """Noise hidden by a class of an external stylesheet."""
    content, _, css = _classed(title, text, rng, rng.choice(HIDING))
    path = f"/css/{token(rng, 12)}.css"
    head = f'<link rel="stylesheet" type="text/css" href="{path}">'
    return HiddenPage(chapter_page(title, content, head), {path: css.encode()})


def _style_block(title: str, text: str, rng: random.Random, rule: str) -> HiddenPage:
    content, _, css = _classed(title, text, rng, rule)
    return HiddenPage(chapter_page(title, content, f"<style>\n{css}</style>"))


def css_style_block(title: str, text: str, rng: random.Random) -> HiddenPage:
    """Noise hidden by a class of a ``<style>`` block."""
    return _style_block(title, text, rng, rng.choice(HIDING))


def css_inline(title: str, text: str, rng: random.Random) -> HiddenPage:
    """Noise hidden by an inline ``style`` on each noise element."""
    rule = rng.choice(HIDING)
    lines = [noisy(line, rng, lambda s: f'<span style="{rule}">{esc(s)}</span>')
             for line in text.split("\n")]  # fmt: skip
    return HiddenPage(chapter_page(title, br_paragraphs(lines)))


def font_white(title: str, text: str, rng: random.Random) -> HiddenPage:
    """Noise in ``<font color=white>`` on the white page."""
    color = rng.choice(("#FFFFFF", "#fff", "white", "#ffffff"))
    lines = [noisy(line, rng, lambda s: f'<font color="{color}">{esc(s)}</font>')
             for line in text.split("\n")]  # fmt: skip
    return HiddenPage(chapter_page(title, br_paragraphs(lines)))


THEMES = (("#f5f1e6", "#3b3b3b"), ("#e9f1e4", "#222"), ("#1e1e1e", "#c8c8c8"))
"""(background, text) of the reading themes ``color_as_background`` sets."""


def color_as_background(title: str, text: str, rng: random.Random) -> HiddenPage:
    """The content on a themed background, the noise coloured like it."""
    background, ink = rng.choice(THEMES)
    box = token(rng)
    noise = rng.choice((background, background.upper()))
    content, _, css = _classed(
        title, text, rng, f"color:{noise}", f".{box}{{background-color:{background};color:{ink}}}\n"
    )
    return HiddenPage(
        chapter_page(title, content, f"<style>\n{css}</style>", content_attrs=f'class="{box}"')
    )


def offscreen(title: str, text: str, rng: random.Random) -> HiddenPage:
    """Noise moved off-screen."""
    rule = rng.choice(("position:absolute;left:-9999px", "position:absolute;top:-9999px"))
    return _style_block(title, text, rng, rule)


def font_size_0(title: str, text: str, rng: random.Random) -> HiddenPage:
    """Noise of font size 0."""
    return _style_block(title, text, rng, rng.choice(("font-size:0", "font-size:0px")))


def opacity_0(title: str, text: str, rng: random.Random) -> HiddenPage:
    """Noise of opacity 0."""
    return _style_block(title, text, rng, "opacity:0")


def visibility_hidden(title: str, text: str, rng: random.Random) -> HiddenPage:
    """Noise of visibility hidden."""
    return _style_block(title, text, rng, "visibility:hidden")


def zero_size_overflow(title: str, text: str, rng: random.Random) -> HiddenPage:
    """Noise in boxes of no size whose overflow is hidden."""
    return _style_block(title, text, rng, "display:inline-block;width:0;height:0;overflow:hidden")


def clip(title: str, text: str, rng: random.Random) -> HiddenPage:
    """Noise clipped to nothing (the "visually hidden" pattern)."""
    return _style_block(
        title, text, rng, "position:absolute;width:1px;height:1px;clip:rect(0 0 0 0)"
    )
