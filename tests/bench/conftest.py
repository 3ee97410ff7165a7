"""Order of the benchmarks' smoke tests: the costliest ones start on different workers.

A few smoke tests run a whole deployment for a minute or so (the fault, release and
pipeline benchmarks, the site shapes); the rest take seconds. pytest-xdist's ``worksteal``
scheduler (the suite's ``--dist``) first hands each worker a contiguous share of the
collected tests and later moves only the tail of a queue, so two long tests in one share
run one after the other while the other workers wait. Each long test is put at the head of
its own share instead. Only the order changes: with one process, or another scheduler,
every test still runs.
"""

from __future__ import annotations

import pytest

COSTLIEST = (
    "test_fault_bench_smoke.py",
    "test_release_bench_smoke.py",
    "test_pipeline_bench_smoke.py",
    "test_eval_sites_smoke.py",
)
"""Smoke test files by cost, the costliest first (about 57, 50, 28 and 25 s on 2 cores)."""


def share_starts(count: int, workers: int) -> list[int]:
    """Where each worker's first share begins among ``count`` tests (``worksteal`` gives the
    first idle worker ``len(pending) // workers_left`` of what is left, in order).

    >>> share_starts(23, 4)
    [0, 5, 11, 17]
    """
    starts, left = [], count
    for remaining in range(workers, 0, -1):
        starts.append(count - left)
        left -= left // remaining
    return starts


@pytest.hookimpl(trylast=True)  # after the markers' deselection: the tests that will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    costly = sorted(
        (item for item in items if item.path.name in COSTLIEST),
        key=lambda item: COSTLIEST.index(item.path.name),
    )
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers < 2 or not costly:
        return
    rest = [item for item in items if item.path.name not in COSTLIEST]
    heads = share_starts(len(items), workers)
    ordered: list[pytest.Item] = []
    for position in range(len(items)):
        take_costly = bool(costly) and (position in heads or not rest)
        ordered.append((costly if take_costly else rest).pop(0))
    items[:] = ordered
