"""Many documents at once: normalisation and the default fingerprints, vectorised across documents.

Each step of :func:`fingerprint.document.fingerprint_document` is run once over all the
documents of a batch laid end to end, with document ids keeping n-grams, windows, runs and
sentences from crossing a boundary, so numpy's per-call overhead is paid once per batch
instead of once per document. The results equal ``fingerprint_document`` on each document
exactly (the tests compare them); only speed differs.

Why the pieces may be joined: in normalisation, documents are joined with ``SEPARATOR``, a
line holding only U+FFFF, so line-based ad rules, links (``\\S+``) and microblog patterns
stop at it as at a document's end, and OpenCC (which matches phrases, none holding a line
break) converts each document as it would alone; a document whose length OpenCC changes, or
that holds the separator itself, is converted on its own. Simhash sums are sums of integer
term frequencies, exact in float64 in any order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fingerprint import normalize_kernels
from fingerprint.document_types import DocumentFingerprint, DocumentParams
from fingerprint.hashing import hash64, ngram_hashes
from fingerprint.kernels import use_compiled
from fingerprint.minhash import MinHash, densify, minhash_of_hashes, oph_bins
from fingerprint.normalize import (
    NormalizeConfig,
    Normalized,
    map_chars,
    noise_mask,
    opencc_t2s,
    to_simplified,
)
from fingerprint.pinyin import (
    PinyinFingerprint,
    PinyinParams,
    dna_keys,
    fixed_bounds,
    initials,
    window_levels,
)
from fingerprint.sentences import SentenceSignature, sentence_end_table
from fingerprint.shingles import WinnowFingerprint, sliding_min
from fingerprint.simhash import Simhash
from fingerprint.t2s import build_tables
from fingerprint.t2s import tables as t2s_tables
from fingerprint.tokens import codepoints, content_mask, from_codepoints

SEPARATOR = "\n\uffff\n"
_SPACE, _NEWLINE = ord(" "), ord("\n")
_LOW32 = np.uint64(0xFFFFFFFF)
_EMPTY32 = np.uint32(0xFFFFFFFF)
_IDENTITY = build_tables("", "", ())


def _bounds(doc: np.ndarray, count: int) -> np.ndarray:
    """Where each of ``count`` documents begins in a doc-sorted id array (count + 1 entries)."""
    return np.searchsorted(doc, np.arange(count + 1))


def _segments(starts: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Document of each global index, given the documents' start offsets."""
    return np.searchsorted(starts, index, side="right") - 1


# --- normalisation --------------------------------------------------------------------------
def _simplified_parts(parts: list[str]) -> list[str]:
    """``to_simplified`` of each part, with one OpenCC call for all that allow it."""
    if any(SEPARATOR in p for p in parts):
        return [to_simplified(p) for p in parts]
    converted = opencc_t2s().convert(SEPARATOR.join(parts)).split(SEPARATOR)
    if len(converted) != len(parts):
        return [to_simplified(p) for p in parts]
    return [
        c if len(c) == len(p) else to_simplified(p) for c, p in zip(converted, parts, strict=True)
    ]


def _fold(codes: np.ndarray, doc: np.ndarray, offsets: np.ndarray):
    """Whitespace folding and trimming of ``normalize`` step 4, per document."""
    space = (codes == _SPACE) | (codes == _NEWLINE)
    same_doc = np.concatenate([[False], doc[1:] == doc[:-1]])
    run_start = space & ~(same_doc & np.concatenate([[False], space[:-1]]))
    run_ids = np.cumsum(run_start) - 1
    has_newline = np.bincount(run_ids[codes == _NEWLINE], minlength=int(run_start.sum())) > 0
    codes = codes.copy()
    codes[run_start] = np.where(has_newline, _NEWLINE, _SPACE)
    keep = ~space | run_start
    codes, doc, offsets = codes[keep], doc[keep], offsets[keep]
    space = (codes == _SPACE) | (codes == _NEWLINE)
    edge = np.ones(len(codes) + 1, dtype=bool)
    edge[1:-1] = doc[1:] != doc[:-1]
    keep = ~(space & (edge[:-1] | edge[1:]))
    return codes[keep], doc[keep], offsets[keep]


def normalize_many(
    texts: Sequence[str], config: NormalizeConfig | None = None, *, compiled: bool | None = None
) -> list[Normalized]:
    """``[normalize(t, config) for t in texts]``, computed in one pass.

    ``compiled`` (:func:`fingerprint.kernels.use_compiled`): the per-character mapping and
    the folding run in :mod:`fingerprint.normalize_kernels`, with the same results.
    """
    return normalize_joined(texts, config, compiled=compiled)[0]


def normalize_joined(
    texts: Sequence[str], config: NormalizeConfig | None = None, *, compiled: bool | None = None
) -> tuple[list[Normalized], np.ndarray, np.ndarray]:
    """:func:`normalize_many`, with the normalised texts' code points laid end to end and
    where each text begins in them (one more entry than texts), for the next step."""
    config = config or NormalizeConfig()
    count = len(texts)
    if count == 0:
        return [], np.zeros(0, dtype=np.uint32), np.zeros(1, dtype=np.int64)
    fast = use_compiled(compiled)
    text_starts = np.concatenate([[0], np.cumsum([len(t) for t in texts])])
    if fast:
        mapped, offsets = normalize_kernels.map_chars("".join(texts), config.lowercase)
        cut = np.searchsorted(offsets, text_starts)
        converted = _joined_t2s(mapped, cut, config.t2s)
        if converted is not None:
            return _folded(texts, converted, np.diff(cut), offsets, text_starts, config)
    else:
        mapped, offsets = map_chars("".join(texts), config.lowercase)
        cut = _bounds(_segments(text_starts, offsets), count)
    mapped_text = from_codepoints(mapped)
    parts = [mapped_text[cut[d] : cut[d + 1]] for d in range(count)]
    if config.t2s:
        parts = _simplified_parts(parts)
    joined = SEPARATOR.join(parts)
    lengths = np.array([len(p) for p in parts], dtype=np.int64)
    if fast:
        return _folded(texts, codepoints(joined), lengths, offsets, text_starts, config)
    else:
        labels = np.full(2 * count - 1, -1, dtype=np.int64)
        labels[0::2] = np.arange(count)
        runs = np.full(2 * count - 1, len(SEPARATOR), dtype=np.int64)
        runs[0::2] = lengths
        doc = np.repeat(labels, runs)
        keep = (doc >= 0) & ~noise_mask(joined, config)
        mapped_index = np.flatnonzero(keep) - doc[keep] * len(SEPARATOR)
        codes, doc = codepoints(joined)[keep], doc[keep]
        codes, doc, local = _fold(codes, doc, offsets[mapped_index] - text_starts[doc])
        cut = _bounds(doc, count)
    return _made(texts, codes, local, cut)


def _made(texts, codes, local, cut) -> tuple[list[Normalized], np.ndarray, np.ndarray]:
    """The ``Normalized`` of each text, from the normalised texts end to end."""
    text = from_codepoints(codes)
    normalized = [
        Normalized(text[cut[d] : cut[d + 1]], local[cut[d] : cut[d + 1]], texts[d])
        for d in range(len(texts))
    ]
    return normalized, np.asarray(codes, dtype=np.uint32), np.asarray(cut, dtype=np.int64)


_SEPARATOR_CODES = codepoints(SEPARATOR).copy()


def _joined_t2s(mapped: np.ndarray, cut: np.ndarray, t2s: bool) -> np.ndarray | None:
    """Step 2 on the compiled path: the mapped texts joined by ``SEPARATOR``, converted by
    the t2s table of :mod:`fingerprint.t2s` where that is exact and by OpenCC in the texts
    holding one of its exceptions; None when the table does not fit the installed OpenCC."""
    if t2s:
        tables = t2s_tables()
        if tables is None:
            return None
        arrays = tuple(vars(tables).values())
    else:
        arrays = tuple(vars(_IDENTITY).values())
    joined, flagged = normalize_kernels.join_t2s(mapped, cut, _SEPARATOR_CODES, t2s, *arrays)
    gap = len(SEPARATOR)
    for d in np.flatnonzero(flagged).tolist():
        a, b = int(cut[d]), int(cut[d + 1])
        text = from_codepoints(mapped[a:b])
        joined[a + d * gap : b + d * gap] = codepoints(to_simplified(text))
    return joined


def _folded(texts, joined, lengths, offsets, text_starts, config):
    """Steps 3 and 4 on the compiled path: noise patterns on the joined texts, then noise and
    separators removed and whitespace folded by :func:`normalize_kernels.fold`."""
    mask = noise_mask(from_codepoints(joined), config, joined)
    codes, local, cut = normalize_kernels.fold(
        joined, lengths, len(SEPARATOR), mask, offsets, text_starts
    )
    return _made(texts, codes, local, cut)


# --- n-grams and winnowing across documents -------------------------------------------------
def _doc_grams(codes, doc, count, n, seed, bits=21, short_docs_hash_all=True):
    """Hashes of the n-grams inside each document, their first index and their document.

    ``short_docs_hash_all``: a document with fewer than ``n`` symbols (but one or more) gives
    one hash of all of them, as ``tokens.ngram_hashes_at`` does; otherwise it gives none.
    """
    grams = ngram_hashes(codes, n, seed, bits)
    first = np.arange(len(grams))
    valid = doc[first + n - 1] == doc[first] if len(grams) else np.zeros(0, dtype=bool)
    hashes, first = grams[valid], first[valid]
    if short_docs_hash_all:
        sizes = np.bincount(doc, minlength=count)
        short = np.flatnonzero((sizes > 0) & (sizes < n))
        if len(short):
            starts = _bounds(doc, count)
            extra = [
                ngram_hashes(codes[starts[d] : starts[d + 1]], sizes[d], seed, bits)[0]
                for d in short
            ]
            hashes = np.concatenate([hashes, np.array(extra, dtype=np.uint64)])
            first = np.concatenate([first, starts[short]])
            order = np.argsort(first, kind="stable")
            hashes, first = hashes[order], first[order]
    return hashes, first, doc[first] if len(first) else np.zeros(0, dtype=np.int64)


def _winnow_many(hashes, gram_doc, count, window):
    """Winnowing per document; returns the selected (document, index within the document)."""
    if len(hashes) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    starts = _bounds(gram_doc, count)
    local = np.arange(len(hashes)) - starts[gram_doc]
    keys = (hashes & np.uint64(0xFFFFFFFF00000000)) | (_LOW32 - local.astype(np.uint64))
    sizes = np.diff(starts)
    chosen_doc, chosen_key = [], []
    if len(keys) >= window:
        minima = sliding_min(keys, window)
        valid = gram_doc[window - 1 :] == gram_doc[: len(minima)]
        chosen_doc.append(gram_doc[: len(minima)][valid])
        chosen_key.append(minima[valid])
    small = np.flatnonzero((sizes > 0) & (sizes <= window))
    if len(small):
        nonempty = np.flatnonzero(sizes > 0)
        per_doc = np.minimum.reduceat(keys, starts[nonempty])
        chosen_doc.append(small)
        chosen_key.append(per_doc[np.searchsorted(nonempty, small)])
    doc = np.concatenate(chosen_doc)
    index = (_LOW32 - (np.concatenate(chosen_key) & _LOW32)).astype(np.int64)
    pairs = np.unique((doc.astype(np.uint64) << np.uint64(32)) | index.astype(np.uint64))
    return (pairs >> np.uint64(32)).astype(np.int64), (pairs & _LOW32).astype(np.int64)


def _split(values: np.ndarray, doc: np.ndarray, count: int) -> list[np.ndarray]:
    cut = _bounds(doc, count)
    return [values[cut[d] : cut[d + 1]] for d in range(count)]


# --- the fingerprints -----------------------------------------------------------------------
def _simhash_values(distinct, distinct_doc, tf, count) -> np.ndarray:
    """Simhash per document, summing weights per (document, byte position, byte value).

    Component 8b + k of V sums tf over the features whose byte b has bit k set, so the weights
    are first added up per byte value (one bincount) and then spread onto bits by a 256 x 8
    table: the same integer sums as the per-document computation, at 8 instead of 64 passes.
    """
    weights = tf.astype(np.float64)
    byte_values = np.ascontiguousarray(distinct, dtype="<u8").view(np.uint8).reshape(-1, 8)
    slots = (distinct_doc[:, None] * 8 + np.arange(8)) * 256 + byte_values
    per_byte = np.bincount(
        slots.ravel(), weights=np.repeat(weights, 8), minlength=count * 8 * 256
    ).reshape(count, 8, 256)
    bit_table = np.unpackbits(
        np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little"
    ).astype(np.float64)
    sums = (per_byte @ bit_table).reshape(count, 64)
    totals = np.bincount(distinct_doc, weights=weights, minlength=count)
    positive = 2.0 * sums - totals[:, None] > 0
    return np.packbits(positive, axis=1, bitorder="little").view("<u8").ravel().astype(np.uint64)


def _oph_values(distinct, distinct_doc, count, num_perm, seed) -> np.ndarray:
    values = np.full((count, num_perm), _EMPTY32, dtype=np.uint32)
    if len(distinct) == 0:
        return values
    bins, low = oph_bins(distinct, num_perm, seed)
    keys = np.sort(
        (distinct_doc.astype(np.uint64) << np.uint64(44)) | (bins << np.uint64(32)) | low
    )
    group = keys >> np.uint64(32)
    first = np.concatenate([[True], group[1:] != group[:-1]])
    doc = (keys[first] >> np.uint64(44)).astype(np.int64)
    bin_of = ((keys[first] >> np.uint64(32)) & np.uint64(0xFFF)).astype(np.int64)
    values[doc, bin_of] = keys[first].astype(np.uint32)
    filled = (values != _EMPTY32).sum(axis=1)
    for d in np.flatnonzero((filled > 0) & (filled < num_perm)):
        densify(values[d], num_perm, seed)
    return values


def _pinyin_many(letters, letter_doc, letter_pos, count, params: PinyinParams):
    """Per document: (keys, starts, ends) of its pinyin windows."""
    lstart = _bounds(letter_doc, count)
    sizes = np.diff(lstart)
    if params.anchored:
        grams, first, gram_doc = _doc_grams(
            letters, letter_doc, count, params.anchor_k, 7, bits=5, short_docs_hash_all=False
        )
        anchor_doc, anchor = _winnow_many(grams, gram_doc, count, max(2, params.granule // 2))
        anchor = first[_bounds(gram_doc, count)[anchor_doc] + anchor] - lstart[anchor_doc]
        docs = np.flatnonzero(sizes > 0)
        cut_doc = np.concatenate([anchor_doc, docs, docs])
        cut_pos = np.concatenate([anchor, np.zeros(len(docs), dtype=np.int64), sizes[docs]])
        pairs = np.unique((cut_doc.astype(np.uint64) << np.uint64(32)) | cut_pos.astype(np.uint64))
        cut_doc = (pairs >> np.uint64(32)).astype(np.int64)
        cut_pos = (pairs & _LOW32).astype(np.int64)
        spans = cut_doc[2:] == cut_doc[:-2]
        window_doc = cut_doc[:-2][spans]
        bounds = np.stack([cut_pos[:-2][spans], cut_pos[2:][spans]], axis=1)
        whole = np.setdiff1d(docs, window_doc)
        window_doc = np.concatenate([window_doc, whole])
        bounds = np.concatenate([bounds, np.stack([np.zeros_like(whole), sizes[whole]], axis=1)])
        order = np.lexsort((bounds[:, 0], window_doc))
        window_doc, bounds = window_doc[order], bounds[order]
    else:
        per_doc = [fixed_bounds(int(s), params) for s in sizes]
        window_doc = np.repeat(np.arange(count), [len(b) for b in per_doc])
        bounds = np.concatenate(per_doc) if per_doc else np.zeros((0, 2), dtype=np.int64)
    if len(bounds) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return [(np.zeros(0, dtype=np.uint64), empty, empty)] * count
    bounds = bounds + lstart[window_doc][:, None]
    keys = dna_keys(window_levels(letters, bounds, params), params.levels)
    starts = letter_pos[bounds[:, 0]]
    ends = letter_pos[bounds[:, 1] - 1] + 1
    return list(
        zip(
            _split(keys, window_doc, count),
            _split(starts, window_doc, count),
            _split(ends, window_doc, count),
            strict=True,
        )
    )


def _sentences_many(all_codes, mask, doc_of_char, text_starts, count, params):
    """Per document: (hashes, spans) of its k longest sentences."""
    inside = ~sentence_end_table()[np.minimum(all_codes, 0xFFFF)]
    same_doc = doc_of_char[1:] == doc_of_char[:-1]
    prev = np.concatenate([[False], inside[:-1] & same_doc])
    nxt = np.concatenate([inside[1:] & same_doc, [False]])
    starts = np.flatnonzero(inside & ~prev)
    ends = np.flatnonzero(inside & ~nxt) + 1
    cumulative = np.concatenate([[0], np.cumsum(mask)])
    lengths = cumulative[ends] - cumulative[starts]
    sdoc = doc_of_char[starts] if len(starts) else np.zeros(0, dtype=np.int64)
    order = np.lexsort((starts, -lengths, sdoc))
    order = order[lengths[order] >= params.min_chars]
    ranked_doc = sdoc[order]
    rank = np.arange(len(order)) - _bounds(ranked_doc, count)[ranked_doc]
    order = order[rank < params.k]
    out: list[tuple[list[int], list[tuple[int, int]]]] = [([], []) for _ in range(count)]
    for i in order.tolist():
        a, b, d = int(starts[i]), int(ends[i]), int(sdoc[i])
        out[d][0].append(hash64(from_codepoints(all_codes[a:b][mask[a:b]])))
        out[d][1].append((a - int(text_starts[d]), b - int(text_starts[d])))
    return out


def fingerprint_many(
    normalized: Sequence[Normalized], params: DocumentParams
) -> list[DocumentFingerprint]:
    """``fingerprint_normalized`` of each text, computed in one pass."""
    count = len(normalized)
    if count == 0:
        return []
    text_starts = np.concatenate([[0], np.cumsum([len(n.text) for n in normalized])])
    all_codes = codepoints("".join(n.text for n in normalized))
    doc_of_char = _segments(text_starts, np.arange(len(all_codes)))
    mask = content_mask(all_codes)
    positions = np.flatnonzero(mask)
    cdoc, codes = doc_of_char[positions], all_codes[positions]
    local_pos = positions - text_starts[cdoc]

    sp = params.simhash
    grams, _, gram_doc = _doc_grams(codes, cdoc, count, sp.ngram, sp.seed)
    order = np.lexsort((grams, gram_doc))
    sorted_grams, sorted_doc = grams[order], gram_doc[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (sorted_grams[1:] != sorted_grams[:-1]) | (sorted_doc[1:] != sorted_doc[:-1])
    distinct, distinct_doc = sorted_grams[new], sorted_doc[new]
    tf = np.bincount(np.cumsum(new) - 1) if len(new) else np.zeros(0, dtype=np.int64)
    simhashes = _simhash_values(distinct, distinct_doc, tf, count)

    mp = params.minhash
    distinct_per_doc = _split(distinct, distinct_doc, count)
    if mp.scheme == "oph" and (mp.ngram, 0) == (sp.ngram, sp.seed):
        oph = _oph_values(distinct, distinct_doc, count, mp.num_perm, mp.seed)
        minhashes = [MinHash(oph[d], len(distinct_per_doc[d]), mp) for d in range(count)]
    else:
        mgrams, _, mdoc = _doc_grams(codes, cdoc, count, mp.ngram, 0)
        minhashes = [minhash_of_hashes(g, mp) for g in _split(mgrams, mdoc, count)]

    wp = params.winnow
    kgrams, kfirst, kdoc = _doc_grams(codes, cdoc, count, wp.k, wp.seed)
    wdoc, windex = _winnow_many(kgrams, kdoc, count, wp.window)
    chosen = _bounds(kdoc, count)[wdoc] + windex
    winnow_hashes = _split(kgrams[chosen], wdoc, count)
    winnow_positions = _split(local_pos[kfirst[chosen]], wdoc, count)

    letters, letter_pos = initials(all_codes)
    letter_doc = doc_of_char[letter_pos]
    fixed = _pinyin_many(letters, letter_doc, letter_pos, count, params.pinyin)
    anchored = _pinyin_many(letters, letter_doc, letter_pos, count, params.pinyin_anchored)
    sentences = _sentences_many(all_codes, mask, doc_of_char, text_starts, count, params.sentences)

    out = []
    for d in range(count):
        offset = text_starts[d]
        out.append(
            DocumentFingerprint(
                normalized=normalized[d],
                pinyin=PinyinFingerprint(
                    params.pinyin, fixed[d][0], fixed[d][1] - offset, fixed[d][2] - offset
                ),
                pinyin_anchored=PinyinFingerprint(
                    params.pinyin_anchored,
                    anchored[d][0],
                    anchored[d][1] - offset,
                    anchored[d][2] - offset,
                ),
                simhash=Simhash(int(simhashes[d]), sp),
                minhash=minhashes[d],
                winnow=WinnowFingerprint(wp, winnow_hashes[d], winnow_positions[d]),
                sentences=SentenceSignature(
                    np.array(sentences[d][0], dtype=np.uint64),
                    tuple(sentences[d][1]),
                    params.sentences,
                ),
            )
        )
    return out
