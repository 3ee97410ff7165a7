"""Peak memory of a process and of its process tree, read from ``/proc`` while it runs.

``ru_maxrss`` would count the pages a child shared with this process when it was forked, so
the process's own peak is its ``VmHWM`` and its tree's is the ``VmRSS`` of it and its
descendants, summed at each sample.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType

SAMPLE_S = 0.02


def memory_mb(pid: int) -> tuple[float, float]:
    """The peak resident memory of ``pid`` itself so far (``VmHWM``) and the resident memory
    of ``pid`` and its descendants now (``VmRSS``), in MiB (0 once gone)."""
    total, own, stack = 0, 0, [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            for task in Path(f"/proc/{current}/task").iterdir():
                children = (task / "children").read_text().split()
                stack.extend(int(c) for c in children)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
            elif line.startswith("VmHWM:") and current == pid:
                own = int(line.split()[1])
    return own / 1024, total / 1024


def own_peak_mb(pid: int) -> float | None:
    """``VmHWM`` of ``pid`` alone, in MiB (None once gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


class PeakMemory:
    """Samples ``pid`` every :data:`SAMPLE_S` from ``with`` to its end: ``own`` (its highest
    ``VmHWM`` seen) and ``tree`` (the highest sum of its tree's ``VmRSS``), in MiB."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.own = 0.0
        self.tree = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.is_set():
            own, tree = memory_mb(self.pid)
            self.own, self.tree = max(self.own, own), max(self.tree, tree)
            self._done.wait(SAMPLE_S)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._done.set()
        self._thread.join()
