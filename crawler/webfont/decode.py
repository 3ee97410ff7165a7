"""Which real character each code point of an obfuscating web font draws, by glyph shape.

Pirate sites serve text whose code points (private-use ones, or real characters shuffled)
mean nothing until the page's ``@font-face`` font draws them; the code points and glyph
names change at every request, so only the glyphs' shapes are stable. :func:`identify`
describes each glyph the text uses (:mod:`crawler.webfont.glyphs`) and scores it against
every character of the reference (:mod:`crawler.webfont.reference`): the cosine of their
direction features, less :data:`RARE_PENALTY` for a character outside GB2312's level 1, less
:data:`BOX_WEIGHT` times the difference of their widths plus heights in ems (a comma and a
dot, 口 and 囗, are the same shape at another size).

A font maps distinct code points to distinct characters, so the glyphs are assigned one to
one: in order of their lead over their runner-up, each takes its best character not taken
by a glyph of another shape (two code points drawing the same shape share it), among
those within :data:`SWAP_MARGIN` of its best. A glyph is identified only when its score
reaches :data:`MIN_SCORE`, and, in a font whose glyphs' median best score is under
:data:`FAR_TYPEFACE` (a typeface far from the reference), when it leads the next untaken
character by :data:`MIN_LEAD_FAR`; any other stays as it is, never guessed. Only code
points of :data:`DECODED_RANGES` are read (Latin letters and digits never are). A glyph that
draws nothing is read as nothing (the reader sees nothing), except on whitespace code
points.

A font that draws most of its code points as themselves (:data:`PLAIN_SHARE` of those it
draws, their own character scoring within :data:`SWAP_MARGIN` of the best) is a plain web
font, not an obfuscating one: its text is left as it is.

:class:`FontDecoder` holds one reference index and caches what it decoded per font
(SHA-256 of the bytes): a site serving the same font on many pages pays once.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from crawler.webfont.glyphs import OutlineTooComplex, describe
from crawler.webfont.reference import ReferenceIndex
from crawler.webfont.sfnt import FontLimits, FontRefused, OpenedFont, open_font

RARE_PENALTY = 0.01
"""Taken off the score of a character outside GB2312's level 1 (a prior for the common)."""
BOX_WEIGHT = 0.1
"""Times the difference of width plus height (in ems) taken off a score."""
SWAP_MARGIN = 0.02
MIN_SCORE = 0.85
"""No glyph scoring under this is identified (icons, letters, shapes of no character)."""
FAR_TYPEFACE = 0.92
"""A font whose glyphs' median best score is under this is of a typeface far from the
reference (a brush Kai against a Hei): there a glyph is identified only when it leads the
next character by :data:`MIN_LEAD_FAR`."""
MIN_LEAD_FAR = 0.03
PLAIN_SHARE = 0.5
CANDIDATES = 32
"""Reference characters rescored per glyph (the best by cosine)."""
SAME_SHAPE = 0.985
"""Two glyphs whose features' cosine reaches this draw the same character."""
DECODED_RANGES = (
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xE000, 0xF8FF),  # private use
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF00, 0xFFEF),  # full-width forms
    (0x20000, 0x3FFFF),  # CJK extensions B-H
    (0xF0000, 0x10FFFF),  # supplementary private use
)
"""Code points a font may hide characters behind; others (Latin letters, digits) are left
to the page's own font and never read as Chinese."""


def decodable(cp: int) -> bool:
    """Whether ``cp`` lies in :data:`DECODED_RANGES`.

    >>> decodable(0xE3A1), decodable(ord("书")), decodable(ord("a"))
    (True, True, False)
    """
    return any(low <= cp <= high for low, high in DECODED_RANGES)


@dataclass(frozen=True)
class DecodedFont:
    """What one font's glyphs were read as.

    ``mapping`` holds only the code points whose character changes (:meth:`apply` uses it);
    ``unknown`` are drawn by the font but not identified (left as they are); ``absent`` are
    not in the font (the page's fallback font draws them as themselves) or outside
    :data:`DECODED_RANGES`. ``scores`` are the identified code points' scores.
    """

    digest: str
    format: str
    mapping: Mapping[int, str]
    identified: int
    unknown: tuple[int, ...]
    absent: tuple[int, ...]
    plain: bool
    glyphs: int
    seconds: float
    cached: bool = False
    scores: Mapping[int, float] = field(default_factory=dict, repr=False, compare=False)

    def apply(self, text: str) -> str:
        """``text`` with each mapped code point replaced by the character it draws."""
        return apply_mapping(text, self.mapping)


def apply_mapping(text: str, mapping: Mapping[int, str]) -> str:
    """Replace every code point of ``mapping`` in ``text`` by its character.

    >>> apply_mapping("\\ue001\\ue002书", {0xE001: "读", 0xE002: ""})
    '读书'
    """
    return text.translate(mapping) if mapping else text


def used_code_points(text: str) -> frozenset[int]:
    """The distinct code points of ``text``.

    >>> sorted(used_code_points("书书\\ue000"))
    [20070, 57344]
    """
    return frozenset(map(ord, set(text)))


def digest_of(data: bytes) -> str:
    """The SHA-256 of a font's bytes, hex: the key its decoding is cached under."""
    return hashlib.sha256(data).hexdigest()


def identify(
    opened: OpenedFont,
    code_points: Iterable[int],
    reference: ReferenceIndex,
    limits: FontLimits,
    deadline: float,
) -> tuple[dict[int, str], list[int], list[int], bool, int, dict[int, float]]:
    """The characters the glyphs of ``code_points`` draw (module docstring): the mapping of
    every code point identified (itself included), the unknown and absent code points,
    whether the font is plain, the glyph count and each identified code point's score."""
    wanted = sorted(set(code_points))
    skipped = [cp for cp in wanted if not decodable(cp)]
    present = [cp for cp in wanted if cp in opened.cmap and decodable(cp)]
    absent = [cp for cp in wanted if cp not in opened.cmap and decodable(cp)]
    if len(present) > limits.max_decoded:
        raise FontRefused(
            f"too many code points to decode: {len(present):,} (limit {limits.max_decoded:,})"
        )
    names = sorted({opened.cmap[cp] for cp in present})
    glyph_of = {name: n for n, name in enumerate(names)}

    def check(n: int) -> None:
        if time.monotonic() > deadline:
            raise FontRefused(
                f"timeout: over {limits.max_seconds:g} s, {n:,} of {len(names):,} glyphs drawn"
            )

    try:
        features, boxes = describe(
            opened.font.getGlyphSet(),
            names,
            max_segments=limits.max_segments,
            max_depth=limits.max_component_depth,
            check=check,
        )
    except FontRefused:
        raise
    except OutlineTooComplex as exc:
        raise FontRefused(f"a glyph too complex to draw: {exc}") from None
    except RecursionError:
        raise FontRefused("unreadable font: a glyph nested too deep") from None
    except Exception as exc:  # fontTools raises many kinds on malformed glyphs
        raise FontRefused(f"unreadable {opened.format} font: {exc}"[:240]) from None
    check(len(names))
    blank = np.linalg.norm(features, axis=1) == 0
    sizes = (boxes[:, 2:] - boxes[:, :2]) / opened.units_per_em
    top, top_scores = _candidates(features, sizes, reference)
    best = top_scores[:, 0]
    drawn = ~blank
    far = bool(drawn.any()) and float(np.median(best[drawn])) < FAR_TYPEFACE
    chosen, chosen_score = _assign(top, top_scores, features, blank, MIN_LEAD_FAR if far else 0.0)
    index_of = {c: n for n, c in enumerate(reference.chars)}

    # A plain font draws its code points as themselves: their own character scores about
    # as well as the best one.
    own = [
        (glyph_of[opened.cmap[cp]], index_of[chr(cp)])
        for cp in present
        if chr(cp) in index_of and drawn[glyph_of[opened.cmap[cp]]]
    ]
    plain = False
    if own:
        g, r = np.array(own).T
        own_scores = np.einsum("nf,nf->n", features[g], reference.features[r])
        own_scores -= _penalties(sizes[g], reference, r)
        near = int((own_scores >= best[g] - SWAP_MARGIN).sum())
        plain = near >= PLAIN_SHARE * int(drawn.sum())
    mapping: dict[int, str] = {}
    unknown: list[int] = []
    score_of: dict[int, float] = {}
    for cp in present:
        g = glyph_of[opened.cmap[cp]]
        if plain:
            mapping[cp] = chr(cp)
        elif blank[g]:
            if chr(cp).isspace():
                unknown.append(cp)
            else:
                mapping[cp] = ""
        elif chosen[g] < 0:
            unknown.append(cp)
        else:
            mapping[cp] = reference.chars[chosen[g]]
            score_of[cp] = float(chosen_score[g])
    return mapping, unknown, absent + skipped, plain, len(names), score_of


def _penalties(sizes: np.ndarray, reference: ReferenceIndex, refs: np.ndarray) -> np.ndarray:
    """What the rarity and size penalties take off the scores of glyphs (their ``sizes``)
    against reference characters ``refs``: one per glyph, or (glyphs, k)."""
    ref_sizes = reference.boxes[refs, 2:] - reference.boxes[refs, :2]
    glyph_sizes = sizes if refs.ndim == 1 else sizes[:, None, :]
    gap = np.abs(glyph_sizes - ref_sizes).sum(axis=-1)
    return RARE_PENALTY * ~reference.common[refs] + BOX_WEIGHT * gap


def _candidates(
    features: np.ndarray, sizes: np.ndarray, reference: ReferenceIndex
) -> tuple[np.ndarray, np.ndarray]:
    """Each glyph's :data:`CANDIDATES` best reference characters by cosine, rescored
    (:func:`_penalties`) and sorted best first: indexes and scores, (glyphs, k) each."""
    count = len(features)
    k = min(CANDIDATES, len(reference))
    top = np.zeros((count, k), np.int64)
    scores = np.zeros((count, k), np.float32)
    for a in range(0, count, 256):
        cosine = features[a : a + 256] @ reference.features.T
        best = np.argpartition(-cosine, k - 1, axis=1)[:, :k]
        top[a : a + 256] = best
        scores[a : a + 256] = np.take_along_axis(cosine, best, axis=1)
    scores -= _penalties(sizes, reference, top)
    # A glyph's scores depend on its shape alone, not on where a batched product put it.
    scores = np.round(scores, 5)
    order = np.argsort(-scores, axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1), np.take_along_axis(scores, order, axis=1)


def _assign(
    top: np.ndarray,
    top_scores: np.ndarray,
    features: np.ndarray,
    blank: np.ndarray,
    min_lead: float,
) -> tuple[np.ndarray, np.ndarray]:
    """One reference character per glyph, one to one between glyphs of different shapes
    (module docstring); -1 where none is confident."""
    count = len(top)
    chosen = np.full(count, -1, np.int64)
    chosen_score = np.zeros(count, np.float32)
    if not count or not top.shape[1]:
        return chosen, chosen_score
    lead = top_scores[:, 0] - (top_scores[:, 1] if top.shape[1] > 1 else 0)
    taken: dict[int, int] = {}
    for g in np.argsort(-lead, kind="stable"):
        if blank[g]:
            continue
        best = top_scores[g, 0]
        free = [
            (int(c), float(s))
            for c, s in zip(top[g], top_scores[g], strict=True)
            if int(c) not in taken or _same_shape(features, g, taken[int(c)])
        ]
        if not free or free[0][1] < best - SWAP_MARGIN:
            continue
        pick, score = free[0]
        runner = free[1][1] if len(free) > 1 else float(top_scores[g, -1])
        if score < MIN_SCORE or score - runner < min_lead:
            continue
        chosen[g] = pick
        chosen_score[g] = score
        taken.setdefault(pick, int(g))
    return chosen, chosen_score


def _same_shape(features: np.ndarray, a: int, b: int) -> bool:
    return float(features[a] @ features[b]) >= SAME_SHAPE


@dataclass
class _Entry:
    """One font's decoding as cached: every code point asked so far."""

    format: str
    glyphs: int
    plain: bool
    read: dict[int, str]
    unknown: set[int]
    absent: set[int]
    scores: dict[int, float]

    def known(self) -> set[int]:
        return set(self.read) | self.unknown | self.absent


class FontDecoder:
    """Decodes web fonts against one reference index, caching each font's result by its
    SHA-256 (least recently used first out, ``cache_size`` fonts)."""

    def __init__(
        self, reference: ReferenceIndex, limits: FontLimits | None = None, cache_size: int = 256
    ) -> None:
        self.reference = reference
        self.limits = limits or FontLimits()
        self.cache_size = cache_size
        self._cache: OrderedDict[str, _Entry] = OrderedDict()

    def decode(self, data: bytes, code_points: Iterable[int] | str) -> DecodedFont:
        """What the font ``data`` draws for ``code_points`` (a text's code points, or the
        text itself); :class:`FontRefused` with the reason when it cannot be read within
        the limits. A font decoded before for these code points comes from the cache; for
        more code points, it is decoded again for all of them."""
        started = time.monotonic()
        wanted = used_code_points(code_points) if isinstance(code_points, str) else code_points
        wanted = frozenset(wanted)
        digest = digest_of(data)
        entry = self._cache.get(digest)
        cached = entry is not None and wanted <= entry.known()
        if not cached:
            asked = wanted | entry.known() if entry is not None else wanted
            opened = open_font(data, self.limits)
            read, unknown, absent, plain, glyphs, scores = identify(
                opened, asked, self.reference, self.limits, started + self.limits.max_seconds
            )
            entry = _Entry(opened.format, glyphs, plain, read, set(unknown), set(absent), scores)
        assert entry is not None
        self._cache[digest] = entry
        self._cache.move_to_end(digest)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return DecodedFont(
            digest=digest,
            format=entry.format,
            mapping={cp: ch for cp, ch in entry.read.items() if cp in wanted and ch != chr(cp)},
            identified=sum(1 for cp in wanted if cp in entry.read),
            unknown=tuple(sorted(entry.unknown & wanted)),
            absent=tuple(sorted(entry.absent & wanted)),
            plain=entry.plain,
            glyphs=entry.glyphs,
            seconds=time.monotonic() - started,
            cached=cached,
            scores={cp: s for cp, s in entry.scores.items() if cp in wanted},
        )
