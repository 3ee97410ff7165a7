"""Decode an HTML response body, even when its HTTP header and ``<meta>`` disagree.

Chinese sites often declare one charset in the ``Content-Type`` header (a server default,
say UTF-8 or ISO-8859-1) and another in the page (``<meta charset="gbk">``), and one of the
two is wrong. :func:`decode_body` decides as follows:

1. A byte-order mark (UTF-8, UTF-16, UTF-32) wins.
2. A body that is markup (:func:`looks_like_html`) loses its NUL and other C0 control
   bytes (tab, line feed, form feed, carriage return and escape stay), as a browser shows
   such a page without them: no byte of those ranges is part of a multi-byte character in
   UTF-8, GB18030 or Big5. Any other body that looks binary (a NUL byte, or more than 10%
   control bytes in the first 4 KiB) raises :class:`UndecodableBody`.
3. A body that is strict UTF-8 is UTF-8, whatever is declared: text in GBK or Big5 is
   practically never valid UTF-8, while UTF-8 bytes often decode as GB18030 (into nonsense).
4. Otherwise the candidates are the declared charsets (``<meta>`` first, then the header),
   GB18030, Big5-HKSCS and UTF-8, in that order. Each is decoded with replacement characters
   and kept if at most :data:`MAX_REPLACED` (1%) of its characters are replaced (pages with
   a few broken bytes are common). A kept decoding scores
   :func:`fingerprint.decode.common_share` (the share of non-ASCII characters that are
   plausible in Chinese text: frequent Han characters, CJK punctuation, full-width forms)
   minus :data:`REPLACED_PENALTY` (10) times its share of replaced characters; a declared
   charset that is neither Chinese nor UTF-8 (ISO-8859-1, Shift_JIS...) scores
   :data:`FOREIGN_SCORE` (0.5) instead, so a Chinese decoding must be plausible to beat it.
   A Big5 page read as GBK (or the reverse) turns into rare characters and loses. The best
   score wins; scores within :data:`SCORE_MARGIN` (0.02) of the best go to the earlier
   candidate.
5. When no candidate is kept, :func:`fingerprint.decode.decode` decides (it ends with
   charset-normalizer's guess), or :class:`UndecodableBody` is raised.

GB2312 and GBK are read as GB18030 (their superset) and Big5 as Big5-HKSCS (its superset).
"""

from __future__ import annotations

import codecs
import re

from fingerprint.decode import (
    CHINESE_ENCODINGS,
    UndecodableText,
    common_share,
    decode,
    decode_bom,
)

SCORE_MARGIN = 0.02
FOREIGN_SCORE = 0.5
MAX_REPLACED = 0.01
REPLACED_PENALTY = 10.0
SNIFF_BYTES = 4096
MAX_CONTROL_SHARE = 0.10

_SCORED = (*CHINESE_ENCODINGS, "utf-8")
# Python codec names (after codecs.lookup) read as their supersets.
_SUPERSETS = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "cp936": "gb18030",
    "big5": "big5hkscs",
    "cp950": "big5hkscs",
    "ascii": "utf-8",
}
_META_CHARSET = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([a-zA-Z0-9_:.+-]+)""", re.IGNORECASE
)
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r\f\x1b") + b"\x7f"
# WHATWG MIME Sniffing, "rules for identifying an unknown MIME type": the HTML patterns,
# each followed by a tag-terminating byte (space or ">").
_HTML_SNIFF = re.compile(
    rb"\s*<(?:!doctype html|html|head|script|iframe|h1|div|font|table|a|style|title|b|body"
    rb"|br|p)[ \t\n\f\r>]|\s*<!--",
    re.IGNORECASE,
)
_MARKUP = re.compile(rb"<(?:html|head|body|div|p|br|table|title|meta)[\s>/]", re.IGNORECASE)


class UndecodableBody(UndecodableText):
    """A response body is binary, or text in no encoding that could be found."""


def normalise_charset(name: str | None) -> str | None:
    """Python's codec name for a declared charset, read as its superset; None if unknown.

    >>> normalise_charset("GB2312"), normalise_charset("big5"), normalise_charset("x-bogus")
    ('gb18030', 'big5hkscs', None)
    """
    if not name:
        return None
    name = name.strip().strip("\"'").lower()
    if name in ("x-gbk", "gb_2312-80", "x-gb2312"):
        name = "gbk"
    elif name in ("x-x-big5", "big5-hkscs"):
        name = "big5hkscs"
    try:
        canonical = codecs.lookup(name).name
    except (LookupError, ValueError):
        return None
    return _SUPERSETS.get(canonical, canonical)


def header_charset(content_type: str | bytes | None) -> str | None:
    """The ``charset`` parameter of a ``Content-Type`` header value, as given (or None)."""
    if not content_type:
        return None
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    match = re.search(r"charset\s*=\s*[\"']?([^\s;\"']+)", content_type, re.IGNORECASE)
    return match.group(1) if match else None


def meta_charset(body: bytes) -> str | None:
    """The charset declared by a ``<meta>`` tag in the first 4 KiB of ``body`` (or None)."""
    match = _META_CHARSET.search(body[:SNIFF_BYTES])
    return match.group(1).decode("ascii") if match else None


def sniff_html(body: bytes) -> bool:
    """Whether a response without a Content-Type is HTML, as a browser decides (the HTML
    patterns of WHATWG MIME Sniffing at the start of the body)."""
    return _HTML_SNIFF.match(body[:SNIFF_BYTES]) is not None


def looks_like_html(body: bytes) -> bool:
    """Whether ``body`` is markup: it sniffs as HTML, or an HTML tag appears in its first
    4 KiB (control bytes or not)."""
    head = body[:SNIFF_BYTES]
    return sniff_html(head) or _MARKUP.search(head.translate(None, _CONTROL)) is not None


def strip_control_bytes(body: bytes) -> bytes:
    """``body`` without NUL and the other C0 control bytes (and DEL) that text never holds."""
    return body.translate(None, _CONTROL)


def check_not_binary(body: bytes) -> None:
    """Raise :class:`UndecodableBody` when ``body`` (without a byte-order mark) is binary."""
    head = body[:SNIFF_BYTES]
    if b"\x00" in body:
        raise UndecodableBody("binary body: it contains NUL bytes")
    controls = sum(head.count(bytes([c])) for c in _CONTROL)
    if head and controls / len(head) > MAX_CONTROL_SHARE:
        raise UndecodableBody(
            f"binary body: {controls} of its first {len(head)} bytes are control bytes"
        )


def decode_body(body: bytes, content_type: str | bytes | None = None) -> tuple[str, str]:
    """Decode an HTML body as described in the module docstring: ``(text, encoding)``.

    >>> page = '<meta charset="gbk"><p>雨夜渡口</p>'.encode("gbk")
    >>> decode_body(page, "text/html; charset=utf-8")
    ('<meta charset="gbk"><p>雨夜渡口</p>', 'gb18030')
    """
    try:
        marked = decode_bom(body)
    except UndecodableText as exc:
        raise UndecodableBody(str(exc)) from exc
    if marked is not None:
        return marked.text, marked.encoding
    if looks_like_html(body):
        body = strip_control_bytes(body)
    else:
        check_not_binary(body)
    declared = [
        name
        for name in (
            normalise_charset(meta_charset(body)),
            normalise_charset(header_charset(content_type)),
        )
        if name
    ]
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if text.isascii() and declared and declared[0] != "utf-8" and _decodes(body, declared[0]):
            return text, declared[0]
        return text, "utf-8"
    decoded = []
    for enc in dict.fromkeys([*declared, *CHINESE_ENCODINGS, "utf-8"]):
        try:
            text = body.decode(enc, errors="replace")
        except LookupError:
            continue
        replaced = text.count("\ufffd") / max(len(text), 1)
        if replaced <= MAX_REPLACED:
            plausible = common_share(text) if enc in _SCORED else FOREIGN_SCORE
            decoded.append((plausible - REPLACED_PENALTY * replaced, enc, text))
    if decoded:
        top = max(score for score, _, _ in decoded)
        _, enc, text = next(d for d in decoded if d[0] >= top - SCORE_MARGIN)
        return text, enc
    try:
        found = decode(body)
    except UndecodableText as exc:
        raise UndecodableBody(str(exc)) from exc
    return found.text, found.encoding


def _strict(body: bytes, encoding: str) -> str | None:
    try:
        return body.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def _decodes(body: bytes, encoding: str) -> bool:
    return _strict(body, encoding) is not None
