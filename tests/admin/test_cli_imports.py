"""``fptrack`` starts light (issue 24): ``import admin.cli``, ``--version``, ``--help`` and
each command's ``--help`` load no database driver, Scrapy, numba or Celery, except what a
command's options would truly need (:data:`NEEDED`); ``fptrack check``, against the test
servers, loads the drivers and Celery but no numba, Scrapy or matching engine. Each runs in a
fresh Python process, since the test session itself has imported everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
import redis
from pymongo.database import Database

from admin.commands import COMMANDS
from admin.health import NAMES
from tests.support.cli import ROOT

HEAVY = ("pymongo", "redis", "scrapy", "numba", "celery")
NEEDED: dict[str, set[str]] = {}
"""Heavy libraries a command's options need, by command: none (the scan's defaults are in
:mod:`admin.scan_defaults` and :mod:`crawler.defaults`, which import nothing)."""

PROBE = """
import contextlib, io, json, sys
from admin.cli import main
argv = json.loads(sys.argv[1])
if argv:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 0, exc.code
print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)))
"""


def probe(code: str, *args: str) -> Any:
    """What ``code`` prints as JSON, run in a fresh interpreter (nothing imported yet)."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def loaded(*argv: str) -> set[str]:
    """The heavy libraries in ``sys.modules`` after ``fptrack ARGV`` (nothing: the import)."""
    return set(probe(PROBE.format(heavy=HEAVY), json.dumps(argv)))


def test_importing_the_cli_loads_nothing_heavy() -> None:
    assert loaded() == set()


@pytest.mark.parametrize("argv", [("--version",), ("--help",)], ids=" ".join)
def test_version_and_help_load_nothing_heavy(argv: tuple[str, ...]) -> None:
    assert loaded(*argv) == set()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_commands_help_loads_only_what_its_options_need(command: str) -> None:
    assert loaded(command, "--help") == NEEDED.get(command, set())


CHECK_PROBE = """
import contextlib, io, json, sys
from admin.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(["check"])
engine = "matcher.matching.engine"
modules = sorted(m for m in sys.modules if m.split(".")[0] in {heavy} or m == engine)
print(json.dumps({{"status": status, "lines": out.getvalue().splitlines(), "modules": modules}}))
"""


def test_check_loads_no_fingerprint_kernels_nor_scrapy(
    mongo_db: Database, redis_client: redis.Redis
) -> None:
    """``fptrack check`` against the test servers runs every check (none skipped for a server
    that is down) and loads the drivers and Celery it talks through, never numba, Scrapy or
    the matching engine: its indexes check reads the indexes without the engine."""
    ran = probe(CHECK_PROBE.format(heavy=set(HEAVY)))
    states = {line.split()[1]: line.split()[0] for line in ran["lines"]}
    assert list(states) == list(NAMES)
    assert all(states[name] == "ok" for name in ("mongodb", "redis", "broker", "indexes")), ran
    assert not any("not checked" in line for line in ran["lines"]), ran["lines"]
    roots = {m.split(".")[0] for m in ran["modules"]}
    assert {"pymongo", "redis", "celery"} <= roots  # it did talk to the servers
    assert not roots & {"numba", "scrapy"}, ran["modules"]
    assert "matcher.matching.engine" not in ran["modules"]
