"""Smoke test of ``bench/cli_bench.py --services``: it starts a deployment of its own
(``redis-server`` and SecantusDB on free ports, one ``fptrack worker`` and ``fptrack
beat``), times ``fptrack check`` there, healthy (exit status 0), beside ``python -c pass``,
and stops every process it started. It never asserts a speed."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bench import cli_bench

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
    result = cli_bench.main(["--services", "--only", "check", "--runs", "1", "--json", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert result["services"] == "started here"
    assert set(result["cases"]) == {"check", "check --help"}
    check = result["cases"]["check"]
    assert check["exit"] == [0]  # every check healthy, the worker answering its ping
    assert (
        check["median"] > 0
        and check["ratio"] == check["median"] / (result["python_c_pass"]["median"])
    )
    servers = result["servers"]
    assert set(servers) == set(cli_bench.SERVER_VARIABLES)
    assert not any(answers(url) for url in servers.values())  # all stopped
