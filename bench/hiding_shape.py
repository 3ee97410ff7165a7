"""The ``hiding`` shape's shared parts (issue 38, "What the reader sees"): a disguised
chapter page (:class:`HiddenPage`) and the registry of techniques (:data:`TECHNIQUES`).

A technique disguises one chapter page: a module ``bench/hiding_<name>.py`` exposes
``disguise(title, text, rng) -> HiddenPage`` (the full HTML of a 笔趣阁-style chapter page
whose text as a browser shows it is ``title`` and ``text``, and the files it refers to by
site-root paths drawn from ``rng``). :data:`TECHNIQUES` names each one: ``"name":
"module"`` (its ``disguise``) or ``"name": "module:function"`` (one module holding several
variants). This is the minimal part the image and font techniques need; the shape that
builds sites of them and scores them lives beside it.
"""

from __future__ import annotations

import html
import importlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

esc = html.escape

TECHNIQUES: dict[str, str] = {
    "chapter-images": "bench.hiding_images",
    "font-pua": "bench.hiding_fonts:pua",
    "font-shuffle": "bench.hiding_fonts:shuffle",
}
"""Technique name -> ``module`` (its ``disguise``) or ``module:function``."""


@dataclass(frozen=True)
class HiddenPage:
    """A disguised chapter page: its full HTML and the files it refers to (site-root path
    -> bytes: stylesheets, fonts, images, JSON)."""

    html: str
    files: dict[str, bytes] = field(default_factory=dict)


Disguise = Callable[[str, str, random.Random], HiddenPage]


def technique(name: str) -> Disguise:
    """The ``disguise`` function of technique ``name`` (:data:`TECHNIQUES`)."""
    module, _, function = TECHNIQUES[name].partition(":")
    return getattr(importlib.import_module(module), function or "disguise")


def token(rng: random.Random, size: int = 8) -> str:
    """A random lowercase name (class names, file names), starting with a letter."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return rng.choice(letters) + "".join(
        rng.choice(letters + "0123456789") for _ in range(size - 1)
    )


SITE_NAME = "笔趣阁"


def chapter_page(
    title: str,
    content: str,
    head: str = "",
    body_attrs: str = "",
    content_attrs: str = 'id="content"',
) -> str:
    """A 笔趣阁-style chapter page around ``content`` (HTML of the chapter's paragraphs):
    the site's header and breadcrumb, the ``<h1>`` title, ``content`` in
    ``<div {content_attrs}>``, the footer; ``head`` goes into ``<head>``."""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{esc(title)}_{SITE_NAME}</title>{head}</head><body{body_attrs}>\n"
        f'<div class="header"><a href="/index.html">{SITE_NAME}</a> <span>www.biquge.test</span>'
        " <span>最好看的小说网</span></div>\n"
        f'<div class="con_top"><a href="/index.html">{SITE_NAME}</a> &gt; {esc(title)}</div>\n'
        f'<div class="bookname"><h1>{esc(title)}</h1></div>\n'
        f"<div {content_attrs}>{content}</div>\n"
        '<div class="footer"><p>本站所有小说为转载作品，所有章节均由网友上传，'
        "转载至本站只是为了宣传，让更多读者欣赏。</p>"
        f"<p>Copyright © {SITE_NAME} All Rights Reserved.</p></div>\n"
        "</body></html>\n"
    )
