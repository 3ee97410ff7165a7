"""Evidence: the shared passages of a match as spans of the original work and page texts."""

from __future__ import annotations

from typing import Any

from fingerprint.align import Passage
from matcher.prepared import Prepared

MAX_PASSAGES = 50
PREVIEW_CHARS = 200


def evidence(
    passages: tuple[Passage, ...] | list[Passage], work: Prepared, page: Prepared
) -> list[dict[str, Any]]:
    """Up to ``MAX_PASSAGES`` passages, longest first, then in work order.

    Each item: ``work_span`` and ``page_span`` as ``[start, end)`` offsets into the original
    (un-normalised) texts, ``text`` the page's copy (its first ``PREVIEW_CHARS`` characters,
    with "…" when cut) and ``chars`` the passage length in content characters.
    """
    chosen = sorted(passages, key=lambda p: (-p.chars, p.a_start))[:MAX_PASSAGES]
    out = []
    for p in sorted(chosen, key=lambda p: p.a_start):
        ws = work.original_span(p.a_start, p.a_end)
        ps = page.original_span(p.b_start, p.b_end)
        text = page.normalized.original[ps[0] : ps[1]]
        if len(text) > PREVIEW_CHARS:
            text = text[:PREVIEW_CHARS] + "…"
        out.append({"work_span": list(ws), "page_span": list(ps), "text": text, "chars": p.chars})
    return out
