"""A small disk of its own: a tmpfs of ``size_mb`` mounted on a folder, filled and freed.

``SmallDisk(folder, size_mb)`` mounts ``tmpfs -o size=<size_mb>m`` on ``folder`` (root only:
``mount`` needs ``CAP_SYS_ADMIN``) and unmounts it on leaving, lazily if a process still
holds a file there. :meth:`SmallDisk.fill` writes a ballast file that leaves ``leave_mb`` of
it free; :meth:`SmallDisk.free` deletes the ballast, as an operator freeing space does. Its
pages are memory: keep it small.

>>> SmallDisk(Path("/tmp/x"), 0)
Traceback (most recent call last):
...
ValueError: a disk of at least 1 MB
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

BALLAST = ".ballast"
CHUNK = 1 << 20


class DiskError(RuntimeError):
    """The disk could not be mounted (not root, no tmpfs): one line saying so."""


class SmallDisk:
    """A tmpfs of ``size_mb`` MiB on ``folder`` while the ``with`` block runs."""

    def __init__(self, folder: Path, size_mb: int) -> None:
        if size_mb < 1:
            raise ValueError("a disk of at least 1 MB")
        self.path = folder
        self.size_mb = size_mb
        self.mounted = False

    def mount(self) -> SmallDisk:
        self.path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m", "tmpfs", str(self.path)],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise DiskError(f"cannot mount a tmpfs on {self.path}: {done.stderr.strip()}")
        self.mounted = True
        return self

    def unmount(self) -> None:
        if not self.mounted:
            return
        done = subprocess.run(["umount", str(self.path)], capture_output=True)
        if done.returncode:  # a process still holds a file there: detach it now
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
        self.mounted = False

    def free_mb(self) -> float:
        return shutil.disk_usage(self.path).free / CHUNK

    def fill(self, leave_mb: float) -> int:
        """Write a ballast file until ``leave_mb`` MiB are left free; its size in MiB."""
        written = 0
        block = b"\0" * CHUNK
        with (self.path / BALLAST).open("ab") as out:
            while self.free_mb() - 1 >= leave_mb:
                try:
                    out.write(block)
                    out.flush()
                    os.fsync(out.fileno())
                except OSError:  # someone else wrote meanwhile: full already
                    break
                written += 1
        return written

    def free(self) -> None:
        """Delete the ballast."""
        with contextlib.suppress(FileNotFoundError):
            (self.path / BALLAST).unlink()

    def __enter__(self) -> SmallDisk:
        return self.mount()

    def __exit__(self, *exc: object) -> None:
        self.unmount()
