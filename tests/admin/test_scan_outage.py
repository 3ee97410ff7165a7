"""The embedded scan on a real Redis (``FPTRACK_REDIS_URL``) that stops in the middle of
the crawl and comes back empty: the pages that met the outage are matched once it is back,
the scan finds every copy it finds without the outage, and the outage is a warning, not an
error (the scan exits 0)."""

from __future__ import annotations

import re
import time
from pathlib import Path

from admin.scan import run_scan, serve_directory
from matcher.index.maintenance import drop_indexes
from tests.servers.session import own_redis

ROOT = Path(__file__).resolve().parents[2]
WORKS = ROOT / "samples" / "works"
SITE = ROOT / "samples" / "site"


def pairs(result) -> set[tuple[str, str]]:
    return {(m["url"], m["work"]) for m in result.matches}


def test_pages_that_met_a_redis_restart_are_matched_when_it_is_back() -> None:
    server = own_redis()
    server.start()
    url = f"redis://127.0.0.1:{server.port}/0"
    stopped: list[float] = []
    waits: list[str] = []
    seen = []

    def storm(_: str) -> None:
        """Stop Redis at the third page: the pages after it meet the outage."""
        seen.append(1)
        if len(seen) == 3:
            server.stop()
            stopped.append(time.monotonic())

    def on_wait(line: str) -> None:
        """The scan waits for Redis: start it again (empty) two seconds after it stopped,
        from this thread (the test session's servers die with the thread that started them).
        Only here, so that the scan has to wait the outage out however fast it crawls."""
        waits.append(line)
        if len(stopped) == 1 and time.monotonic() - stopped[0] >= 2:
            server.start()
            stopped.append(time.monotonic())

    try:
        with serve_directory(SITE) as site:
            calm, engine = run_scan(WORKS, [site], redis_url=url)
            drop_indexes(engine)
            stormy, engine = run_scan(WORKS, [site], redis_url=url, on_page=storm, on_wait=on_wait)
            drop_indexes(engine)
    finally:
        server.stop()
    assert len(stopped) == 2 and waits  # the outage happened, and the scan waited it out
    assert calm.matches and pairs(stormy) == pairs(calm)
    assert stormy.errors == [] and stormy.pages == calm.pages
    assert calm.warnings == []
    [warning] = stormy.warnings
    assert re.fullmatch(
        r"\d+ page\(s\) met an outage of the servers during the crawl \(Index\w+: .*\) "
        r"and were matched once it was over",
        warning,
    ), warning
