"""Images decoded within bounds, and the check that an image is shaped like text.

A chapter served as an image (图片章节) is a page of text: lines of dark glyphs, evenly
spaced, on a ground of one colour. :func:`decode` opens an image of one of :data:`FORMATS`
(Pillow, nothing else tried: ``formats=`` keeps hostile bytes away from Pillow's other
decoders) and refuses it before decoding when its header declares more than ``max_pixels``
pixels or a side outside :data:`MIN_WIDTH`/:data:`MIN_HEIGHT`..:data:`MAX_WIDTH` (a
decompression bomb costs its header's read, never its pixels); an animation is read at its
first frame. :func:`text_shape` then measures the grey image (:class:`Shape`) and refuses a
photo, a picture, a blank or a banner of one line (:data:`MIN_LINES`); what it keeps is cut
into strips of whole lines (:data:`STRIP_HEIGHT`), which the engine reads one at a time (the
engines shrink a tall image to fit their input, which would make a whole chapter's glyphs
too small to read).

Every refusal is an :class:`ImageRefused` with an outcome (:data:`UNDECODABLE`,
:data:`TOO_SMALL`, :data:`TOO_BIG`, :data:`NOT_TEXT`) and one line saying why.
"""

from __future__ import annotations

import io
import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

FORMATS = ("PNG", "JPEG", "GIF", "WEBP")
"""The formats read; any other is refused (:data:`NOT_IMAGE`)."""
MIN_WIDTH = 64
MIN_HEIGHT = 16
"""Narrower or lower, an image cannot hold a line of text: a tracker, an icon, a rule."""
MAX_WIDTH = 4096
"""Wider, an image is no screenshot of a chapter (a phone's is about 1080, a desktop's 1920
or 2560 pixels): refused, since the engines would read it at a scale that loses its text."""
MIN_LINES = 2
"""Fewer rows of text, an image is a title, a banner or a logo, not a chapter."""
STRIP_HEIGHT = 1200
"""The engine reads a tall image in strips of whole lines at most this high (one line
higher than this is a strip of its own)."""
BACKGROUND_SHARE = 0.55
"""At least this share of a text image's pixels are within :data:`BACKGROUND_TOLERANCE`
grey levels of its commonest grey (its ground); a photo's or a picture's are not."""
BACKGROUND_TOLERANCE = 40
INK_CONTRAST = 80
"""A pixel is ink when its grey is this far from the ground's (a light watermark is not)."""
INK_SHARE = (0.003, 0.35)
"""A text image's ink covers a share of its pixels within these bounds."""
LINE_INK = 0.5
"""In a line of text, ink covers less than this share of the line's box (a solid shape
covers more)."""

NOT_IMAGE = "not_image"
UNDECODABLE = "undecodable"
TOO_SMALL = "too_small"
TOO_BIG = "too_big"
NOT_TEXT = "not_text"

_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
)


class ImageRefused(Exception):
    """An image not read: ``outcome`` says which bound or check, the message why (one line)."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome


def sniff(data: bytes) -> str | None:
    """The format of ``data`` by its first bytes (one of :data:`FORMATS`), else None.

    >>> sniff(b"RIFF\\x00\\x00\\x00\\x00WEBPVP8 "), sniff(b"<html>")
    ('WEBP', None)
    """
    for signature, name in _SIGNATURES:
        if data.startswith(signature):
            return name
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


def _opened(data: bytes, max_pixels: int) -> Image.Image:
    """``data`` opened by Pillow (header read, no pixel decoded), its size checked."""
    from PIL import Image, UnidentifiedImageError

    kind = sniff(data)
    if kind is None:
        raise ImageRefused(NOT_IMAGE, f"not a PNG, JPEG, GIF or WebP image (starts {data[:12]!r})")
    try:  # Pillow's own bomb check raises past twice its limit; below, ours (next) refuses
        image = Image.open(io.BytesIO(data), formats=[kind])
    except Image.DecompressionBombError as exc:
        declared = re.search(r"\((\d+) pixels\)", str(exc))
        size = f"{int(declared.group(1)):,} pixels" if declared else "too many pixels"
        raise ImageRefused(
            TOO_BIG, f"a {kind} declaring {size}, over the {max_pixels:,} read (a bomb)"
        ) from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageRefused(UNDECODABLE, f"unreadable {kind} ({_first_line(exc)})") from exc
    width, height = image.size
    if width * height > max_pixels:
        raise ImageRefused(TOO_BIG, f"{width}x{height} pixels, over the {max_pixels:,} read")
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        raise ImageRefused(TOO_SMALL, f"{width}x{height} pixels: too small to hold text")
    if width > MAX_WIDTH:
        raise ImageRefused(NOT_TEXT, f"{width} pixels wide, over the {MAX_WIDTH:,} read")
    return image


def probe(data: bytes, max_pixels: int) -> tuple[str, int, int]:
    """The format, width and height that ``data``'s header declares, checked as
    :func:`decode` checks them, without decoding a pixel."""
    image = _opened(data, max_pixels)
    return image.format, *image.size


def decode(data: bytes, max_pixels: int) -> np.ndarray:
    """``data`` decoded to grey levels (a 2-D ``uint8`` array), within the bounds of the
    module docstring; an animation's first frame, transparency laid on white."""
    import numpy as np
    from PIL import Image

    image = _opened(data, max_pixels)
    kind = image.format
    try:
        image.seek(0)
        if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
            rgba = image.convert("RGBA")
            ground = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            image = Image.alpha_composite(ground, rgba)
        grey = np.asarray(image.convert("L"), dtype=np.uint8)
    except Exception as exc:  # whatever a decoder raises on hostile bytes: not an image
        raise ImageRefused(UNDECODABLE, f"unreadable {kind} ({_first_line(exc)})") from exc
    return grey


@dataclass(frozen=True)
class Shape:
    """What :func:`text_shape` measured: the ground's grey, the ink's share of the pixels,
    the lines of text (rows ``[top, bottom)``), their median height in pixels, and the
    strips the engine reads (rows ``[top, bottom)``)."""

    ground: int
    ink_share: float
    lines: tuple[tuple[int, int], ...]
    line_height: int
    strips: tuple[tuple[int, int], ...]


def text_shape(grey: np.ndarray) -> Shape:
    """Measure ``grey`` (:func:`decode`'s) and refuse it unless shaped like text: mostly
    ground (:data:`BACKGROUND_SHARE`), some ink but not too much (:data:`INK_SHARE`), at
    least :data:`MIN_LINES` rows of text that are not solid shapes (:data:`LINE_INK`)."""
    import numpy as np

    height, width = grey.shape
    histogram = np.bincount(grey.ravel(), minlength=256)
    peak = int(np.argmax(np.convolve(histogram, np.ones(9), mode="same")))  # noise-proof
    low = max(0, peak - 4)
    ground = low + int(np.argmax(histogram[low : peak + 5]))
    levels = np.arange(256)
    total = grey.size
    near = histogram[np.abs(levels - ground) <= BACKGROUND_TOLERANCE].sum() / total
    if near < BACKGROUND_SHARE:
        raise ImageRefused(
            NOT_TEXT, f"not shaped like text: no plain ground (only {near:.0%} of it is one shade)"
        )
    ink = np.abs(grey.astype(np.int16) - ground) >= INK_CONTRAST
    share = float(ink.mean())
    if not INK_SHARE[0] <= share <= INK_SHARE[1]:
        what = "blank" if share < INK_SHARE[0] else "too dark to be text"
        raise ImageRefused(NOT_TEXT, f"not shaped like text: {what} ({share:.1%} ink)")
    per_row = ink.sum(axis=1)
    inked = per_row >= max(2, width // 300)
    lines = tuple(_runs(inked, min_length=max(4, height // 400)))
    text_lines = [
        (top, bottom)
        for top, bottom in lines
        if per_row[top:bottom].sum() / ((bottom - top) * width) < LINE_INK
    ]
    if len(text_lines) < MIN_LINES:
        raise ImageRefused(
            NOT_TEXT, f"not shaped like text: {len(text_lines)} line(s) of text, fewer than "
            f"{MIN_LINES}"
        )  # fmt: skip
    line_height = int(np.median([bottom - top for top, bottom in text_lines]))
    return Shape(ground, share, tuple(text_lines), line_height, _strips(lines, height))


def _runs(flags: np.ndarray, min_length: int) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of true values at least ``min_length`` long."""
    import numpy as np

    edges = np.diff(np.concatenate(([0], flags.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(s), int(e)) for s, e in zip(starts, ends, strict=True) if e - s >= min_length]


def _strips(lines: tuple[tuple[int, int], ...], height: int) -> tuple[tuple[int, int], ...]:
    """Rows ``[top, bottom)`` of strips of whole lines, at most :data:`STRIP_HEIGHT` high
    where the lines allow, each cut in the middle of the gap between two lines."""
    cuts = [0] + [(a_end + b_start) // 2 for (_, a_end), (b_start, _) in itertools.pairwise(lines)]
    cuts.append(height)
    strips, top = [], 0
    for n in range(1, len(cuts)):
        if cuts[n] - top > STRIP_HEIGHT and cuts[n - 1] > top:
            strips.append((top, cuts[n - 1]))
            top = cuts[n - 1]
    strips.append((top, height))
    return tuple(strips)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
