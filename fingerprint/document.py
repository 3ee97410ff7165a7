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

from fingerprint.anchors import AnchorParams, Anchors, anchors_from_parts
from fingerprint.decode import decode
from fingerprint.document_types import DocumentFingerprint, DocumentParams
from fingerprint.kernels import use_compiled
from fingerprint.minhash import minhash_of_hashes
from fingerprint.normalize import Normalized, normalize
from fingerprint.pinyin import initials, pinyin_from_initials
from fingerprint.sentences import signature_from_codes
from fingerprint.shingles import WinnowFingerprint, winnow_positions
from fingerprint.simhash import Simhash, simhash_of_hashes
from fingerprint.tokens import codepoints, content_mask, ngram_hashes_at


def _fingerprint_parts(
    normalized: Normalized,
    all_codes: np.ndarray,
    mask: np.ndarray,
    positions: np.ndarray,
    letters: np.ndarray,
    letter_positions: np.ndarray,
    params: DocumentParams,
) -> DocumentFingerprint:
    """The numpy reference, given the code points, content mask and pinyin initials."""
    codes = all_codes[positions]
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


def fingerprint_normalized(
    normalized: Normalized, params: DocumentParams | None = None, *, compiled: bool | None = None
) -> DocumentFingerprint:
    """All default fingerprints of already normalised text (``compiled``: :func:`use_compiled`)."""
    params = params or DocumentParams()
    if use_compiled(compiled):
        from fingerprint.compiled import fingerprint_many

        return fingerprint_many([normalized], params)[0][0]
    all_codes = codepoints(normalized.text)
    mask = content_mask(all_codes)
    letters, letter_positions = initials(all_codes)
    return _fingerprint_parts(
        normalized, all_codes, mask, np.flatnonzero(mask), letters, letter_positions, params
    )


@dataclass(frozen=True, eq=False)
class Fingerprinted:
    """A normalised text's default fingerprints, its anchors, and the offset in the
    normalised text of each of its content characters."""

    fingerprint: DocumentFingerprint
    anchors: Anchors
    positions: np.ndarray


def fingerprint_and_anchors(
    normalized: Normalized,
    params: DocumentParams | None = None,
    anchor_params: AnchorParams | None = None,
    *,
    compiled: bool | None = None,
) -> Fingerprinted:
    """The document fingerprint and the anchors of a normalised text, for matching.

    Equal to ``fingerprint_normalized`` and ``anchors.anchors_from_codes``, but the code
    points, the content mask, the pinyin initials, and the winnowed 8-grams both select
    (when their parameters agree), are computed once.
    """
    params = params or DocumentParams()
    anchor_params = anchor_params or AnchorParams()
    if use_compiled(compiled):
        from fingerprint.compiled import fingerprint_many

        fps, anchors, positions = fingerprint_many([normalized], params, anchor_params)
        return Fingerprinted(fps[0], anchors[0], positions[0])
    all_codes = codepoints(normalized.text)
    mask = content_mask(all_codes)
    positions = np.flatnonzero(mask)
    letters, letter_positions = initials(all_codes)
    fp = _fingerprint_parts(
        normalized, all_codes, mask, positions, letters, letter_positions, params
    )
    anchors = anchors_from_parts(
        all_codes[positions], positions, letters, letter_positions, anchor_params
    )
    return Fingerprinted(fp, anchors, positions)


def fingerprint_document(
    text: str | bytes, params: DocumentParams | None = None, *, compiled: bool | None = None
) -> DocumentFingerprint:
    """Decode (bytes), normalise and fingerprint a document with every default method."""
    params = params or DocumentParams()
    if isinstance(text, bytes):
        text = decode(text).text
    if use_compiled(compiled):
        from fingerprint.batch import normalize_many

        normalized = normalize_many([text], params.normalize, compiled=True)[0]
        return fingerprint_normalized(normalized, params, compiled=True)
    return fingerprint_normalized(normalize(text, params.normalize), params, compiled=False)


def fingerprint_documents(
    texts: Sequence[str | bytes],
    params: DocumentParams | None = None,
    *,
    compiled: bool | None = None,
) -> list[DocumentFingerprint]:
    """Fingerprint many documents: equal to ``[fingerprint_document(t) for t in texts]``.

    Steps run once over the whole batch (:mod:`fingerprint.batch`), which is several times
    faster than a loop for the short documents of web pages.
    """
    from fingerprint.batch import fingerprint_many, normalize_joined

    params = params or DocumentParams()
    decoded = [decode(t).text if isinstance(t, bytes) else t for t in texts]
    normalized, *joined = normalize_joined(decoded, params.normalize, compiled=compiled)
    if use_compiled(compiled):
        from fingerprint import compiled as fast

        return fast.fingerprint_many(normalized, params, joined=tuple(joined))[0]
    return fingerprint_many(normalized, params)
