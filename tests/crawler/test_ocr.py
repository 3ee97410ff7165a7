"""Chapters served as images read by OCR (:mod:`crawler.ocr`), on the real engines: rendered
chapters read back close to their text, in every format read, a tall one in strips; images
not shaped like text, bombs, truncated files and non-images refused with the reason before
the engine sees them; the worker's time and memory bounds and the page's caps; an engine
that is not installed named, with what to install."""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from crawler.ocr import EMPTY, PAGE_CAP, PAGE_TIME, READ, ImageReader
from crawler.ocr.engines import TESSERACT, unavailable
from crawler.ocr.images import (
    NOT_IMAGE,
    NOT_TEXT,
    STRIP_HEIGHT,
    TOO_BIG,
    TOO_SMALL,
    UNDECODABLE,
    decode,
    text_shape,
)
from crawler.ocr.worker import MEMORY, NO_ENGINE, TIMEOUT
from tests.sites.text_images import FONTS, Style, cer, render_chapter

WORKS = Path(__file__).resolve().parents[2] / "samples" / "works"
SHORT = Style("short", size=22, columns=16)
"""A small screenshot: 16 characters a line, so that each image is read in about a second."""


def chapter(chars: int = 90, work: str = "lighthouse.txt", start: int = 0) -> str:
    text = (WORKS / work).read_text(encoding="utf-8")
    return text[start : start + chars]


def encoded(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def photo(width: int = 480, height: int = 360) -> bytes:
    """A photo-like picture: smooth colour gradients under noise, no plain ground."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:height, 0:width]
    pixels = np.stack([x * 255 / width, y * 255 / height, (x + y) % 256], axis=-1)
    pixels = pixels + rng.normal(0, 20, pixels.shape)
    return encoded(Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)), "JPEG")


def banner() -> bytes:
    """A 728x90 advertising banner: one line of text on a plain ground."""
    from PIL import ImageFont

    image = Image.new("RGB", (728, 90), (255, 255, 255))
    font = ImageFont.truetype(FONTS["wqy-zenhei"][0], 40)
    ImageDraw.Draw(image).text((20, 20), "最新章节 免费阅读 点击下载", font=font, fill=(0, 0, 0))
    return encoded(image, "PNG")


def png_bomb(width: int, height: int) -> bytes:
    """A PNG whose header declares ``width`` x ``height`` grey pixels, with a few hundred
    bytes of data (a decompression bomb's header; its pixels are never there to decode)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack("!I", len(data)) + body + struct.pack("!I", zlib.crc32(body))

    header = struct.pack("!IIBBBBB", width, height, 8, 0, 0, 0, 0)
    data = zlib.compress(b"\x00" * 100_000)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def reader() -> Iterator[ImageReader]:
    """The default engine's reader, its worker started once for the module."""
    with ImageReader() as image_reader:
        assert image_reader.unavailable is None
        yield image_reader


def test_chapters_read_back_close_to_their_text_in_every_format(reader: ImageReader) -> None:
    simplified, drawn = render_chapter(chapter(), SHORT)
    result = reader.read(simplified)
    assert result.outcome == READ and result.reason == ""
    assert cer(drawn, result.text) < 0.05, result.text
    jpeg_t = Style("t", size=22, columns=16, fmt="JPEG", quality=75, script="t")
    traditional, drawn_t = render_chapter(chapter(start=300), jpeg_t)
    assert drawn_t != chapter(start=300)  # drawn in Traditional script
    assert cer(drawn_t, reader.read(traditional).text, t2s=True) < 0.08
    image = Image.open(io.BytesIO(simplified))
    gif = image.convert("P", palette=Image.Palette.ADAPTIVE)
    for fmt, options in (("GIF", {}), ("WEBP", {"quality": 90})):
        result = reader.read(encoded(gif if fmt == "GIF" else image, fmt, **options))
        assert result.outcome == READ, (fmt, result.reason)
        assert cer(drawn, result.text) < 0.05, (fmt, result.text)


def test_a_tall_chapter_is_read_in_strips_of_whole_lines(reader: ImageReader) -> None:
    text = "\n".join(chapter(6, "lighthouse.txt", start) for start in range(40, 460, 20))
    data, drawn = render_chapter(text, Style("tall", size=40, columns=8, spacing=1.6))
    grey = decode(data, 10_000_000)
    shape = text_shape(grey)
    assert grey.shape[0] > STRIP_HEIGHT and len(shape.strips) == 2 and len(shape.lines) == 21
    assert all(bottom - top <= STRIP_HEIGHT for top, bottom in shape.strips)
    for _, cut in shape.strips[:-1]:  # each cut falls between two lines, not through one
        assert not any(top < cut < bottom for top, bottom in shape.lines)
    result = reader.read(data)
    assert result.outcome == READ
    assert cer(drawn, result.text) < 0.05, result.text


def test_images_not_shaped_like_text_are_refused_with_the_reason(reader: ImageReader) -> None:
    blank = encoded(Image.new("RGB", (800, 600), (250, 250, 250)), "PNG")
    for data, outcome, words in (
        (photo(), NOT_TEXT, "no plain ground"),
        (banner(), NOT_TEXT, "1 line(s) of text"),
        (blank, NOT_TEXT, "blank"),
        (encoded(Image.new("RGB", (1, 1)), "PNG"), TOO_SMALL, "1x1 pixels"),
        (encoded(Image.new("P", (1, 1)), "GIF"), TOO_SMALL, "1x1 pixels"),
    ):
        result = reader.read(data)
        assert (result.outcome, result.text) == (outcome, ""), result
        assert words in result.reason and "\n" not in result.reason


def test_bombs_truncated_files_and_non_images_are_refused_before_decoding(
    reader: ImageReader,
) -> None:
    data, _ = render_chapter(chapter(), SHORT)
    cases = (
        (png_bomb(6_000, 6_000), TOO_BIG, "6000x6000 pixels, over the 30,000,000 read"),
        (
            png_bomb(100_000, 100_000),
            TOO_BIG,
            "a PNG declaring 10,000,000,000 pixels, over the 30,000,000 read (a bomb)",
        ),
        (data[: len(data) // 2], UNDECODABLE, "unreadable PNG (OSError: image file is truncated"),
        (
            b"<!DOCTYPE html><html>",
            NOT_IMAGE,
            "not a PNG, JPEG, GIF or WebP image (starts b'<!DOCTYPE ht')",
        ),
        (b"GIF89a" + b"\x00" * 4, UNDECODABLE, "unreadable GIF"),
    )
    for body, outcome, words in cases:
        result = reader.read(body)
        assert result.outcome == outcome and words in result.reason, result
    with ImageReader(max_bytes=1000, max_pixels=100_000) as small:
        assert small.read(data).outcome == TOO_BIG
        assert "bytes, over the 1,000 read" in small.read(data).reason
        big = encoded(Image.new("L", (400, 300), 255), "PNG")
        assert small.read(big).reason == "400x300 pixels, over the 100,000 read"


def test_the_worker_is_stopped_past_its_time_and_memory_and_serves_again(
    reader: ImageReader,
) -> None:
    data, drawn = render_chapter(chapter(), SHORT)
    late = reader.read(data, seconds=0.05)
    assert (late.outcome, late.reason) == (TIMEOUT, "not read within 0.05 s")
    assert cer(drawn, reader.read(data).text) < 0.05  # a new worker reads the next image
    with ImageReader(max_memory_mb=64) as lean:  # the engine's models alone take more
        result = lean.read(data)
        assert (result.outcome, result.reason) == (MEMORY, "reading it took over 64 MB of memory")


def test_a_page_reads_its_first_images_within_its_time(reader: ImageReader) -> None:
    data, _ = render_chapter(chapter(), SHORT)
    blank_page = encoded(Image.new("RGB", (1, 1)), "PNG")
    with ImageReader(max_images=2) as capped:
        results = capped.read_page([blank_page, blank_page, data])
    assert [r.outcome for r in results] == [TOO_SMALL, TOO_SMALL, PAGE_CAP]
    assert results[2].reason == "image 3 of its page: at most 2 are read"
    with ImageReader(page_seconds=0.2) as hurried:
        results = hurried.read_page([data, data])
    assert [r.outcome for r in results] == [TIMEOUT, PAGE_TIME]
    assert results[1].reason == "the page's 0.2 s of OCR were spent"


def test_an_image_with_no_text_read_is_empty_not_an_error(reader: ImageReader) -> None:
    lines = Image.new("RGB", (600, 200), (255, 255, 255))
    draw = ImageDraw.Draw(lines)
    for y in range(20, 180, 40):  # rows of short dashes: the shape of text, no glyph
        for x in range(20, 580, 24):
            draw.rectangle((x, y, x + 3, y + 12), fill=(0, 0, 0))
    result = reader.read(encoded(lines, "PNG"))
    assert (result.outcome, result.text) == (EMPTY, "")
    assert result.reason == "shaped like text, but no text was read"


def test_tesseract_reads_the_chapters_too() -> None:
    data, drawn = render_chapter(chapter(), SHORT)
    with ImageReader(TESSERACT) as tesseract:
        assert tesseract.unavailable is None
        result = tesseract.read(data)
    assert result.outcome == READ
    assert cer(drawn, result.text, t2s=True) < 0.15, result.text


def test_an_engine_not_installed_is_named_with_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data, _ = render_chapter(chapter(), SHORT)
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract command on it
    expected = (
        "the OCR engine tesseract is not installed (apt-get install tesseract-ocr "
        "tesseract-ocr-chi-sim tesseract-ocr-chi-tra)"
    )
    assert unavailable(TESSERACT) == expected
    with ImageReader(TESSERACT) as missing:
        assert missing.unavailable == expected
        result = missing.read(data)
    assert (result.outcome, result.reason) == (NO_ENGINE, expected)
    monkeypatch.undo()
    monkeypatch.setenv("TESSDATA_PREFIX", str(tmp_path))  # tesseract without Chinese data
    assert unavailable(TESSERACT) == (
        "tesseract has no chi_sim+chi_tra data (apt-get install tesseract-ocr "
        "tesseract-ocr-chi-sim tesseract-ocr-chi-tra)"
    )
    with pytest.raises(ValueError, match="unknown OCR engine 'easyocr'"):
        ImageReader("easyocr")
