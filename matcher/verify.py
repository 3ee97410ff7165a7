"""Verification: which works a page copies, judged from its candidate segments.

The engine aligns the page with every candidate segment (:func:`fingerprint.align.align`,
``a`` the segment, ``b`` the page) and hands the :class:`SegmentHit` objects here, grouped
by work. :func:`judge` then, in order:

1. merges each work's hits into one :class:`WorkAlignment` (passages in the work's content
   characters, so overlapping segments count once);
2. drops boilerplate: passages of the page lying mostly (over ``policy.boilerplate_share``)
   in text that at least ``policy.boilerplate_works`` registered works hold (the corpus
   document frequency of the page's sampled anchors, read from the works' postings index
   with the candidates) or that more than ``policy.boilerplate_works - 1`` candidate works
   share at the same place of the page;
3. attributes shared text (:func:`attribute`): works are ranked by how much of the page
   they explain, and a work keeps only passages not mostly inside text already claimed by a
   better-ranked work that matched;
4. decides with the policy (:func:`decide`) and scores each work (:func:`verdict`).

Scores (from the compact forms, never from full texts):

- ``containment_work``: share of the work's content characters inside passages found in
  the page (Broder's containment C(work, page), in characters, see ``fingerprint.align``);
- ``containment_segment``: the same for the best segment (a chapter of a long work);
- ``containment_page``: share of the page's content characters found in the work;
- ``resemblance``: Jaccard of the anchor-hash sets of the page and its closest segment;
- ``simhash_distance``: Hamming distance of the page's simhash to the closest segment's;
- ``microblog_sim`` and ``document_score``: the seeds' formulas
  (:func:`fingerprint.similarity.microblog_sim` with K = 4, Dup the resemblance, and
  :func:`fingerprint.similarity.combined_score` with mu = 0.85, J the resemblance).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

import numpy as np

from fingerprint.align import Alignment, AlignParams, Passage, covered
from fingerprint.anchors import Anchors
from fingerprint.simhash import hamming
from fingerprint.similarity import combined_score, microblog_sim
from matcher.prepared import Prepared, Sampled, SegmentHeader
from matcher.settings import MatchPolicy

ALIGN_PARAMS = AlignParams()
MICROBLOG_K = 4.0
DOCUMENT_MU = 0.85
SAME_PASSAGE = 0.8


class PageFingerprint(Protocol):
    """What verification reads of a page: its simhash, anchors and content length
    (:class:`~matcher.prepared.Prepared` has them)."""

    @property
    def simhash(self) -> int: ...

    @property
    def anchors(self) -> Anchors: ...

    @property
    def length(self) -> int: ...


@dataclass(frozen=True, eq=False)
class SegmentHit:
    """A candidate segment of a work aligned with the page (``a`` the segment, ``b`` the page)."""

    header: SegmentHeader
    anchors: Anchors
    alignment: Alignment
    window_hits: int = 0


@dataclass(frozen=True, eq=False)
class WorkAlignment:
    """What a page shares with one work over all its candidate segments.

    ``passages`` are in the work's content characters (``a``) and the page's (``b``);
    ``segments[i]`` is the index of the segment passage ``i`` was found in, and
    ``segment_spans`` gives each segment's ``(offset, length)`` in the work.
    """

    work: int
    work_length: int
    page_length: int
    passages: tuple[Passage, ...]
    segments: tuple[int, ...]
    segment_spans: Mapping[int, tuple[int, int]] = field(default_factory=dict)

    @cached_property
    def work_covered(self) -> int:
        return covered(*_columns(self.passages, "a"))

    @cached_property
    def page_covered(self) -> int:
        return covered(*_columns(self.passages, "b"))

    @property
    def containment_work(self) -> float:
        return self.work_covered / self.work_length if self.work_length else 0.0

    @property
    def containment_page(self) -> float:
        return self.page_covered / self.page_length if self.page_length else 0.0

    @cached_property
    def best_segment(self) -> tuple[float, int, int]:
        """``(share, covered characters, index)`` of the segment the page covers most."""
        best = (0.0, 0, -1)
        for index, (offset, length) in self.segment_spans.items():
            mine = [p for p, s in zip(self.passages, self.segments, strict=True) if s == index]
            if not mine or not length:
                continue
            starts, ends = _columns(mine, "a")
            chars = covered(np.clip(starts - offset, 0, length), np.clip(ends - offset, 0, length))
            best = max(best, (chars / length, chars, index))
        return best

    def keeping(self, keep: Sequence[bool]) -> WorkAlignment:
        """The same alignment with only the passages where ``keep`` is true."""
        chosen = [i for i, k in enumerate(keep) if k]
        return WorkAlignment(
            self.work,
            self.work_length,
            self.page_length,
            tuple(self.passages[i] for i in chosen),
            tuple(self.segments[i] for i in chosen),
            self.segment_spans,
        )


@dataclass(frozen=True, eq=False)
class Verdict:
    """One verified (page, work) pair: its alignment, scores and the policy's decision.

    ``reason`` says why the work is not a match ("" when it is), and ``explained_by`` names
    the work (seq) that took its shared passages when that is the reason; ``hits`` are the
    segments it was verified against.
    """

    work: int
    alignment: WorkAlignment
    scores: dict[str, float]
    methods: tuple[str, ...]
    reason: str
    hits: tuple[SegmentHit, ...]
    explained_by: int | None = None

    @property
    def matched(self) -> bool:
        return not self.reason

    @property
    def score(self) -> float:
        """The headline score: how much of one text is a copy of the other, 0..1."""
        return max(
            self.scores["containment_work"],
            self.scores["containment_page"],
            self.scores["containment_segment"],
        )


def _columns(passages: Iterable[Passage], side: str) -> tuple[np.ndarray, np.ndarray]:
    pairs = [(getattr(p, f"{side}_start"), getattr(p, f"{side}_end")) for p in passages]
    array = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return array[:, 0], array[:, 1]


def merge(hits: Sequence[SegmentHit], page_length: int) -> WorkAlignment:
    """One work's hits as one alignment in the work's coordinates.

    A passage found in two overlapping segments is kept once (the longer one): a passage
    lying mostly (over :data:`SAME_PASSAGE`) inside a longer one of a neighbouring segment,
    on both sides, is the same text (winnowing near a segment's edge may pick other anchors,
    so the two rarely coincide exactly).
    """
    found: list[tuple[Passage, int]] = []
    for hit in hits:
        offset = hit.header.offset
        for p in hit.alignment.passages:
            shifted = Passage(p.a_start + offset, p.a_end + offset, p.b_start, p.b_end, p.anchors)
            found.append((shifted, hit.header.index))
    found.sort(key=lambda f: (-(f[0].a_end - f[0].a_start), f[0].a_start))
    by_segment: dict[int, list[Passage]] = {}
    kept: list[tuple[Passage, int]] = []
    for p, index in found:
        neighbours = by_segment.get(index - 1, []) + by_segment.get(index + 1, [])
        if not any(_contains(q, p) for q in neighbours):
            kept.append((p, index))
            by_segment.setdefault(index, []).append(p)
    kept.sort(key=lambda f: f[0].a_start)
    first = hits[0].header
    return WorkAlignment(
        work=first.work,
        work_length=first.work_length,
        page_length=page_length,
        passages=tuple(p for p, _ in kept),
        segments=tuple(i for _, i in kept),
        segment_spans={h.header.index: (h.header.offset, h.header.length) for h in hits},
    )


def _contains(q: Passage, p: Passage) -> bool:
    a = min(p.a_end, q.a_end) - max(p.a_start, q.a_start)
    b = min(p.b_end, q.b_end) - max(p.b_start, q.b_start)
    return a > SAME_PASSAGE * (p.a_end - p.a_start) and b > SAME_PASSAGE * (p.b_end - p.b_start)


def decide(wa: WorkAlignment, policy: MatchPolicy) -> str:
    """ "" when the policy calls the pair a copy, else why not.

    A copy shares at least ``min_chars`` characters and covers ``min_work_share`` of the
    work, or ``min_page_share`` of the page and ``min_page_chars`` characters, or
    ``min_work_share`` of one segment (a chapter of a long work) and ``min_page_chars``,
    or ``min_quote_chars`` characters covering ``min_quote_share`` of the work or of one
    segment (a long quotation among other text).
    """
    if wa.work_covered < policy.min_chars:
        return f"shares {wa.work_covered} characters, fewer than {policy.min_chars}"
    if wa.containment_work >= policy.min_work_share:
        return ""
    if wa.containment_page >= policy.min_page_share and wa.page_covered >= policy.min_page_chars:
        return ""
    share, chars, _ = wa.best_segment
    if share >= policy.min_work_share and chars >= policy.min_page_chars:
        return ""
    quoted = max(wa.containment_work, share) >= policy.min_quote_share
    if quoted and wa.work_covered >= policy.min_quote_chars:
        return ""
    return (
        f"covers {wa.containment_work:.0%} of the work, {share:.0%} of its closest segment"
        f" and {wa.containment_page:.0%} of the page ({wa.page_covered} characters)"
    )


def common_mask(
    page_length: int, sample: Sampled, df: np.ndarray, min_works: int, max_gap: int
) -> np.ndarray:
    """Page positions inside text that at least ``min_works`` registered works hold.

    ``df[i]`` is the number of distinct works whose postings hold ``sample.keys[i]``.
    Consecutive common sampled anchors (no uncommon one between them, gaps of at most
    ``max_gap`` characters) make one common region.
    """
    mask = np.zeros(page_length, dtype=bool)
    common = np.flatnonzero(df >= min_works)
    if not len(common):
        return mask
    starts, ends = sample.starts[common], sample.ends[common]
    adjacent = np.diff(common) == 1
    joins = adjacent & (starts[1:] - ends[:-1] <= max_gap)
    heads = np.flatnonzero(np.r_[True, ~joins])
    for first, last in zip(heads, np.r_[heads[1:], len(common)] - 1, strict=True):
        mask[int(starts[first]) : int(ends[first : last + 1].max())] = True
    return mask


def shared_mask(
    alignments: Iterable[WorkAlignment], page_length: int, max_works: int
) -> np.ndarray:
    """Page positions covered by passages of more than ``max_works`` candidate works."""
    depth = np.zeros(page_length + 1, dtype=np.int32)
    for wa in alignments:
        starts, ends = _columns(wa.passages, "b")
        if len(starts):  # one work's overlapping passages count once
            marks = np.zeros(page_length + 1, dtype=np.int32)
            np.add.at(marks, starts, 1)
            np.add.at(marks, ends, -1)
            depth += np.cumsum(marks) > 0
    return depth[:page_length] > max_works


def _mostly(p: Passage, mask: np.ndarray, share: float) -> bool:
    span = mask[p.b_start : p.b_end]
    return bool(len(span)) and span.mean() > share


def drop_masked(wa: WorkAlignment, mask: np.ndarray, share: float) -> WorkAlignment:
    """``wa`` without the passages whose page span lies mostly (over ``share``) in ``mask``."""
    keep = [not _mostly(p, mask, share) for p in wa.passages]
    return wa if all(keep) else wa.keeping(keep)


def attribute(
    alignments: Mapping[int, WorkAlignment], policy: MatchPolicy
) -> dict[int, tuple[WorkAlignment, int | None]]:
    """Give shared text to the work that explains it best.

    Works are ranked by page characters covered, then containment of the work, then work
    seq (the earlier registration wins a tie). Going down the ranking, a work keeps only
    passages not mostly inside text claimed by the better-ranked works that matched; if it
    then matches, its passages claim their text. Returns, per work, what it kept and the
    work that took its first lost passage (None when it lost none).
    """
    if not alignments:
        return {}
    page_length = next(iter(alignments.values())).page_length
    claimed = np.zeros(page_length, dtype=bool)
    owner = np.zeros(page_length, dtype=np.int64)
    ranked = sorted(
        alignments.values(), key=lambda wa: (-wa.page_covered, -wa.containment_work, wa.work)
    )
    out: dict[int, tuple[WorkAlignment, int | None]] = {}
    for wa in ranked:
        keep = [not _mostly(p, claimed, policy.boilerplate_share) for p in wa.passages]
        lost_to = None
        if not all(keep):
            lost = wa.passages[keep.index(False)]
            lost_to = int(
                np.bincount(
                    owner[lost.b_start : lost.b_end][claimed[lost.b_start : lost.b_end]]
                ).argmax()
            )
            wa = wa.keeping(keep)
        out[wa.work] = (wa, lost_to)
        if not decide(wa, policy):
            for p in wa.passages:
                fresh = ~claimed[p.b_start : p.b_end]
                owner[p.b_start : p.b_end][fresh] = wa.work
                claimed[p.b_start : p.b_end] = True
    return out


def resemblance(a: Anchors, b: Anchors) -> float:
    """Jaccard of the anchor-hash sets of both channels (Broder's resemblance)."""
    inter = union = 0
    for ca, cb in ((a.chars, b.chars), (a.pinyin, b.pinyin)):
        ha, hb = np.unique(ca.hashes), np.unique(cb.hashes)
        shared = len(np.intersect1d(ha, hb, assume_unique=True))
        inter += shared
        union += len(ha) + len(hb) - shared
    return inter / union if union else 0.0


def verdict(
    wa: WorkAlignment,
    hits: Sequence[SegmentHit],
    page: PageFingerprint,
    policy: MatchPolicy,
    reason: str,
    explained_by: int | None = None,
) -> Verdict:
    """Scores of a work's final alignment with the page, and the decision ``reason``."""
    distance = min(hamming(h.header.simhash, page.simhash) for h in hits)
    jaccard = max(resemblance(h.anchors, page.anchors) for h in hits)
    share, _, _ = wa.best_segment
    scores = {
        "containment_work": wa.containment_work,
        "containment_segment": share,
        "containment_page": wa.containment_page,
        "resemblance": jaccard,
        "simhash_distance": float(distance),
        "microblog_sim": microblog_sim(distance, jaccard, MICROBLOG_K),
        "document_score": combined_score(distance, jaccard, DOCUMENT_MU),
    }
    methods = ["shingles"] if wa.passages else []
    if any(h.window_hits >= policy.min_window_hits for h in hits):
        methods.append("pinyin")
    if distance <= policy.simhash_k:
        methods.append("simhash")
    return Verdict(wa.work, wa, scores, tuple(methods), reason, tuple(hits), explained_by)


def judge(
    hits: Mapping[int, Sequence[SegmentHit]],
    page: Prepared,
    df: np.ndarray,
    policy: MatchPolicy,
) -> list[Verdict]:
    """Every verified work's verdict on ``page`` (see the module docstring), best first.

    ``df`` holds, for each of ``page.sampled.keys``, the number of registered works whose
    postings hold it.
    """
    merged = {work: merge(h, page.length) for work, h in hits.items() if h}
    mask = common_mask(
        page.length, page.sampled, df, policy.boilerplate_works, ALIGN_PARAMS.max_gap
    ) | shared_mask(merged.values(), page.length, policy.boilerplate_works - 1)
    cleaned = {w: drop_masked(wa, mask, policy.boilerplate_share) for w, wa in merged.items()}
    attributed = attribute(cleaned, policy)
    out = []
    for work, (final, lost_to) in attributed.items():
        reason = decide(final, policy)
        explained_by = None
        if reason and lost_to is not None and not decide(cleaned[work], policy):
            reason, explained_by = (
                "its shared passages are explained better by another work",
                lost_to,
            )
        elif reason and not decide(merged[work], policy):
            reason = (
                "its shared text is boilerplate (common to several registered works or to"
                " several candidates at the same place of the page)"
            )
        out.append(verdict(final, hits[work], page, policy, reason, explained_by))
    out.sort(key=lambda v: (not v.matched, -v.alignment.page_covered, v.work))
    return out
