"""Texts with their matching passages marked, escaped for HTML.

Evidence spans (:mod:`matcher.matching.match_records`) are ``[start, end)`` offsets into the
original
work and page texts; passage *i* of the work and passage *i* of the page are the same
shared text, so both sides carry the number ``i`` and link to each other.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from admin import report

MAX_SHOWN_CHARS = 300_000


def highlight(text: str, spans: Sequence[tuple[int, int, int]], side: str) -> Markup:
    """``text`` escaped, each ``(start, end, number)`` span in a numbered ``<mark>``.

    Overlapping spans are clipped to the part not yet marked. Text beyond
    :data:`MAX_SHOWN_CHARS` is cut, with a note.
    """
    shown = text[:MAX_SHOWN_CHARS]
    out: list[str] = []
    pos = 0
    other = "page" if side == "work" else "work"
    for start, end, number in sorted(spans):
        start, end = max(start, pos), min(end, len(shown))
        if start >= end:
            continue
        out.append(str(escape(shown[pos:start])))
        out.append(
            f'<mark id="{side}-{number}" title="passage {number}">'
            f'<a href="#{other}-{number}">{number}</a>{escape(shown[start:end])}</mark>'
        )
        pos = end
    out.append(str(escape(shown[pos:])))
    if len(text) > len(shown):
        out.append(f"\n[… {len(text) - len(shown):,} more characters not shown]")
    return Markup("".join(out))


def excerpt(text: str, start: int, end: int) -> Markup:
    """One passage in context, marked (:func:`admin.report.excerpt`)."""
    return Markup(report.excerpt(text, start, end))
