"""Segments of a long work: chapters when its headings say where they are, else fixed pieces.

Rights holders register whole novels (millions of characters) and pirate sites publish them
chapter by chapter. Matching a chapter page against a segment costs the same whatever the
length of the work, and evidence can name the chapter. A text is cut:

- not at all when it has at most ``single_max_chars`` characters (short works, articles);
- at chapter headings (a line starting with 第N章 / 第N回 / 第N节 / 第N卷 ..., or
  ``Chapter N``) when it has at least two: each segment runs from one heading line to the
  next (text before the first heading joins the first chapter); a chapter shorter than
  ``min_chars`` is merged with the next one, one longer than ``max_chars`` is cut into
  fixed pieces;
- otherwise into fixed pieces of about ``target_chars``, cut after a line break when one
  is within the last fifth of the piece.

Every segment but the last is indexed with ``overlap_chars`` more characters of the next one,
so text copied across a cut still has its anchors. There are at most ``max_segments``
segments: a longer text gets longer pieces.

>>> text = "".join(f"第{n}章 标题\\n" + "字" * 3000 + "\\n" for n in range(1, 30))
>>> segs = segment(text)
>>> len(segs), segs[0].title, segs[1].start == segs[0].end
(29, '第1章 标题', True)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

HEADING = re.compile(
    r"^[ \t\u3000]*(?:第[0-9０-９零〇一二三四五六七八九十百千万两]{1,9}[章回节卷部集篇]"
    r"|chapter[ \t]+(?:[0-9]{1,5}|[ivxlcdm]{1,9})\b)[^\n]{0,60}$",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True)
class SegmentParams:
    """Sizes in characters of the original text."""

    single_max_chars: int = 16_000
    target_chars: int = 10_000
    min_chars: int = 1_000
    max_chars: int = 30_000
    overlap_chars: int = 200
    max_segments: int = 4096

    def __post_init__(self) -> None:
        if not 0 < self.min_chars <= self.target_chars <= self.max_chars:
            raise ValueError("segment sizes must satisfy 0 < min <= target <= max")
        if self.overlap_chars < 0 or self.max_segments < 1 or self.single_max_chars < 1:
            raise ValueError("overlap must be >= 0, max_segments and single_max_chars >= 1")


@dataclass(frozen=True)
class Segment:
    """``text[start:end]`` is the segment; ``text[start:stop]`` (overlap included) is indexed."""

    index: int
    start: int
    end: int
    stop: int
    title: str


def segment(text: str, params: SegmentParams | None = None) -> list[Segment]:
    """The segments of ``text`` (see the module docstring); at least one, even for ""."""
    params = params or SegmentParams()
    if len(text) <= params.single_max_chars:
        return [Segment(0, 0, len(text), len(text), "")]
    cuts = _chapter_cuts(text, params)
    if cuts is None or len(cuts) > params.max_segments:
        target = max(params.target_chars, math.ceil(len(text) / params.max_segments * 1.05))
        cuts = [(start, "") for start in _fixed_cuts(text, 0, len(text), target)]
    starts = [c[0] for c in cuts] + [len(text)]
    out = []
    for i, (start, title) in enumerate(cuts):
        end = starts[i + 1]
        stop = min(len(text), end + params.overlap_chars) if end < len(text) else end
        out.append(Segment(i, start, end, stop, title))
    return out


def _chapter_cuts(text: str, params: SegmentParams) -> list[tuple[int, str]] | None:
    """``(start, heading)`` of each segment when ``text`` has two headings or more."""
    heads = [(m.start(), m.group(0).strip()) for m in HEADING.finditer(text)]
    if len(heads) < 2:
        return None
    heads[0] = (0, heads[0][1])  # what precedes the first heading joins the first chapter
    merged: list[tuple[int, str]] = []
    for i, (start, title) in enumerate(heads):
        if merged and start - merged[-1][0] < params.min_chars:
            continue  # the previous chapter is too short: it runs on into this one
        if i + 1 < len(heads) or len(text) - start >= params.min_chars or not merged:
            merged.append((start, title))
    cuts: list[tuple[int, str]] = []
    bounds = [m[0] for m in merged] + [len(text)]
    for (start, title), end in zip(merged, bounds[1:], strict=True):
        if end - start <= params.max_chars:
            cuts.append((start, title))
            continue
        pieces = _fixed_cuts(text, start, end, params.target_chars)
        cuts += [(p, title) for p in pieces]
    return cuts


def _fixed_cuts(text: str, start: int, end: int, target: int) -> list[int]:
    """Starts of pieces of about ``target`` characters covering ``text[start:end]``."""
    starts = [start]
    at = start
    while end - at > target * 1.5:
        cut = at + target
        newline = text.rfind("\n", cut - target // 5, cut)
        at = newline + 1 if newline > at else cut
        starts.append(at)
    return starts
