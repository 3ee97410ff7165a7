"""``python -m crawler.run`` as a real subprocess: exit codes and one-line errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "crawler.run", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("site_json", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"name": "x", "start_urls": ["ftp://x.test/"]}', "is not an http(s) URL"),
        ('{"name": "x", "start_urls": ["http://x.test/"], "colour": "red"}', "unknown site"),
        ('{"name": "x", "start_urls": ["http://x.test/"], "content_selector": "div[["}', "div[["),
        ('["http://x.test/"]', "must be"),
    ],
)
def test_bad_configuration_exits_2_with_one_line(site_json: str, message: str) -> None:
    done = run("--site-json", site_json)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("crawler.run: bad site configuration:")
    assert message in lines[0]
    assert done.stdout == ""


def test_missing_argument_is_a_usage_error() -> None:
    done = run()
    assert done.returncode == 2
    assert "--site-json" in done.stderr


def test_unreachable_site_writes_stats_and_exits_1(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    site = {"name": "dead", "start_urls": [f"http://127.0.0.1:{port}/"], "obey_robots": False}
    stats_path = tmp_path / "stats.json"
    done = run("--site-json", json.dumps(site), "--stats-json", str(stats_path))
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"crawler.run: site dead: start URL http://127.0.0.1:{port}/: no answer"
        " (DownloadConnectionRefusedError"
    )
    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    assert stats["fptrack/errors/DownloadConnectionRefusedError"] == 1
    assert stats["finish_reason"] == "finished"
