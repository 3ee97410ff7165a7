"""Glyph outlines drawn to small bitmaps and described by their stroke directions.

:func:`outline` draws one glyph through fontTools' pen protocol (TrueType quadratic and CFF
cubic outlines, composite glyphs nested at most ``max_depth`` deep) and flattens its curves
into line segments (:data:`QUAD_STEPS`, :data:`CUBIC_STEPS` per curve). :func:`rasterise`
fills many glyphs at once (nonzero winding, pixel centres, one ``bincount`` for all), each
scaled to its own bounding box: the square of side ``max(width, height) *``
:data:`PADDING` centred on the box, so the aspect ratio is kept and a typeface that draws
its characters smaller or lower than another does not matter.

:func:`direction_features` is the classic feature of printed Chinese character recognition,
the directional element feature (Kato et al., "A handwritten character recognition system
using directional element feature and asymmetric Mahalanobis distance", IEEE PAMI 21(3),
1999; gradient form as in C.-L. Liu, "Normalization-cooperated gradient feature
extraction", PAMI 29(8), 2007): the bitmap is smoothed, its gradient at each pixel split
between the two nearest of 8 directions, and each direction plane pooled by Gaussian
windows on an :data:`GRID` x :data:`GRID` grid: 512 values, square-rooted (variance
stabilising) and scaled to unit length, so that the dot product of two is their cosine.
Strokes keep their direction and place across typefaces (Hei, Song, Ming, a sans), while
their thickness and ends change, which a bitmap compared pixel by pixel does not survive.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from fontTools.pens.basePen import BasePen
from fontTools.pens.transformPen import TransformPen

SIZE = 64
"""Side of the bitmap a glyph is filled into, in pixels."""
PADDING = 1.1
"""The bitmap's side over the glyph's longer side."""
QUAD_STEPS = 4
CUBIC_STEPS = 6
SMOOTH_SIGMA = 0.5
"""Gaussian smoothing of the bitmap before its gradient, in pixels."""
GRID = 8
DIRECTIONS = 8
FEATURES = DIRECTIONS * GRID * GRID
BATCH = 512
"""Glyphs drawn, filled and described together."""


class OutlineTooComplex(Exception):
    """A glyph with more segments, or components nested deeper, than allowed."""


class _SegmentPen(BasePen):
    """Collects a glyph's lines, quadratic and cubic curves as point tuples (the
    flattening happens later, in numpy)."""

    def __init__(self, glyph_set: Any, max_segments: int, max_depth: int) -> None:
        super().__init__(glyph_set)
        self.lines: list[tuple[float, ...]] = []
        self.quads: list[tuple[float, ...]] = []
        self.cubics: list[tuple[float, ...]] = []
        self.max_segments = max_segments
        self.max_depth = max_depth
        self.depth = 0
        self._start: tuple[float, float] = (0.0, 0.0)

    def _count(self) -> None:
        n = len(self.lines) + QUAD_STEPS * len(self.quads) + CUBIC_STEPS * len(self.cubics)
        if n > self.max_segments:
            raise OutlineTooComplex(f"more than {self.max_segments} segments")

    def _moveTo(self, pt: tuple[float, float]) -> None:
        self._start = pt

    def _lineTo(self, pt: tuple[float, float]) -> None:
        x0, y0 = self._getCurrentPoint()
        self.lines.append((x0, y0, *pt))
        if len(self.lines) & 255 == 0:
            self._count()

    def _qCurveToOne(self, pt1: tuple[float, float], pt2: tuple[float, float]) -> None:
        x0, y0 = self._getCurrentPoint()
        self.quads.append((x0, y0, *pt1, *pt2))
        if len(self.quads) & 63 == 0:
            self._count()

    def _curveToOne(self, pt1: Any, pt2: Any, pt3: Any) -> None:
        x0, y0 = self._getCurrentPoint()
        self.cubics.append((x0, y0, *pt1, *pt2, *pt3))
        if len(self.cubics) & 63 == 0:
            self._count()

    def _closePath(self) -> None:
        current = self._getCurrentPoint()
        if current is not None and current != self._start:
            self.lines.append((*current, *self._start))

    def _endPath(self) -> None:
        self._closePath()

    def addComponent(self, glyphName: str, transformation: Any) -> None:
        if self.depth >= self.max_depth:
            raise OutlineTooComplex(f"components nested deeper than {self.max_depth}")
        self.depth += 1
        try:
            self.glyphSet[glyphName].draw(TransformPen(self, transformation))
        finally:
            self.depth -= 1


def outline(
    glyph_set: Any, name: str, *, max_segments: int = 20_000, max_depth: int = 8
) -> np.ndarray:
    """The glyph ``name``'s outline as line segments ``(x0, y0, x1, y1)`` in font units,
    float64 of shape (n, 4); :class:`OutlineTooComplex` past the bounds."""
    pen = _SegmentPen(glyph_set, max_segments, max_depth)
    glyph_set[name].draw(pen)
    pen._count()
    parts = [np.asarray(pen.lines, np.float64).reshape(-1, 4)]
    if pen.quads:
        parts.append(_flatten(np.asarray(pen.quads, np.float64).reshape(-1, 3, 2), QUAD_STEPS))
    if pen.cubics:
        parts.append(_flatten(np.asarray(pen.cubics, np.float64).reshape(-1, 4, 2), CUBIC_STEPS))
    return np.concatenate(parts)


def _flatten(curves: np.ndarray, steps: int) -> np.ndarray:
    """Bezier curves (n, degree + 1, 2) as ``steps`` line segments each (Bernstein form)."""
    degree = curves.shape[1] - 1
    t = np.linspace(0.0, 1.0, steps + 1)
    k = np.arange(degree + 1)
    binomial = np.array([math.comb(degree, i) for i in k], np.float64)
    basis = binomial * t[:, None] ** k * (1 - t[:, None]) ** (degree - k)  # (steps+1, deg+1)
    points = np.einsum("sk,nkd->nsd", basis, curves)  # (n, steps+1, 2)
    return np.concatenate([points[:, :-1], points[:, 1:]], axis=2).reshape(-1, 4)


def boxes(outlines: list[np.ndarray]) -> np.ndarray:
    """Each outline's bounding box ``(x0, y0, x1, y1)``; zeros for an empty glyph."""
    out = np.zeros((len(outlines), 4), np.float64)
    for n, seg in enumerate(outlines):
        if len(seg):
            xs, ys = seg[:, 0::2], seg[:, 1::2]
            out[n] = xs.min(), ys.min(), xs.max(), ys.max()
    return out


def rasterise(outlines: list[np.ndarray], size: int = SIZE) -> np.ndarray:
    """Fill each outline into a ``size`` x ``size`` bitmap fitted to its bounding box
    (module docstring), as float32 (count, size, size) of 0 and 1; an empty outline stays
    blank."""
    count = len(outlines)
    out = np.zeros(count * size * (size + 1), np.float64)
    box = boxes(outlines)
    lengths = np.array([len(s) for s in outlines], np.int64)
    if not lengths.sum():
        return np.zeros((count, size, size), np.float32)
    seg = np.concatenate(outlines)
    owner = np.repeat(np.arange(count), lengths)
    side = np.maximum(box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]) * PADDING
    scale = size / np.maximum(side, 1e-9)
    cx = (box[:, 0] + box[:, 2]) / 2
    cy = (box[:, 1] + box[:, 3]) / 2
    s, x_mid, y_mid = scale[owner], cx[owner], cy[owner]
    x0 = (seg[:, 0] - x_mid) * s + size / 2
    x1 = (seg[:, 2] - x_mid) * s + size / 2
    y0 = (y_mid - seg[:, 1]) * s + size / 2  # bitmap rows go down
    y1 = (y_mid - seg[:, 3]) * s + size / 2
    slope = y0 != y1
    x0, x1, y0, y1, owner = x0[slope], x1[slope], y0[slope], y1[slope], owner[slope]
    winding = np.where(y1 > y0, 1.0, -1.0)
    first = np.clip(np.ceil(np.minimum(y0, y1) - 0.5), 0, size).astype(np.int64)
    last = np.clip(np.ceil(np.maximum(y0, y1) - 0.5), 0, size).astype(np.int64)
    rows = last - first
    crossing = np.repeat(np.arange(len(rows)), rows)  # one per (segment, row) it crosses
    row = first[crossing] + np.arange(len(crossing)) - np.repeat(np.cumsum(rows) - rows, rows)
    ya, xa = y0[crossing], x0[crossing]
    x = xa + (row + 0.5 - ya) * (x1[crossing] - xa) / (y1[crossing] - ya)
    col = np.clip(np.ceil(x - 0.5), 0, size).astype(np.int64)
    flat = (owner[crossing] * size + row) * (size + 1) + col
    out += np.bincount(flat, weights=winding[crossing], minlength=len(out))
    inside = np.cumsum(out.reshape(count, size, size + 1), axis=2)[:, :, :size] != 0
    return inside.astype(np.float32)


def _gaussian(size: int, sigma: float, centres: np.ndarray | None = None) -> np.ndarray:
    """Rows of normalised Gaussian weights over ``size`` pixel centres (a smoothing matrix,
    or a pooling one when ``centres`` are fewer)."""
    x = np.arange(size) + 0.5
    c = x if centres is None else centres
    m = np.exp(-((c[:, None] - x[None, :]) ** 2) / (2 * sigma**2))
    return (m / m.sum(axis=1, keepdims=True)).astype(np.float32)


def direction_features(bitmaps: np.ndarray, chunk: int = 256) -> np.ndarray:
    """The directional element feature of each bitmap (module docstring): float32
    (count, :data:`FEATURES`), rows of unit length (a blank bitmap's row is zeros)."""
    count, size, _ = bitmaps.shape
    smooth = _gaussian(size, SMOOTH_SIGMA)
    pool = _gaussian(size, size / GRID / 2, (np.arange(GRID) + 0.5) * size / GRID)
    out = np.zeros((count, FEATURES), np.float32)
    sector = 2 * np.pi / DIRECTIONS
    for a in range(0, count, chunk):
        image = smooth @ bitmaps[a : a + chunk] @ smooth.T
        padded = np.pad(image, ((0, 0), (1, 1), (1, 1)), mode="edge")
        gx = (padded[:, 1:-1, 2:] - padded[:, 1:-1, :-2]) / 2
        gy = (padded[:, 2:, 1:-1] - padded[:, :-2, 1:-1]) / 2
        magnitude = np.hypot(gx, gy)
        angle = (np.arctan2(gy, gx) % (2 * np.pi)) / sector
        low = np.floor(angle)
        share = (angle - low).astype(np.float32)
        low = low.astype(np.int64) % DIRECTIONS
        high = (low + 1) % DIRECTIONS
        planes = []
        for d in range(DIRECTIONS):
            plane = magnitude * ((low == d) * (1 - share) + (high == d) * share)
            planes.append(pool @ plane @ pool.T)
        f = np.sqrt(np.stack(planes, axis=1).reshape(len(image), -1))
        norm = np.linalg.norm(f, axis=1, keepdims=True)
        out[a : a + chunk] = np.where(norm > 0, f / np.maximum(norm, 1e-12), 0)
    return out


def describe(
    glyph_set: Any,
    names: list[str],
    *,
    max_segments: int = 20_000,
    max_depth: int = 8,
    check: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Features (count, :data:`FEATURES`) and bounding boxes (count, 4; font units) of the
    glyphs ``names``; ``check(n)`` is called before drawing the n-th (a deadline). Glyphs
    are drawn and described :data:`BATCH` at a time, so at most that many outlines are held."""
    features = np.zeros((len(names), FEATURES), np.float32)
    box = np.zeros((len(names), 4), np.float64)
    for a in range(0, len(names), BATCH):
        outlines = []
        for n, name in enumerate(names[a : a + BATCH], a):
            if check is not None:
                check(n)
            outlines.append(
                outline(glyph_set, name, max_segments=max_segments, max_depth=max_depth)
            )
        features[a : a + BATCH] = direction_features(rasterise(outlines))
        box[a : a + BATCH] = boxes(outlines)
    return features, box
