"""The reference: a CJK font on disk drawn once, every character it is asked to know described.

:func:`load_reference` reads the font named by the setting ``webfont_reference``
(``FPTRACK_WEBFONT_REFERENCE``, default :data:`DEFAULT_REFERENCE`, Debian's
``fonts-wqy-zenhei``; ``PATH#N`` picks the N-th font of a collection) and describes the
glyphs of :func:`reference_chars` (:mod:`crawler.webfont.glyphs`): the 6,763 Han characters
of GB2312 (level 1, the 3,755 in common use, then level 2) and the common full-width
punctuation. It takes about 10 s of one core; with a ``cache_dir`` the index is kept there
(``webfont-<digest>.npz``, a few megabytes, named by the font file's SHA-256 and
:data:`INDEX_VERSION`) and later processes load it in milliseconds. A missing reference is
:class:`ReferenceMissing`, whose message names the path looked at, the setting and the
Debian package.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from fontTools.ttLib import TTFont

from crawler.webfont.glyphs import FEATURES, describe
from matcher.settings import Settings

DEFAULT_REFERENCE: str = Settings.webfont_reference
"""WenQuanYi Zen Hei (Debian's ``fonts-wqy-zenhei``), font 0 of its collection."""
INDEX_VERSION = 1
"""Bumped whenever the features change: an index cached by another version is rebuilt."""
PUNCTUATION = "，。、；：？！“”‘’（）《》〈〉【】「」『』—…·～"


class ReferenceMissing(Exception):
    """No usable reference font; the message says where it looked and what to set."""


@lru_cache(maxsize=1)
def reference_chars() -> tuple[str, ...]:
    """GB2312's Han characters in its order (level 1 first) and :data:`PUNCTUATION`.

    >>> chars = reference_chars()
    >>> len(chars), chars[0], chars[3754], chars[3755]
    (6790, '啊', '座', '亍')
    """
    han = []
    for high in range(0xB0, 0xF8):
        for low in range(0xA1, 0xFF):
            try:
                han.append(bytes((high, low)).decode("gb2312"))
            except UnicodeDecodeError:
                continue
    return (*han, *PUNCTUATION)


LEVEL_ONE = 3755
"""GB2312's first level: the characters in common use (reference_chars()[:LEVEL_ONE])."""
MIN_CHARS = 1000
"""A reference drawing fewer of :func:`reference_chars` is no Chinese font."""


@dataclass(frozen=True)
class ReferenceIndex:
    """The reference font's characters, their features and bounding boxes (in ems)."""

    source: str
    chars: tuple[str, ...]
    features: np.ndarray  # float32 (n, FEATURES), unit rows
    boxes: np.ndarray  # float32 (n, 4): x0, y0, x1, y1 over the em
    common: np.ndarray  # bool (n,): GB2312 level 1 or punctuation

    def __len__(self) -> int:
        return len(self.chars)


def reference_spec(spec: str) -> tuple[Path, int]:
    """``PATH`` or ``PATH#N`` as a path and a font number.

    >>> reference_spec("/fonts/NotoSansCJK-Regular.ttc#2")
    (PosixPath('/fonts/NotoSansCJK-Regular.ttc'), 2)
    """
    path, sep, number = spec.rpartition("#")
    if sep and number.isdigit():
        return Path(path), int(number)
    return Path(spec), 0


def load_reference(spec: str = DEFAULT_REFERENCE, cache_dir: str | None = None) -> ReferenceIndex:
    """The index of the reference font ``spec`` (module docstring), from ``cache_dir`` when
    it holds one for this very file."""
    path, number = reference_spec(spec)
    if not path.is_file():
        raise ReferenceMissing(
            f"no reference font for web fonts at {path} (set FPTRACK_WEBFONT_REFERENCE to a"
            " CJK font, or install Debian's fonts-wqy-zenhei)"
        )
    digest = _file_digest(path)
    name = f"webfont-{digest[:24]}-{number}-v{INDEX_VERSION}.npz"
    cached = Path(cache_dir) / name if cache_dir else None
    if cached is not None and cached.is_file():
        try:
            with np.load(cached, allow_pickle=False) as saved:
                chars = tuple(str(saved["chars"]))
                if len(chars) == len(saved["features"]) and saved["features"].shape[1] == FEATURES:
                    return ReferenceIndex(
                        spec, chars, saved["features"], saved["boxes"], saved["common"]
                    )
        except (OSError, ValueError, KeyError):
            pass  # unreadable: built again and rewritten below
    index = build_reference(path, number, spec)
    if cached is not None:
        _save(cached, index)
    return index


@lru_cache(maxsize=4)
def shared_reference(spec: str = DEFAULT_REFERENCE, cache_dir: str | None = None) -> ReferenceIndex:
    """:func:`load_reference`, once per process for each ``spec`` and ``cache_dir`` (the
    crawls of one process share one index)."""
    return load_reference(spec, cache_dir)


def build_reference(path: Path, number: int, source: str) -> ReferenceIndex:
    """Describe every character of :func:`reference_chars` the font at ``path`` draws."""
    try:
        font = TTFont(str(path), fontNumber=number, lazy=True)
        cmap = font.getBestCmap() or {}
        em = float(font["head"].unitsPerEm)
        glyph_set = font.getGlyphSet()
    except Exception as exc:  # fontTools raises many kinds on an unreadable file
        raise ReferenceMissing(f"the reference font {source} is unreadable: {exc}") from None
    wanted = reference_chars()
    chars = [c for c in wanted if ord(c) in cmap]
    if len(chars) < MIN_CHARS:
        raise ReferenceMissing(
            f"the reference font {source} draws only {len(chars)} of GB2312's characters"
            " (not a Chinese font?)"
        )
    features, boxes = describe(glyph_set, [cmap[ord(c)] for c in chars])
    drawn = np.linalg.norm(features, axis=1) > 0
    rank = {c: n for n, c in enumerate(wanted)}
    common = np.array([rank[c] < LEVEL_ONE for c in chars])
    keep = np.flatnonzero(drawn)
    return ReferenceIndex(
        source,
        tuple(chars[i] for i in keep),
        np.ascontiguousarray(features[keep]),
        (boxes[keep] / em).astype(np.float32),
        common[keep],
    )


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _save(target: Path, index: ReferenceIndex) -> None:
    """Write the index beside ``target`` and rename it into place (readers never see half)."""
    tmp = ""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".npz.tmp")
        with os.fdopen(fd, "wb") as fh:
            np.savez(
                fh,
                chars=np.array("".join(index.chars)),
                features=index.features,
                boxes=index.boxes,
                common=index.common,
            )
        os.replace(tmp, target)
    except OSError:  # a cache that cannot be written costs a rebuild in the next process
        if tmp:
            Path(tmp).unlink(missing_ok=True)
