"""Anchors: winnowed k-grams with their spans, in two channels, for verification and evidence.

A document's anchors are the k-grams selected by winnowing (Schleimer, Wilkerson & Aiken,
SIGMOD 2003: in every window of w consecutive k-gram hashes the minimum is kept), each with
the span of content characters it covers, in two channels:

- ``chars``: k-grams of content characters (default k = 8, w = 8) — exact copying;
- ``pinyin``: k-grams of the pinyin initials of the Han characters (default k = 12, w = 8) —
  unchanged by homophone substitution and by Traditional / Simplified script changes
  (Daguan's observation, applied to shingles instead of frequency windows).

Spans are indices into the document's content characters (``tokens.content_mask``), so the
two channels share one coordinate system and a matched span covers a known number of
characters. Hashes are kept as their top 32 bits (the bits winnowing compares).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np
import xxhash

from fingerprint.base import CorruptFingerprint, IncompatibleFingerprints, params_dict
from fingerprint.hashing import ngram_hashes
from fingerprint.pinyin import initials
from fingerprint.shingles import winnow_positions
from fingerprint.tokens import codepoints, content_mask

VERSION = 1
_MAGIC = b"FPA"
_HEADER = struct.Struct("<3sBIIII")  # magic, version, params digest, length, n chars, n pinyin
_LETTER_BITS = 5  # 23 initials fit in 5 bits, so 12 of them pack into one exact 60-bit word


@dataclass(frozen=True)
class AnchorParams:
    """k-gram length and winnowing window of each channel, and the hash seed."""

    char_k: int = 8
    char_window: int = 8
    pinyin_k: int = 12
    pinyin_window: int = 8
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("char_k", "char_window", "pinyin_k", "pinyin_window"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    @property
    def digest(self) -> int:
        """A stable 32-bit digest of the parameters and version, stored with the anchors."""
        text = repr(sorted(params_dict(self).items())) + f"/v{VERSION}"
        return xxhash.xxh32_intdigest(text.encode())


@dataclass(frozen=True, eq=False)
class Channel:
    """Anchor hashes (uint32) and the content-character span ``[starts, ends)`` of each."""

    hashes: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.hashes)

    @classmethod
    def empty(cls) -> Channel:
        return cls(*(np.empty(0, dtype=np.uint32) for _ in range(3)))


@dataclass(frozen=True, eq=False)
class Anchors:
    """The anchors of one document: ``length`` content characters and two channels."""

    params: AnchorParams
    length: int
    chars: Channel
    pinyin: Channel
    version: int = VERSION
    method: str = field(default="anchors", init=False)

    def to_bytes(self) -> bytes:
        """Compact little-endian form: a header, then hashes, starts and ends per channel."""
        head = _HEADER.pack(
            _MAGIC, self.version, self.params.digest, self.length, len(self.chars), len(self.pinyin)
        )
        parts = [head]
        for channel in (self.chars, self.pinyin):
            arrays = (channel.hashes, channel.starts, channel.ends)
            parts += [np.asarray(a, dtype="<u4").tobytes() for a in arrays]
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes, params: AnchorParams | None = None) -> Anchors:
        """Inverse of :meth:`to_bytes`; checks the version and that ``params`` made it."""
        params = params or AnchorParams()
        if len(data) < _HEADER.size:
            raise CorruptFingerprint("anchors: stored value is shorter than its header")
        magic, version, digest, length, n_chars, n_pinyin = _HEADER.unpack_from(data)
        if magic != _MAGIC:
            raise CorruptFingerprint("anchors: stored value does not start with the anchors tag")
        if version != VERSION:
            raise IncompatibleFingerprints(f"anchors: stored version {version}, this is {VERSION}")
        if digest != params.digest:
            raise IncompatibleFingerprints("anchors: stored with different parameters")
        if len(data) != _HEADER.size + 12 * (n_chars + n_pinyin):
            raise CorruptFingerprint("anchors: stored value has the wrong length")
        arrays = np.frombuffer(data, dtype="<u4", offset=_HEADER.size).astype(np.uint32)
        chars = Channel(*np.split(arrays[: 3 * n_chars], 3))
        pinyin = Channel(*np.split(arrays[3 * n_chars :], 3))
        if (chars.ends > length).any() or (pinyin.ends > length).any():
            raise CorruptFingerprint("anchors: a span ends past the document")
        return cls(params, int(length), chars, pinyin)


def _winnowed(
    symbols: np.ndarray, k: int, window: int, seed: int, bits: int
) -> tuple[np.ndarray, np.ndarray]:
    """Top-32-bit hashes and start indices of the winnowed k-grams of ``symbols``."""
    if len(symbols) < k:
        return np.empty(0, dtype=np.uint32), np.empty(0, dtype=np.int64)
    hashes = ngram_hashes(symbols, k, seed, bits=bits)
    chosen = winnow_positions(hashes, window)
    return (hashes[chosen] >> np.uint64(32)).astype(np.uint32), chosen


def anchors_from_codes(
    all_codes: np.ndarray, mask: np.ndarray | None = None, params: AnchorParams | None = None
) -> Anchors:
    """Anchors of a normalised text given as code points (``mask``: its content characters)."""
    mask = content_mask(all_codes) if mask is None else mask
    positions = np.flatnonzero(mask)
    letters, letter_positions = initials(all_codes)
    return anchors_from_parts(all_codes[positions], positions, letters, letter_positions, params)


def anchors_from_parts(
    codes: np.ndarray,
    positions: np.ndarray,
    letters: np.ndarray,
    letter_positions: np.ndarray,
    params: AnchorParams | None = None,
) -> Anchors:
    """Anchors from a text's content code points and their offsets, and its pinyin initials
    and theirs (:func:`fingerprint.pinyin.initials`), so a caller computes those once."""
    params = params or AnchorParams()
    hashes, starts = _winnowed(codes, params.char_k, params.char_window, params.seed, 21)
    chars = Channel(hashes, starts.astype(np.uint32), (starts + params.char_k).astype(np.uint32))

    # Every Han character with an initial is a content character, so this lookup is exact.
    letter_index = np.searchsorted(positions, letter_positions)
    k = params.pinyin_k
    hashes, first = _winnowed(letters, k, params.pinyin_window, params.seed + 1, _LETTER_BITS)
    if len(first):
        pinyin = Channel(
            hashes,
            letter_index[first].astype(np.uint32),
            (letter_index[first + k - 1] + 1).astype(np.uint32),
        )
    else:
        pinyin = Channel.empty()
    return Anchors(params, len(codes), chars, pinyin)


def anchors(text: str, params: AnchorParams | None = None) -> Anchors:
    """Anchors of a normalised text.

    >>> a = anchors("话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。")
    >>> a.length, len(a.chars) > 0, len(a.pinyin) > 0
    (24, True, True)
    """
    return anchors_from_codes(codepoints(text), None, params)
