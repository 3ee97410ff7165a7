"""Run the ``fptrack`` command: in this process (:func:`run_cli`, ``admin.cli.main(argv)``,
the default of the tests), or in a fresh process as an operator does (:func:`fptrack`, for
the few tests of what only a process shows: the console script, its exit code, a command
that runs a server or a Celery worker)."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[2]
DEAD_MONGO = "mongodb://127.0.0.1:1"
DEAD_REDIS = "redis://127.0.0.1:1/0"


@dataclass
class Ran:
    """What one command did: exit status and output."""

    status: int
    out: str
    err: str

    def one_line_error(self) -> bool:
        """Exactly one line on stderr, ``fptrack: error: ...`` (or argparse's usage + error)."""
        lines = [line for line in self.err.splitlines() if line.strip()]
        errors = [line for line in lines if ": error: " in line]
        return len(errors) == 1 and "Traceback" not in self.err


def fptrack(
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: str = "",
    timeout: float = 60.0,
    cwd: Path = ROOT,
    script: bool = False,
) -> Ran:
    """``fptrack ARGS`` in a new Python process: ``python -m admin.cli``, or with ``script``
    the installed console script next to this interpreter (this checkout's code comes first
    on ``PYTHONPATH`` either way)."""
    environ = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    command = (
        [str(Path(sys.executable).with_name("fptrack"))]
        if script
        else [sys.executable, "-m", "admin.cli"]
    )
    done = subprocess.run(
        [*command, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        timeout=timeout,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


class CommandHung(BaseException):
    """A command run in process outlived its runner's ``timeout`` (a BaseException: neither
    the command nor :func:`admin.cli.main` takes it for one of their errors)."""


@contextlib.contextmanager
def environment(overrides: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``overrides`` while the block runs, then exactly as it was (what
    pytest's ``monkeypatch.setenv`` does, without the fixture)."""
    saved = dict(os.environ)
    os.environ.update(overrides)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def guard(timeout: float, what: str) -> Iterator[None]:
    """Raise :class:`CommandHung` in the block if it runs past ``timeout`` seconds: a hang
    fails its test instead of the session (SIGALRM; no guard off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise CommandHung(f"{what}: still running after {timeout:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _status(code: object) -> int:
    """The exit status of ``SystemExit(code)``, as the interpreter makes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: str = "",
    timeout: float = 60.0,
    cwd: Path = ROOT,
) -> Ran:
    """``fptrack ARGS`` in this process: :func:`admin.cli.main` (the console script's entry
    point) with stdin, stdout and stderr in memory, ``env`` over ``os.environ`` and ``cwd`` as
    the working directory while it runs (all restored after), and ``SystemExit`` (argparse's
    errors, ``--version``) taken as the exit status. Raises :class:`CommandHung` past
    ``timeout`` seconds."""
    from admin.cli import main

    out, err = io.StringIO(), io.StringIO()
    with (
        environment(env or {}),
        contextlib.chdir(cwd),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _stdin(stdin),
        guard(timeout, f"fptrack {' '.join(args)}"),
    ):
        try:
            status = main(list(args))
        except SystemExit as exc:
            status = _status(exc.code)
    return Ran(status, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _stdin(text: str) -> Iterator[None]:
    saved = sys.stdin
    sys.stdin = io.StringIO(text)
    try:
        yield
    finally:
        sys.stdin = saved
