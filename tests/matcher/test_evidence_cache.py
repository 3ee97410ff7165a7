"""The evidence's cache of work segments is bounded by bytes, not by entries: many short
segments fit where a few long ones do, the least recently used go first."""

from __future__ import annotations

from matcher.matching.match_records import CHAR_BYTES, Evidence, WorkSegment
from matcher.matching.prepared import locate


def segment(chars: int) -> WorkSegment:
    return WorkSegment(locate("字" * chars), 0, "")


def test_the_cache_keeps_what_its_bytes_allow_the_oldest_going_first() -> None:
    budget = CHAR_BYTES * 20_000
    evidence = Evidence(store=None, names=lambda seqs: {}, cache_bytes=budget)  # type: ignore[arg-type]
    for n in range(300):  # short segments: 300 fit (more than the 256 entries of before)
        evidence._remember(("w", n), segment(20))
    assert len(evidence._segments) == 300
    for n in range(3):  # long ones push the oldest out, never past the budget
        evidence._remember(("long", n), segment(4_000))
        assert evidence._bytes <= budget
    kept = list(evidence._segments)
    assert ("w", 0) not in kept and kept[-3:] == [("long", 0), ("long", 1), ("long", 2)]
    assert evidence._bytes == sum(CHAR_BYTES * 20 + 256 for k in kept if k[0] == "w") + 3 * (
        CHAR_BYTES * 4_000 + 256
    )
