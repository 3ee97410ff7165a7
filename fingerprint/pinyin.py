"""Pinyin-initial frequency fingerprints (the Daguan fingerprint), fixed and content-anchored.

Definition (Daguan, as restated in the design's "Fingerprints" section): text -> pinyin ->
the first letter of each character; cut the letter sequence into windows of ``granule`` m
letters with an overlap rate (50% gives windows [0, m), [m/2, 3m/2), [m, 2m) ...); per window
take the frequency of each letter, subtract a reference frequency, quantise the difference
into a small range ([0,9], [0,7], [0,3] or [0,1]) and concatenate the levels in letter order
into one number, the window's *dna*. A document is its set of dnas. Homophones and
Traditional/Simplified variants share pinyin initials, so they leave the dnas unchanged.

Quantisation (this library's exact rule): with count c of a letter in a window of n letters
and reference frequency p, the deviation is z = (c/n - p) / sqrt(p(1-p)/n), the binomial
z-score, and the level is clamp(floor(z / w) + q // 2, 0, q - 1) for q levels and a bin
width of w standard deviations. dna = sum(level_i * q ** (22 - i)) over the 23 letters that
begin Mandarin syllables (``ALPHABET``), i.e. the levels written as a base-q number.

Fixed windows shift when a line is inserted, so every later window changes. The anchored
variant (:func:`anchored_fingerprint`) places window boundaries by winnowing the hashes of
k-grams of initials (Schleimer et al. 2003): a boundary depends only on nearby letters, so
an inserted ad line changes only the windows around it.

Only Han characters contribute initials; Latin letters, digits and punctuation are skipped.
The letter of a character is the first letter of its first (most common) reading in
pypinyin's dictionary, looked up in a table built once; it agrees with
``lazy_pinyin(style=FIRST_LETTER)`` except where that uses phrase context for polyphones.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from fingerprint.base import (
    CorruptFingerprint,
    array_from_hex,
    array_to_hex,
    check_compatible,
    check_header,
    decoding,
    header,
)
from fingerprint.hashing import hash64, hash_rows, ngram_hashes
from fingerprint.reference_frequencies import REFERENCE_FREQUENCIES
from fingerprint.shingles import winnow_positions
from fingerprint.tokens import codepoints

VERSION = 1
ALPHABET = "abcdefghjklmnopqrstwxyz"
"""The 23 letters that begin a Mandarin syllable in pinyin (never i, u or v)."""
NO_LETTER = 255
_TABLE_SIZE = 0x40000
_DEFAULT_BIN_WIDTH = {2: 1.0, 4: 1.0, 8: 0.5, 10: 0.4}


@cache
def initial_table() -> np.ndarray:
    """Code point -> index into ``ALPHABET`` of the character's pinyin initial (255: none).

    Built once per process from pypinyin's per-character dictionary (first listed reading).
    """
    from pypinyin.pinyin_dict import pinyin_dict

    table = np.full(_TABLE_SIZE, NO_LETTER, dtype=np.uint8)
    index = {letter: i for i, letter in enumerate(ALPHABET)}
    for cp, readings in pinyin_dict.items():
        if cp >= _TABLE_SIZE:
            continue
        first = unicodedata.normalize("NFKD", readings.split(",", 1)[0])[:1]
        letter = index.get(first)
        if letter is not None:
            table[cp] = letter
    table.setflags(write=False)
    return table


def initials(text: str | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pinyin initials of the Han characters of ``text`` and their positions in ``text``.

    Returns ``(letters, positions)``: letters as indices into ``ALPHABET`` (uint8) and the
    index in ``text`` of the character each came from (int64).

    >>> "".join(ALPHABET[i] for i in initials("中文，abc 拼音")[0])
    'zwpy'
    """
    codes = codepoints(text) if isinstance(text, str) else np.asarray(text, dtype=np.uint32)
    table = initial_table()
    letters = table[np.minimum(codes, _TABLE_SIZE - 1)]
    letters[codes >= _TABLE_SIZE] = NO_LETTER
    positions = np.flatnonzero(letters != NO_LETTER)
    return letters[positions], positions


def initials_string(text: str) -> str:
    """The pinyin initials of ``text`` as a string of letters (``"中文"`` -> ``"zw"``)."""
    letters, _ = initials(text)
    return bytes(np.frombuffer(ALPHABET.encode(), dtype=np.uint8)[letters]).decode()


@dataclass(frozen=True)
class PinyinParams:
    """Parameters of a pinyin-initial fingerprint.

    ``granule`` is m, the window length in initials (fixed windows) or the target spacing of
    anchors (anchored windows); ``overlap`` the overlap rate of fixed windows; ``levels`` q,
    one of 2, 4, 8, 10; ``bin_width`` w in standard deviations (0: the default for q);
    ``anchor_k`` the k-gram length hashed to place anchors; ``reference`` the 23 reference
    frequencies in ``ALPHABET`` order.
    """

    granule: int = 48
    overlap: float = 0.5
    levels: int = 4
    bin_width: float = 0.0
    anchored: bool = False
    anchor_k: int = 5
    reference: tuple[float, ...] = REFERENCE_FREQUENCIES

    def __post_init__(self) -> None:
        if self.levels not in _DEFAULT_BIN_WIDTH:
            raise ValueError(f"levels must be one of 2, 4, 8, 10; got {self.levels}")
        if self.granule < 4:
            raise ValueError(f"granule must be >= 4, got {self.granule}")
        if not 0.0 <= self.overlap < 1.0:
            raise ValueError(f"overlap must be in [0, 1), got {self.overlap}")
        if len(self.reference) != len(ALPHABET) or not all(0 < p < 1 for p in self.reference):
            raise ValueError("reference must hold 23 frequencies in (0, 1)")
        if self.bin_width < 0 or self.anchor_k < 1:
            raise ValueError("bin_width must be >= 0 and anchor_k >= 1")

    @property
    def width(self) -> float:
        return self.bin_width or _DEFAULT_BIN_WIDTH[self.levels]


@dataclass(frozen=True, eq=False)
class PinyinFingerprint:
    """A document's windows: their dna keys and where each window lies in the text.

    ``keys[i]`` is window i's dna when q**23 fits in 64 bits (q = 2 or 4), else a stable
    64-bit hash of the dna; ``starts`` / ``ends`` are character offsets of the window in the
    text that was fingerprinted (end exclusive).
    """

    params: PinyinParams
    keys: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    version: int = VERSION
    method: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", "pinyin-anchored" if self.params.anchored else "pinyin")

    def __len__(self) -> int:
        return len(self.keys)

    def keyset(self) -> np.ndarray:
        """The document's set of dnas, sorted."""
        return np.unique(self.keys)

    def containment_in(self, other: PinyinFingerprint) -> float:
        """Share of this document's distinct dnas that also occur in ``other``."""
        check_compatible(self, other)
        mine = self.keyset()
        if len(mine) == 0:
            return 0.0
        return float(np.isin(mine, other.keyset(), assume_unique=True).sum() / len(mine))

    def resemblance(self, other: PinyinFingerprint) -> float:
        """Jaccard resemblance of the two documents' dna sets."""
        check_compatible(self, other)
        a, b = self.keyset(), other.keyset()
        union = len(np.union1d(a, b))
        return len(np.intersect1d(a, b, assume_unique=True)) / union if union else 0.0

    def to_dict(self) -> dict:
        return {
            **header(self),
            "keys": array_to_hex(self.keys, "<u8"),
            "starts": array_to_hex(self.starts, "<u4"),
            "ends": array_to_hex(self.ends, "<u4"),
        }

    @classmethod
    def from_dict(cls, data: dict) -> PinyinFingerprint:
        params = data.get("params") if isinstance(data, dict) else None
        anchored = bool(params.get("anchored")) if isinstance(params, dict) else False
        check_header(data, "pinyin-anchored" if anchored else "pinyin", VERSION)
        with decoding("pinyin fingerprint"):
            params = {**params, "reference": tuple(params["reference"])}
            keys = array_from_hex(data["keys"], "<u8", np.uint64)
            starts = array_from_hex(data["starts"], "<u4", np.int64)
            ends = array_from_hex(data["ends"], "<u4", np.int64)
            fp = cls(PinyinParams(**params), keys, starts, ends)
        if not len(keys) == len(starts) == len(ends):
            raise CorruptFingerprint("pinyin fingerprint arrays differ in length")
        return fp


def window_levels(letters: np.ndarray, bounds: np.ndarray, params: PinyinParams) -> np.ndarray:
    """Quantised levels (windows x 23, uint8) of the windows ``[bounds[:,0], bounds[:,1])``."""
    cuts = np.unique(bounds)
    segment = np.searchsorted(cuts, np.arange(len(letters)), side="right")
    per_segment = np.bincount(
        segment * len(ALPHABET) + letters, minlength=(len(cuts) + 1) * len(ALPHABET)
    ).reshape(len(cuts) + 1, len(ALPHABET))
    cumulative = np.cumsum(per_segment, axis=0)
    at = np.searchsorted(cuts, bounds)
    counts = cumulative[at[:, 1]] - cumulative[at[:, 0]]
    n = (bounds[:, 1] - bounds[:, 0]).astype(np.float64)[:, None]
    p = np.asarray(params.reference, dtype=np.float64)[None, :]
    z = (counts / n - p) / np.sqrt(p * (1.0 - p) / n)
    levels = np.floor(z / params.width) + params.levels // 2
    return np.clip(levels, 0, params.levels - 1).astype(np.uint8)


def dna_keys(levels: np.ndarray, q: int) -> np.ndarray:
    """dna of each row of levels as uint64: exact when q**23 < 2**64, else a stable hash."""
    if q ** len(ALPHABET) < 2**64:
        weights = np.array([q ** (len(ALPHABET) - 1 - i) for i in range(len(ALPHABET))], np.uint64)
        return (levels.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
    return hash_rows(levels, seed=q)


def dna(levels: np.ndarray, q: int) -> int:
    """The exact dna of one window: its 23 levels read as a base-q number."""
    value = 0
    for level in np.asarray(levels).tolist():
        value = value * q + int(level)
    return value


def fixed_bounds(count: int, params: PinyinParams) -> np.ndarray:
    """Windows of ``granule`` letters, stepping ``granule * (1 - overlap)``.

    A last window ends at the last letter, so the tail is always covered; a text shorter
    than the granule is one window.
    """
    m = params.granule
    if count == 0:
        return np.empty((0, 2), dtype=np.int64)
    if count <= m:
        return np.array([[0, count]], dtype=np.int64)
    step = max(1, round(m * (1.0 - params.overlap)))
    starts = np.arange(0, count - m + 1, step, dtype=np.int64)
    if starts[-1] + m < count:
        starts = np.append(starts, count - m)
    return np.stack([starts, starts + m], axis=1)


def anchored_bounds(letters: np.ndarray, params: PinyinParams) -> np.ndarray:
    """Windows between every other anchor, anchors chosen by winnowing initial k-gram hashes.

    The winnowing window is granule/2 k-grams, so anchors fall about granule/4 letters apart
    and each window (anchor i to anchor i+2) holds about granule/2 letters.
    """
    count = len(letters)
    if count == 0:
        return np.empty((0, 2), dtype=np.int64)
    hashes = ngram_hashes(letters, params.anchor_k, seed=7, bits=5)
    anchors = winnow_positions(hashes, max(2, params.granule // 2))
    cuts = np.unique(np.concatenate([[0], anchors, [count]]))
    if len(cuts) < 3:
        return np.array([[0, count]], dtype=np.int64)
    return np.stack([cuts[:-2], cuts[2:]], axis=1)


def pinyin_fingerprint(text: str, params: PinyinParams | None = None) -> PinyinFingerprint:
    """The pinyin-initial fingerprint of (normalised) ``text``; see the module docstring.

    >>> fp = pinyin_fingerprint("床前明月光，疑是地上霜。举头望明月，低头思故乡。")
    >>> len(fp), fp.method
    (1, 'pinyin')
    """
    letters, positions = initials(text)
    return pinyin_from_initials(letters, positions, params or PinyinParams())


def pinyin_from_initials(
    letters: np.ndarray, positions: np.ndarray, params: PinyinParams
) -> PinyinFingerprint:
    """The fingerprint of a text given its initials and their positions (see :func:`initials`)."""
    bounds = (
        anchored_bounds(letters, params) if params.anchored else fixed_bounds(len(letters), params)
    )
    if len(bounds) == 0:
        empty = np.empty(0, dtype=np.int64)
        return PinyinFingerprint(params, np.empty(0, dtype=np.uint64), empty, empty)
    keys = dna_keys(window_levels(letters, bounds, params), params.levels)
    starts = positions[bounds[:, 0]]
    ends = positions[bounds[:, 1] - 1] + 1
    return PinyinFingerprint(params, keys, starts, ends)


def initials_hash(text: str) -> int:
    """Stable hash of the initials string: equal for homophone and script variants."""
    return hash64(initials_string(text))
