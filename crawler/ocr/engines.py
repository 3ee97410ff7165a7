"""The OCR engines fptrack reads images with, behind one small interface.

An engine reads one strip of a text image (:func:`crawler.ocr.images.text_shape`'s: whole
lines, grey levels) into text, one line of text per line read. Two are known
(:data:`ENGINES`):

* ``rapidocr``, the default: PaddleOCR's PP-OCRv4 mobile models (detection and recognition,
  Simplified Chinese with the Traditional forms it was trained on) run by onnxruntime, from
  the wheel ``rapidocr-onnxruntime``, which carries the models (no download, ever): a
  dependency of fptrack;
* ``tesseract``: Debian's Tesseract 5 command (``tesseract-ocr`` with
  ``tesseract-ocr-chi-sim`` and ``tesseract-ocr-chi-tra``), run once per strip with both
  scripts' data (``chi_sim+chi_tra``: a page's script is not known in advance).

``docs/ocr.md`` gives the figures behind the choice (``bench/ocr_bench.py``).
:func:`unavailable` says in one line why an engine cannot run here, with what to install;
:func:`load` starts one (in the OCR worker process: :mod:`crawler.ocr.worker`).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

RAPIDOCR = "rapidocr"
TESSERACT = "tesseract"
ENGINES = (RAPIDOCR, TESSERACT)
DEFAULT_ENGINE = RAPIDOCR
INSTALL_HINTS = {
    RAPIDOCR: "pip install rapidocr-onnxruntime (a dependency of fptrack: reinstall fptrack)",
    TESSERACT: "apt-get install tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-chi-tra",
}
RAPIDOCR_DETECT_PX = 2048
TESSERACT_LANGUAGES = ("chi_sim", "chi_tra")
TESSERACT_SECONDS = 600.0
"""A backstop only: the worker's deadline (``crawler.ocr.ImageReader``) is the real bound."""

_CJK_GAP = re.compile(r"(?<=[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]) +"
                      r"(?=[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f])")  # fmt: skip


class Engine(Protocol):
    """Reads one strip of a text image (2-D ``uint8`` grey levels) into text, one line read
    per line."""

    name: str

    def read(self, strip: np.ndarray) -> str: ...


def unavailable(name: str) -> str | None:
    """Why engine ``name`` cannot read images here (one line, with what to install), or
    None when it can (its start may still fail; the worker then says why)."""
    if name == RAPIDOCR:
        for module in ("rapidocr_onnxruntime", "onnxruntime", "cv2"):
            if importlib.util.find_spec(module) is None:
                return f"the OCR engine rapidocr is not installed ({INSTALL_HINTS[RAPIDOCR]})"
        return None
    if name == TESSERACT:
        if shutil.which("tesseract") is None:
            return f"the OCR engine tesseract is not installed ({INSTALL_HINTS[TESSERACT]})"
        missing = [lang for lang in TESSERACT_LANGUAGES if lang not in tesseract_languages()]
        if missing:
            return f"tesseract has no {'+'.join(missing)} data ({INSTALL_HINTS[TESSERACT]})"
        return None
    return f"unknown OCR engine {name!r} (known: {', '.join(ENGINES)})"


def tesseract_languages() -> set[str]:
    """The languages ``tesseract --list-langs`` names (empty when it fails)."""
    try:
        done = subprocess.run(
            ["tesseract", "--list-langs"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {line.strip() for line in done.stdout.splitlines()[1:] if line.strip()}


def load(name: str, threads: int = 1) -> Engine:
    """Engine ``name`` started, using at most ``threads`` threads."""
    if name == RAPIDOCR:
        return RapidOCREngine(threads)
    if name == TESSERACT:
        return TesseractEngine(threads)
    raise ValueError(f"unknown OCR engine {name!r} (known: {', '.join(ENGINES)})")


def tidy(text: str) -> str:
    """Lines stripped, blank ones dropped, and the spaces an engine puts between two CJK
    characters removed (Tesseract spaces out Chinese glyphs).

    >>> tidy("灯 塔 守 望\\n\\n  Line two ")
    '灯塔守望\\nLine two'
    """
    lines = (_CJK_GAP.sub("", line.strip()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


class RapidOCREngine:
    """rapidocr-onnxruntime's pipeline (text detection, then recognition of each line
    found; no angle classifier: screenshots are upright), onnxruntime on ``threads``
    threads; lines below its confidence of 0.5 are dropped.

    Detection sees a strip at its own scale, shrunk only past :data:`RAPIDOCR_DETECT_PX` on
    its longer side (the package's default instead enlarges every image to 736 pixels on its
    shorter side, which made a strip of a few lines several times larger: on the benchmark's
    images it read 25% worse, with 37% more CPU and 60% more memory); recognition reads each
    line from the strip as given (up to :data:`~crawler.ocr.images.MAX_WIDTH` wide)."""

    name = RAPIDOCR

    def __init__(self, threads: int = 1) -> None:
        from rapidocr_onnxruntime import RapidOCR

        from crawler.ocr.images import MAX_WIDTH

        self._ocr = RapidOCR(
            intra_op_num_threads=threads,
            inter_op_num_threads=threads,
            use_cls=False,
            max_side_len=MAX_WIDTH,
            det_limit_type="max",
            det_limit_side_len=RAPIDOCR_DETECT_PX,
        )

    def read(self, strip: np.ndarray) -> str:
        found, _ = self._ocr(strip)
        return tidy("\n".join(line[1] for line in found or ()))


class TesseractEngine:
    """Debian's ``tesseract`` command on one strip at a time (a PNG on its standard input),
    ``chi_sim+chi_tra``, page segmentation mode 6 (one block of text), OpenMP limited to
    ``threads`` (``OMP_THREAD_LIMIT``, set for the command alone by ``env``)."""

    name = TESSERACT

    def __init__(self, threads: int = 1) -> None:
        problem = unavailable(TESSERACT)
        if problem:
            raise RuntimeError(problem)
        self._command = ["env", f"OMP_THREAD_LIMIT={threads}", "tesseract", "stdin", "stdout",
                         "-l", "+".join(TESSERACT_LANGUAGES), "--psm", "6"]  # fmt: skip

    def read(self, strip: np.ndarray) -> str:
        import io

        from PIL import Image

        png = io.BytesIO()
        Image.fromarray(strip).save(png, "PNG")
        done = subprocess.run(
            self._command, input=png.getvalue(), capture_output=True,
            timeout=TESSERACT_SECONDS, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            error = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise RuntimeError(f"tesseract exited {done.returncode}: {error[-1] if error else ''}")
        return tidy(done.stdout.decode("utf-8", "replace"))
