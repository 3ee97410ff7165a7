"""Bar charts drawn as SVG on the server: no script, no CDN, escaped labels."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 200
MARGIN_LEFT, MARGIN_BOTTOM, MARGIN_TOP = 40, 36, 14


def bar_chart(points: Sequence[tuple[str, int]], title: str, css: str = "bar") -> Markup:
    """Vertical bars of ``(label, value)``; every 5th label shown (all when few)."""
    n = max(len(points), 1)
    top = max([v for _, v in points] + [1])
    plot_w, plot_h = WIDTH - MARGIN_LEFT - 8, HEIGHT - MARGIN_BOTTOM - MARGIN_TOP
    step = plot_w / n
    every = 1 if n <= 12 else 5
    parts = [
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
        f'<line class="axis" x1="{MARGIN_LEFT}" y1="{HEIGHT - MARGIN_BOTTOM}" '
        f'x2="{WIDTH - 8}" y2="{HEIGHT - MARGIN_BOTTOM}"/>',
        f'<text x="2" y="{MARGIN_TOP + 4}">{top}</text>',
        f'<text x="2" y="{HEIGHT - MARGIN_BOTTOM}">0</text>',
    ]
    for i, (label, value) in enumerate(points):
        h = plot_h * value / top
        x = MARGIN_LEFT + i * step
        y = HEIGHT - MARGIN_BOTTOM - h
        parts.append(
            f'<rect class="{escape(css)}" x="{x + 1:.1f}" y="{y:.1f}" '
            f'width="{max(step - 2, 1):.1f}" height="{h:.1f}"><title>{escape(label)}: '
            f"{value}</title></rect>"
        )
        if i % every == 0:
            base = HEIGHT - MARGIN_BOTTOM + 14
            parts.append(f'<text x="{x + 1:.1f}" y="{base}">{escape(label[-5:])}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def hbar_chart(points: Sequence[tuple[str, int]], title: str) -> Markup:
    """Horizontal bars of ``(label, value)``, one row each (top lists)."""
    row = 22
    height = max(len(points), 1) * row + 10
    top = max([v for _, v in points] + [1])
    label_w = 220
    plot_w = WIDTH - label_w - 60
    parts = [
        f'<svg viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    for i, (label, value) in enumerate(points):
        y = 5 + i * row
        w = plot_w * value / top
        short = label if len(label) <= 28 else label[:27] + "…"
        parts.append(
            f'<text x="0" y="{y + 14}">{escape(short)}</text>'
            f'<rect class="bar alt" x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 6}">'
            f"<title>{escape(label)}: {value}</title></rect>"
            f'<text x="{label_w + w + 4:.1f}" y="{y + 14}">{value}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
