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

from tests.support.ordering import spread

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
    (
        "test_hiding_shape_smoke.py",
        "test_quick_hiding_run_finds_every_chapter_and_no_false_pair",
    ): 30,
    ("test_render_bench_smoke.py", "test_quick_run_finds_the_text_only_when_rendered"): 16,
    ("test_hostile_bench_smoke.py", "test_the_outbound_cases_carry_their_figures"): 13,
    ("test_fingerprint_bench_smoke.py", "test_quick_run_writes_every_key"): 12,
}
"""Smoke tests (file, name) taking over 10 s, with their seconds (one run of the step, 4
processes on 2 cores)."""


@pytest.hookimpl(trylast=True)  # after the markers' deselection: the tests that will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    spread(config, items, COSTLY, key=lambda item: (item.path.name, item.name))
