"""Chapters served as images (图片章节; issue 38, technique 3), as a technique of
:data:`tests.sites.hiding_shape.TECHNIQUES`: ``disguise(title, text, rng) -> HiddenPage``.

Pirate sites serve their freshest chapters as screenshots of the paid ones: the page is the
site's usual chapter page (header with the site's logo, breadcrumb, ``<h1>`` title, footer),
and its content ``div`` holds the chapter drawn as one tall image or as several (a
screenshot per screenful), one after the other. The text is drawn by
:func:`tests.sites.text_images.render_chapter` (as the OCR benchmark draws it) in a Simplified
:class:`~tests.sites.text_images.Style` drawn per page among :data:`STYLES` (PNG or JPEG, sizes 14
to 32 px, noise, paper colours, a watermark); about half the pages load their images lazily
(a shared placeholder in ``src``, the image in ``data-original`` or ``data-src``). The logo
in the header is an image too, which a reader of the content must leave alone. Every path
is drawn from ``rng``, so every page's files are its own.
"""

from __future__ import annotations

import functools
import io
import random

from tests.sites.hiding_shape import SITE_NAME, HiddenPage, chapter_page, token
from tests.sites.text_images import STYLES as ALL_STYLES
from tests.sites.text_images import font_available, render_chapter

STYLES = tuple(s for s in ALL_STYLES if s.script == "s")
"""The styles a chapter is drawn in: the Simplified ones (a person sees ``text`` itself)."""
MAX_IMAGES = 4
"""A chapter is one image, or split into 2 to this many (at paragraph breaks)."""
GIF_1X1 = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00"
    b"\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)


def disguise(title: str, text: str, rng: random.Random) -> HiddenPage:
    """The chapter page of ``title`` whose ``text`` is drawn as images in its content."""
    styles = [s for s in STYLES if font_available(s)]
    if not styles:
        raise RuntimeError("no CJK font to draw with: apt-get install fonts-wqy-zenhei")
    style = rng.choice(styles)
    paragraphs = [line for line in text.split("\n") if line.strip()] or [text]
    count = 1 if rng.random() < 0.5 else rng.randint(2, MAX_IMAGES)
    chunks = _chunks(paragraphs, min(count, len(paragraphs)))
    folder = "/" + token(rng, 6) + "/" + token(rng, 10)
    suffix = "jpg" if style.fmt == "JPEG" else "png"
    lazy = rng.choice(("", "data-original", "data-src"))
    placeholder = f"/{token(rng, 6)}/loading.gif"
    files: dict[str, bytes] = {}
    tags = []
    for n, chunk in enumerate(chunks, 1):
        image, _ = render_chapter("\n".join(chunk), style, seed=rng.getrandbits(32))
        path = f"{folder}/{n}_{token(rng, 6)}.{suffix}"
        files[path] = image
        if lazy:
            tags.append(f'<img src="{placeholder}" {lazy}="{path}" alt="">')
        else:
            tags.append(f'<img src="{path}" alt="">')
    if lazy:
        files[placeholder] = GIF_1X1
    logo = f"/{token(rng, 6)}/logo.png"
    files[logo] = _logo()
    page = chapter_page(title, "<br />".join(tags))
    page = page.replace(
        '<div class="header">', f'<div class="header"><img src="{logo}" alt="{SITE_NAME}">', 1
    )
    return HiddenPage(page, files)


def _chunks(paragraphs: list[str], count: int) -> list[list[str]]:
    """``paragraphs`` in ``count`` runs of about the same number of characters."""
    total = sum(len(p) for p in paragraphs)
    out: list[list[str]] = [[]]
    done = 0
    for paragraph in paragraphs:
        if out[-1] and len(out) < count and done >= total * len(out) / count:
            out.append([])
        out[-1].append(paragraph)
        done += len(paragraph)
    return out


@functools.cache
def _logo() -> bytes:
    """The site's logo: a banner of colour and shapes, not text."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (240, 60), (196, 40, 40))
    draw = ImageDraw.Draw(image)
    draw.ellipse((10, 8, 54, 52), fill=(250, 210, 60))
    draw.rectangle((70, 20, 230, 40), fill=(120, 20, 20))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()
