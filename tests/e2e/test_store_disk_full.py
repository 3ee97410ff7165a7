"""A full disk under the store is named and heals (:class:`bench.hostile_processes.DiskFull`,
the hostile benchmark's ``store-disk-full`` case, run here once).

SecantusDB runs as the one-machine deployment starts it (``deploy/local/mongodb.py`` under
``deploy/local/respawn.py``) with its data on a tmpfs of its own (mounted here: root only),
beside a Redis of its own and a real ``fptrack worker``. Once a first page is matched, the
disk is filled until WiredTiger panics: the server keeps running and answers every command
but ``ping`` with ``InternalError``. Then ``fptrack check`` names it (not "unreachable ...
start it"), so do the metrics and the worker's log; the page tasks sent meanwhile retry
instead of failing for good, and the failure records of two tasks that do fail for good are
kept in Redis; the space freed, the deployment restarts the server, every page is matched
and the kept records are written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.hostile_processes import BAD_TASKS, DISK_MB, DiskFull
from tests.servers.small_disk import SmallDisk

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


def test_a_full_disk_under_the_store_is_named_and_heals(tmp_path: Path) -> None:
    with SmallDisk(tmp_path / "disk", DISK_MB) as disk:
        run = DiskFull(tmp_path, disk)
        run.run()
    said = run.figures
    assert said["check_status"] == 1
    assert "MongoDB at mongodb://127.0.0.1:" in said["check"]
    assert "answers with internal errors (disk full?)" in said["check"], said["check"]
    assert said["internal_errors_metric"] == 1 and said["logged"]
    assert said["failed_for_good"] == 0  # every page matched in the end
    assert said["kept"] == BAD_TASKS == said["written"]
    assert said["restarted_store"] and said["check_after"] == 0
