"""Bytes to text for the encodings Chinese web text comes in.

Order of decisions: a byte-order mark (UTF-8, UTF-16, UTF-32) wins; then strict UTF-8;
then GB18030 (a superset of GB2312 and GBK) and Big5-HKSCS are both tried strictly and the
one whose non-ASCII characters are more often *plausible* (frequent Han characters of GB2312
level 1 or Big5's frequent block, CJK punctuation, full-width forms) wins, since a Big5 byte
stream read as GBK (or the reverse) turns into rare characters, kana and symbols; then
UTF-8 with its invalid sequences replaced by U+FFFD when they are few (at most
:data:`MAX_STRAY_SHARE` of the bytes, or :data:`MIN_STRAY`: a text file with a few corrupt
bytes, read as a browser or an editor shows it); last, charset-normalizer's guess, for
inputs of at least 32 bytes (shorter ones give no evidence). NUL bytes without a UTF-16/32
mark are dropped when they are at most :data:`MAX_STRAY_SHARE` of the bytes; more make the
input binary. Input that is binary or that nothing decodes raises :class:`UndecodableText`.
"""

from __future__ import annotations

import codecs
import contextlib
from dataclasses import dataclass
from functools import cache

from fingerprint.base import FingerprintError

BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
CHINESE_ENCODINGS = ("gb18030", "big5hkscs")
"""The Chinese encodings tried, each read as its superset (GB18030 for GB2312/GBK)."""
MAX_STRAY_SHARE = 0.001
"""Stray NUL bytes, or invalid UTF-8 sequences, tolerated per byte of input (one in 1,000;
invalid sequences: at least :data:`MIN_STRAY` in any input)."""
MIN_STRAY = 8
_MIN_SCORE_MARGIN = 0.02
_MIN_GUESS_BYTES = 32


class UndecodableText(FingerprintError):
    """The bytes are not text in any supported encoding."""


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str


@cache
def common_han() -> frozenset[str]:
    """Frequent Han characters: GB2312 level 1 (3,755) and Big5 level 1 (5,401)."""
    chars: set[str] = set()
    for lead in range(0xB0, 0xD8):
        for trail in range(0xA1, 0xFF):
            with contextlib.suppress(UnicodeDecodeError):
                chars.add(bytes([lead, trail]).decode("gb2312"))
    for lead in range(0xA4, 0xC7):
        for trail in [*range(0x40, 0x7F), *range(0xA1, 0xFF)]:
            with contextlib.suppress(UnicodeDecodeError):
                chars.add(bytes([lead, trail]).decode("big5"))
    return frozenset(c for c in chars if "\u4e00" <= c <= "\u9fff")


SHARE_SAMPLE = 200_000
"""Characters of each of two places a long text's plausibility is judged on."""


def common_share(text: str) -> float:
    """Share of the non-ASCII characters of ``text`` that are plausible in Chinese text.

    Plausible: frequent Han characters, CJK punctuation (U+3000-U+303F) and full-width forms
    (U+FF00-U+FFEF). A wrong Chinese decoding yields rare Han, kana, Greek or box drawing.
    1.0 for pure ASCII. A long text is judged on its first and middle
    :data:`SHARE_SAMPLE` characters, counted without a list of its characters (a 60 MB
    file would otherwise cost gigabytes).
    """
    if len(text) > 2 * SHARE_SAMPLE:
        middle = len(text) // 2
        text = text[:SHARE_SAMPLE] + text[middle : middle + SHARE_SAMPLE]
    common = common_han()
    wide = plausible = 0
    for c in text:
        if c > "\x7f":
            wide += 1
            if c in common or "\u3000" <= c <= "\u303f" or "\uff00" <= c <= "\uffef":
                plausible += 1
    return plausible / wide if wide else 1.0


def decode_bom(data: bytes) -> Decoded | None:
    """``data`` decoded by its UTF-8/16/32 byte-order mark; ``None`` when it has none.

    >>> decode_bom(codecs.BOM_UTF8 + "中".encode())
    Decoded(text='中', encoding='utf-8')
    """
    for bom, encoding in BOMS:
        if data.startswith(bom):
            try:
                return Decoded(data.decode(encoding), encoding.removesuffix("-sig"))
            except UnicodeDecodeError as exc:
                raise UndecodableText(
                    f"invalid {encoding} after its byte-order mark: {exc}"
                ) from exc
    return None


def decode(data: bytes) -> Decoded:
    """Decode ``data`` as described in the module docstring.

    >>> decode("中文".encode("gbk"))
    Decoded(text='中文', encoding='gb18030')
    >>> decode("中文".encode("big5")).text
    '中文'
    >>> decode(("雨夜" * 600).encode() + bytes([0, 255])).text[-3:]  # a NUL, a bad byte
    '雨夜�'
    """
    if not data:
        return Decoded("", "utf-8")
    marked = decode_bom(data)
    if marked is not None:
        return marked
    nuls = data.count(b"\x00")
    if nuls > MAX_STRAY_SHARE * len(data):
        raise UndecodableText("binary data: NUL bytes and no UTF-16/UTF-32 byte-order mark")
    if nuls:
        data = data.replace(b"\x00", b"")
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    candidates = []
    for encoding in CHINESE_ENCODINGS:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        candidates.append((common_share(text), encoding, text))
    if candidates:
        candidates.sort(key=lambda c: c[0], reverse=True)
        best = candidates[0]
        if len(candidates) == 1 or best[0] - candidates[1][0] >= _MIN_SCORE_MARGIN:
            return Decoded(best[2], best[1])
        gb = next(c for c in candidates if c[1] == "gb18030")
        return Decoded(gb[2], gb[1])
    mended = data.decode("utf-8", errors="replace")
    if mended.count("\ufffd") <= max(MIN_STRAY, MAX_STRAY_SHARE * len(data)):
        return Decoded(mended, "utf-8")
    return _guess(data)


def _guess(data: bytes) -> Decoded:
    if len(data) < _MIN_GUESS_BYTES:
        raise UndecodableText(
            f"{len(data)} bytes that are not UTF-8, GB18030 or Big5: too short to guess"
        )
    from charset_normalizer import from_bytes

    match = from_bytes(data).best()
    if match is None or match.encoding is None:
        raise UndecodableText(
            "not text in UTF-8, GB18030/GBK, Big5, UTF-16/32 or any encoding detected"
        )
    return Decoded(str(match), match.encoding)
