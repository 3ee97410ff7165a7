"""CPU time of a process and of its process tree, read from ``/proc`` (Linux).

A benchmark reads it before and after the work it measures and quotes the difference: the
CPU each part of a deployment spent on the same work, which wall time alone cannot split
when the parts share the machine's cores.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int, reaped: bool = False, skip: Collection[int] = ()) -> float:
    """User and system CPU seconds of ``pid`` and its live descendants so far; with
    ``reaped``, of its children that ended and were waited for too (``cutime``, ``cstime``:
    a process pool's workers once joined). The descendants in ``skip`` (a benchmark's own
    servers and workers, measured apart) are not counted, nor are theirs. 0 once ``pid`` is
    gone or off Linux."""
    total, stack, first = 0.0, [pid], True
    while stack:
        current = stack.pop()
        if current in skip:
            continue
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            for task in Path(f"/proc/{current}/task").iterdir():
                stack.extend(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
            continue
        # fields after the name: state is [0], utime [11], stime [12], cutime [13], cstime [14]
        ticks = int(fields[11]) + int(fields[12])
        if reaped and first:
            ticks += int(fields[13]) + int(fields[14])
        total += ticks / _TICKS
        first = False
    return total
