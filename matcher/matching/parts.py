"""A split chapter's parts: each part's share of what the joined chapter copies.

The engine matches a page that is one part of a chapter cut over several pages
(:mod:`matcher.matching.split`) on its own and joins the parts' texts into one more unit. A work the
joined chapter copies, and a part does not copy on its own, is recorded for that part when
the part carries enough of the chapter's passages (:func:`part_share`): its own passages
(the part realigned with the work's segments, so that evidence spans are exact) that lie in
text the chapter's verdict kept, covering at least ``policy.min_chars`` characters and
either ``policy.min_page_share`` of the part, or ``policy.min_page_chars`` characters, or
its fair share of the chapter's copy (half of what an equal split over the parts would
give it). A page of a thread that quotes one sentence of a work another page copies is not
a part of that copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fingerprint.align import align
from fingerprint.anchors import Anchors
from matcher.matching.verify import (
    ALIGN_PARAMS,
    PageFingerprint,
    SegmentHit,
    Verdict,
    merge,
    verdict,
)
from matcher.settings import MatchPolicy


@dataclass(frozen=True, eq=False)
class StoredPart:
    """A part's fingerprints as stored after it was matched: simhash and anchors."""

    simhash: int
    anchors: Anchors

    @property
    def length(self) -> int:
        return self.anchors.length


def part_share(
    chapter: Verdict, part: PageFingerprint, offset: int, parts: int, policy: MatchPolicy
) -> Verdict | None:
    """The part's verdict for a work the joined chapter copies, or None when the part does
    not carry enough of it (see the module docstring). ``offset``: the part's first content
    character in the joined chapter; ``parts``: how many parts the chapter has."""
    end = offset + part.length
    kept = np.zeros(part.length, dtype=bool)
    for p in chapter.alignment.passages:
        if p.b_end > offset and p.b_start < end:
            kept[max(p.b_start, offset) - offset : min(p.b_end, end) - offset] = True
    if kept.sum() < policy.min_chars:
        return None
    hits = []
    for h in chapter.hits:
        alignment = align(h.anchors, part.anchors, ALIGN_PARAMS)
        if alignment.passages:
            hits.append(SegmentHit(h.header, h.anchors, alignment, h.window_hits))
    if not hits:
        return None
    wa = merge(hits, part.length)
    wa = wa.keeping([kept[p.b_start : p.b_end].mean() > 0.5 for p in wa.passages])
    fair = chapter.alignment.page_covered / (2 * parts)
    enough = wa.containment_page >= policy.min_page_share or wa.page_covered >= min(
        policy.min_page_chars, fair
    )
    if wa.work_covered < policy.min_chars or not enough:
        return None
    return verdict(wa, hits, part, policy, reason="", siblings=chapter.siblings)


def shares(
    chapter: Sequence[Verdict],
    part: PageFingerprint,
    offset: int,
    parts: int,
    alone: set[int],
    policy: MatchPolicy,
) -> list[Verdict]:
    """The part's verdicts for the chapter's works it does not match ``alone`` (work seqs)."""
    out = []
    for v in chapter:
        share = None if v.work in alone else part_share(v, part, offset, parts, policy)
        if share is not None:
            out.append(share)
    return out
