"""Start one process of the one-machine deployment again whenever it exits.

    python deploy/local/respawn.py COMMAND [ARG...]

honcho, which runs the repository's Procfile, stops every process as soon as one exits: a
worker killed by the kernel for memory, or beat failing once, took MongoDB, the admin and the
rest down with it. Each Procfile line therefore runs its command under this loop:

- when the command exits, it is started again after :data:`FIRST_WAIT_S`, doubling up to
  :data:`MAX_WAIT_S` while it keeps failing; the wait starts over once it ran
  :data:`HEALTHY_AFTER_S`. Each restart prints one line (``respawn: `fptrack beat` exited
  with status 1 after 3 s; starting it again in 2 s``).
- exit status 2 is not retried (fptrack's status for bad arguments or a bad setting, which a
  restart cannot fix): the loop exits 2, and honcho stops the others and shows why.
- SIGTERM, SIGINT and SIGHUP (honcho stopping everything, Ctrl-C) are passed to the command's
  process group and end the loop, with the command's exit status. The command runs in a
  process group of its own, so it gets each signal once (Celery takes a second SIGINT as
  "stop at once"), and dies with the loop (Linux's parent-death signal) should the loop be
  killed outright.
- Whatever the command leaves running in its process group when it exits (the workers of a
  killed gunicorn still holding its port, a crawl whose worker died) gets SIGTERM, and
  SIGKILL after :data:`LEFTOVER_GRACE_S`, before the command starts again or the loop ends.

Standard library only: it runs before anything else is known to work.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import signal
import subprocess
import sys
import time
from types import FrameType

FIRST_WAIT_S = 1.0
MAX_WAIT_S = 30.0
HEALTHY_AFTER_S = 60.0
LEFTOVER_GRACE_S = 5.0
NOT_RETRIED = 2
"""The exit status of a command that cannot succeed as configured (bad arguments, settings)."""
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, before exec
    """Linux: the command gets SIGKILL when this loop dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _say(line: str) -> None:
    print(f"respawn: {line}", file=sys.stderr, flush=True)


def _status(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _end_leftovers(group: int) -> None:
    """SIGTERM to what is left in process group ``group``; SIGKILL to what outlives the grace."""
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


class Respawn:
    """The loop of one command (see the module docs)."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.name = " ".join(shlex.join(argv).split())  # one line, whatever the arguments
        self.child: subprocess.Popen[bytes] | None = None
        self.stopping: int | None = None
        """The signal that asked the loop to stop, once one did."""

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = signum
        if self.child is not None and self.child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child.pid, signum)

    def run(self) -> int:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._stop)
        wait = FIRST_WAIT_S
        while True:
            started = time.monotonic()
            try:
                self.child = subprocess.Popen(
                    self.argv,
                    process_group=0,
                    preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                )
            except OSError as exc:
                _say(f"cannot start `{self.name}`: {exc.strerror or exc}")
                return 127
            if self.stopping is not None:  # a signal came while it was being started
                self._stop(self.stopping, None)
            returncode = self.child.wait()
            _end_leftovers(self.child.pid)
            if self.stopping is not None:
                return returncode if returncode >= 0 else 128 - returncode
            if returncode == NOT_RETRIED:
                _say(f"`{self.name}` exited with status 2 (bad arguments or settings): not retried")
                return returncode
            ran = time.monotonic() - started
            if ran >= HEALTHY_AFTER_S:
                wait = FIRST_WAIT_S
            _say(
                f"`{self.name}` {_status(returncode)} after {ran:.0f} s; "
                f"starting it again in {wait:.0f} s"
            )
            deadline = time.monotonic() + wait
            while self.stopping is None and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.stopping is not None:
                return 128 + self.stopping
            wait = min(wait * 2, MAX_WAIT_S)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    return Respawn(argv).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
