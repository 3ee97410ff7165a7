"""Obfuscating web fonts decoded by glyph shape (docs/pipeline.md, "Web fonts").

The API for the code that fetches a page's fonts::

    reference = shared_reference(settings.webfont_reference, cache_dir)  # once per process
    decoder = FontDecoder(reference)                         # FontLimits() by default
    decoded = decoder.decode(font_bytes, text)                # FontRefused: why, in one line
    text = decoded.apply(text)

:mod:`crawler.webfont.sfnt` opens a font within bounds, :mod:`crawler.webfont.glyphs`
draws and describes glyphs, :mod:`crawler.webfont.reference` describes the reference font's
characters once, :mod:`crawler.webfont.decode` identifies each glyph and caches per font.
"""

from crawler.webfont.decode import (
    DecodedFont,
    FontDecoder,
    apply_mapping,
    digest_of,
    used_code_points,
)
from crawler.webfont.reference import (
    DEFAULT_REFERENCE,
    ReferenceIndex,
    ReferenceMissing,
    load_reference,
    shared_reference,
)
from crawler.webfont.sfnt import FontLimits, FontRefused, font_format

__all__ = [
    "DEFAULT_REFERENCE",
    "DecodedFont",
    "FontDecoder",
    "FontLimits",
    "FontRefused",
    "ReferenceIndex",
    "ReferenceMissing",
    "apply_mapping",
    "digest_of",
    "font_format",
    "load_reference",
    "shared_reference",
    "used_code_points",
]
