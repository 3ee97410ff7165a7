"""The default fingerprint of a document: every method at its default parameters, at once.

``fingerprint_document`` normalises the text once, takes its content characters once and
shares the character 3-gram hashes between simhash and MinHash, so the whole set costs
little more than its most expensive part. Every member keeps its own method, parameters
and version, and round-trips through ``to_dict`` / ``from_dict``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fingerprint.decode import decode
from fingerprint.minhash import MinHash, MinHashParams, minhash_of_hashes
from fingerprint.normalize import NormalizeConfig, Normalized, normalize
from fingerprint.pinyin import PinyinFingerprint, PinyinParams, initials, pinyin_from_initials
from fingerprint.sentences import SentenceParams, SentenceSignature, signature_from_codes
from fingerprint.shingles import WinnowFingerprint, WinnowParams, winnow_positions
from fingerprint.simhash import Simhash, SimhashParams, simhash_of_hashes
from fingerprint.tokens import codepoints, content_mask, ngram_hashes_at


@dataclass(frozen=True)
class DocumentParams:
    normalize: NormalizeConfig = NormalizeConfig()
    pinyin: PinyinParams = PinyinParams()
    pinyin_anchored: PinyinParams = PinyinParams(anchored=True)
    simhash: SimhashParams = SimhashParams()
    minhash: MinHashParams = MinHashParams(scheme="oph")
    winnow: WinnowParams = WinnowParams()
    sentences: SentenceParams = SentenceParams()

    def __post_init__(self) -> None:
        if self.simhash.features != "char" or self.simhash.weighting != "tf":
            raise ValueError("document fingerprints use character features with tf weights")


@dataclass(frozen=True, eq=False)
class DocumentFingerprint:
    normalized: Normalized
    pinyin: PinyinFingerprint
    pinyin_anchored: PinyinFingerprint
    simhash: Simhash
    minhash: MinHash
    winnow: WinnowFingerprint
    sentences: SentenceSignature

    def to_dict(self) -> dict:
        """Every fingerprint as a JSON-ready dict, keyed by method."""
        members = (
            self.pinyin,
            self.pinyin_anchored,
            self.simhash,
            self.minhash,
            self.winnow,
            self.sentences,
        )
        return {fp.method: fp.to_dict() for fp in members}


def fingerprint_normalized(
    normalized: Normalized, params: DocumentParams | None = None
) -> DocumentFingerprint:
    """All default fingerprints of already normalised text."""
    params = params or DocumentParams()
    all_codes = codepoints(normalized.text)
    mask = content_mask(all_codes)
    positions = np.flatnonzero(mask)
    codes = all_codes[positions]
    letters, letter_positions = initials(all_codes)
    grams, _ = ngram_hashes_at(codes, positions, params.simhash.ngram, params.simhash.seed)
    distinct, tf = np.unique(grams, return_counts=True)
    if (params.minhash.ngram, 0) == (params.simhash.ngram, params.simhash.seed):
        minhash = minhash_of_hashes(distinct, params.minhash)
    else:
        minhash = minhash_of_hashes(
            ngram_hashes_at(codes, positions, params.minhash.ngram, 0)[0], params.minhash
        )
    kgrams, starts = ngram_hashes_at(codes, positions, params.winnow.k, params.winnow.seed)
    chosen = winnow_positions(kgrams, params.winnow.window)
    return DocumentFingerprint(
        normalized=normalized,
        pinyin=pinyin_from_initials(letters, letter_positions, params.pinyin),
        pinyin_anchored=pinyin_from_initials(letters, letter_positions, params.pinyin_anchored),
        simhash=Simhash(simhash_of_hashes(distinct, tf), params.simhash),
        minhash=minhash,
        winnow=WinnowFingerprint(params.winnow, kgrams[chosen], starts[chosen]),
        sentences=signature_from_codes(all_codes, mask, params.sentences),
    )


def fingerprint_document(
    text: str | bytes, params: DocumentParams | None = None
) -> DocumentFingerprint:
    """Decode (bytes), normalise and fingerprint a document with every default method."""
    params = params or DocumentParams()
    if isinstance(text, bytes):
        text = decode(text).text
    return fingerprint_normalized(normalize(text, params.normalize), params)


def fingerprint_documents(
    texts: Sequence[str | bytes], params: DocumentParams | None = None
) -> list[DocumentFingerprint]:
    """Fingerprint many documents: equal to ``[fingerprint_document(t) for t in texts]``.

    Steps run once over the whole batch (:mod:`fingerprint.batch`), which is several times
    faster than a loop for the short documents of web pages.
    """
    from fingerprint.batch import fingerprint_many, normalize_many

    params = params or DocumentParams()
    decoded = [decode(t).text if isinstance(t, bytes) else t for t in texts]
    return fingerprint_many(normalize_many(decoded, params.normalize), params)
