"""A text made ready for matching: decoded, normalised, fingerprinted, with its anchors.

Works (one segment at a time, :mod:`fingerprint.segments`) and pages go through the same
steps, so their fingerprints are comparable; the stored forms are built here too: the
fingerprints MongoDB keeps, a page's compact verification blob (simhash and anchors) and a
work segment's (the same, after a header placing the segment in its work).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fingerprint.anchors import AnchorParams, Anchors
from fingerprint.base import CorruptFingerprint, array_to_hex, header
from fingerprint.batch import normalize_joined
from fingerprint.decode import decode
from fingerprint.document import DocumentFingerprint, DocumentParams, fingerprint_and_anchors
from fingerprint.kernels import use_compiled
from fingerprint.normalize import Normalized, normalize
from fingerprint.tokens import codepoints, content_mask
from matcher.errors import UnusableText
from matcher.index.window_index import DNA_SAMPLE_M, sampled_dnas
from matcher.store.field_names import INDEX_KEYS, INDEX_KEYS_VERSION

DOCUMENT_PARAMS = DocumentParams()
ANCHOR_PARAMS = AnchorParams()
_SIMHASH = struct.Struct("<Q")
_SEGMENT = struct.Struct("<4sIIIIIIQ")  # tag, then the SegmentHeader fields in order
_SEGMENT_TAG = b"FPS1"
SAMPLE_M = 8
_CHAR_TAG = np.uint64(1 << 63)
_PINYIN_TAG = np.uint64(3 << 62)


@dataclass(frozen=True, eq=False)
class Prepared:
    """Everything matching needs about one text."""

    normalized: Normalized
    positions: np.ndarray
    fingerprint: DocumentFingerprint
    anchors: Anchors
    content_hash: str

    @property
    def simhash(self) -> int:
        return self.fingerprint.simhash.value

    @cached_property
    def window_keys(self) -> np.ndarray:
        """The keys the postings index holds for this text (see :func:`window_keys`)."""
        return window_keys(self.fingerprint, self.anchors)

    @cached_property
    def sampled(self) -> Sampled:
        """The postings keys that are anchors, with the spans they cover (:func:`sampled`)."""
        return sampled(self.anchors)

    @property
    def length(self) -> int:
        """Number of content characters."""
        return self.anchors.length

    @property
    def located(self) -> Located:
        """The normalisation and content positions alone (what evidence needs)."""
        return Located(self.normalized, self.positions)

    def blob(self) -> bytes:
        """Compact verification form: simhash, then the anchors (see :func:`from_blob`)."""
        return _SIMHASH.pack(self.simhash) + self.anchors.to_bytes()

    def stored_fingerprints(self) -> dict[str, dict]:
        """Every stored fingerprint by method: version, params and value.

        ``index_keys`` holds what the Redis indexes keep for this text (simhash and postings
        keys), so that the indexes can be rebuilt, or an old entry removed, without
        recomputing anything.
        """
        fp = self.fingerprint
        out = {}
        for member in (fp.pinyin, fp.pinyin_anchored, fp.minhash, fp.sentences):
            data = member.to_dict()
            out[member.method] = {**header(member), "value": data}
        out["simhash"] = {**header(fp.simhash), "value": fp.simhash.to_hex()}
        out["anchors"] = {**header(self.anchors), "value": self.blob()}
        out[INDEX_KEYS] = {
            "version": INDEX_KEYS_VERSION,
            "params": {"sample_m": SAMPLE_M, "dna_sample_m": DNA_SAMPLE_M},
            "value": {
                "simhash": f"{self.simhash:016x}",
                "windows": array_to_hex(self.window_keys, "<u8"),
            },
        }
        return out


@dataclass(frozen=True, eq=False)
class Sampled:
    """Postings keys of sampled anchors and the content-character span ``[starts, ends)``
    each covers, in order of ``starts``."""

    keys: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


def sampled(anchors: Anchors, m: int = SAMPLE_M) -> Sampled:
    """The anchors whose hash is 0 mod ``m`` (Broder's MOD_m sample), as postings keys.

    Keys are the anchor hashes tagged with bit 63 and their channel in bit 62, so they never
    meet the pinyin-window dnas (below 2^46) in the postings index.
    """
    keys, starts, ends = [], [], []
    for tag, channel in ((_CHAR_TAG, anchors.chars), (_PINYIN_TAG, anchors.pinyin)):
        hashes = channel.hashes.astype(np.uint64)
        chosen = hashes % np.uint64(m) == 0
        keys.append(hashes[chosen] | tag)
        starts.append(channel.starts[chosen].astype(np.int64))
        ends.append(channel.ends[chosen].astype(np.int64))
    order = np.argsort(np.concatenate(starts), kind="stable")
    return Sampled(*(np.concatenate(a)[order] for a in (keys, starts, ends)))


def window_keys(fp: DocumentFingerprint, anchors: Anchors, m: int = SAMPLE_M) -> np.ndarray:
    """Distinct postings keys: sampled content-anchored pinyin-window dnas and MOD_m-sampled
    anchors.

    The dnas of the content-anchored pinyin windows (Daguan's windows, cut where the text's
    own winnowed anchors fall) find copies with homophones, script changes and light edits,
    and survive insertions and deletions, which move fixed windows; windows do not survive
    paragraphs shuffled in short lines, so the sampled anchors (:func:`sampled`, the same
    anchors in every copy, in any order) are keys too. The dnas are sampled as Broder's
    MOD_m samples a document's shingles
    (:func:`~matcher.index.window_index.sampled_dnas`), so a dna two texts share is a key of
    both or of neither. Every dna stays in the stored fingerprint, for scoring; the fixed
    windows' dnas are not keys.

    Measured on the evaluation corpus (``bench/eval.py``, seeds 0 and 1): the copy sharing
    the fewest keys with its work, of any class, still shares 19 (a candidate needs
    ``min_window_hits``, 2), and the postings are 0.1 a character where they were 0.18
    (version 3 of the index keys; 1 posted every dna of both kinds, 2 the anchored ones).
    """
    dnas = sampled_dnas(fp.pinyin_anchored.keys.astype(np.uint64))
    return np.unique(np.concatenate([dnas, sampled(anchors, m).keys]))


@dataclass(frozen=True)
class SegmentHeader:
    """Where a work segment sits: its work, index, first content character in the work, its
    own length in content characters (its overlap with the next segment left out), the
    work's length, its first character in the work's original text, and its simhash."""

    work: int
    index: int
    offset: int
    length: int
    work_length: int
    start: int
    simhash: int


def segment_blob(header: SegmentHeader, anchors: Anchors) -> bytes:
    """A work segment's verification data: the header, then the anchors."""
    h = header
    fields = (h.work, h.index, h.offset, h.length, h.work_length, h.start, h.simhash)
    return _SEGMENT.pack(_SEGMENT_TAG, *fields) + anchors.to_bytes()


def from_segment_blob(
    data: bytes, params: AnchorParams = ANCHOR_PARAMS
) -> tuple[SegmentHeader, Anchors]:
    """Inverse of :func:`segment_blob`; raises ``CorruptFingerprint`` (or incompatible)."""
    if len(data) < _SEGMENT.size or data[:4] != _SEGMENT_TAG:
        raise CorruptFingerprint("segment blob does not start with its header")
    _, *fields = _SEGMENT.unpack_from(data)
    return SegmentHeader(*fields), Anchors.from_bytes(data[_SEGMENT.size :], params)


@dataclass(frozen=True, eq=False)
class Located:
    """A text's normalisation and the normalised index of each content character: what
    turns passages (in content characters) into spans of the original text."""

    normalized: Normalized
    positions: np.ndarray

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """Span of the original text behind content characters ``[start, end)``."""
        return self.normalized.original_span(
            int(self.positions[start]), int(self.positions[end - 1]) + 1
        )

    def content_before(self, original: int) -> int:
        """How many content characters come from the original text before offset
        ``original``."""
        return int(np.searchsorted(self.normalized.offsets[self.positions], original))


def locate(text: str) -> Located:
    """Normalise ``text`` and find its content characters; nothing else is computed."""
    normalized = normalize(text, DOCUMENT_PARAMS.normalize)
    return Located(normalized, np.flatnonzero(content_mask(codepoints(normalized.text))))


def locate_many(texts: Sequence[str]) -> list[Located]:
    """``[locate(t) for t in texts]``, the texts normalised together
    (:func:`fingerprint.batch.normalize_joined`, compiled when the kernels run): the same
    values, the per-call cost paid once for the batch."""
    if not texts:
        return []
    normalized, codes, cut = normalize_joined(texts, DOCUMENT_PARAMS.normalize)
    mask = content_mask(codes)
    bounds = cut.tolist()
    return [
        Located(n, np.flatnonzero(mask[bounds[d] : bounds[d + 1]]))
        for d, n in enumerate(normalized)
    ]


def from_blob(data: bytes, params: AnchorParams = ANCHOR_PARAMS) -> tuple[int, Anchors]:
    """``(simhash, anchors)`` from :meth:`Prepared.blob`; raises ``CorruptFingerprint``."""
    if len(data) < _SIMHASH.size:
        raise CorruptFingerprint("verification blob is shorter than its header")
    (simhash,) = _SIMHASH.unpack_from(data)
    return simhash, Anchors.from_bytes(data[_SIMHASH.size :], params)


def content_hash(text: str) -> str:
    """SHA-256 of the text's UTF-8 bytes, as ``sha256:<hex>``."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def as_text(data: str | bytes, what: str = "text") -> str:
    """Decode bytes (GB18030 / Big5 / UTF-8 ... detected); strings pass through."""
    if isinstance(data, bytes):
        try:
            return decode(data).text
        except ValueError as exc:
            raise UnusableText(f"{what}: {exc}") from exc
    return data


def prepare(text: str | bytes, max_chars: int = 4_000_000, what: str = "text") -> Prepared:
    """Decode, normalise and fingerprint ``text`` with the default parameters."""
    text = as_text(text, what)
    if len(text) > max_chars:
        raise UnusableText(f"{what} has {len(text):,} characters, more than {max_chars:,}")
    normalized = normalize(text, DOCUMENT_PARAMS.normalize)
    done = fingerprint_and_anchors(normalized, DOCUMENT_PARAMS, ANCHOR_PARAMS)
    return Prepared(
        normalized=normalized,
        positions=done.positions,
        fingerprint=done.fingerprint,
        anchors=done.anchors,
        content_hash=content_hash(text),
    )


def prepare_many(texts: Sequence[str]) -> list[Prepared]:
    """``[prepare(t) for t in texts]`` for decoded texts of any length, normalised and
    fingerprinted together when the compiled kernels run
    (:func:`fingerprint.batch.normalize_joined`, :func:`fingerprint.compiled.fingerprint_many`:
    the same values, each kernel called once for the batch instead of once per text), else
    one at a time."""
    if not use_compiled():
        return [prepare(t, len(t) + 1) for t in texts]
    if not texts:
        return []
    from fingerprint.compiled import fingerprint_many

    normalized, *joined = normalize_joined(texts, DOCUMENT_PARAMS.normalize, compiled=True)
    fps, anchors, positions = fingerprint_many(
        normalized, DOCUMENT_PARAMS, ANCHOR_PARAMS, tuple(joined)
    )
    assert anchors is not None and positions is not None  # anchor_params given
    return [
        Prepared(n, p, f, a, content_hash(t))
        for n, p, f, a, t in zip(normalized, positions, fps, anchors, texts, strict=True)
    ]
