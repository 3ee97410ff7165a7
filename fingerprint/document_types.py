"""What a document's fingerprint is: its parameters (:class:`DocumentParams`, every method at
its default) and its members (:class:`DocumentFingerprint`), computed one document at a time by
:mod:`fingerprint.document` and many at a time by :mod:`fingerprint.batch` and
:mod:`fingerprint.compiled`, which all return this one type."""

from __future__ import annotations

from dataclasses import dataclass

from fingerprint.minhash import MinHash, MinHashParams
from fingerprint.normalize import NormalizeConfig, Normalized
from fingerprint.pinyin import PinyinFingerprint, PinyinParams
from fingerprint.sentences import SentenceParams, SentenceSignature
from fingerprint.shingles import WinnowFingerprint, WinnowParams
from fingerprint.simhash import Simhash, SimhashParams


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
