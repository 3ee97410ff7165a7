"""Chapters drawn as images, the way pirate sites serve their freshest chapters (图片章节).

A pirate site that copies a paid chapter often serves it as a screenshot: the text laid out
in lines of a fixed width, paragraphs indented by two ideographic spaces, dark ink on a
white or paper-coloured ground, saved as PNG or as a JPEG of middling quality, sometimes
with a little noise. :func:`render_chapter` draws a text that way with Pillow and a CJK font
of Debian's (``fonts-wqy-zenhei``, which the test machines have; ``fonts-noto-cjk`` when
installed), in a :class:`Style`; :data:`STYLES` are the benchmark's conditions. The
benchmark (:mod:`bench.ocr_bench`) and the OCR tests read these images back and measure
what was read by its character error rate (:func:`cer`).
"""

from __future__ import annotations

import io
import random
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FONTS: dict[str, tuple[str, dict[str, int]]] = {
    # name -> (file, face index per script: "s" Simplified, "t" Traditional)
    "wqy-zenhei": ("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", {"s": 0, "t": 0}),
    "noto-sans": ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", {"s": 2, "t": 3}),
    "noto-serif": ("/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc", {"s": 2, "t": 3}),
}
"""The CJK fonts drawn with: Debian's ``fonts-wqy-zenhei`` and ``fonts-noto-cjk`` (its SC and
TC faces, so that each script gets its own glyph forms)."""

_SPACE = re.compile(r"\s+")
INDENT = "\u3000\u3000"
"""Two ideographic spaces open a paragraph, as on Chinese novel sites."""


@dataclass(frozen=True)
class Style:
    """How a chapter is drawn: font and size in pixels, line height as a multiple of the
    size, line width in full-width characters, ink and paper colours, Gaussian noise (its
    standard deviation in grey levels), the image format (``PNG`` or ``JPEG`` at ``quality``),
    the script (``s`` as given, ``t`` converted to Traditional with OpenCC ``s2t``) and a
    watermark (a site's name tiled across the page in a light grey, at an angle, under the
    text, as pirate sites mark their screenshots)."""

    name: str
    font: str = "wqy-zenhei"
    size: int = 20
    spacing: float = 1.5
    columns: int = 30
    ink: tuple[int, int, int] = (0, 0, 0)
    paper: tuple[int, int, int] = (255, 255, 255)
    noise: float = 0.0
    fmt: str = "PNG"
    quality: int = 90
    script: str = "s"
    watermark: str = ""


STYLES: tuple[Style, ...] = (
    Style("s-20-png"),
    Style("s-16-jpeg", size=16, spacing=1.35, ink=(51, 51, 51), paper=(246, 241, 231),
          noise=6.0, fmt="JPEG", quality=70),
    Style("s-14-jpeg-noisy", size=14, spacing=1.3, columns=34, ink=(40, 40, 40),
          paper=(238, 238, 238), noise=10.0, fmt="JPEG", quality=50),
    Style("s-32-serif", font="noto-serif", size=32, spacing=1.8, columns=22,
          ink=(34, 34, 34), paper=(250, 247, 240), fmt="JPEG", quality=85),
    Style("s-18-watermark", size=18, spacing=1.6, columns=32, watermark="笔趣阁 biquge.example",
          fmt="JPEG", quality=80),
    Style("t-20-png", script="t"),
    Style("t-16-jpeg", font="noto-sans", size=16, spacing=1.35, ink=(51, 51, 51),
          paper=(246, 241, 231), noise=6.0, fmt="JPEG", quality=70, script="t"),
)  # fmt: skip
"""The benchmark's conditions: Simplified at 20, 16, 14, 32 and 18 px (PNG; JPEG at quality
70, 50, 85 and 80; noise; paper colours; a serif face; a watermark), Traditional at 20 and
16 px."""


def font_available(style: Style) -> bool:
    """Whether the font file of ``style`` is on this machine."""
    return Path(FONTS[style.font][0]).is_file()


def script_text(text: str, script: str) -> str:
    """``text`` in the script a style draws: as is (``s``) or OpenCC ``s2t`` (``t``)."""
    if script == "s":
        return text
    from tests.sites.eval_corpus import to_traditional

    return to_traditional(text)


def wrap(text: str, font: Any, width: float) -> list[str]:
    """``text``'s paragraphs (its non-blank lines) indented and wrapped into lines no wider
    than ``width`` pixels in ``font`` (by the advance of each character)."""
    lines: list[str] = []
    for paragraph in text.splitlines():
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        line, used = INDENT, font.getlength(INDENT)
        for char in paragraph:
            advance = font.getlength(char)
            if used + advance > width and line.strip():
                lines.append(line)
                line, used = "", 0.0
            line += char
            used += advance
        lines.append(line)
    return lines


def render_chapter(text: str, style: Style, seed: int = 0) -> tuple[bytes, str]:
    """``text`` drawn in ``style``: the encoded image and the text as drawn (converted to
    the style's script, one drawn line per line, indents included). ``seed`` draws the
    noise."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    path, faces = FONTS[style.font]
    font = ImageFont.truetype(path, style.size, index=faces[style.script])
    margin = style.size
    width = style.columns * style.size
    lines = wrap(script_text(text, style.script), font, width)
    step = round(style.size * style.spacing)
    image = Image.new("RGB", (width + 2 * margin, len(lines) * step + 2 * margin), style.paper)
    if style.watermark:
        image = _watermarked(image, style.watermark, font, seed)
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        draw.text((margin, margin + row * step), line, font=font, fill=style.ink)
    if style.noise:
        rng = np.random.default_rng(random.Random(seed).getrandbits(32))
        pixels = np.asarray(image, dtype=np.float32)
        pixels += rng.normal(0.0, style.noise, pixels.shape[:2])[..., None]
        image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    out = io.BytesIO()
    if style.fmt == "JPEG":
        image.save(out, "JPEG", quality=style.quality)
    else:
        image.save(out, style.fmt)
    return out.getvalue(), "\n".join(lines)


def _watermarked(image: Any, mark: str, font: Any, seed: int) -> Any:
    """``image`` with ``mark`` tiled over it in a light grey, turned by 20-30 degrees."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    width, height = image.size
    side = 2 * max(width, height)
    layer = Image.new("L", (side, side), 0)
    draw = ImageDraw.Draw(layer)
    step_x, step_y = round(font.getlength(mark)) + 4 * font.size, 5 * font.size
    for y in range(0, side, step_y):
        for x in range(-(y % (2 * step_x)) // 2, side, step_x):
            draw.text((x, y), mark, font=font, fill=255)
    layer = layer.rotate(rng.uniform(20, 30), resample=Image.Resampling.BILINEAR)
    layer = layer.crop(((side - width) // 2, (side - height) // 2,
                        (side - width) // 2 + width, (side - height) // 2 + height))  # fmt: skip
    grey = Image.new("RGB", image.size, (200, 200, 200))
    return Image.composite(grey, image, layer.point(lambda v: v * 60 // 100))


# --- reading an image back: the character error rate ------------------------------------------
def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance of ``a`` and ``b`` (unit costs), by Myers' bit-vector algorithm
    in Hyyrö's formulation for the global distance (Hyyrö 2001, "Explaining and extending
    the bit-parallel approximate string matching algorithm of Myers"): one pass over the
    longer string, the shorter one's columns held in an integer.

    >>> edit_distance("灯塔守望", "灯搭守")
    2
    """
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    peq: dict[str, int] = {}
    for i, char in enumerate(b):
        peq[char] = peq.get(char, 0) | (1 << i)
    full = (1 << len(b)) - 1
    pv, mv, score, top = full, 0, len(b), 1 << (len(b) - 1)
    for char in a:
        eq = peq.get(char, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & full)
        mh = pv & xh
        if ph & top:
            score += 1
        elif mh & top:
            score -= 1
        ph = ((ph << 1) | 1) & full
        mh = (mh << 1) & full
        pv = mh | (~(xv | ph) & full)
        mv = ph & xv
    return score


def comparable(text: str, t2s: bool = False) -> str:
    """``text`` as the error rate compares it: NFKC, whitespace removed, optionally t2s."""
    text = _SPACE.sub("", unicodedata.normalize("NFKC", text))
    if t2s:
        from fingerprint.normalize import to_simplified

        text = to_simplified(text)
    return text


def errors(drawn: str, read: str, t2s: bool = False) -> tuple[int, int]:
    """(edit distance, length of the text drawn), both :func:`comparable`."""
    reference = comparable(drawn, t2s)
    return edit_distance(reference, comparable(read, t2s)), len(reference)


def cer(drawn: str, read: str, t2s: bool = False) -> float:
    """The character error rate of ``read`` against ``drawn`` (:func:`errors`).

    >>> round(cer("灯塔守望着海", "灯搭守望着"), 3)
    0.333
    """
    distance, length = errors(drawn, read, t2s)
    return distance / max(length, 1)
