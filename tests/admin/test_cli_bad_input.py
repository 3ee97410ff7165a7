"""No traceback from any command: every command with the stores down, bad arguments,
unreadable files. Each runs in this process (``admin.cli.main``, what the console script
calls; :func:`~tests.support.cli.run_cli`) and must end with one error line and exit
status 1 or 2; with the stores down, from the refused connection itself, not after a client's
timeout. ``test_cli_process`` runs a few of them in a fresh process, as an operator does.

The list of commands comes from the parser itself, so a new command without an entry here
fails :func:`test_every_command_is_in_the_set`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis
from pymongo.database import Database

from tests.admin.test_cli_parser import LEAVES
from tests.support.cli import DEAD_MONGO, DEAD_REDIS, ROOT, run_cli

SAMPLE = str(ROOT / "samples" / "works" / "lighthouse.txt")
STORES_DOWN = {
    "FPTRACK_MONGO_URI": DEAD_MONGO,
    "FPTRACK_REDIS_URL": DEAD_REDIS,
    "FPTRACK_BROKER_URL": DEAD_REDIS,
}
OUTAGE_GUARD_S = 25.0
"""A hang guard, not a speed figure: below the clients' own timeouts (pymongo waits 30 s to
select a server, a Celery connection retries for longer), so a command that waits on one of
them instead of reporting the refused connection fails here instead of passing late; far
above what a command takes on a busy machine (it runs in this process: no start-up)."""

DOWN: dict[str, tuple[str, ...]] = {
    "scan": ("--works", "samples/works", "--site", "http://127.0.0.1:1/", "--json", "{tmp}/o.json"),
    "works add": (SAMPLE,),
    "works list": (),
    "works remove": ("lighthouse",),
    "sites add": ("http://127.0.0.1:1/",),
    "sites list": (),
    "sites remove": ("pirate",),
    "sites discover": (),
    "sites search": (),
    "sites hosting": (),
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
    "evidence stamp": (),
    "evidence verify": ("0123456789abcdef01234567",),
    "takedowns send": ("pirate",),
    "takedowns export-delisting": (),
    "takedowns recheck": (),
    "takedowns list": (),
    "takedowns contact": ("pirate", "--email", "abuse@pirate.example"),
    "admin serve": (),
    "admin create-user": ("bob", "--password-stdin"),
    "admin recount": (),
    "worker": (),
    "beat": (),
    "check": (),
    "migrate": (),
}
"""Arguments of each command that needs a store, run with every store down. ``worker``,
``beat`` and ``admin serve`` run here too: with a store down they stop at their start-up
check, before Celery installs its signal handlers and forks its pool or the web server
starts; running ones have processes of their own (``tests/e2e``)."""
NO_STORE = {"fingerprint"}
SETTINGS: dict[str, dict[str, str]] = {
    "evidence stamp": {"FPTRACK_TSA_URL": "http://127.0.0.1:1/"},
    "sites search": {"FPTRACK_SEARCH_URL": "http://127.0.0.1:1/"},
}
"""Settings a command needs before it reaches a store (stamping needs a TSA, a search a
search engine)."""


def test_every_command_is_in_the_set() -> None:
    assert {" ".join(words) for words in LEAVES} == set(DOWN) | NO_STORE


@pytest.mark.parametrize("command", sorted(DOWN))
def test_stores_down(command: str, tmp_path: Path) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in DOWN[command]]
    ran = run_cli(
        *command.split(), *argv,
        env={**STORES_DOWN, **SETTINGS.get(command, {})}, stdin="a long password\n",
        timeout=OUTAGE_GUARD_S,
    )  # fmt: skip
    assert ran.status == 1, (ran.out, ran.err)
    # The cause named is the refusal (a client that gave up waiting says "no answer in time").
    if command == "check":  # a report on stdout, one line per service, and the verdict
        assert ran.err == "8 problem(s)\n" and "Traceback" not in ran.out
        assert "MongoDB unreachable at mongodb://127.0.0.1:1 (connection refused)" in ran.out
    else:
        assert ran.one_line_error(), ran.err
        assert "unreachable at" in ran.err and "start it, or set FPTRACK_" in ran.err
        assert "(connection refused)" in ran.err, ran.err


BAD_ARGUMENTS: list[tuple[tuple[str, ...], str]] = [
    ((), "fptrack: error: the following arguments are required: COMMAND"),
    (("nosuch",), "fptrack: error: unknown command 'nosuch' (choose from scan, works,"),
    (("wroks", "list"), "fptrack: error: unknown command 'wroks': did you mean works?"),
    (("works", "lsit"), "fptrack works: error: unknown action 'lsit': did you mean list?"),
    (("works",), "fptrack works: error: the following arguments are required: ACTION"),
    (("works", "add"), "the following arguments are required: PATH"),
    (("scan",), "the following arguments are required: --works, --json"),
    (
        ("scan", "--works", "samples/works", "--json", "o.json"),
        "fptrack scan: error: give at least one --site URL or --site-dir DIR",
    ),
    (
        ("scan", "--works", "nowhere", "--site", "http://x/", "--json", "o.json"),
        "--works nowhere: not a directory",
    ),
    (
        ("scan", "--works", "samples/works", "--site", "x", "--json", "o.json"),
        "--site 'x': not an http(s) URL",
    ),
    (
        ("scan", "--works", "samples/works", "--site-dir", "samples", "--json", "o.json"),
        "--site-dir samples: no index.html there",
    ),
    (
        ("scan", "--works", "samples/works", "--site", "http://x/", "--json", "/nowhere/o.json"),
        "--json /nowhere/o.json: folder /nowhere does not exist",
    ),
    (
        ("scan", "--works", "samples/works", "--site", "http://x/", "--json", "o", "--serve", "x"),
        "--serve 'x': give HOST:PORT",
    ),
    (("matches", "list", "--limit", "many"), "argument --limit: invalid int value: 'many'"),
    (("matches", "list", "--since", "yesterday"), "'yesterday' is not a date (YYYY-MM-DD)"),
    (("report", "--format", "pdf"), "argument --format: invalid choice: 'pdf'"),
    (("report", "--format", "jsn"), "argument --format: invalid choice: 'jsn': did you mean json?"),
    (("check", "wrokers"), "fptrack check: error: no check named wrokers: did you mean workers?"),
    (("report", "--until", "soon"), "'soon' is not a date (YYYY-MM-DD)"),
    (("sites", "add", "ftp://x/"), "'ftp://x/' is not an http(s) URL"),
    (("sites", "hosting", "--limit", "0"), "--limit takes 1 to 100000"),
    (("sites", "add", "http://x/", "--schedule", "whenever"), "schedule 'whenever' is not"),
    (("sites", "add", "http://x/", "--include", "(unclosed"), "bad pattern '(unclosed'"),
    (("admin", "serve", "--bind", "nohost"), "--bind 'nohost': give HOST:PORT"),
    (("admin", "serve", "--workers", "0"), "--workers must be at least 1"),
    (("admin", "serve", "--threads", "0"), "--threads must be at least 1"),
    (("admin", "create-user", "bob", "--role", "god"), "argument --role: invalid choice"),
    (("worker", "--wait", "soon"), "argument --wait: 'soon' is not a duration"),
    (("worker", "--concurrency", "-1"), "--concurrency must be 0 (one per core) or more"),
    (("fingerprint",), "the following arguments are required: file"),
    (
        ("fingerprint", SAMPLE, "--max-bytes", "lots"),
        "fptrack fingerprint: error: argument --max-bytes: 'lots' is not a size",
    ),
    (("fingerprint", "/nonexistent.txt"), "cannot read /nonexistent.txt"),
]
"""Each bad command line and what its error line says: argparse's own errors (usage and
exit 2), the commands' checks of their arguments (``args.parser.error``) and the values only
the command reads (a schedule, a pattern, a date, a file), all exit 2."""


@pytest.mark.parametrize(
    ("argv", "says"), BAD_ARGUMENTS, ids=[" ".join(a) for a, _ in BAD_ARGUMENTS]
)
def test_bad_arguments(
    argv: tuple[str, ...], says: str, mongo_db: Database, redis_client: redis.Redis
) -> None:
    ran = run_cli(*argv)
    assert ran.status == 2, (ran.out, ran.err)
    assert ran.one_line_error(), ran.err
    [line] = [line for line in ran.err.splitlines() if ": error: " in line]
    assert says in line, line


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
    """A FIFO is refused, not opened: opening one blocks until a writer comes (the guard
    fails the test if it does)."""
    path = str(unreadable_files(tmp_path)[kind])
    for argv in (("fingerprint", path), ("match", path), ("works", "add", path)):
        ran = run_cli(*argv, timeout=30)
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
        ran = run_cli(*argv, timeout=120)
        assert ran.status in (1, 2), (argv, ran.out, ran.err)
        assert ran.one_line_error(), (argv, ran.err)
