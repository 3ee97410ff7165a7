"""Which sentences of a chapter a search engine is asked for (step 1 of
:mod:`matcher.sites.search`).

A phrase query finds a copy only where the copy holds the sentence as it is, and is worth
one query of the day's budget only if few other texts hold it. The **candidates** of a
chapter are its sentences of :data:`MIN_CHARS` to :data:`MAX_CHARS` Han characters, at
least :data:`MIN_HAN_SHARE` of them Han, said once among the chapters read with it (so
headings, navigation and an author's note repeated at every chapter are not).

They are then ranked by the fingerprints (:func:`rarity`), when the works' postings index
can be read: each candidate is prepared as a page is
(:func:`matcher.matching.prepared.prepare_many`) and the document frequency in works of its
postings keys (its sampled pinyin-window dnas and anchors,
:func:`matcher.matching.prepared.window_keys`) is read in one lookup for all the chapter's
candidates together. A candidate one of whose keys more works hold than the work and its
editions is **shared** text (boilerplate, a well-known quote, a formula another registered
work has too) and never asked. Of the others, those the index knows to be rare (each key
it holds of them held by this work alone) come first, the closest to :data:`TARGET_CHARS`
Han characters first: their rarity proven, a shorter phrase is the likelier to be found
whole in a copy that edits its text here and there (homophones swapped in, words changed:
at 5% of the characters edited, 36% of the sentences of 20 characters are left whole, 13%
of those of 40). Then those the index holds no key of (about half of the candidates: it
keeps about one key in ten characters), the longest first, length being all that speaks
for their rarity. Without the index (none given, or it cannot be read) the longest
candidates are taken, by the text alone.

On the search shape of ``bench/eval_sites.py`` (two of its ten pirate sites swap homophones
into 5% of their characters; seeds 0-4), the longest rare sentence of each chapter found 5
of those 10 copies, the one closest to :data:`TARGET_CHARS` 9.

``count`` queries of a chapter are spread over it: the chapter's sentences are cut into
``count`` equal stretches and the best candidate of each is taken (:func:`spread`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_CHARS, MAX_CHARS = 14, 40
"""A query sentence's length in Han characters: shorter ones are common phrases, longer
ones are cut by search engines (and a copy edited anywhere in them is missed)."""
TARGET_CHARS = (MIN_CHARS + MAX_CHARS) // 2
"""The length (27 Han characters) preferred among the sentences known to be rare."""
MIN_HAN_SHARE = 0.8
"""The least share of a query sentence's characters that are Han characters."""

Frequency = Callable[[Sequence[str]], list[np.ndarray]]
"""For each text given, the document frequency in works (how many registered works hold it)
of each of its postings keys, from the works' index, in one lookup
(:meth:`matcher.matching.engine.Engine.work_frequency`)."""

_ENDS = "。！？!?…"
_SENTENCE = re.compile(rf"[^{_ENDS}\n]+[{_ENDS}]*")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Candidate:
    """A sentence that may be asked: its place among its text's sentences, its number of
    Han characters, and the sentence as asked (without its final punctuation: search
    engines ignore it, and a copy may have lost it)."""

    at: int
    han: int
    text: str


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (cut at 。！？!?… and line breaks), spaces removed."""
    return [_SPACE.sub("", m.group()) for m in _SENTENCE.finditer(text)]


def candidates(found: Sequence[str], said: Counter[str] | None = None) -> list[Candidate]:
    """The sentences of ``found`` that may be asked (see the module docstring), in order;
    ``said`` counts each sentence over the texts read with this one (``found`` alone when
    None): one said twice there is not a candidate."""
    said = Counter(found) if said is None else said
    out = []
    for at, sentence in enumerate(found):
        han = len(_HAN.findall(sentence))
        body = sentence.rstrip(_ENDS)
        if (
            said[sentence] == 1
            and MIN_CHARS <= han <= MAX_CHARS
            and han >= MIN_HAN_SHARE * len(body)
        ):
            out.append(Candidate(at, han, body))
    return out


def spread(
    found: Iterable[Candidate], total: int, count: int, key: Callable[[Candidate], Any]
) -> list[str]:
    """At most ``count`` of the candidates ``found`` among ``total`` sentences: the best by
    ``key`` of each of ``count`` equal stretches of the sentences, in the text's order."""
    if count < 1 or total < 1:
        return []
    stretch = total / count
    best: dict[int, Candidate] = {}
    for candidate in found:
        part = min(int(candidate.at / stretch), count - 1)
        if part not in best or key(candidate) > key(best[part]):
            best[part] = candidate
    return [c.text for c in sorted(best.values(), key=lambda c: c.at)]


def query_sentences(text: str, count: int) -> list[str]:
    """At most ``count`` sentences of ``text`` to search for, by the text alone: the longest
    candidate of each of ``count`` equal stretches of the text, in the text's order.

    >>> said = "雨夜里渡口的灯笼被风吹得左右摇晃船夫把缆绳又紧了一圈。"
    >>> query_sentences("第一章\\n" + "他推开门。" * 3 + said, 2)
    ['雨夜里渡口的灯笼被风吹得左右摇晃船夫把缆绳又紧了一圈']
    """
    found = sentences(text)
    return spread(candidates(found), len(found), count, key=lambda c: c.han)


def rarity(found: Sequence[Candidate], frequency: Frequency, own: int = 1) -> dict[int, bool]:
    """The candidates ``found`` that are not shared, by :attr:`Candidate.at`: True for those
    the index knows to be held by no more than ``own`` works (the work and its editions),
    False for those none of whose postings keys the index holds (about half of them: the
    index keeps about one key in ten characters); a shared one is left out (see the module
    docstring). One call of ``frequency`` for all of them; it may raise
    :class:`matcher.errors.IndexUnavailable`."""
    if not found:
        return {}
    out = {}
    for candidate, counts in zip(found, frequency([c.text for c in found]), strict=True):
        if not (counts > own).any():
            out[candidate.at] = bool((counts > 0).any())
    return out


def chapter_queries(
    text: str,
    count: int,
    *,
    said: Counter[str] | None = None,
    frequency: Frequency | None = None,
    own: int = 1,
) -> list[str]:
    """At most ``count`` sentences of the chapter ``text`` to search for (the module
    docstring): ranked by :func:`rarity` with ``frequency``, by the text alone without it
    (:class:`matcher.errors.IndexUnavailable` when the index cannot be read). ``said``
    counts the sentences of the chapters read with this one."""
    found = sentences(text)
    usable = candidates(found, said)
    if frequency is None:
        return spread(usable, len(found), count, key=lambda c: c.han)
    known = rarity(usable, frequency, own)
    rest = [c for c in usable if c.at in known]
    return spread(rest, len(found), count, key=lambda c: _rank(c, known[c.at]))


def _rank(candidate: Candidate, rare: bool) -> tuple[bool, int, int]:
    """How a candidate not shared ranks (the higher the better; the module docstring): the
    known rare first, the closest to :data:`TARGET_CHARS` (the longer of two as close);
    then the others, the longest."""
    if rare:
        return True, -abs(candidate.han - TARGET_CHARS), candidate.han
    return False, candidate.han, 0
