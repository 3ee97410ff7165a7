"""A web font's bytes opened with fontTools, within bounds, or refused with the reason.

:func:`open_font` knows the format by the first bytes (TrueType ``ttf``, CFF ``otf``,
``woff``, ``woff2``; a font collection, an HTML page or anything else is refused) and checks
before fontTools parses anything that can grow: the bytes (:attr:`FontLimits.max_bytes`),
the size the WOFF or WOFF2 header declares unpacked and what its tables really unpack to
(each zlib table and the one Brotli stream are unpacked here with a limit first: a
compression bomb is refused after :attr:`FontLimits.max_sfnt_bytes`, never unpacked whole),
and the code points the ``cmap`` subtables of formats 12 and 13 map (one group can name a
million of them). Then the glyph count (``maxp``, :attr:`FontLimits.max_glyphs`). Anything
fontTools cannot read is refused, its error in one line.
"""

from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass

import brotli
import numpy as np
from fontTools.ttLib import TTFont

FORMATS = {
    b"\x00\x01\x00\x00": "ttf",
    b"true": "ttf",
    b"OTTO": "otf",
    b"wOFF": "woff",
    b"wOF2": "woff2",
}
"""First four bytes of each font format read."""


class FontRefused(Exception):
    """A font past a bound, not a font, or unreadable; the message says why, in one line."""


@dataclass(frozen=True)
class FontLimits:
    """Bounds on one web font (defaults: docs/pipeline.md, "Web fonts")."""

    max_bytes: int = 8 * 1024 * 1024
    """The font file as fetched (a subset font of a page is tens of kilobytes; a whole CJK
    font a few megabytes)."""
    max_sfnt_bytes: int = 32 * 1024 * 1024
    """A WOFF or WOFF2 font unpacked."""
    max_glyphs: int = 65_535
    """Glyphs in the font (``maxp``; the format's own limit)."""
    max_cmap_entries: int = 200_000
    """Code points the font's character map names (formats 12 and 13 summed)."""
    max_decoded: int = 8_000
    """Code points of a text decoded from one font (GB2312 holds 6,763 Han characters)."""
    max_segments: int = 20_000
    """Line segments of one glyph's outline once curves are flattened."""
    max_component_depth: int = 8
    """Composite glyphs nested at most this deep."""
    max_seconds: float = 10.0
    """Time to decode one font, parsing and drawing included (checked between glyphs)."""


@dataclass(frozen=True)
class OpenedFont:
    """A parsed font: the fontTools object, its format, its character map and its em."""

    font: TTFont
    format: str
    cmap: dict[int, str]
    units_per_em: int


def font_format(data: bytes) -> str:
    """``ttf``, ``otf``, ``woff`` or ``woff2`` from the first bytes; :class:`FontRefused`
    for anything else.

    >>> font_format(b"wOF2" + bytes(44))
    'woff2'
    >>> font_format(b"<!DOCTYPE html><html>")
    Traceback (most recent call last):
    ...
    crawler.webfont.sfnt.FontRefused: not a font: an HTML page
    """
    head = data[:4]
    if head in FORMATS:
        return FORMATS[head]
    if head == b"ttcf":
        raise FontRefused("a font collection (ttc), which web pages cannot use")
    start = data[:64].lstrip().lower()
    if start.startswith((b"<!doctype", b"<html", b"<head", b"<body")):
        raise FontRefused("not a font: an HTML page")
    if not data:
        raise FontRefused("not a font: empty")
    raise FontRefused(f"not a font: starts with {bytes(data[:4])!r}")


def open_font(data: bytes, limits: FontLimits) -> OpenedFont:
    """Parse ``data`` as a font within ``limits`` (see the module docstring)."""
    if len(data) > limits.max_bytes:
        raise FontRefused(f"too large: {len(data):,} bytes (limit {limits.max_bytes:,})")
    kind = font_format(data)
    try:
        if kind == "woff":
            _check_woff(data, limits)
        elif kind == "woff2":
            _check_woff2(data, limits)
        font = TTFont(io.BytesIO(data), lazy=True, recalcBBoxes=False, recalcTimestamp=False)
        _check_cmap(font, limits)
        glyphs = font["maxp"].numGlyphs
        if glyphs > limits.max_glyphs:
            raise FontRefused(f"too many glyphs: {glyphs:,} (limit {limits.max_glyphs:,})")
        cmap = font.getBestCmap() or {}
        units = int(font["head"].unitsPerEm)
    except FontRefused:
        raise
    except RecursionError:
        raise FontRefused("unreadable font: nested too deep") from None
    except Exception as exc:  # fontTools raises many kinds on malformed fonts
        raise FontRefused(f"unreadable {kind} font: {_one_line(exc)}") from None
    if not 16 <= units <= 16384:
        raise FontRefused(f"unreadable {kind} font: unitsPerEm {units}")
    return OpenedFont(font, kind, dict(cmap), units)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


def _check_woff(data: bytes, limits: FontLimits) -> None:
    """Refuse a WOFF whose tables declare, or unpack to, more than the limit."""
    if len(data) < 44:
        raise FontRefused("unreadable woff font: truncated header")
    tables, total = struct.unpack_from(">HxxI", data, 12)
    _declared(total, limits)
    unpacked = 0
    for n in range(tables):
        at = 44 + 20 * n
        if at + 20 > len(data):
            raise FontRefused("unreadable woff font: truncated table directory")
        _tag, offset, packed, size, _sum = struct.unpack_from(">4sIIII", data, at)
        unpacked += size
        _declared(unpacked, limits)
        if packed < size:
            got = zlib.decompressobj().decompress(data[offset : offset + packed], size + 1)
            if len(got) != size:
                raise FontRefused("unreadable woff font: a table unpacks to another size")


def _check_woff2(data: bytes, limits: FontLimits) -> None:
    """Refuse a WOFF2 whose Brotli stream unpacks past the limit."""
    if len(data) < 48:
        raise FontRefused("unreadable woff2 font: truncated header")
    flavor, tables, total, packed = struct.unpack_from(">4xIxxxxHxxII", data, 0)
    if flavor == 0x74746366:  # "ttcf"
        raise FontRefused("a font collection (ttc), which web pages cannot use")
    _declared(total, limits)
    at = 48
    for _ in range(tables):  # the table directory: flags, tag, UIntBase128 lengths
        if at >= len(data):
            raise FontRefused("unreadable woff2 font: truncated table directory")
        flags = data[at]
        at += 1 + (4 if flags & 0x3F == 0x3F else 0)
        at = _skip_base128(data, at)
        transform = flags >> 6
        tag_index = flags & 0x3F
        if (tag_index in (10, 11)) == (transform == 0):  # glyf, loca: version 0 transforms
            at = _skip_base128(data, at)
    stream = data[at : at + packed]
    decompressor = brotli.Decompressor()
    try:
        got = len(decompressor.process(stream, output_buffer_limit=limits.max_sfnt_bytes + 1))
        while got <= limits.max_sfnt_bytes and not decompressor.is_finished():
            more = decompressor.process(b"", output_buffer_limit=limits.max_sfnt_bytes + 1)
            if not more:
                break
            got += len(more)
    except brotli.error:
        raise FontRefused("unreadable woff2 font: its Brotli stream is corrupt") from None
    if got > limits.max_sfnt_bytes:
        raise FontRefused(f"too large unpacked: over {limits.max_sfnt_bytes:,} bytes")


def _skip_base128(data: bytes, at: int) -> int:
    for n in range(5):
        if at + n >= len(data):
            break
        if not data[at + n] & 0x80:
            return at + n + 1
    raise FontRefused("unreadable woff2 font: bad table directory")


def _declared(size: int, limits: FontLimits) -> None:
    if size > limits.max_sfnt_bytes:
        raise FontRefused(f"too large unpacked: {size:,} bytes (limit {limits.max_sfnt_bytes:,})")


def _check_cmap(font: TTFont, limits: FontLimits) -> None:
    """Refuse a character map whose format 12 or 13 groups name too many code points,
    read from the raw table before fontTools expands them into a dict."""
    if "cmap" not in font:
        raise FontRefused("a font with no character map (cmap)")
    raw = font.reader["cmap"]
    if len(raw) < 4:
        raise FontRefused("unreadable font: truncated cmap")
    (count,) = struct.unpack_from(">H", raw, 2)
    named = 0
    seen = set()
    for n in range(min(count, 64)):
        if 4 + 8 * n + 8 > len(raw):
            raise FontRefused("unreadable font: truncated cmap")
        (offset,) = struct.unpack_from(">I", raw, 4 + 8 * n + 4)
        if offset in seen or offset + 16 > len(raw):
            continue
        seen.add(offset)
        (kind,) = struct.unpack_from(">H", raw, offset)
        if kind not in (12, 13):
            continue
        (groups,) = struct.unpack_from(">I", raw, offset + 12)
        groups = min(groups, (len(raw) - offset - 16) // 12)
        table = np.frombuffer(raw, ">u4", groups * 3, offset + 16).reshape(-1, 3)
        named += int(np.maximum(table[:, 1].astype(np.int64) - table[:, 0] + 1, 0).sum())
        if named > limits.max_cmap_entries:
            raise FontRefused(f"too many code points in the cmap: over {limits.max_cmap_entries:,}")
