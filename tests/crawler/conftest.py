"""Fixtures of the crawler suite: a recording ingest and crawl settings for tests.

Crawls run in this process on the one shared reactor (:mod:`crawler.reactor`), as the
embedded scan runs them; AutoThrottle is off and timeouts are short so the suite is fast.
"""

from __future__ import annotations

from typing import Any

import pytest

from crawler import reactor
from tests.support.crawl import RecordingIngest

# Installed before anything imports twisted.internet.reactor (get_crawler needs one).
reactor.install()


@pytest.fixture
def ingest() -> RecordingIngest:
    return RecordingIngest()


@pytest.fixture
def test_overrides(ingest: RecordingIngest) -> dict[str, Any]:
    """Settings overrides for fast, in-process crawls into ``ingest``."""
    return {
        "FPTRACK_INGEST": ingest,
        "AUTOTHROTTLE_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 5,
        "LOG_LEVEL": "WARNING",
    }
