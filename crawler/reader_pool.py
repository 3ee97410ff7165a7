"""Pages read in worker processes, each under a time limit, off the crawl's reactor thread.

A :class:`ReaderPool` owns ``workers`` reader processes (``python -m crawler.reader_pool``,
started on first use, one page at a time each) and as many threads, one per process, plus
one thread that reads big pages one at a time (:class:`ReaderPool`). The spider submits a
:class:`~crawler.reading.ReadJob`; a thread hands it to an idle process and waits at most
``seconds`` for its :class:`~crawler.reading.Reading` (the clock starts once the process
is ready: its start, within :data:`START_SECONDS`, is not the page's time). A process that
overruns is killed, one that dies is replaced likewise, and the page (or one whose reading
raised) is read the cheap way instead (``read_page(job, quick=True)``: the densest block,
linear in the page's size) by a reader process (started afresh), within
:data:`QUICK_TIMES` times ``seconds``, so that reading a big page never takes the crawl's
own memory (a page of 200,000 links costs its reader about 150 MB). Only when that fails
too is a page of at most :data:`BIG_PAGE_BYTES` read the cheap way in the thread; a bigger
one is given up, with the reason (``Reading.undecodable``). A page built to be slow to
extract costs ``seconds`` of full reading, then a reading linear in its size, and is never
lost without its reason.

Frames on the pipes are an 8-byte big-endian length and a pickle; the pickles are this
process's own jobs and its own reader's results. A job's body follows its pickle as a frame
of its own, never copied into it. A reader says it is ready with an empty frame, exits when
its input closes (its parent exited) and runs in a session of its own, so a Ctrl-C meant
for the crawl does not reach it mid-page.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import pickle
import queue
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import BinaryIO

from crawler.reading import Reading, ReadJob, read_page

FRAME = struct.Struct("!Q")
TRIM_AFTER_BYTES = 1 << 20
"""A reader hands its freed memory back to the system after a job bigger than this."""
BIG_PAGE_BYTES = 2 << 20
"""HTML bodies over this are read one at a time (:class:`ReaderPool`), and never in the crawl's
own process."""
START_SECONDS = 60.0
"""A reader process must be ready (its modules imported) within this many seconds."""
QUICK_TIMES = 6
"""A page read the cheap way after its reader was lost has this many times the page's time
(linear in its size: 5 s for a page of 200,000 links on an idle machine)."""
TIMEOUT = "timeout"
FAILED = "failed"
DEADLINE = "deadline"


class ReaderLost(Exception):
    """A reader process overran its time limit, died, or raised; it has been stopped."""

    def __init__(self, outcome: str, detail: str) -> None:
        super().__init__(detail)
        self.outcome = outcome  # TIMEOUT or FAILED


class ReaderProcess:
    """One reader process, started when first needed and again after it is stopped."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None

    def read(
        self, job: ReadJob, seconds: float, quick: bool = False, not_after: float | None = None
    ) -> Reading:
        """``job``'s reading (the cheap way with ``quick``), or :class:`ReaderLost` after at
        most ``seconds`` once the process is ready (it is started when not running; with
        ``not_after``, a ``time.monotonic()`` instant, never later than that)."""
        proc = self._running(not_after)
        assert proc.stdin is not None and proc.stdout is not None
        payload = pickle.dumps((replace(job, body=b""), quick), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            _write_all(proc.stdin, FRAME.pack(len(payload)))
            _write_all(proc.stdin, payload)
            _write_all(proc.stdin, FRAME.pack(len(job.body)))
            _write_all(proc.stdin, job.body)
            del payload
            deadline = time.monotonic() + seconds
            (size,) = FRAME.unpack(_read_exact(proc.stdout, FRAME.size, deadline))
            outcome = pickle.loads(_read_exact(proc.stdout, size, deadline))
        except TimeoutError as exc:
            self.stop()
            raise ReaderLost(TIMEOUT, f"no reading within {seconds:g} s") from exc
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            self.stop()
            raise ReaderLost(FAILED, f"the reader process died: {exc}") from exc
        if isinstance(outcome, str):  # the reader's own error message
            raise ReaderLost(FAILED, outcome)
        return outcome

    def stop(self) -> None:
        """Kill the process, if running (the next :meth:`read` starts another)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()

    def _running(self, not_after: float | None = None) -> subprocess.Popen[bytes]:
        """The process, started and ready (its empty frame read) when it was not running;
        :class:`ReaderLost` when it is not ready within :data:`START_SECONDS` (or by
        ``not_after``)."""
        if self._proc is None or self._proc.poll() is not None:
            self.stop()
            self._proc = proc = subprocess.Popen(
                [sys.executable, "-m", "crawler.reader_pool"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
            assert proc.stdout is not None
            ready_by = time.monotonic() + START_SECONDS
            if not_after is not None:
                ready_by = min(ready_by, not_after)
            try:
                _read_exact(proc.stdout, FRAME.size, ready_by)
            except (TimeoutError, OSError, EOFError) as exc:
                self.stop()
                raise ReaderLost(FAILED, "the reader process did not start") from exc
        return self._proc


class ReaderPool:
    """``workers`` reader processes, as many threads, and one thread more for big pages
    (see the module docstring).

    Big pages (HTML bodies over :data:`BIG_PAGE_BYTES`) are read one at a time, in their
    own thread: reading costs about 30 times a page's size in memory (a 6 MB page of 200,000
    links takes a reader from 90 MB to 250 MB), so a site of big pages costs the crawl one
    such reading at once, not one per reader, and its small pages do not wait behind them."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError("a reader pool needs at least one worker")
        self._idle: queue.SimpleQueue[ReaderProcess] = queue.SimpleQueue()
        self._readers = [ReaderProcess() for _ in range(workers)]
        for reader in self._readers:
            self._idle.put(reader)
        self._threads = ThreadPoolExecutor(workers, thread_name_prefix="fptrack-reader")
        self._big = ThreadPoolExecutor(1, thread_name_prefix="fptrack-reader-big")

    def submit(
        self, job: ReadJob, seconds: float, not_after: float | None = None
    ) -> Future[tuple[Reading, str]]:
        """A future of ``job``'s reading and ``""``, or of its cheap reading and why
        (:data:`TIMEOUT` or :data:`FAILED`). With ``not_after`` (a ``time.monotonic()``
        instant: the crawl's deadline) the page is not read once it has passed, whether it
        waited for a reader or was being read: an empty reading and :data:`DEADLINE`."""
        big = len(job.body) > BIG_PAGE_BYTES and not job.plain
        return (self._big if big else self._threads).submit(self.read, job, seconds, not_after)

    def read(
        self, job: ReadJob, seconds: float, not_after: float | None = None
    ) -> tuple[Reading, str]:
        """What :meth:`submit`'s future holds, in the calling thread."""
        reader = self._idle.get()
        try:
            return self._read(reader, job, seconds, not_after)
        finally:
            self._idle.put(reader)

    def _read(
        self, reader: ReaderProcess, job: ReadJob, seconds: float, not_after: float | None
    ) -> tuple[Reading, str]:
        """``job`` read by ``reader``; after a reader lost, read the cheap way by a fresh
        one, else (a page of at most :data:`BIG_PAGE_BYTES`) in this thread."""
        lost: ReaderLost | None = None
        for quick in (False, True):
            if quick:
                seconds *= QUICK_TIMES
            if not_after is not None:
                left = not_after - time.monotonic()
                if left <= 0:
                    return Reading(), DEADLINE
                seconds = min(seconds, left)
            try:
                reading = reader.read(job, seconds, quick=quick, not_after=not_after)
            except ReaderLost as exc:
                if lost is None:
                    lost = exc
                continue
            if lost is not None:
                return reading, lost.outcome
            return reading, ""
        assert lost is not None
        if not_after is not None and time.monotonic() >= not_after:
            return Reading(), DEADLINE
        if len(job.body) > BIG_PAGE_BYTES:
            why = f"unreadable ({lost}; not read the quick way either, by a reader process)"
            return Reading(undecodable=why), lost.outcome
        try:
            return read_page(job, quick=True), lost.outcome
        except Exception as exc:  # counted by the spider as undecodable, with the reason
            return Reading(undecodable=f"unreadable ({lost}; then {exc})"), lost.outcome

    def close(self) -> None:
        """Stop every reader process; pages still queued are not read."""
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._big.shutdown(wait=False, cancel_futures=True)
        for reader in self._readers:
            reader.stop()


_pools: dict[int, ReaderPool] = {}
_pools_lock = threading.Lock()


def shared_pool(workers: int) -> ReaderPool:
    """This process's pool of ``workers`` readers, shared by its crawls (stopped at exit)."""
    with _pools_lock:
        pool = _pools.get(workers)
        if pool is None:
            pool = _pools[workers] = ReaderPool(workers)
            if len(_pools) == 1:
                atexit.register(_close_all)
        return pool


def _close_all() -> None:
    with _pools_lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()


def _write_all(stream: BinaryIO, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[stream.write(view) or 0 :]


def _read_exact(stream: BinaryIO, size: int, deadline: float) -> bytes:
    chunks, got, fd = [], 0, stream.fileno()
    while got < size:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, min(size - got, 1 << 20))
        if not chunk:
            raise EOFError("the pipe closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def serve(source: BinaryIO, sink: BinaryIO) -> None:
    """The reader process's loop: an empty frame (ready), then a job in (its pickle, the
    cheap way or not, then its body), its reading (or an error message) out, until
    ``source`` closes."""
    sink.write(FRAME.pack(0))
    sink.flush()
    while True:
        header = source.read(FRAME.size)
        if len(header) < FRAME.size:
            return
        (size,) = FRAME.unpack(header)
        job, quick = pickle.loads(source.read(size))
        header = source.read(FRAME.size)
        if len(header) < FRAME.size:
            return
        (size,) = FRAME.unpack(header)
        job = replace(job, body=source.read(size))
        try:
            outcome: Reading | str = read_page(job, quick=quick)
        except Exception as exc:  # the parent reads the page the quick way
            outcome = f"{type(exc).__name__}: {exc}"
        payload = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
        sink.write(FRAME.pack(len(payload)))
        sink.write(payload)
        sink.flush()
        if size > TRIM_AFTER_BYTES:
            del job, outcome, payload
            _release_free_memory()


def _release_free_memory() -> None:
    """Hand the memory freed after reading a big page back to the system (glibc's
    ``malloc_trim``; elsewhere nothing): a page of 200,000 links takes a reader from about
    90 MB to 250 MB while it is read, and glibc would otherwise keep most of it."""
    if _TRIM is not None:
        _TRIM(0)


def _malloc_trim() -> Callable[[int], int] | None:
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL("libc.so.6").malloc_trim
    return None


_TRIM = _malloc_trim() if sys.platform.startswith("linux") else None


def main() -> None:
    """Serve on the real stdin and stdout; anything else printed goes to stderr."""
    source = os.fdopen(os.dup(0), "rb")
    sink = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        serve(source, sink)


if __name__ == "__main__":
    main()
