"""A text made ready for matching: decoded, normalised, fingerprinted, with its anchors.

Works and pages go through the same steps, so their fingerprints are comparable; the
stored forms (for MongoDB, and the compact blob the Redis side keeps for verification) are
built here too.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fingerprint.anchors import AnchorParams, Anchors, anchors_from_codes
from fingerprint.base import CorruptFingerprint, array_to_hex, header
from fingerprint.decode import decode
from fingerprint.document import DocumentFingerprint, DocumentParams, fingerprint_normalized
from fingerprint.normalize import Normalized, normalize
from fingerprint.tokens import codepoints, content_mask
from matcher.errors import UnusableText

DOCUMENT_PARAMS = DocumentParams()
ANCHOR_PARAMS = AnchorParams()
_SIMHASH = struct.Struct("<Q")
SAMPLE_M = 8
INDEX_KEYS = "index_keys"
INDEX_KEYS_VERSION = 1
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

    @property
    def length(self) -> int:
        """Number of content characters."""
        return self.anchors.length

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """Span of the original text behind content characters ``[start, end)``."""
        return self.normalized.original_span(
            int(self.positions[start]), int(self.positions[end - 1]) + 1
        )

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
            "params": {"sample_m": SAMPLE_M},
            "value": {
                "simhash": f"{self.simhash:016x}",
                "windows": array_to_hex(self.window_keys, "<u8"),
            },
        }
        return out


def window_keys(fp: DocumentFingerprint, anchors: Anchors, m: int = SAMPLE_M) -> np.ndarray:
    """Distinct postings keys: pinyin-window dnas and MOD_m-sampled anchors.

    The dnas of the fixed and the content-anchored pinyin windows (Daguan) find copies with
    homophones, script changes and light edits; windows do not survive paragraphs shuffled
    in short lines, so the anchors whose hash is 0 mod ``m`` (Broder's MOD_m sample, which
    keeps the same anchors in every copy, in any order) are keys too. Dnas are below 2^46;
    anchors are tagged with bit 63 and their channel in bit 62, so the key spaces never meet.
    """
    dnas = np.concatenate([fp.pinyin.keys, fp.pinyin_anchored.keys]).astype(np.uint64)
    tagged = [dnas]
    for tag, channel in ((_CHAR_TAG, anchors.chars), (_PINYIN_TAG, anchors.pinyin)):
        hashes = channel.hashes.astype(np.uint64)
        tagged.append(hashes[hashes % np.uint64(m) == 0] | tag)
    return np.unique(np.concatenate(tagged))


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
    all_codes = codepoints(normalized.text)
    mask = content_mask(all_codes)
    return Prepared(
        normalized=normalized,
        positions=np.flatnonzero(mask),
        fingerprint=fingerprint_normalized(normalized, DOCUMENT_PARAMS),
        anchors=anchors_from_codes(all_codes, mask, ANCHOR_PARAMS),
        content_hash=content_hash(text),
    )
