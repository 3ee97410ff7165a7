"""The OCR worker process, and the handle that bounds it in time and memory.

Decoding and reading a hostile image is done away from the crawl: an :class:`OcrProcess`
runs ``python -m crawler.ocr ENGINE MAX_PIXELS THREADS`` (started on first use; the
engine's models are loaded once and kept for the next image), sends it an image's bytes and
waits at most ``seconds`` for the answer, while a thread reads the resident memory of the
process and its children (Tesseract's) every :data:`MEMORY_SAMPLE_S`. A process that
overruns either bound is killed, and started again for the next image; one that dies is
replaced likewise. Each refusal or failure is an :class:`~crawler.ocr.images.ImageRefused`
with its outcome and one line saying why.

Frames on the pipes are an 8-byte big-endian length and a payload (the framing of
:mod:`crawler.reader_pool`): the image's bytes one way, a JSON answer the other (never a
pickle: the worker handles hostile bytes, so what it says back is read as data only). The
worker's first answer says whether its engine started. It exits when its input closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

from crawler.ocr.images import ImageRefused, decode, text_shape
from crawler.reader_pool import FRAME, _read_exact, _write_all

MEMORY_SAMPLE_S = 0.05
TIMEOUT = "timeout"
MEMORY = "memory"
FAILED = "failed"
NO_ENGINE = "no_engine"
START_SECONDS = 120.0
"""How long the worker may take to start its engine (load the models) before a first image."""


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants now, in MiB (0 once gone)."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            for task in Path(f"/proc/{current}/task").iterdir():
                stack.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


class OcrProcess:
    """One worker process running engine ``engine`` (see the module docstring)."""

    def __init__(self, engine: str, max_pixels: int, max_memory_mb: int, threads: int = 1):
        self.engine, self.max_pixels, self.max_memory_mb = engine, max_pixels, max_memory_mb
        self.threads = threads
        self.start_failure: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._over_memory = threading.Event()

    def read(self, data: bytes, seconds: float) -> str:
        """The text read in ``data``, or :class:`ImageRefused` (the image's checks, or the
        process's bounds: :data:`TIMEOUT`, :data:`MEMORY`, :data:`FAILED`,
        :data:`NO_ENGINE`) after at most ``seconds`` (plus the engine's start when the
        process is not running)."""
        if self.start_failure:
            raise ImageRefused(NO_ENGINE, self.start_failure)
        proc = self._running()
        assert proc.stdin is not None and proc.stdout is not None
        done = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(proc.pid, done), daemon=True)
        watcher.start()
        try:
            _write_all(proc.stdin, FRAME.pack(len(data)))
            _write_all(proc.stdin, data)
            answer = self._answer(proc.stdout, time.monotonic() + seconds)
        except TimeoutError as exc:
            self.stop()
            raise ImageRefused(TIMEOUT, f"not read within {seconds:g} s") from exc
        except (OSError, EOFError, ValueError) as exc:
            self.stop()
            if self._over_memory.is_set():
                raise ImageRefused(
                    MEMORY, f"reading it took over {self.max_memory_mb:,} MB of memory"
                ) from exc
            raise ImageRefused(FAILED, f"the OCR process died ({exc})") from exc
        finally:
            done.set()
            watcher.join()
        if "text" in answer:
            return str(answer["text"])
        raise ImageRefused(str(answer.get("outcome", FAILED)), str(answer.get("reason", "")))

    def stop(self) -> None:
        """Kill the process, if running (the next :meth:`read` starts another)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)  # Tesseract's processes too
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()

    def _running(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self.stop()
        command = [sys.executable, "-m", "crawler.ocr", self.engine,
                   str(self.max_pixels), str(self.threads)]  # fmt: skip
        self._proc = proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
            start_new_session=True,
        )  # fmt: skip
        assert proc.stdout is not None
        try:
            hello = self._answer(proc.stdout, time.monotonic() + START_SECONDS)
        except (TimeoutError, OSError, EOFError, ValueError) as exc:
            hello = {"error": f"it did not start ({type(exc).__name__})"}
        if "error" in hello:
            self.stop()
            self.start_failure = f"the OCR engine {self.engine} failed to start: {hello['error']}"
            raise ImageRefused(NO_ENGINE, self.start_failure)
        return proc

    @staticmethod
    def _answer(stream: BinaryIO, deadline: float) -> dict[str, Any]:
        (size,) = FRAME.unpack(_read_exact(stream, FRAME.size, deadline))
        answer = json.loads(_read_exact(stream, size, deadline))
        if not isinstance(answer, dict):
            raise ValueError("a malformed answer")
        return answer

    def _watch(self, pid: int, done: threading.Event) -> None:
        self._over_memory.clear()
        while not done.wait(MEMORY_SAMPLE_S):
            if tree_rss_mb(pid) > self.max_memory_mb:
                self._over_memory.set()
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, 9)
                return


# --- the worker process ---------------------------------------------------------------------------
def read_image(data: bytes, engine: Any, max_pixels: int) -> str:
    """Decode ``data``, check its shape, read its strips with ``engine``; the text, lines
    joined (:class:`ImageRefused` when the image is refused)."""
    grey = decode(data, max_pixels)
    shape = text_shape(grey)
    texts = [engine.read(grey[top:bottom]) for top, bottom in shape.strips]
    return "\n".join(text for text in texts if text)


def serve(source: BinaryIO, sink: BinaryIO, engine_name: str, max_pixels: int, threads: int):
    """The worker's loop: start the engine and say so, then an image in, an answer out,
    until ``source`` closes."""
    from PIL import Image

    from crawler.ocr.engines import load

    Image.MAX_IMAGE_PIXELS = max_pixels  # this process's own Pillow: its bomb check too
    try:
        engine = load(engine_name, threads)
        _send(sink, {"ready": engine_name})
    except Exception as exc:
        _send(sink, {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]})
        return
    while True:
        header = source.read(FRAME.size)
        if len(header) < FRAME.size:
            return
        (size,) = FRAME.unpack(header)
        data = source.read(size)
        try:
            answer: dict[str, Any] = {"text": read_image(data, engine, max_pixels)}
        except ImageRefused as exc:
            answer = {"outcome": exc.outcome, "reason": str(exc)}
        except Exception as exc:  # the engine's own failure, on this image
            reason = f"the OCR engine failed: {type(exc).__name__}: {exc}".splitlines()[0]
            answer = {"outcome": FAILED, "reason": reason}
        _send(sink, answer)


def _send(sink: BinaryIO, answer: dict[str, Any]) -> None:
    payload = json.dumps(answer, ensure_ascii=False).encode("utf-8")
    sink.write(FRAME.pack(len(payload)))
    sink.write(payload)
    sink.flush()


def main() -> None:
    """``python -m crawler.ocr ENGINE MAX_PIXELS THREADS`` on the real stdin and
    stdout; anything else printed goes to stderr."""
    engine, max_pixels, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    source = os.fdopen(os.dup(0), "rb")
    sink = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        serve(source, sink, engine, max_pixels, threads)


if __name__ == "__main__":
    main()
