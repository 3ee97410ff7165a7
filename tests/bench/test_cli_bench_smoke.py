"""Smoke test of ``bench/cli_bench.py --services``: it starts a deployment of its own
(``redis-server`` and SecantusDB on free ports, one ``fptrack worker`` and ``fptrack
beat``), times ``fptrack check`` there, healthy (exit status 0), beside ``python -c pass``,
and stops every process it started. It never asserts a speed."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.benchmarks import run_benchmark

SERVER_VARIABLES = {"FPTRACK_MONGO_URI", "FPTRACK_REDIS_URL", "FPTRACK_BROKER_URL"}
"""The settings naming ``check``'s servers (the CLI benchmark's ``SERVER_VARIABLES``)."""

pytestmark = pytest.mark.bench


def answers(url: str) -> bool:
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=1).close()
    except OSError:
        return False
    return True


def test_check_is_timed_against_services_it_starts_and_stops(tmp_path: Path) -> None:
    out = tmp_path / "cli.json"
    result = run_benchmark("cli_bench", "--services", "--only", "check", "--runs", "1", out=out)
    assert result["services"] == "started here"
    assert set(result["cases"]) == {"check", "check --help"}
    check = result["cases"]["check"]
    assert check["exit"] == [0]  # every check healthy, the worker answering its ping
    assert (
        check["median"] > 0
        and check["ratio"] == check["median"] / (result["python_c_pass"]["median"])
    )
    servers = result["servers"]
    assert set(servers) == SERVER_VARIABLES
    assert not any(answers(url) for url in servers.values())  # all stopped
