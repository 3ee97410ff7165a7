"""``fptrack scan --serve``: the admin platform over the scan's in-memory results."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

from tests.support.waits import collect, stopped

ROOT = Path(__file__).resolve().parents[2]
CTRL_C_INTERRUPTS = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
"""Ctrl-C interrupts the command, as in a terminal, even where the test runs with SIGINT
ignored (a background job of a shell without job control: its children inherit that)."""


def test_scan_then_serve_the_results(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "FPTRACK_REDIS_URL"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-X",
            "faulthandler",
            "-c",
            CTRL_C_INTERRUPTS + "import sys; from admin.cli import main; sys.exit(main())",
            *("scan", "--works", "samples/works", "--site-dir", "samples/site"),
            *("--json", str(tmp_path / "scan.json"), "--serve", "127.0.0.1:0"),
        ],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        line = ""
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("admin: "):
                break
        collect(proc.stderr, lines)
        found = re.search(r"admin: (http://\S+)  user admin, password (\S+)", line)
        assert found, f"no admin line; last: {line!r}"
        base, password = found.groups()
        opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        login = opener.open(base + "login").read().decode()
        token = re.search(r'name="csrf_token" value="([^"]+)"', login).group(1)
        form = {"username": "admin", "password": password, "csrf_token": token}
        opener.open(base + "login", urllib.parse.urlencode(form).encode()).read()
        listing = opener.open(base + "matches/").read().decode()
        assert len(re.findall(r'<td class="status-new">awaiting review</td>', listing)) == 9
        dashboard = opener.open(base + "").read().decode()
        assert re.search(r'id="total-infringing">9<', dashboard)
        # the API and its document: a token made in the admin reads the same matches
        document = json.loads(urllib.request.urlopen(base + "api/v1/openapi.json").read())
        assert "/api/v1/matches" in document["paths"]
        tokens = opener.open(base + "tokens/").read().decode()
        token = re.search(r'name="csrf_token" value="([^"]+)"', tokens).group(1)
        form = {"name": "script", "role": "viewer", "csrf_token": token}
        made = opener.open(base + "tokens/", urllib.parse.urlencode(form).encode()).read()
        # (the answer is the list, after the redirect: the secret shown once)
        secret = re.search(r'id="token-secret">([^<]+)<', made.decode()).group(1)
        request = urllib.request.Request(
            base + "api/v1/matches?limit=200", headers={"Authorization": f"Bearer {secret}"}
        )
        assert len(json.loads(urllib.request.urlopen(request).read())["matches"]) == 9
    finally:
        status = stopped(proc, signal.SIGINT, 30, lines)
    assert status == 0


def test_sigterm_leaves_no_key_in_redis(tmp_path: Path, redis_client) -> None:
    """With FPTRACK_REDIS_URL set the scan's indexes are on the real server; SIGTERM (a
    service manager stopping the command) deletes them as Ctrl-C does."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-X",
            "faulthandler",
            "-c",
            CTRL_C_INTERRUPTS + "import sys; from admin.cli import main; sys.exit(main())",
            *("scan", "--works", "samples/works", "--site-dir", "samples/site"),
            *("--json", str(tmp_path / "scan.json"), "--serve", "127.0.0.1:0"),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("admin: "):
                break
        collect(proc.stderr, lines)
        assert list(redis_client.scan_iter("fptrack-scan-*", count=1000)), "no key to clean"
    finally:
        status = stopped(proc, signal.SIGTERM, 30, lines)
    assert status == 0
    assert not list(redis_client.scan_iter("fptrack-scan-*", count=1000))
