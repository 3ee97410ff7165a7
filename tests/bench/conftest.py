"""Order of the benchmarks' smoke tests: the costly ones spread over the workers' shares.

A few smoke tests run a whole deployment for a minute or so (the fault, release and
pipeline benchmarks, the site shapes), several others half a minute; the rest take seconds.
pytest-xdist's ``worksteal`` scheduler (the suite's ``--dist``) first hands each worker a
contiguous share of the collected tests and later moves only the tail of a queue, so two
long tests in one share run one after the other while the other workers wait. The costly
tests (:data:`COSTLY`, by their measured seconds) are dealt out longest first, each to the
share whose costly tests add up to the least so far, at the head of its share, the cheap
ones after them (the tail other workers may take). Only the order changes: with one
process, or another scheduler, every test still runs.
"""

from __future__ import annotations

import pytest

COSTLY = {
    (
        "test_release_bench_smoke.py",
        "test_quick_run_matches_every_released_chapter_and_writes_json",
    ): 57,
    ("test_fault_bench_smoke.py", "test_quick_run_loses_nothing_under_two_faults"): 47,
    ("test_eval_sites_smoke.py", "test_quick_run_meets_the_targets_with_a_consistent_truth"): 43,
    ("test_pipeline_bench_smoke.py", "test_quick_run_processes_every_page_and_writes_json"): 42,
    ("test_hostile_bench_smoke.py", "test_two_cases_write_every_key"): 36,
    ("test_webfont_bench_smoke.py", "test_quick_run_reads_the_hidden_chapter"): 30,
    ("test_ocr_bench_smoke.py", "test_quick_run_reads_and_matches_the_chapters"): 30,
    ("test_hostile_bench_smoke.py", "test_refused_downloads_and_a_forbidden_page_are_named"): 22,
    (
        "test_hostile_bench_smoke.py",
        "test_a_notice_names_the_unreviewed_match_only_when_chosen",
    ): 16,
    ("test_render_bench_smoke.py", "test_quick_run_finds_the_text_only_when_rendered"): 16,
    ("test_hostile_bench_smoke.py", "test_the_outbound_cases_carry_their_figures"): 13,
    ("test_fingerprint_bench_smoke.py", "test_quick_run_writes_every_key"): 12,
}
"""Smoke tests (file, name) taking over 10 s, with their seconds (one run of the step, 4
processes on 2 cores)."""


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


def deal(costs: list[float], sizes: list[int]) -> list[list[int]]:
    """The indexes of ``costs`` dealt to shares of at most ``sizes`` tests each: the
    longest first, each to the share with the least cost so far that has room.

    >>> deal([57, 47, 43, 42, 36, 30], [3, 3, 3])
    [[0, 5], [1, 4], [2, 3]]
    """
    shares: list[list[int]] = [[] for _ in sizes]
    totals = [0.0] * len(sizes)
    for n in sorted(range(len(costs)), key=lambda n: -costs[n]):
        room = [s for s in range(len(sizes)) if len(shares[s]) < sizes[s]]
        share = min(room, key=lambda s: totals[s])
        shares[share].append(n)
        totals[share] += costs[n]
    return shares


@pytest.hookimpl(trylast=True)  # after the markers' deselection: the tests that will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    key = [(item.path.name, item.name) for item in items]
    costly = [n for n in range(len(items)) if key[n] in COSTLY]
    if workers < 2 or not costly:
        return
    starts = share_starts(len(items), workers)
    sizes = [end - start for start, end in zip(starts, [*starts[1:], len(items)], strict=True)]
    dealt = deal([COSTLY[key[n]] for n in costly], sizes)
    rest = iter([item for n, item in enumerate(items) if key[n] not in COSTLY])
    ordered: list[pytest.Item] = []
    for size, share in zip(sizes, dealt, strict=True):
        ordered += [items[costly[n]] for n in share]
        ordered += [next(rest) for _ in range(size - len(share))]
    items[:] = ordered
