"""A full disk under the store is named and heals: the hostile benchmark's ``store-disk-full``
case (``bench/hostile_processes.py``), run here once as its users run it (``python -m
bench.hostile_bench --cases store-disk-full``), its JSON read back.

SecantusDB runs as the one-machine deployment starts it (``deploy/local/mongodb.py`` under
supervisord, :mod:`tests.servers.supervised`) with its data on a tmpfs of its own (mounted
here: root only),
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

from tests.support.benchmarks import run_benchmark

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")

BAD_TASKS = 2
"""The tasks the case sends that fail for good (the benchmark's ``BAD_TASKS``)."""


def test_a_full_disk_under_the_store_is_named_and_heals(tmp_path: Path) -> None:
    argv = ["--runs", "1", "--cases", "store-disk-full", "--no-works", "--no-peers"]
    said = run_benchmark("hostile_bench", *argv, out=tmp_path / "disk.json")["cases"][
        "store-disk-full"
    ]
    [check] = said["check"]
    assert said["exit"] == [1]  # check's status during the fault
    assert "MongoDB at mongodb://127.0.0.1:" in check
    assert "answers with internal errors (disk full?)" in check, check
    assert said["internal_errors_metric"] == [1] and said["logged"] == [True]
    assert said["failed_for_good"]["max"] == 0  # every page matched in the end
    assert said["kept"]["max"] == BAD_TASKS == said["written"]["max"]
    assert said["restarted_store"] == [True] and said["check_after"] == [0]
