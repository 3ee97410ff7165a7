"""The default fingerprints (and the anchors) of many texts through the compiled kernels.

The same results as :func:`fingerprint.batch.fingerprint_many` and
:func:`fingerprint.anchors.anchors_from_codes`, the numpy reference (the tests compare them),
computed by :mod:`fingerprint.kernels`: the texts are laid end to end, each intermediate is
computed once for all of them (code points, content mask, pinyin initials, the n-gram hashes
of each length), every per-element loop runs compiled, and only the objects of each text
are made in Python. The winnowed character 8-grams of the ``winnow`` fingerprint and the
``chars`` channel of the anchors are the same selection when their parameters agree, so it
is made once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import pairwise, starmap

import numpy as np
from xxhash import xxh3_64_intdigest

from fingerprint import kernels
from fingerprint.anchors import AnchorParams, Anchors, Channel
from fingerprint.minhash import MinHash, MinHashParams, minhash_of_hashes
from fingerprint.normalize import Normalized
from fingerprint.pinyin import ALPHABET, PinyinFingerprint, PinyinParams, initial_table
from fingerprint.sentences import SentenceParams, SentenceSignature, sentence_end_table
from fingerprint.shingles import WinnowFingerprint, WinnowParams
from fingerprint.simhash import Simhash, SimhashParams
from fingerprint.tokens import codepoints, content_mask, content_table, from_codepoints

_BMP = 0x10000
_CODE_BITS = 21
_LETTER_BITS = 5
_ANCHOR_SEED = 7  # pinyin.anchored_bounds hashes initial k-grams with seed 7


def _cut(values: np.ndarray, starts: np.ndarray) -> list[np.ndarray]:
    """``values`` cut at ``starts`` (count + 1 offsets) into one array per text."""
    return [values[starts[d] : starts[d + 1]] for d in range(len(starts) - 1)]


def _owner(starts: np.ndarray) -> np.ndarray:
    """The text of each element of a segmented array."""
    return np.repeat(np.arange(len(starts) - 1), np.diff(starts))


class _Texts:
    """The intermediates every fingerprint of a batch shares, computed once."""

    def __init__(self, texts: Sequence[str], joined: tuple | None = None) -> None:
        """``joined``: the texts' code points end to end and where each begins, if known."""
        self.count = len(texts)
        if joined is None:
            self.text_starts = np.zeros(self.count + 1, dtype=np.int64)
            np.cumsum([len(t) for t in texts], out=self.text_starts[1:])
            self.all_codes = codepoints("".join(texts))
        else:
            self.all_codes, self.text_starts = joined
        astral = np.unique(self.all_codes[self.all_codes >= _BMP])
        (
            self.mask,
            self.positions,
            self.codes,
            self.content_starts,
            self.letters,
            self.letter_pos,
            self.letter_starts,
            self.letter_index,
        ) = kernels.split_text(
            self.all_codes,
            self.text_starts,
            content_table(),
            astral,
            content_mask(astral),
            initial_table(),
        )
        self._grams: dict[tuple[int, int, bool], tuple[np.ndarray, ...]] = {}

    def grams(self, n: int, seed: int, short_whole: bool = True) -> tuple[np.ndarray, ...]:
        """Content-character n-gram hashes (hashes, first index, starts), made once."""
        key = (n, seed, short_whole)
        if key not in self._grams:
            self._grams[key] = kernels.ngrams(
                self.codes,
                self.content_starts,
                n,
                _CODE_BITS,
                kernels.seed_offset(seed),
                short_whole,
            )
        return self._grams[key]

    def winnowed(self, k: int, window: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Global index of each winnowed n-gram (into ``grams(k, seed)``) and starts."""
        hashes, _, starts = self.grams(k, seed)
        chosen, chosen_starts = kernels.winnow(hashes, starts, window)
        return starts[_owner(chosen_starts)] + chosen, chosen_starts

    def local(self, positions: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Character offsets within each text of global ``positions`` (segmented by starts)."""
        return positions - self.text_starts[_owner(starts)]


@cache
def _levels(reference: tuple[float, ...], width: float, levels: int) -> np.ndarray:
    """The window levels of short windows (``kernels.level_table``), made once per setting."""
    table = kernels.level_table(np.asarray(reference, dtype=np.float64), width, levels)
    table.setflags(write=False)
    return table


def _pinyin(t: _Texts, params: PinyinParams) -> list[PinyinFingerprint]:
    letters = t.letters
    if params.anchored:
        hashes, first, starts = kernels.ngrams(
            letters,
            t.letter_starts,
            params.anchor_k,
            _LETTER_BITS,
            kernels.seed_offset(_ANCHOR_SEED),
            False,
        )
        chosen, chosen_starts = kernels.winnow(hashes, starts, max(2, params.granule // 2))
        owner = _owner(chosen_starts)
        anchors = first[starts[owner] + chosen] - t.letter_starts[owner]
        bounds, window_starts = kernels.anchored_windows(t.letter_starts, anchors, chosen_starts)
    else:
        step = max(1, round(params.granule * (1.0 - params.overlap)))
        bounds, window_starts = kernels.fixed_windows(t.letter_starts, params.granule, step)
    exact = params.levels ** len(ALPHABET) < 2**64
    reference = np.asarray(params.reference, dtype=np.float64)
    keys = kernels.window_keys(
        letters,
        bounds,
        reference,
        params.width,
        params.levels,
        exact,
        kernels.seed_offset(params.levels),
        _levels(params.reference, params.width, params.levels),
    )
    starts = t.local(t.letter_pos[bounds[:, 0]], window_starts)
    ends = t.local(t.letter_pos[bounds[:, 1] - 1] + 1, window_starts)
    return [
        PinyinFingerprint(params, k, s, e)
        for k, s, e in zip(
            _cut(keys, window_starts),
            _cut(starts, window_starts),
            _cut(ends, window_starts),
            strict=True,
        )
    ]


def _sentences(t: _Texts, params) -> list[SentenceSignature]:
    spans, starts, text, begins = kernels.sentences(
        t.all_codes, t.mask, t.text_starts, sentence_end_table(), params.k, params.min_chars
    )
    # hash64 of each sentence's content characters: one UTF-8 encoding for them all, then
    # XXH3 (seed 0, as hash64) of each sentence's bytes (``kernels.utf8_offsets``: where
    # each one begins), called without hash64's wrapper.
    data = memoryview(from_codepoints(text).encode("utf-8", "surrogatepass"))
    ends = kernels.utf8_offsets(text, begins).tolist()
    hashes = np.fromiter(
        map(xxh3_64_intdigest, map(data.__getitem__, starmap(slice, pairwise(ends)))),
        dtype=np.uint64,
        count=len(ends) - 1,
    )
    local = (spans - t.text_starts[_owner(starts)][:, None]).tolist()
    bounds = starts.tolist()
    return [
        SentenceSignature(hashes[a:b], tuple(map(tuple, local[a:b])), params)
        for a, b in pairwise(bounds)
    ]


def _minhashes(t: _Texts, params, shared: tuple | None) -> list[MinHash]:
    """MinHash of each text; ``shared``: the one-permutation values and sizes already made
    from the simhash's n-grams (same n-grams and seed)."""
    if params.scheme != "oph":
        hashes, _, starts = t.grams(params.ngram, 0)
        return [minhash_of_hashes(g, params) for g in _cut(hashes, starts)]
    if shared is None:
        hashes, _, starts = t.grams(params.ngram, 0)
        mix = kernels.seed_offset(params.seed)
        _, *shared = kernels.simhash_oph(hashes, starts, params.num_perm, mix, params.seed)
    values, sizes = shared
    sizes = sizes.tolist()
    return [MinHash(values[d], sizes[d], params) for d in range(t.count)]


def _anchors(t: _Texts, params: AnchorParams, winnow_params) -> list[Anchors]:
    k = params.char_k
    if (k, params.char_window, params.seed) == (
        winnow_params.k,
        winnow_params.window,
        winnow_params.seed,
    ):
        chosen, chosen_starts = t.winnowed(k, params.char_window, params.seed)
        # A text shorter than k has one n-gram of all its characters, and no anchors.
        lengths = np.diff(t.content_starts)
        keep = lengths[_owner(chosen_starts)] >= k
        chosen = chosen[keep]
        chosen_starts = np.concatenate([[0], np.cumsum(np.diff(chosen_starts) * (lengths >= k))])
        hashes, first, _ = t.grams(k, params.seed)
    else:
        hashes, first, starts = t.grams(k, params.seed, short_whole=False)
        local, chosen_starts = kernels.winnow(hashes, starts, params.char_window)
        chosen = starts[_owner(chosen_starts)] + local
    owner = _owner(chosen_starts)
    char_hashes = (hashes[chosen] >> np.uint64(32)).astype(np.uint32)
    char_starts = (first[chosen] - t.content_starts[owner]).astype(np.uint32)
    char_ends = char_starts + np.uint32(k)

    pk = params.pinyin_k
    phashes, pfirst, pstarts = kernels.ngrams(
        t.letters, t.letter_starts, pk, _LETTER_BITS, kernels.seed_offset(params.seed + 1), False
    )
    local, pchosen_starts = kernels.winnow(phashes, pstarts, params.pinyin_window)
    powner = _owner(pchosen_starts)
    pchosen = pstarts[powner] + local
    letter_index = t.letter_index
    first_letter = pfirst[pchosen]
    pin_hashes = (phashes[pchosen] >> np.uint64(32)).astype(np.uint32)
    pin_starts = (letter_index[first_letter] - t.content_starts[powner]).astype(np.uint32)
    pin_ends = (letter_index[first_letter + pk - 1] + 1 - t.content_starts[powner]).astype(
        np.uint32
    )

    lengths = np.diff(t.content_starts).tolist()
    out = []
    for d in range(t.count):
        a, b = chosen_starts[d], chosen_starts[d + 1]
        pa, pb = pchosen_starts[d], pchosen_starts[d + 1]
        chars = Channel(char_hashes[a:b], char_starts[a:b], char_ends[a:b])
        pinyin = Channel(pin_hashes[pa:pb], pin_starts[pa:pb], pin_ends[pa:pb])
        out.append(Anchors(params, lengths[d], chars, pinyin))
    return out


def fingerprint_many(
    normalized: Sequence[Normalized],
    params,
    anchor_params: AnchorParams | None = None,
    joined: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[list, list[Anchors] | None, list[np.ndarray] | None]:
    """Per text: its ``DocumentFingerprint``; when ``anchor_params`` is given, also its
    ``Anchors`` and the offsets of its content characters in its normalised text (else
    None for both). ``joined``: the texts' code points end to end and where each begins
    (:func:`fingerprint.batch.normalize_joined` gives them), to save making them again."""
    from fingerprint.document_types import DocumentFingerprint

    t = _Texts([n.text for n in normalized], joined)
    sp, mp, wp = params.simhash, params.minhash, params.winnow
    hashes, _, starts = t.grams(sp.ngram, sp.seed)
    shared = (mp.ngram, 0) == (sp.ngram, sp.seed) and mp.scheme == "oph"
    mix = kernels.seed_offset(mp.seed)
    simhashes, values, sizes = kernels.simhash_oph(hashes, starts, mp.num_perm, mix, mp.seed)
    simhashes = simhashes.tolist()
    minhashes = _minhashes(t, mp, (values, sizes) if shared else None)

    chosen, chosen_starts = t.winnowed(wp.k, wp.window, wp.seed)
    kgrams, kfirst, _ = t.grams(wp.k, wp.seed)
    winnow_hashes = _cut(kgrams[chosen], chosen_starts)
    winnow_positions = _cut(t.local(t.positions[kfirst[chosen]], chosen_starts), chosen_starts)

    fixed = _pinyin(t, params.pinyin)
    anchored = _pinyin(t, params.pinyin_anchored)
    sentences = _sentences(t, params.sentences)
    out = [
        DocumentFingerprint(
            normalized=normalized[d],
            pinyin=fixed[d],
            pinyin_anchored=anchored[d],
            simhash=Simhash(simhashes[d], sp),
            minhash=minhashes[d],
            winnow=WinnowFingerprint(wp, winnow_hashes[d], winnow_positions[d]),
            sentences=sentences[d],
        )
        for d in range(t.count)
    ]
    if anchor_params is None:
        return out, None, None
    anchors = _anchors(t, anchor_params, wp)
    positions = _cut(t.local(t.positions, t.content_starts), t.content_starts)
    return out, anchors, positions


# --- one method on one text (the benchmark's stage rows) ------------------------------------
def pinyin_fingerprint(text: str, params: PinyinParams | None = None) -> PinyinFingerprint:
    """``pinyin.pinyin_fingerprint`` through the kernels."""
    return _pinyin(_Texts([text]), params or PinyinParams())[0]


def simhash(text: str, params: SimhashParams | None = None) -> Simhash:
    """``simhash.simhash`` (character n-grams, tf weights) through the kernels."""
    params = params or SimhashParams()
    if params.features != "char" or params.weighting != "tf":
        raise ValueError("the compiled simhash takes character n-grams with tf weights")
    hashes, _, starts = _Texts([text]).grams(params.ngram, params.seed)
    value = kernels.simhash_oph(hashes, starts, 1, kernels.seed_offset(0), 0)[0]
    return Simhash(int(value[0]), params)


def minhash(text: str, params: MinHashParams | None = None) -> MinHash:
    """``minhash.minhash`` through the kernels (one-permutation; affine32 stays numpy)."""
    return _minhashes(_Texts([text]), params or MinHashParams(), None)[0]


def winnow(text: str, params: WinnowParams | None = None) -> WinnowFingerprint:
    """``shingles.winnow`` through the kernels."""
    params = params or WinnowParams()
    t = _Texts([text])
    chosen, _ = t.winnowed(params.k, params.window, params.seed)
    hashes, first, _ = t.grams(params.k, params.seed)
    return WinnowFingerprint(params, hashes[chosen], t.positions[first[chosen]])


def sentence_signature(text: str, params: SentenceParams | None = None) -> SentenceSignature:
    """``sentences.sentence_signature`` through the kernels."""
    return _sentences(_Texts([text]), params or SentenceParams())[0]
