"""Waiting in a test: :func:`tests.servers.net.wait_until`, failing the test when time runs out; a
process stopped by a signal, its stacks shown when it does not exit."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO, Any

import pytest

from tests.servers.net import wait_until


def eventually(condition: Callable[[], Any], timeout: float, what: str) -> None:
    """Poll ``condition`` (every 0.1 s) until it holds; fail the test, naming ``what``, after
    ``timeout`` seconds."""
    if not wait_until(condition, timeout, interval=0.1):
        pytest.fail(f"timed out after {timeout} s waiting for {what}")


def stopped(proc: subprocess.Popen[str], sig: int, timeout: float, lines: list[str]) -> int:
    """Send ``sig`` to ``proc`` (a Python process started with ``-X faulthandler``) and wait
    ``timeout`` seconds for its exit status. A process still running then is made to print
    every thread's stack (SIGABRT, which faulthandler answers) and the test fails with it:
    ``lines``, the process's stderr as a reader thread collects it (:func:`collect`)."""
    proc.send_signal(sig)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        proc.wait(10)
        time.sleep(0.5)  # the reader thread drains the pipe
        pytest.fail(f"no exit {timeout} s after signal {sig}; stderr:\n" + "".join(lines[-200:]))


def collect(stream: IO[str], lines: list[str]) -> threading.Thread:
    """A daemon thread appending what ``stream`` gives to ``lines`` until it closes, so the
    pipe never fills and blocks the process writing into it."""
    thread = threading.Thread(target=lambda: lines.extend(stream), daemon=True)
    thread.start()
    return thread
