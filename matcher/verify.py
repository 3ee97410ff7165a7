"""Verification: scores of one (work, page) candidate pair and the policy's decision.

Scores (all computed from the compact forms, never from full texts):

- ``containment_work``: share of the work's content characters inside passages found in
  the page (Broder's containment C(work, page), in characters — see ``fingerprint.align``);
- ``containment_page``: the same for the page in the work, C(page, work);
- ``resemblance``: Jaccard of the two anchor-hash sets, Broder's resemblance on winnowed
  shingles;
- ``simhash_distance``: Hamming distance of the 64-bit simhashes (Charikar);
- ``microblog_sim``: Sim = 1 / (H + 1) + K * Dup with Dup the resemblance, K = 4;
- ``document_score``: mu * (1 - H / 64) + (1 - mu) * resemblance, mu = 0.85.

The engine aligns each pair with ``ALIGN_PARAMS``; the policy
(:class:`matcher.settings.MatchPolicy`) decides; boilerplate passages have been
removed before (see :func:`drop_boilerplate`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fingerprint.align import Alignment, AlignParams, Passage, covered
from fingerprint.anchors import Anchors
from fingerprint.simhash import hamming
from matcher.settings import MatchPolicy

ALIGN_PARAMS = AlignParams()
MICROBLOG_K = 4.0
DOCUMENT_MU = 0.85


@dataclass(frozen=True)
class Verdict:
    """One verified pair: the alignment, every score and whether the policy calls it a copy."""

    alignment: Alignment
    scores: dict[str, float]
    methods: tuple[str, ...]
    matched: bool

    @property
    def score(self) -> float:
        """The headline score: how much of one text is a copy of the other, 0..1."""
        return max(self.scores["containment_work"], self.scores["containment_page"])


def resemblance(a: Anchors, b: Anchors) -> float:
    """Jaccard of the anchor-hash sets of both channels."""
    inter = union = 0
    for ca, cb in ((a.chars, b.chars), (a.pinyin, b.pinyin)):
        ha, hb = np.unique(ca.hashes), np.unique(cb.hashes)
        shared = len(np.intersect1d(ha, hb, assume_unique=True))
        inter += shared
        union += len(ha) + len(hb) - shared
    return inter / union if union else 0.0


def verdict(
    alignment: Alignment,
    work: Anchors,
    page: Anchors,
    work_simhash: int,
    page_simhash: int,
    policy: MatchPolicy,
    via_windows: bool = False,
) -> Verdict:
    """Scores of an aligned pair and the policy's decision."""
    distance = hamming(work_simhash, page_simhash)
    jaccard = resemblance(work, page)
    scores = {
        "containment_work": alignment.containment_a,
        "containment_page": alignment.containment_b,
        "resemblance": jaccard,
        "simhash_distance": float(distance),
        "microblog_sim": 1.0 / (distance + 1) + MICROBLOG_K * jaccard,
        "document_score": DOCUMENT_MU * (1 - distance / 64) + (1 - DOCUMENT_MU) * jaccard,
    }
    shared_chars = alignment.a_covered
    matched = shared_chars >= policy.min_chars and (
        alignment.containment_a >= policy.min_work_share
        or (
            alignment.containment_b >= policy.min_page_share
            and alignment.b_covered >= policy.min_page_chars
        )
    )
    methods = ["shingles"] if alignment.passages else []
    if via_windows:
        methods.append("pinyin")
    if distance <= policy.simhash_k:
        methods.append("simhash")
    return Verdict(alignment, scores, tuple(methods), matched)


def drop_boilerplate(
    alignments: list[Alignment], page_length: int, max_sharing: int
) -> list[Alignment]:
    """Remove passages of the page that more than ``max_sharing`` works share.

    Text that the page shares with many registered works at the same place — a licence,
    a standard header or footer — says nothing about which work it copies. A passage whose
    page span lies mostly (over half) in such text is dropped, and the coverage recomputed.
    """
    if len(alignments) <= max_sharing or page_length == 0:
        return alignments
    depth = np.zeros(page_length + 1, dtype=np.int32)
    for al in alignments:
        spans = np.array([(p.b_start, p.b_end) for p in al.passages], dtype=np.int64)
        if len(spans):
            np.add.at(depth, spans[:, 0], 1)
            np.add.at(depth, spans[:, 1], -1)
    common = np.concatenate(([0], np.cumsum(np.cumsum(depth)[:-1] > max_sharing)))
    out = []
    for al in alignments:
        kept = [p for p in al.passages if not _mostly_common(p, common)]
        if len(kept) == len(al.passages):
            out.append(al)
            continue
        out.append(_recovered(al, kept))
    return out


def _mostly_common(p: Passage, common: np.ndarray) -> bool:
    return 2 * (common[p.b_end] - common[p.b_start]) > p.b_end - p.b_start


def _recovered(al: Alignment, passages: list[Passage]) -> Alignment:
    a = np.array([(p.a_start, p.a_end) for p in passages], dtype=np.int64).reshape(-1, 2)
    b = np.array([(p.b_start, p.b_end) for p in passages], dtype=np.int64).reshape(-1, 2)
    return replace(
        al,
        passages=tuple(passages),
        a_covered=covered(a[:, 0], a[:, 1]),
        b_covered=covered(b[:, 0], b[:, 1]),
    )
