"""Text for the benchmark sites: corpus pieces handed out once each, their edits, novels.

:class:`TextPool` hands out pieces of the Chinese corpus (:mod:`tests.sites.corpus`, Simplified
texts only) so that no two pieces it hands out share *copied body*: a run of
:data:`MAX_SHARED_RUN` content characters, or more than :data:`MAX_SHARED_SHARE` of the
smaller piece's 8-grams (the Debian manuals repeat passages; a page labelled unrelated must
not copy a registered work by accident). Lines found in more than one corpus text are left
out altogether. Every site of one run draws from one pool, so the pieces of one shape never
copy those of another; the text a shape shares on purpose (a series' preface, a novel's
chapters) is built from pieces it drew.

:class:`Editor` applies the edits pirates make (:mod:`tests.sites.eval_corpus`'s
transformations: Traditional script, homophones, typos, ad lines, an excerpt).
:func:`novel` cuts a stream of pool text into chapters with ``第N章`` headings.
Everything is drawn from ``random.Random`` instances seeded from the run's seed.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fingerprint.tokens import ngram_hash_array
from tests.sites.eval_corpus import (
    EXCERPT_SHARE,
    HOMOPHONE_RATE,
    TYPO_RATE,
    apply_homophones,
    apply_typos,
    excerpt_span,
    homophone_table,
    insert_ads,
    is_traditional,
    to_traditional,
)
from tests.sites.textconv import HAN, han_share

SHINGLE = 8
MAX_SHARED_RUN = 30
MAX_SHARED_SHARE = 0.05
PIECE_CHARS = 5000
"""Corpus texts are cut at line ends into pieces of about this many characters."""
NOVEL_MARGIN = 1.03
"""A novel draws this much more text than its chapters' lengths add up to (cuts at line ends)."""
EDITS = ("exact", "ads", "traditional", "homophones", "typos", "combined")
"""Edits of a copied text, dealt round-robin where a shape copies whole texts."""
_DIGITS = "零一二三四五六七八九"


def chinese_number(n: int) -> str:
    """``n`` (0-9999) in Chinese numerals, as chapter headings write it.

    >>> [chinese_number(n) for n in (1, 10, 12, 20, 105, 1000, 1010)]
    ['一', '十', '十二', '二十', '一百零五', '一千', '一千零一十']
    """
    if n < 10:
        return _DIGITS[n]
    if n < 20:
        return "十" + (_DIGITS[n % 10] if n % 10 else "")
    out, zero = "", False
    for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = n // value % 10
        if digit:
            out += ("零" if zero and out else "") + _DIGITS[digit] + unit
            zero = False
        else:
            zero = bool(out)
    return out


def chapter_heading(n: int, lines: Sequence[str], arabic: bool = False) -> str:
    """``第N章`` and a title: the first Han run of the chapter's first line, 4-12 characters."""
    first = next((x for x in lines if HAN.search(x)), lines[0] if lines else "")
    run = "".join(c if HAN.match(c) else " " for c in first).split()
    title = next((r for r in run if len(r) >= 4), run[0] if run else "无题")[:12]
    return f"第{n if arabic else chinese_number(n)}章 {title}"


class TextPool:
    """Pieces of corpus text handed out once each; none shares copied body with another."""

    def __init__(self, texts: Sequence[str], seed: int, label: str) -> None:
        simplified = [t for t in texts if not is_traditional(t)]
        line_sets = [{x.strip() for x in t.splitlines() if x.strip()} for t in simplified]
        df = Counter(line for lines in line_sets for line in lines)
        self.pieces: list[list[str]] = []
        for text in simplified:
            kept = list(dict.fromkeys(x.strip() for x in text.splitlines() if x.strip()))
            self.pieces += _cut([x for x in kept if df[x] == 1], PIECE_CHARS)
        self.rng = random.Random(f"{seed}:{label}:pool")
        self.rng.shuffle(self.pieces)
        self.seen: set[int] = set()
        counts = Counter(HAN.findall("".join("".join(p) for p in self.pieces)))
        self.counts = counts

    def take(self, chars: int, min_han: float = 0.4) -> list[str]:
        """Lines of one unused piece, cut at a line end near ``chars`` characters.

        The piece must hold at least ``chars`` characters, a ``min_han`` share of Han ones,
        and share no copied body with anything handed out before.
        """
        for i, piece in enumerate(self.pieces):
            lines = _prefix(piece, chars)
            if sum(map(len, lines)) < chars or han_share("".join(lines)) < min_han:
                continue
            if self._claim(lines):
                del self.pieces[i]
                return lines
        raise ValueError(f"the corpus has no unused piece of {chars} characters left")

    def stream(self, chars: int, min_han: float = 0.2) -> list[str]:
        """Lines of unused pieces, in pool order, until they hold ``chars`` characters.

        The pieces are not checked against each other (a novel may repeat itself), only
        against what was handed out before; they are claimed all together.
        """
        lines: list[str] = []
        taken: list[int] = []
        total = 0
        for i, piece in enumerate(self.pieces):
            if total >= chars:
                break
            if han_share("".join(piece)) >= min_han and not self._copies(piece):
                lines += piece
                total += sum(map(len, piece))
                taken.append(i)
        if total < chars:
            raise ValueError(f"the corpus has fewer than {chars} unused characters left")
        for i in reversed(taken):
            del self.pieces[i]
        self.seen.update(_hashes(lines).tolist())
        return lines

    def _copies(self, lines: Sequence[str]) -> bool:
        hashes = _hashes(lines)
        if not len(hashes):
            return False
        shared = np.fromiter((h in self.seen for h in hashes.tolist()), bool, len(hashes))
        return _longest_run(shared) + SHINGLE - 1 >= MAX_SHARED_RUN or (
            shared.mean() > MAX_SHARED_SHARE
        )

    def _claim(self, lines: Sequence[str]) -> bool:
        if self._copies(lines):
            return False
        self.seen.update(_hashes(lines).tolist())
        return True


def _cut(lines: list[str], target: int) -> list[list[str]]:
    pieces: list[list[str]] = [[]]
    for line in lines:
        if sum(map(len, pieces[-1])) >= target:
            pieces.append([])
        pieces[-1].append(line)
    return [p for p in pieces if p]


def _prefix(lines: Sequence[str], chars: int) -> list[str]:
    """The shortest run of first lines holding ``chars`` characters (all when too few)."""
    out: list[str] = []
    for line in lines:
        out.append(line)
        if sum(map(len, out)) >= chars:
            break
    return out


def _hashes(lines: Sequence[str]) -> np.ndarray:
    return ngram_hash_array("\n".join(lines), SHINGLE)[0]


def _longest_run(mask: np.ndarray) -> int:
    best = run = 0
    for value in mask.tolist():
        run = run + 1 if value else 0
        best = max(best, run)
    return best


@dataclass
class Editor:
    """Applies pirates' edits with one rng and the substitution tables of one pool."""

    rng: random.Random
    homophones: dict[str, tuple[str, ...]]
    alphabet: list[str]

    @classmethod
    def for_pool(cls, pool: TextPool, seed: int, label: str) -> Editor:
        """An editor whose homophones and typos come from the pool's characters."""
        counts = pool.counts
        alphabet = sorted(counts, key=lambda ch: (-counts[ch], ch))[:2500]
        return cls(random.Random(f"{seed}:{label}:edits"), homophone_table(counts), alphabet)

    def edit(self, lines: Sequence[str], kind: str) -> list[str]:
        """``lines`` edited as ``kind`` (one of :data:`EDITS`)."""
        text = "\n".join(lines)
        if kind in ("homophones", "combined"):
            text = apply_homophones(text, self.rng, HOMOPHONE_RATE, self.homophones)
        if kind in ("typos", "combined"):
            text = apply_typos(text, self.rng, TYPO_RATE, self.alphabet)
        if kind in ("traditional", "combined"):
            text = to_traditional(text)
        out = text.split("\n")
        return insert_ads(out, self.rng) if kind in ("ads", "combined") else out

    def excerpt(self, lines: Sequence[str], host: Sequence[str]) -> list[str]:
        """A contiguous share (:data:`EXCERPT_SHARE`) of ``lines`` inside ``host``'s lines."""
        text = "\n".join(lines)
        start, end = excerpt_span(text, self.rng, EXCERPT_SHARE)
        at = self.rng.randint(1, max(1, len(host) - 1))
        return [*host[:at], *text[start:end].strip("\n").split("\n"), *host[at:]]


@dataclass(frozen=True)
class Chapter:
    """A chapter of a novel: its heading and body lines."""

    heading: str
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        """Heading and body, one paragraph a line."""
        return "\n".join((self.heading, *self.lines))


def novel(lines: Sequence[str], lengths: Sequence[int], arabic: bool = False) -> list[Chapter]:
    """``len(lengths)`` chapters cut from ``lines``, each at the line end nearest its length.

    Lines left over are dropped; a chapter with no line left raises ``ValueError``.
    """
    chapters: list[Chapter] = []
    at = 0
    for n, length in enumerate(lengths, 1):
        body: list[str] = []
        size = 0
        while at < len(lines) and (not body or size + len(lines[at]) / 2 < length):
            body.append(lines[at])
            size += len(lines[at])
            at += 1
        if not body:
            raise ValueError(f"too little text for {len(lengths)} chapters")
        chapters.append(Chapter(chapter_heading(n, body, arabic), tuple(body)))
    return chapters


def draw_novel(pool: TextPool, lengths: Sequence[int], arabic: bool = False) -> list[Chapter]:
    """A novel of ``len(lengths)`` chapters from the pool's :meth:`TextPool.stream`."""
    return novel(pool.stream(round(sum(lengths) * NOVEL_MARGIN)), lengths, arabic)


def novel_text(title: str, author: str, chapters: Sequence[Chapter]) -> str:
    """A whole novel as its rights holder registers it: title, author, every chapter."""
    return "\n".join([title, f"作者：{author}", *(c.text for c in chapters)])


def split_lines(lines: Sequence[str], parts: int) -> list[list[str]]:
    """``lines`` in up to ``parts`` runs of about equal length, none empty.

    >>> split_lines(["aaaa", "b", "c", "dddd"], 3)
    [['aaaa'], ['b', 'c'], ['dddd']]
    """
    total = max(1, sum(map(len, lines)))
    out: list[list[str]] = [[] for _ in range(parts)]
    done = cur = 0
    for i, line in enumerate(lines):
        want = max(min(parts - 1, done * parts // total), parts - (len(lines) - i))
        if want > cur and out[cur]:
            cur += 1
        out[cur].append(line)
        done += len(line)
    return [part for part in out if part]
