"""No traceback from any command: every command with the stores down, bad arguments,
unreadable files. Each runs as an operator runs it, in a fresh process, and must end with
one error line and exit status 1 or 2; with the stores down, within 2 s.

The list of commands comes from the parser itself, so a new command without an entry here
fails :func:`test_every_command_is_in_the_set`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis
from pymongo.database import Database

from tests.admin.cli_support import DEAD_MONGO, DEAD_REDIS, ROOT, Ran, fptrack
from tests.admin.test_cli_parser import LEAVES

SAMPLE = str(ROOT / "samples" / "works" / "lighthouse.txt")
STORES_DOWN = {
    "FPTRACK_MONGO_URI": DEAD_MONGO,
    "FPTRACK_REDIS_URL": DEAD_REDIS,
    "FPTRACK_BROKER_URL": DEAD_REDIS,
}
OUTAGE_SECONDS = 10.0
"""Far below the clients' own timeouts (pymongo waits 30 s to select a server, a Celery
connection retries for longer): a command over it waited for a timeout instead of
answering at once. Not a speed figure: a busy machine's start-up stays far under it."""

DOWN: dict[str, tuple[str, ...]] = {
    "scan": ("--works", "samples/works", "--site", "http://127.0.0.1:1/", "--json", "{tmp}/o.json"),
    "works add": (SAMPLE,),
    "works list": (),
    "works remove": ("lighthouse",),
    "sites add": ("http://127.0.0.1:1/",),
    "sites list": (),
    "sites remove": ("pirate",),
    "schedules": (),
    "alerts add": ("ops", "--webhook", "https://hooks.example/ops"),
    "alerts list": (),
    "alerts remove": ("0123456789abcdef01234567",),
    "alerts test": ("0123456789abcdef01234567",),
    "crawl": ("pirate",),
    "match": (SAMPLE,),
    "matches list": (),
    "report": (),
    "index rebuild": (),
    "archive prune": (),
    "admin serve": (),
    "admin create-user": ("bob", "--password-stdin"),
    "admin recount": (),
    "worker": (),
    "beat": (),
    "check": (),
    "migrate": (),
}
"""Arguments of each command that needs a store, run with every store down."""
NO_STORE = {"fingerprint"}


def test_every_command_is_in_the_set() -> None:
    assert {" ".join(words) for words in LEAVES} == set(DOWN) | NO_STORE


@pytest.mark.parametrize("command", sorted(DOWN))
def test_stores_down(command: str, tmp_path: Path) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in DOWN[command]]

    def run() -> Ran:
        return fptrack(*command.split(), *argv, env=STORES_DOWN, stdin="a long password\n")

    ran = run()
    assert ran.status == 1, (ran.out, ran.err)
    if command == "check":  # a report on stdout, one line per service, and the verdict
        assert ran.err == "8 problem(s)\n" and "Traceback" not in ran.out
        assert "MongoDB unreachable at mongodb://127.0.0.1:1 (connection refused)" in ran.out
    else:
        assert ran.one_line_error(), ran.err
        assert "unreachable at" in ran.err and "start it, or set FPTRACK_" in ran.err
    if command != "scan":  # the scan crawls first (its store is in memory) and says so
        assert ran.seconds < OUTAGE_SECONDS, f"{command}: {ran.seconds:.2f} s"


BAD_ARGUMENTS = [
    (),
    ("nosuch",),
    ("works",),
    ("works", "add"),
    ("scan",),
    ("scan", "--works", "samples/works", "--json", "o.json"),
    ("scan", "--works", "nowhere", "--site", "http://x/", "--json", "o.json"),
    ("scan", "--works", "samples/works", "--site", "x", "--json", "o.json"),
    ("scan", "--works", "samples/works", "--site-dir", "samples", "--json", "o.json"),
    ("scan", "--works", "samples/works", "--site", "http://x/", "--json", "/nowhere/o.json"),
    ("scan", "--works", "samples/works", "--site", "http://x/", "--json", "o", "--serve", "x"),
    ("matches", "list", "--limit", "many"),
    ("matches", "list", "--since", "yesterday"),
    ("report", "--format", "pdf"),
    ("report", "--until", "soon"),
    ("sites", "add", "ftp://x/"),
    ("sites", "add", "http://x/", "--schedule", "whenever"),
    ("sites", "add", "http://x/", "--include", "(unclosed"),
    ("admin", "serve", "--bind", "nohost"),
    ("admin", "serve", "--workers", "0"),
    ("admin", "serve", "--threads", "0"),
    ("admin", "create-user", "bob", "--role", "god"),
    ("worker", "--wait", "soon"),
    ("worker", "--concurrency", "-1"),
    ("fingerprint",),
    ("fingerprint", SAMPLE, "--max-bytes", "lots"),
    ("fingerprint", "/nonexistent.txt"),
]


@pytest.mark.parametrize("argv", BAD_ARGUMENTS, ids=" ".join)
def test_bad_arguments(
    argv: tuple[str, ...], mongo_db: Database, redis_client: redis.Redis
) -> None:
    ran = fptrack(*argv)
    assert ran.status == 2, (ran.out, ran.err)
    assert ran.one_line_error(), ran.err


def unreadable_files(tmp: Path) -> dict[str, Path]:
    binary = tmp / "binary.txt"
    binary.write_bytes(bytes(range(256)) * 64)
    folder = tmp / "folder.txt"
    folder.mkdir()
    fifo = tmp / "fifo.txt"
    os.mkfifo(fifo)
    return {"binary": binary, "folder": folder, "fifo": fifo}


@pytest.mark.parametrize("kind", ["binary", "folder", "fifo"])
def test_unreadable_files(
    kind: str, tmp_path: Path, mongo_db: Database, redis_client: redis.Redis
) -> None:
    path = str(unreadable_files(tmp_path)[kind])
    for argv in (("fingerprint", path), ("match", path), ("works", "add", path)):
        ran = fptrack(*argv, timeout=30)
        assert ran.status in (1, 2), (argv, ran.out, ran.err)
        assert "Traceback" not in ran.err, (argv, ran.err)
        assert any(": error: " in line or "skipped" in line for line in ran.err.splitlines())


def test_unwritable_outputs(tmp_path: Path, mongo_db: Database, redis_client: redis.Redis) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for argv in (
        ("report", "--out", str(folder)),
        ("report", "--out", "/proc/version"),
        ("scan", "--works", "samples/works", "--site-dir", "samples/site", "--json", str(folder)),
    ):
        ran = fptrack(*argv, timeout=120)
        assert ran.status in (1, 2), (argv, ran.out, ran.err)
        assert ran.one_line_error(), (argv, ran.err)
