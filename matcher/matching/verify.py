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
   share at the same place of the page; editions of one work (:mod:`matcher.matching.editions`)
   count once, so the text a group of editions shares is never boilerplate for that alone;
3. attributes shared text (:func:`attribute`): works are ranked by how much of the page
   they explain, and a work keeps only passages not mostly inside text already claimed by a
   better-ranked work that matched; the editions of a group are ranked together, the one
   whose text differs least from the page first (:func:`matcher.matching.editions.differences`),
   and its match names the others that explain the page too (its siblings, ties marked);
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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

import numpy as np

from fingerprint.align import Alignment, AlignParams, Passage, anchor_pairs, covered
from fingerprint.anchors import Anchors
from fingerprint.simhash import hamming
from fingerprint.similarity import combined_score, microblog_sim
from matcher.matching import editions
from matcher.matching.prepared import Prepared, Sampled, SegmentHeader
from matcher.settings import MatchPolicy

ALIGN_PARAMS = AlignParams()
MICROBLOG_K = 4.0
DOCUMENT_MU = 0.85
SAME_PASSAGE = 0.8


class PageFingerprint(Protocol):
    """What verification reads of a page: its simhash, anchors and content length
    (:class:`~matcher.matching.prepared.Prepared` has them)."""

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


@dataclass(frozen=True)
class Sibling:
    """Another edition of a matched work (:mod:`matcher.matching.editions`) that explains the page
    too: its seq, whether it explains it as well (``tie``), and the containments of its own
    alignment with the page (before the matched edition took the text they share)."""

    work: int
    tie: bool
    containment_work: float
    containment_page: float


@dataclass(frozen=True, eq=False)
class Verdict:
    """One verified (page, work) pair: its alignment, scores and the policy's decision.

    ``reason`` says why the work is not a match ("" when it is), and ``explained_by`` names
    the work (seq) that took its shared passages when that is the reason; ``hits`` are the
    segments it was verified against. ``siblings``: the other editions of a matched work
    that explain the page too, the best first; ``edition_tie``: for a work whose passages
    an edition of it took, whether that edition explains the page as well (True) or better
    (False); None otherwise.
    """

    work: int
    alignment: WorkAlignment
    scores: dict[str, float]
    methods: tuple[str, ...]
    reason: str
    hits: tuple[SegmentHit, ...]
    explained_by: int | None = None
    siblings: tuple[Sibling, ...] = ()
    edition_tie: bool | None = None

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
    alignments: Iterable[WorkAlignment],
    page_length: int,
    max_works: int,
    groups: Mapping[int, int] | None = None,
) -> np.ndarray:
    """Page positions covered by passages of more than ``max_works`` candidate works, the
    editions of one group (``groups``: work -> group, :func:`matcher.matching.editions.groups`)
    counting as one work."""
    covers = _covers(alignments, page_length, groups or {})
    depth = np.zeros(page_length, dtype=np.int32)
    for cover in covers.values():
        depth += cover
    return depth > max_works


def _covers(
    alignments: Iterable[WorkAlignment], page_length: int, groups: Mapping[int, int]
) -> dict[tuple[str, int], np.ndarray]:
    """Page positions covered by each work's passages, or by those of any edition of a
    group (keyed ``("group", g)``; a work without editions ``("work", seq)``)."""
    covers: dict[tuple[str, int], np.ndarray] = {}
    for wa in alignments:
        starts, ends = _columns(wa.passages, "b")
        if not len(starts):
            continue
        cover = editions.spans_mask(starts, ends, page_length)
        key = ("group", groups[wa.work]) if wa.work in groups else ("work", wa.work)
        covers[key] = covers[key] | cover if key in covers else cover
    return covers


def editions_df(
    df: np.ndarray,
    sample: Sampled,
    alignments: Mapping[int, WorkAlignment],
    page_length: int,
    groups: Mapping[int, int],
) -> np.ndarray:
    """``df`` (registered works holding each sampled anchor) with the editions of one group
    counted once: less, at each anchor, the candidate works covering it beyond one per
    group of editions covering it."""
    if not groups or not len(df):
        return df
    works = np.zeros(page_length, dtype=np.int32)
    for wa in alignments.values():
        starts, ends = _columns(wa.passages, "b")
        if len(starts):
            works += editions.spans_mask(starts, ends, page_length)
    grouped = np.zeros(page_length, dtype=np.int32)
    for cover in _covers(alignments.values(), page_length, groups).values():
        grouped += cover
    excess = np.r_[works - grouped, 0]
    starts = np.clip(sample.starts.astype(np.int64), 0, page_length)
    last = np.clip(sample.ends.astype(np.int64) - 1, starts, page_length)
    return df - np.minimum(excess[starts], excess[last])


def _mostly(p: Passage, mask: np.ndarray, share: float) -> bool:
    span = mask[p.b_start : p.b_end]
    return bool(len(span)) and span.mean() > share


def drop_masked(wa: WorkAlignment, mask: np.ndarray, share: float) -> WorkAlignment:
    """``wa`` without the passages whose page span lies mostly (over ``share``) in ``mask``."""
    keep = [not _mostly(p, mask, share) for p in wa.passages]
    return wa if all(keep) else wa.keeping(keep)


def _rank(wa: WorkAlignment) -> tuple[int, float, int, int]:
    """The attribution's ranking: page characters covered, containment of the work, seq."""
    return (-wa.page_covered, -wa.containment_work, wa.work, 0)


def attribute(
    alignments: Mapping[int, WorkAlignment],
    policy: MatchPolicy,
    rank: Callable[[WorkAlignment], tuple[int, float, int, int]] = _rank,
) -> dict[int, tuple[WorkAlignment, int | None]]:
    """Give shared text to the work that explains it best.

    Works are ranked by page characters covered, then containment of the work, then work
    seq (the earlier registration wins a tie), or by ``rank`` (:func:`judge` ranks the
    editions of a group together). Going down the ranking, a work keeps only passages not
    mostly inside text claimed by the better-ranked works that matched; if it then matches,
    its passages claim their text. Returns, per work, what it kept and the work that took
    its first lost passage (None when it lost none).
    """
    if not alignments:
        return {}
    page_length = next(iter(alignments.values())).page_length
    claimed = np.zeros(page_length, dtype=bool)
    owner = np.zeros(page_length, dtype=np.int64)
    ranked = sorted(alignments.values(), key=rank)
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
    siblings: tuple[Sibling, ...] = (),
    edition_tie: bool | None = None,
) -> Verdict:
    """Scores of a work's final alignment with the page, and the decision ``reason``
    (``explained_by``, ``siblings`` and ``edition_tie`` as :class:`Verdict` has them)."""
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
    return Verdict(
        wa.work, wa, scores, tuple(methods), reason, tuple(hits), explained_by, siblings,
        edition_tie,
    )  # fmt: skip


@dataclass(frozen=True)
class _Group:
    """The editions of one group among a page's candidates, in the order they explain the
    page (:func:`matcher.matching.editions.differences`, ``differences`` by work): the first is the
    one ranked first, those of ``tied`` explain it as well."""

    order: tuple[int, ...]
    differences: Mapping[int, int]
    tied: frozenset[int]


def _ranked_groups(
    cleaned: Mapping[int, WorkAlignment],
    hits: Mapping[int, Sequence[SegmentHit]],
    page: PageFingerprint,
    groups: Mapping[int, int],
) -> dict[int, _Group]:
    """Each group of editions with two or more candidates sharing passages with the page,
    by group: its editions in the order they explain the page, the tied ones first, among
    them the higher containment of the work then the earlier registration."""
    members: dict[int, list[int]] = {}
    for work, wa in cleaned.items():
        if work in groups and wa.passages:
            members.setdefault(groups[work], []).append(work)
    out = {}
    for g, works in members.items():
        if len(works) < 2:
            continue
        region = np.zeros(page.length, dtype=bool)
        for w in works:
            region |= editions.spans_mask(*_columns(cleaned[w].passages, "b"), page.length)
        found = {}
        for w in works:
            pairs = [anchor_pairs(h.anchors, page.anchors) for h in hits[w]]
            for h, p in zip(hits[w], pairs, strict=True):
                p[:2] += h.header.offset
            joined = np.concatenate(pairs, axis=1)
            found[w] = editions.differences(
                cleaned[w].passages, joined, region, ALIGN_PARAMS.max_gap
            )
        least = min(found.values())
        tied = frozenset(w for w in works if found[w] - least <= editions.TIE_CHARS)
        order = sorted(
            works,
            key=lambda w: (w not in tied, found[w] if w not in tied else 0,
                           -cleaned[w].containment_work, w),
        )  # fmt: skip
        out[g] = _Group(tuple(order), found, tied)
    return out


def judge(
    hits: Mapping[int, Sequence[SegmentHit]],
    page: Prepared,
    df: np.ndarray,
    policy: MatchPolicy,
    groups: Mapping[int, int] | None = None,
) -> list[Verdict]:
    """Every verified work's verdict on ``page`` (see the module docstring), best first.

    ``df`` holds, for each of ``page.sampled.keys``, the number of registered works whose
    postings hold it; ``groups`` maps the candidate works that are editions of each other
    to their group (:func:`matcher.matching.editions.groups`).
    """
    groups = groups or {}
    merged = {work: merge(h, page.length) for work, h in hits.items() if h}
    df = editions_df(df, page.sampled, merged, page.length, groups)
    mask = common_mask(
        page.length, page.sampled, df, policy.boilerplate_works, ALIGN_PARAMS.max_gap
    ) | shared_mask(merged.values(), page.length, policy.boilerplate_works - 1, groups)
    cleaned = {w: drop_masked(wa, mask, policy.boilerplate_share) for w, wa in merged.items()}
    ranked = _ranked_groups(cleaned, hits, page, groups)
    rank = _rank
    if ranked:
        place = {w: (g, i) for g, r in ranked.items() for i, w in enumerate(r.order)}

        def rank(wa: WorkAlignment) -> tuple[int, float, int, int]:
            if wa.work not in place:
                return _rank(wa)
            g, i = place[wa.work]
            first = cleaned[ranked[g].order[0]]
            return (-first.page_covered, -first.containment_work, first.work, i)

    attributed = attribute(cleaned, policy, rank)
    out = []
    for work, (final, lost_to) in attributed.items():
        reason = decide(final, policy)
        explained_by = None
        group = ranked.get(groups.get(work, -1))
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
        siblings: tuple[Sibling, ...] = ()
        edition_tie = None
        if group is not None and not reason:
            siblings = tuple(
                Sibling(
                    w,
                    work in group.tied and w in group.tied,
                    cleaned[w].containment_work,
                    cleaned[w].containment_page,
                )
                for w in group.order
                if w != work and not decide(cleaned[w], policy)
            )
        elif group is not None and explained_by in group.differences:
            edition_tie = work in group.tied and explained_by in group.tied
        out.append(
            verdict(final, hits[work], page, policy, reason, explained_by, siblings, edition_tie)
        )
    out.sort(key=lambda v: (not v.matched, -v.alignment.page_covered, v.work))
    return out
