"""Chapters served as images (图片章节) read by OCR, within bounds.

Pirate sites serve the freshest chapters as screenshots of paid chapters. An
:class:`ImageReader` reads such images into text for the matcher: the caller (the crawl)
hands it the images placed in a page's content, in document order, and gets an
:class:`OcrResult` for each, the text read or the outcome and one line saying why not::

    with ImageReader() as reader:                 # settings read once, by the caller
        if reader.unavailable:                    # e.g. the engine is not installed
            ...                                   # count the images under that reason
        for result in reader.read_page(images):   # bytes of each image, in page order
            result.text, result.outcome, result.reason

Bounds, each a constructor argument (defaults in :mod:`crawler.defaults`): at most
``max_images`` images read per page (the rest :data:`PAGE_CAP`) and ``page_seconds`` spent
on a page's images (the rest :data:`PAGE_TIME`); an image of at most ``max_bytes`` bytes and
``max_pixels`` pixels (:data:`~crawler.ocr.images.TOO_BIG`, checked from its header before a
pixel is decoded), read within ``seconds`` (:data:`~crawler.ocr.worker.TIMEOUT`) and
``max_memory_mb`` of memory for the worker process and its children
(:data:`~crawler.ocr.worker.MEMORY`). Only images shaped like text are read
(:func:`crawler.ocr.images.text_shape`): a photo, a logo, a banner, a 1x1 tracker are
refused (:data:`~crawler.ocr.images.NOT_TEXT`, :data:`~crawler.ocr.images.TOO_SMALL`)
before the engine sees them. Decoding and OCR run in worker processes
(:mod:`crawler.ocr.worker`, ``workers`` of them), never in the caller's.

The engine is chosen when the reader is made (``engine``: ``rapidocr``, the default, or
``tesseract``; :mod:`crawler.ocr.engines`); when it is not installed,
:attr:`ImageReader.unavailable` says so with what to install, and every image gets
:data:`~crawler.ocr.worker.NO_ENGINE` with that reason. ``docs/ocr.md`` tells the choice of
engine and its figures.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType

from crawler import defaults
from crawler.ocr.engines import DEFAULT_ENGINE, ENGINES, unavailable
from crawler.ocr.images import TOO_BIG, ImageRefused, probe
from crawler.ocr.worker import NO_ENGINE, OcrProcess

READ = "read"
EMPTY = "empty"
PAGE_CAP = "page_cap"
PAGE_TIME = "page_time"


@dataclass(frozen=True)
class OcrResult:
    """What became of one image: ``text`` read (``outcome`` :data:`READ`), or why not
    (``outcome`` a short name for counting, ``reason`` one line), and the seconds spent."""

    text: str = ""
    outcome: str = READ
    reason: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether text was read."""
        return self.outcome == READ


class ImageReader:
    """Reads images of text with an OCR engine in worker processes, within the bounds of
    the module docstring. Thread-safe: ``workers`` images are read at once, from as many
    threads; :meth:`close` (or leaving a ``with`` block) stops the workers."""

    def __init__(
        self,
        engine: str = DEFAULT_ENGINE,
        *,
        max_images: int = defaults.OCR_MAX_IMAGES,
        max_bytes: int = defaults.OCR_MAX_BYTES,
        max_pixels: int = defaults.OCR_MAX_PIXELS,
        seconds: float = defaults.OCR_SECONDS,
        page_seconds: float = defaults.OCR_PAGE_SECONDS,
        max_memory_mb: int = defaults.OCR_MAX_MEMORY_MB,
        workers: int = 1,
        threads: int = 1,
    ) -> None:
        if engine not in ENGINES:
            raise ValueError(f"unknown OCR engine {engine!r} (known: {', '.join(ENGINES)})")
        if min(max_images, max_bytes, max_pixels, max_memory_mb, workers, threads) < 1:
            raise ValueError("OCR bounds, workers and threads must be at least 1")
        if min(seconds, page_seconds) <= 0:
            raise ValueError("OCR time limits must be positive")
        self.engine, self.max_images, self.max_bytes = engine, max_images, max_bytes
        self.max_pixels, self.seconds, self.page_seconds = max_pixels, seconds, page_seconds
        self.unavailable: str | None = unavailable(engine)
        """Why no image can be read here (one line, with what to install), else None."""
        self._idle: queue.SimpleQueue[OcrProcess] = queue.SimpleQueue()
        self._processes = [
            OcrProcess(engine, max_pixels, max_memory_mb, threads) for _ in range(workers)
        ]
        for process in self._processes:
            self._idle.put(process)

    def read(self, data: bytes, seconds: float | None = None) -> OcrResult:
        """The text of one image (its encoded bytes), or why it was not read; at most
        ``seconds`` (default: the reader's) once a worker is free."""
        started = time.monotonic()
        try:
            text = self._read(data, self.seconds if seconds is None else seconds)
        except ImageRefused as exc:
            return OcrResult("", exc.outcome, str(exc), time.monotonic() - started)
        spent = time.monotonic() - started
        if not text.strip():
            return OcrResult("", EMPTY, "shaped like text, but no text was read", spent)
        return OcrResult(text, READ, "", spent)

    def read_page(self, images: Iterable[bytes]) -> list[OcrResult]:
        """:meth:`read` of each of a page's images in order, within the page's bounds: the
        first ``max_images`` of them, while ``page_seconds`` last (each image gets what is
        left, at most ``seconds``)."""
        return list(self.iter_page(images))

    def iter_page(self, images: Iterable[bytes]) -> Iterator[OcrResult]:
        """:meth:`read_page`, one result at a time."""
        deadline = time.monotonic() + self.page_seconds
        for n, data in enumerate(images, 1):
            left = deadline - time.monotonic()
            if n > self.max_images:
                yield OcrResult(
                    "", PAGE_CAP, f"image {n} of its page: at most {self.max_images} are read"
                )
            elif left <= 0:
                yield OcrResult(
                    "", PAGE_TIME, f"the page's {self.page_seconds:g} s of OCR were spent"
                )
            else:
                yield self.read(data, min(self.seconds, left))

    def close(self) -> None:
        """Stop the worker processes (a later read starts them again)."""
        for process in self._processes:
            process.stop()

    def __enter__(self) -> ImageReader:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _read(self, data: bytes, seconds: float) -> str:
        if self.unavailable:
            raise ImageRefused(NO_ENGINE, self.unavailable)
        if len(data) > self.max_bytes:
            raise ImageRefused(TOO_BIG, f"{len(data):,} bytes, over the {self.max_bytes:,} read")
        probe(data, self.max_pixels)  # the header's checks, in this process, before a worker
        process = self._idle.get()
        try:
            return process.read(data, seconds)
        finally:
            self._idle.put(process)
