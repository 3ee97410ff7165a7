"""Obfuscating web fonts decoded by glyph shape (:mod:`crawler.webfont`).

Fixture pages are built as pirate sites build them (:mod:`tests.sites.font_sites`): a sample
work's text behind a font made per request from a real CJK typeface of this machine (Droid
Sans Fallback, a sans; AR PL UMing, a Ming serif), with random private-use or shuffled
real code points and random glyph names, identified against another typeface (the
reference, WenQuanYi Zen Hei). Fonts that are no fonts, broken, too big or bombs are
refused with their reason. Speed is the benchmark's (bench/webfont_bench.py), never checked
here.
"""

from __future__ import annotations

import fcntl
import io
import random
import struct
import zlib
from pathlib import Path

import brotli
import pytest
from fontTools.ttLib import TTFont

from crawler.webfont import (
    DEFAULT_REFERENCE,
    FontDecoder,
    FontLimits,
    FontRefused,
    ReferenceIndex,
    ReferenceMissing,
    load_reference,
    shared_reference,
)
from crawler.webfont.reference import reference_chars
from tests.sites.font_sites import (
    TYPEFACES,
    ObfuscatedPage,
    build_font,
    decoded_accuracy,
    obfuscate,
    open_typeface,
)

ROOT = Path(__file__).resolve().parents[2]
WORKS = ("lighthouse.txt", "tea-history.txt")
MIN_ACCURACY = 0.97
UNHURRIED = FontLimits(max_seconds=300.0)
"""Whole-text fonts of a thousand glyphs, decoded for their accuracy on a machine that may
be busy: the time bound has a test of its own."""


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> ReferenceIndex:
    """The default reference, built once (by the first test process to lock) and kept
    where every test process finds it."""
    shared = tmp_path_factory.getbasetemp().parent / "webfont-index"
    shared.mkdir(exist_ok=True)
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return load_reference(DEFAULT_REFERENCE, cache_dir=str(shared))


@pytest.fixture(scope="module")
def text() -> str:
    return "\n".join((ROOT / "samples" / "works" / name).read_text("utf-8") for name in WORKS)


@pytest.mark.parametrize("typeface", ["droid", "uming"])
@pytest.mark.parametrize(
    ("scheme", "common", "fmt"),
    [("pua", 300, "woff2"), ("shuffle", 0, "ttf")],
    ids=["pua-common-woff2", "shuffled-every-char-ttf"],
)
def test_hidden_text_decodes_to_the_source(
    reference: ReferenceIndex, text: str, typeface: str, scheme: str, common: int, fmt: str
) -> None:
    page = obfuscate(text, TYPEFACES[typeface], seed=7, scheme=scheme, common=common, fmt=fmt)
    assert len(page.mapping) >= 300
    assert page.text != text and page.font_url in page.html and page.font_url in page.css
    decoded = FontDecoder(reference, UNHURRIED).decode(page.font, page.text)
    assert decoded.format == fmt and not decoded.plain and not decoded.cached
    assert decoded.glyphs == len(page.mapping)
    right, kept, wrong = decoded_accuracy(page, decoded.apply(page.text))
    hidden = right + kept + wrong
    assert hidden > 2000
    assert right / hidden >= MIN_ACCURACY, (right, kept, wrong)
    assert wrong / hidden <= 0.02
    same = sum(a == b for a, b in zip(decoded.apply(page.text), text, strict=True))
    assert same / len(text) >= MIN_ACCURACY


def test_a_plain_web_font_leaves_the_text_as_it_is(reference: ReferenceIndex, text: str) -> None:
    """A font that draws its code points as themselves, in a typeface unlike the
    reference's (Ming against Hei), is used for its looks: nothing is changed."""
    page = obfuscate(text, TYPEFACES["uming"], seed=3, scheme="plain", common=300, fmt="woff")
    assert page.text == text
    decoded = FontDecoder(reference, UNHURRIED).decode(page.font, page.text)
    assert decoded.plain and decoded.mapping == {}
    assert decoded.apply(text) == text


def test_glyphs_of_no_chinese_character_stay_as_they_are(reference: ReferenceIndex) -> None:
    """Latin letters and digits drawn behind private-use code points are not Chinese: at
    most a few look-alikes (l as 丨) are read, the rest left as they are; the Latin code
    points of a text are never decoded at all."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    mapping = {0xE100 + n: c for n, c in enumerate(letters)}
    latin = TTFont("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", lazy=True)
    font = build_font(latin, mapping, random.Random(0), "woff2")
    decoded = FontDecoder(reference).decode(font, [*mapping, ord("a"), ord("1")])
    assert len(decoded.unknown) >= 0.85 * len(letters)
    assert ord("a") in decoded.absent and ord("1") in decoded.absent


def test_decoding_is_deterministic_and_cached_per_font(
    reference: ReferenceIndex, text: str
) -> None:
    """The same page twice is the same font; another request is another font (code points
    and glyph names drawn anew) whose glyphs are read as the same characters. A decoder
    serves a font it has seen from its cache, and a fresh decoder reads it the same."""
    typeface = TYPEFACES["droid"]
    first = obfuscate(text, typeface, seed=1, common=200)
    assert obfuscate(text, typeface, seed=1, common=200) == first
    second = obfuscate(text, typeface, seed=2, common=200)
    assert second.font != first.font and set(second.mapping) != set(first.mapping)
    names = TTFont(io.BytesIO(first.font)).getGlyphOrder()
    assert not set(names[1:]) & set(TTFont(io.BytesIO(second.font)).getGlyphOrder())
    decoder = FontDecoder(reference)
    one = decoder.decode(first.font, first.text)
    again = decoder.decode(first.font, first.text)
    assert again.cached and not one.cached
    assert again.mapping == one.mapping and again.digest == one.digest
    assert FontDecoder(reference).decode(first.font, first.text).mapping == one.mapping
    other = decoder.decode(second.font, second.text)
    readings = [
        {page.mapping[cp]: read for cp, read in decoded.mapping.items()}
        for page, decoded in ((first, one), (second, other))
    ]
    assert readings[0] == readings[1]  # each glyph read by its shape alone
    part = decoder.decode(first.font, first.text[:50])
    assert part.cached and set(part.mapping) <= set(one.mapping)


def test_a_glyph_that_draws_nothing_reads_as_nothing(reference: ReferenceIndex) -> None:
    """A private-use code point whose glyph is empty (here Droid's ideographic space) is
    invisible on the page: it goes. A space stays a space."""
    source = open_typeface(TYPEFACES["droid"])
    hidden = {0xE001: "书", 0xE002: "读", 0xE003: "\u3000", 0x20: "\u3000"}
    font = build_font(source, hidden, random.Random(5), "ttf")
    decoded = FontDecoder(reference).decode(font, "\ue001\ue003\ue002 ")
    assert decoded.apply("\ue001\ue003\ue002 ") == "书读 "


def _woff2(text: str) -> ObfuscatedPage:
    return obfuscate(text, TYPEFACES["droid"], seed=11, common=50, fmt="woff2")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not a font: empty"),
        (b"<!DOCTYPE html><html><body>404</body></html>", "not a font: an HTML page"),
        (b"GIF89a" + bytes(40), "not a font: starts with b'GIF8'"),
        (b"ttcf" + bytes(40), "a font collection"),
        (b"\x00\x01\x00\x00" + bytes(60), "a font with no character map"),
        (b"wOF2" + bytes(10), "unreadable woff2 font: truncated header"),
    ],
    ids=["empty", "html", "gif", "collection", "zeros", "truncated-woff2"],
)
def test_what_is_not_a_font_is_refused_with_the_reason(
    reference: ReferenceIndex, data: bytes, reason: str
) -> None:
    with pytest.raises(FontRefused, match="^" + reason.replace("(", r"\(")) as refused:
        FontDecoder(reference).decode(data, "\ue000")
    assert "\n" not in str(refused.value)


def test_a_corrupt_font_is_refused(reference: ReferenceIndex, text: str) -> None:
    page = _woff2(text)
    font = bytearray(page.font)
    cut = bytes(font[: len(font) // 2])
    with pytest.raises(FontRefused, match="unreadable woff2 font"):
        FontDecoder(reference).decode(cut, page.text)
    font[60:120] = bytes(60)  # the Brotli stream's start zeroed
    with pytest.raises(FontRefused, match="unreadable woff2 font"):
        FontDecoder(reference).decode(bytes(font), page.text)


def test_fonts_past_a_bound_are_refused(reference: ReferenceIndex, text: str) -> None:
    page = _woff2(text)
    font = page.font
    cases = [
        (FontLimits(max_bytes=len(font) - 1), "too large: "),
        (FontLimits(max_sfnt_bytes=1000), "too large unpacked"),
        (FontLimits(max_glyphs=20), "too many glyphs: 51 "),
        (FontLimits(max_decoded=10), "too many code points to decode: 50 "),
        (FontLimits(max_seconds=0.0), "timeout: over 0 s, 0 of 50 glyphs drawn"),
        (FontLimits(max_segments=10), "a glyph too complex to draw"),
    ]
    for limits, reason in cases:
        with pytest.raises(FontRefused, match=reason):
            FontDecoder(reference, limits).decode(font, page.text)


def test_compression_bombs_are_refused_before_they_unpack(reference: ReferenceIndex) -> None:
    """A WOFF2 whose Brotli stream unpacks to 1,000 times its size, and a WOFF whose zlib
    table unpacks past the size its directory declares: refused, never unpacked whole."""
    limits = FontLimits(max_sfnt_bytes=1024 * 1024)
    stream = brotli.compress(bytes(8 * 1024 * 1024), quality=5)
    header = struct.pack(">4sIIHHIIHHIIIII", b"wOF2", 0x00010000, 48 + len(stream), 0, 0,
                         1024, len(stream), 1, 0, 0, 0, 0, 0, 0)  # fmt: skip
    assert len(stream) < 8 * 1024
    with pytest.raises(FontRefused, match="too large unpacked: over 1,048,576 bytes"):
        FontDecoder(reference, limits).decode(header + stream, "\ue000")
    table = zlib.compress(bytes(1024 * 1024))
    woff = struct.pack(">4sIIHHIHHIIIII", b"wOFF", 0x00010000, 64 + len(table), 1, 0, 4000,
                       1, 0, 0, 0, 0, 0, 0)  # fmt: skip
    woff += struct.pack(">4sIIII", b"cmap", 64, len(table), 4000, 0) + table
    with pytest.raises(FontRefused, match="a table unpacks to another size"):
        FontDecoder(reference).decode(woff, "\ue000")


def test_a_character_map_naming_too_many_code_points_is_refused(
    reference: ReferenceIndex,
) -> None:
    """Format 12 groups (code points past the BMP) are counted before fontTools expands
    them into a dict."""
    source = open_typeface(TYPEFACES["droid"])
    mapping = {0xF0000 + 2 * n: ch for n, ch in enumerate("天地人和日月山水风云春秋")}
    font = build_font(source, mapping, random.Random(1), "ttf")
    decoded = FontDecoder(reference).decode(font, mapping)
    assert decoded.identified == len(mapping) and decoded.format == "ttf"
    with pytest.raises(FontRefused, match="too many code points in the cmap: over 5"):
        FontDecoder(reference, FontLimits(max_cmap_entries=5)).decode(font, mapping)


def test_a_missing_reference_says_where_it_looked(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-font.ttc"
    with pytest.raises(ReferenceMissing) as refused:
        load_reference(str(missing))
    assert str(missing) in str(refused.value)
    assert "FPTRACK_WEBFONT_REFERENCE" in str(refused.value)
    assert "fonts-wqy-zenhei" in str(refused.value)
    latin = tmp_path / "latin.ttf"
    latin.write_bytes(Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").read_bytes())
    with pytest.raises(ReferenceMissing, match=r"draws only \d+ of GB2312's characters"):
        load_reference(str(latin))


def test_the_reference_index_is_kept_and_loaded_again(tmp_path: Path) -> None:
    """A reference made of 1,200 of GB2312's characters (Droid's): its index is kept in the
    cache folder, loaded from there, and built again when the kept file is damaged."""
    chars = reference_chars()[:1200]
    source = open_typeface(TYPEFACES["droid"])
    font = tmp_path / "reference.ttf"
    font.write_bytes(build_font(source, {ord(c): c for c in chars}, random.Random(0), "ttf"))
    cache = tmp_path / "cache"
    built = load_reference(str(font), cache_dir=str(cache))
    assert built.chars == chars and built.features.shape == (1200, 512)
    [kept] = cache.glob("webfont-*.npz")
    again = load_reference(f"{font}#0", cache_dir=str(cache))
    assert again.chars == built.chars and (again.features == built.features).all()
    kept.write_bytes(b"not an index")
    assert load_reference(str(font), cache_dir=str(cache)).chars == chars
    assert kept.stat().st_size > 1000
    shared = shared_reference(str(font), str(cache))
    assert shared.chars == chars and shared_reference(str(font), str(cache)) is shared
