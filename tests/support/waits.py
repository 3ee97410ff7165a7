"""Waiting in a test: :func:`bench.net.wait_until`, failing the test when time runs out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bench.net import wait_until


def eventually(condition: Callable[[], Any], timeout: float, what: str) -> None:
    """Poll ``condition`` (every 0.1 s) until it holds; fail the test, naming ``what``, after
    ``timeout`` seconds."""
    if not wait_until(condition, timeout, interval=0.1):
        pytest.fail(f"timed out after {timeout} s waiting for {what}")
