"""The labelled corpus of the accuracy evaluation: works, pirated pages and negative pages.

Works are real Chinese documents (:mod:`tests.sites.corpus`: Debian's Chinese documentation,
Simplified script only, since the Traditional translations are near-copies of the Simplified
ones), 1,500-12,000 characters each (longer texts are cut into pieces at line ends); no two
works share body text. Each work gets ``pages_per_work`` pirated pages of distinct classes
(:data:`CLASSES`), and every negative kind (:data:`NEGATIVE_KINDS`) gets
``negatives_per_kind`` pages. Every page is plain text, as a crawler's main-text extraction
would give it: the chrome of one of a few fake sites (name, navigation, breadcrumb, footer)
around the body. A paragraph is a line.

Terms: a line is *boilerplate* when it occurs in at least :data:`BOILERPLATE_DF` corpus
texts (section headings, licence and copyright lines, a help system's navigation); the
*body* of a text is its other lines. Two texts share *copied body* when more than
:data:`MAX_SHARED_BODY` of the smaller one's body 8-grams (of content characters) are in the
other, or when they share a run of :data:`MAX_SHARED_RUN` content characters; works never
do with each other, and negative pages and the unrelated text around an excerpt never do
with any work.

Everything is drawn from ``random.Random`` instances seeded with strings derived from the
seed, so a corpus is a function of (texts, sizes, seed).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from fingerprint.hashing import ngram_hashes
from fingerprint.normalize import to_simplified
from fingerprint.tokens import codepoints, ngram_hash_array
from tests.sites.textconv import HAN, han_share

CLASSES = (
    "exact", "typos", "homophones", "traditional", "ads", "dropped",
    "shuffled", "excerpt", "split", "two_works", "combined",
)  # fmt: skip
"""Transformation classes of the pirated pages; each page has exactly one."""
NEGATIVE_KINDS = ("unrelated", "same_topic", "boilerplate")
TYPO_RATE = 0.03
HOMOPHONE_RATE = 0.08
DROP_RATE = 0.30
EXCERPT_SHARE = 0.35
WORK_CHARS = (1500, 12000)
PIECE_CHARS = 6000
"""Texts longer than a work may be are cut into pieces of about this many characters."""
WORK_MIN_HAN = 0.4
FILLER_MIN_CHARS = 400
BOILERPLATE_DF = 3
SHINGLE = 8
MAX_SHARED_BODY = 0.05
MAX_SHARED_RUN = 30
TRADITIONAL_SHARE = 0.05
"""A text whose Han characters change under OpenCC t2s more than this is Traditional."""
TOPIC_DIM = 4096
Pair = tuple[str, str]

# --- page chrome and ads -----------------------------------------------------------------
_SITE_NAMES = ("书香", "墨客", "极客", "码农", "云端", "飞鸟", "星辰", "青柠", "知行", "蓝海")
_SITE_KINDS = ("文库", "文档站", "资料网", "阅读网", "小站", "书屋", "知识库", "技术社区")
_SLOGANS = ("海量文档免费看", "专注技术分享", "好文章尽在这里", "每日更新", "你的在线图书馆")
_NAV = ("首页", "分类", "排行榜", "最近更新", "全本", "书架", "文档中心", "下载", "论坛", "专题")
_SECTIONS = ("doc", "read", "article", "book", "wiki", "view")
_DISCLAIMERS = (
    "本站所有内容均来自网友上传，如有侵权请联系我们删除。",
    "免责声明：本站资源仅供学习交流，版权归原作者所有。",
    "本站不对文章内容的真实性负责，请读者自行判断。",
)
CAUGHT_ADS = (
    "最新章节请访问 www.{domain}.com",
    "本章未完，请点击下一页继续阅读",
    "一秒记住【{name} www.{domain}.la】，精彩内容无弹窗免费阅读！",
    "手机用户请浏览 m.{domain}.net 阅读，更优质的阅读体验。",
    "喜欢本站请加入书签，方便下次继续阅读",
)
"""Ad lines of the kind a pattern list (``fingerprint.normalize``) removes."""
UNCAUGHT_ADS = (
    "加微信 {word}{num} 领取福利",
    "兼职日结三百元，手机就能做，私聊 QQ {num}{num}",
    "正品特价，全场包邮，今晚十二点结束，抢购热线 1{num}{num}",
    "老中医祖传秘方，三天见效，咨询 {word}{num}",
    "限时五折，会员充值即送五百书币，快来看看吧",
)
"""Spam lines that such a pattern list lets through."""


@dataclass(frozen=True)
class Site:
    """A fake site: its chrome is the same on every page but for the page's title."""

    name: str
    domain: str
    section: str
    category: str
    header: tuple[str, ...]
    footer: tuple[str, ...]

    def wrap(self, title: str, body: Sequence[str]) -> str:
        """The page's text: header, breadcrumb, ``title``, body lines, footer."""
        crumb = f"当前位置：首页 > {self.category} > {title}"
        return "\n".join([*self.header, crumb, title, *body, *self.footer])

    def body_of(self, text: str) -> list[str]:
        """The body lines of a page text made by :meth:`wrap` (also after conversion)."""
        return text.split("\n")[len(self.header) + 2 : -len(self.footer)]


def make_sites(rng: random.Random, count: int = 8) -> list[Site]:
    """``count`` fake sites with distinct names and domains."""
    names = rng.sample([a + b for a in _SITE_NAMES for b in _SITE_KINDS], count)
    sites = []
    for name in names:
        domain = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(5, 9)))
        domain += rng.choice((".com", ".net", ".cc", ".org", ".top"))
        nav = rng.sample(_NAV, 6)
        year = rng.randint(2008, 2020)
        footer = (
            "上一篇 | 返回目录 | 下一篇",
            f"Copyright © {year}-2024 {domain} All Rights Reserved",
            f"{rng.choice('京沪粤浙苏闽蜀')}ICP备{rng.randint(10**7, 10**8 - 1)}号-1",
            rng.choice(_DISCLAIMERS),
            f"联系我们：admin@{domain}",
        )
        header = (f"{name} - {rng.choice(_SLOGANS)}", " | ".join(nav))
        sites.append(Site(name, domain, rng.choice(_SECTIONS), nav[1], header, footer))
    return sites


def ad_line(rng: random.Random, caught: bool) -> str:
    """One ad line with random identifiers; ``caught`` picks a pattern-list-visible one."""
    template = rng.choice(CAUGHT_ADS if caught else UNCAUGHT_ADS)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return template.format(
        domain="".join(rng.choices(letters, k=6)),
        name=rng.choice(_SITE_NAMES) + "阁",
        word="".join(rng.choices(letters, k=rng.randint(2, 5))),
        num=rng.randint(1000, 9999),
    )


# --- transformations (pure given the rng) ------------------------------------------------
@cache
def pinyin_of(char: str) -> str:
    """Toneless pinyin of a character's first reading ('' when pypinyin has none)."""
    from pypinyin import Style, lazy_pinyin

    reading = lazy_pinyin(char, style=Style.NORMAL)[0]
    return reading if reading.isascii() and reading.isalpha() else ""


@cache
def _s2t() -> Any:
    import opencc

    return opencc.OpenCC("s2t")


def to_traditional(text: str) -> str:
    """Simplified to Traditional (OpenCC ``s2t``)."""
    return _s2t().convert(text)


def is_traditional(text: str, sample: int = 3000) -> bool:
    """Whether OpenCC t2s changes more than :data:`TRADITIONAL_SHARE` of the Han characters."""
    head = text[:sample]
    changed = sum(a != b for a, b in zip(head, to_simplified(head), strict=True))
    return changed > TRADITIONAL_SHARE * max(1, len(HAN.findall(head)))


def _han_positions(text: str) -> list[int]:
    return [m.start() for m in HAN.finditer(text)]


def apply_typos(text: str, rng: random.Random, rate: float, alphabet: Sequence[str]) -> str:
    """Replace ``round(rate * Han characters)`` of them by a common character of other pinyin."""
    chars = list(text)
    positions = _han_positions(text)
    for i in sorted(rng.sample(positions, round(rate * len(positions)))):
        for _ in range(20):
            new = rng.choice(alphabet)
            if new != chars[i] and pinyin_of(new) != pinyin_of(chars[i]):
                break
        chars[i] = new
    return "".join(chars)


def homophone_table(
    counts: Mapping[str, int], min_count: int = 3, top: int = 8
) -> dict[str, tuple[str, ...]]:
    """Character -> its ``top`` most frequent homophones (same toneless pinyin) in ``counts``."""
    groups: dict[str, list[str]] = {}
    ranked = sorted((c for c, n in counts.items() if n >= min_count), key=lambda c: (-counts[c], c))
    for char in ranked:
        if reading := pinyin_of(char):
            groups.setdefault(reading, []).append(char)
    table: dict[str, tuple[str, ...]] = {}
    for group in groups.values():
        for char in group:
            if others := [c for c in group if c != char][:top]:
                table[char] = tuple(others)
    return table


def apply_homophones(
    text: str, rng: random.Random, rate: float, table: Mapping[str, Sequence[str]]
) -> str:
    """Replace ``round(rate * Han characters)`` of them by a homophone (when one is known)."""
    chars = list(text)
    han = len(_han_positions(text))
    eligible = [i for i, c in enumerate(chars) if c in table]
    for i in sorted(rng.sample(eligible, min(len(eligible), round(rate * han)))):
        chars[i] = rng.choice(table[chars[i]])
    return "".join(chars)


def insert_ads(lines: Sequence[str], rng: random.Random) -> list[str]:
    """An ad line after every 2-3 lines, alternating at random between caught and uncaught."""
    out: list[str] = []
    gap = rng.randint(2, 3)
    for line in lines:
        out.append(line)
        gap -= 1
        if gap == 0:
            out.append(ad_line(rng, caught=rng.random() < 0.5))
            gap = rng.randint(2, 3)
    return out


def drop_lines(lines: Sequence[str], rng: random.Random, rate: float) -> list[str]:
    """The lines without ``round(rate * n)`` of them, in order."""
    dropped = set(rng.sample(range(len(lines)), min(len(lines) - 1, round(rate * len(lines)))))
    return [line for i, line in enumerate(lines) if i not in dropped]


def shuffle_lines(lines: Sequence[str], rng: random.Random) -> list[str]:
    """The lines in a random order (another than the original when there are two or more)."""
    out = list(lines)
    for _ in range(10):
        rng.shuffle(out)
        if out != list(lines):
            break
    return out


def excerpt_span(text: str, rng: random.Random, share: float) -> tuple[int, int]:
    """A span of ``round(share * len(text))`` characters starting at a line start."""
    length = round(share * len(text))
    starts = [0, *(m.end() for m in re.finditer("\n", text))]
    fitting = [s for s in starts if s + length <= len(text)] or [0]
    start = rng.choice(fitting)
    return start, start + length


def split_point(text: str) -> int:
    """The line start nearest the middle of ``text`` (``text[:i]``, ``text[i:]`` its halves)."""
    starts = [m.end() for m in re.finditer("\n", text)] or [len(text) // 2]
    return min(starts, key=lambda s: (abs(2 * s - len(text)), s))


# --- sources -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    """A candidate document: a whole corpus text, or a piece of a long one."""

    family: int  # index of the corpus text it comes from
    piece: int  # which piece of that text (0 for a whole text)
    lines: tuple[str, ...]
    boilerplate: tuple[bool, ...]  # per line

    @property
    def text(self) -> str:
        """The whole document."""
        return "\n".join(self.lines)

    @property
    def body(self) -> str:
        """The document without its boilerplate lines."""
        return "\n".join(x for x, b in zip(self.lines, self.boilerplate, strict=True) if not b)


def _cut(lines: list[str], target: int) -> list[list[str]]:
    """Lines grouped into pieces of about ``target`` characters (a short tail joins the last)."""
    pieces: list[list[str]] = [[]]
    size = 0
    for line in lines:
        if size >= target:
            pieces.append([])
            size = 0
        pieces[-1].append(line)
        size += len(line) + 1
    if len(pieces) > 1 and size < WORK_CHARS[0]:
        pieces[-2].extend(pieces.pop())
    return pieces


def prepare_sources(texts: Sequence[str]) -> tuple[list[Source], dict[str, int]]:
    """Simplified-script texts as :class:`Source` pieces with boilerplate marked, and counts."""
    simplified = [(i, t) for i, t in enumerate(texts) if not is_traditional(t)]
    line_lists = {i: [x.strip() for x in t.splitlines() if x.strip()] for i, t in simplified}
    df = Counter(line for lines in line_lists.values() for line in set(lines))
    sources = []
    for family, lines in line_lists.items():
        size = sum(map(len, lines))
        pieces = _cut(lines, PIECE_CHARS) if size > WORK_CHARS[1] else [lines]
        for k, piece in enumerate(pieces):
            marks = tuple(df[x] >= BOILERPLATE_DF for x in piece)
            sources.append(Source(family, k, tuple(piece), marks))
    counts = {"texts": len(texts), "traditional_dropped": len(texts) - len(simplified)}
    return sources, counts | {"sources": len(sources)}


class _BodyIndex:
    """Body 8-grams of the works chosen so far, to tell whether a text copies any of them."""

    def __init__(self) -> None:
        self.owner: dict[int, int] = {}
        self.sizes: list[int] = []

    def copies(self, hashes: np.ndarray) -> bool:
        """Whether body 8-gram ``hashes`` (in text order) share copied body with a work.

        Copied body: more than :data:`MAX_SHARED_BODY` of the smaller 8-gram set, or a run of
        :data:`MAX_SHARED_RUN` content characters (consecutive shared 8-grams).
        """
        owners = [self.owner.get(h) for h in hashes.tolist()]
        run = longest = 0
        for owner in owners:
            run = run + 1 if owner is not None else 0
            longest = max(longest, run)
        if longest and longest + SHINGLE - 1 >= MAX_SHARED_RUN:
            return True
        distinct = len(set(hashes.tolist()))
        hits = Counter(o for h, o in dict(zip(hashes.tolist(), owners, strict=True)).items()
                       if o is not None)  # fmt: skip
        return any(n > MAX_SHARED_BODY * min(distinct, self.sizes[w]) for w, n in hits.items())

    def add(self, hashes: np.ndarray) -> None:
        """Index one more work."""
        for h in hashes.tolist():
            self.owner.setdefault(h, len(self.sizes))
        self.sizes.append(len(set(hashes.tolist())))


def topic_vectors(texts: Sequence[str]) -> np.ndarray:
    """L2-normalised TF-IDF vectors of hashed character bigrams (one row per text)."""
    rows = np.zeros((len(texts), TOPIC_DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        codes = codepoints("".join(HAN.findall(text)) or text)
        buckets = (ngram_hashes(codes, 2) % np.uint64(TOPIC_DIM)).astype(np.int64)
        rows[i] = np.log1p(np.bincount(buckets, minlength=TOPIC_DIM))
    idf = np.log((1 + len(texts)) / (1 + np.count_nonzero(rows, axis=0))) + 1
    rows *= idf.astype(np.float32)
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
    return rows


# --- the corpus --------------------------------------------------------------------------
@dataclass(frozen=True)
class Work:
    """A registered work: the rights holder's text."""

    id: str
    title: str
    text: str
    source: str
    boilerplate: tuple[str, ...]  # its boilerplate lines, in order


@dataclass(frozen=True)
class Page:
    """A crawled page: ``label`` is its class (positive) or negative kind; ``works`` the truth."""

    id: str
    url: str
    site: str
    text: str
    label: str
    works: tuple[str, ...]
    detail: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def positive(self) -> bool:
        """Whether the page copies at least one work."""
        return bool(self.works)


@dataclass
class Corpus:
    """Works, pages and how they were made."""

    works: list[Work]
    pages: list[Page]
    seed: int
    counts: dict[str, int]

    def truth(self) -> set[Pair]:
        """The (page id, work id) pairs that are copies."""
        return {(p.id, w) for p in self.pages for w in p.works}

    def score(self, predicted: set[Pair]) -> dict[str, Any]:
        """Precision, recall and F1 of the ``predicted`` pairs, recall per class, false
        positives per kind (a copy attributed to another work: ``wrong_work``)."""
        truth = self.truth()
        label = {p.id: p.label for p in self.pages}
        positive = {p.id for p in self.pages if p.positive}
        tp, fp, fn = len(predicted & truth), len(predicted - truth), len(truth - predicted)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class = {}
        for cls in CLASSES:
            pairs = {pair for pair in truth if label[pair[0]] == cls}
            per_class[cls] = len(pairs & predicted) / len(pairs) if pairs else None
        wrong = Counter(
            "wrong_work" if page in positive else label[page] for page, _ in predicted - truth
        )
        return {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "per_class": per_class,
            "false_positives": {kind: wrong[kind] for kind in (*NEGATIVE_KINDS, "wrong_work")},
            "tp": tp,
            "fp": fp,
            "fn": fn,
        }

    def sizes(self) -> dict[str, Any]:
        """Numbers for the report and the JSON output."""
        lengths = sorted(len(w.text) for w in self.works)
        labels = Counter(p.label for p in self.pages)
        return {
            "seed": self.seed,
            "works": len(self.works),
            "work_chars": {"min": lengths[0], "median": lengths[len(lengths) // 2],
                           "max": lengths[-1], "total": sum(lengths)},
            "pages": len(self.pages),
            "positive_pages": sum(p.positive for p in self.pages),
            "negative_pages": sum(not p.positive for p in self.pages),
            "positive_pairs": len(self.truth()),
            "page_chars": sum(len(p.text) for p in self.pages),
            "pages_per_class": {c: labels[c] for c in CLASSES},
            "pairs_per_class": {c: sum(len(p.works) for p in self.pages if p.label == c)
                                for c in CLASSES},
            "pages_per_negative_kind": {k: labels[k] for k in NEGATIVE_KINDS},
            **self.counts,
        }  # fmt: skip


@dataclass
class _Spec:
    label: str
    works: tuple[int, ...]
    title: str
    body: list[str]
    detail: dict[str, Any]
    site: Site | None = None
    traditional: bool = False


class _Builder:
    """Makes the page specs of one corpus; holds the works, fillers and tables they need."""

    def __init__(self, works: list[Source], fillers: list[Source], sim: np.ndarray, seed: int):
        self.works, self.fillers, self.sim, self.seed = works, fillers, sim, seed
        self.rng = random.Random(f"{seed}:pages")
        self.sites = make_sites(random.Random(f"{seed}:sites"))
        counts = Counter(HAN.findall("".join(s.text for s in works + fillers)))
        self.homophones = homophone_table(counts)
        self.alphabet = sorted(counts, key=lambda c: (-counts[c], c))[:2500]
        self.free = list(range(len(fillers)))
        self.rng.shuffle(self.free)
        self.home: dict[int, Site] = {}  # work -> site of its first pirated page

    def filler(self) -> Source:
        """An unused unrelated text (used ones again once all have been taken)."""
        if not self.free:
            self.free = list(range(len(self.fillers)))
            self.rng.shuffle(self.free)
        return self.fillers[self.free.pop()]

    def positive(self, label: str, w: int) -> list[_Spec]:
        """The page(s) of class ``label`` copying work ``w``."""
        rng, src = self.rng, self.works[w]
        text, lines = src.text, list(src.lines)
        title = title_of(src)
        body: list[str] = lines
        detail: dict[str, Any] = {}
        if label in ("typos", "homophones", "combined"):
            if label != "typos":
                text = apply_homophones(text, rng, HOMOPHONE_RATE, self.homophones)
            if label != "homophones":
                text = apply_typos(text, rng, TYPO_RATE, self.alphabet)
            body = text.split("\n")
        if label in ("ads", "combined"):
            body = insert_ads(body, rng)
        elif label == "dropped":
            body = drop_lines(lines, rng, DROP_RATE)
        elif label == "shuffled":
            body = shuffle_lines(lines, rng)
        elif label == "excerpt":
            start, end = excerpt_span(src.text, rng, EXCERPT_SHARE)
            host_src = self.filler()
            host = list(host_src.lines)
            at = rng.randint(1, max(1, len(host) - 1))
            body = host[:at] + src.text[start:end].split("\n") + host[at:]
            title, detail = title_of(host_src), {"span": (start, end)}
        elif label == "split":
            cut = split_point(src.text)
            site = self.site_for(w)
            spans = ((0, cut), (cut, len(src.text)))
            return [
                _Spec(label, (w,), f"{title}（{part}）", src.text[a:b].strip("\n").split("\n"),
                      {"span": (a, b)}, site)
                for part, (a, b) in zip("上下", spans, strict=True)
            ]  # fmt: skip
        elif label == "two_works":
            other = rng.choice([i for i in range(len(self.works)) if i != w])
            body = lines + list(self.works[other].lines)
            detail = {"partner": other}
            return [_Spec(label, (w, other), title, body, detail, self.site_for(w))]
        return [_Spec(label, (w,), title, body, detail, self.site_for(w), label in
                      ("traditional", "combined"))]  # fmt: skip

    def site_for(self, w: int) -> Site:
        """A random site; the first one drawn for a work is remembered as its home."""
        site = self.rng.choice(self.sites)
        self.home.setdefault(w, site)
        return site

    def reserve_topical(self, targets: Sequence[int]) -> list[int]:
        """For each target work, the most similar unused filler, withheld from other uses."""
        taken: list[int] = []
        for w in targets:
            order = np.argsort(-self.sim[w], kind="stable").tolist()
            taken.append(next((j for j in order if j not in taken), order[0]))
        self.free = [f for f in self.free if f not in set(taken)]
        return taken

    def negative(self, kind: str, w: int, topical: int | None = None) -> _Spec:
        """A negative page of ``kind``, aimed at work ``w`` where the kind has a target."""
        src = self.fillers[topical] if topical is not None else self.filler()
        body = list(src.lines)
        site: Site | None = None
        if kind == "boilerplate":
            work = self.works[w]
            marked = [(i / len(work.lines), x) for i, (x, b) in
                      enumerate(zip(work.lines, work.boilerplate, strict=True)) if b]  # fmt: skip
            for frac, line in reversed(marked):
                body.insert(round(frac * len(src.lines)), line)
            site = self.home.get(w)
        detail = {"target": w} if kind != "unrelated" else {}
        return _Spec(kind, (), title_of(src), body, detail, site)


def _select(sources: list[Source], n: int, rng: random.Random) -> tuple[list[int], list[int]]:
    """Indices of up to ``n`` works sharing no body, and of the fillers sharing none with them."""
    hashes = [ngram_hash_array(s.body, SHINGLE)[0] for s in sources]
    order = list(range(len(sources)))
    rng.shuffle(order)
    index, works = _BodyIndex(), []
    for i in order:
        text = sources[i].text
        if len(works) == n or not WORK_CHARS[0] <= len(text) <= WORK_CHARS[1]:
            continue
        if han_share(text) < WORK_MIN_HAN or len(hashes[i]) < 0.5 * len(text):
            continue
        if not index.copies(hashes[i]):
            index.add(hashes[i])
            works.append(i)
    chosen = set(works)
    fillers = [
        i for i in range(len(sources))
        if i not in chosen and len(sources[i].text) >= FILLER_MIN_CHARS
        and han_share(sources[i].text) >= 0.3 and len(hashes[i]) >= 100
        and not index.copies(hashes[i])
    ]  # fmt: skip
    return works, fillers


def build_corpus(
    texts: Sequence[str],
    works: int = 150,
    seed: int = 0,
    pages_per_work: int = 3,
    negatives_per_kind: int | None = None,
) -> Corpus:
    """The labelled corpus made from ``texts`` (see the module docstring)."""
    sources, counts = prepare_sources(texts)
    work_ix, filler_ix = _select(sources, works, random.Random(f"{seed}:select"))
    if len(work_ix) < 2 or not filler_ix:
        raise ValueError(f"too little text: {len(work_ix)} works, {len(filler_ix)} fillers")
    chosen, fillers = [sources[i] for i in work_ix], [sources[i] for i in filler_ix]
    vectors = topic_vectors([s.body for s in chosen + fillers])
    sim = vectors[: len(chosen)] @ vectors[len(chosen) :].T
    builder = _Builder(chosen, fillers, sim, seed)
    n_neg = len(chosen) if negatives_per_kind is None else negatives_per_kind
    targets = [i % len(chosen) for i in range(n_neg)]
    topical = builder.reserve_topical(targets)
    specs = [
        spec
        for w in range(len(chosen))
        for j in range(pages_per_work)
        for spec in builder.positive(CLASSES[(w * pages_per_work + j) % len(CLASSES)], w)
    ]
    with_bp = [w for w, s in enumerate(chosen) if sum(map(len, _bp_lines(s))) >= 20] or targets
    specs += [builder.negative("unrelated", w) for w in targets]
    specs += [builder.negative("same_topic", w, j) for w, j in zip(targets, topical, strict=True)]
    specs += [builder.negative("boilerplate", with_bp[i % len(with_bp)]) for i in range(n_neg)]
    builder.rng.shuffle(specs)
    return Corpus(
        [_work(i, s) for i, s in enumerate(chosen)],
        [_page(n, spec, builder) for n, spec in enumerate(specs)],
        seed,
        counts | {"fillers": len(fillers), "works_with_boilerplate": len(with_bp)},
    )


def title_of(src: Source) -> str:
    """The first body line holding a Han character (else the first line), at most 40 chars."""
    lines = [x for x, b in zip(src.lines, src.boilerplate, strict=True) if not b]
    return next((x for x in lines if HAN.search(x)), src.lines[0])[:40]


def _bp_lines(src: Source) -> tuple[str, ...]:
    return tuple(x for x, b in zip(src.lines, src.boilerplate, strict=True) if b)


def _work(i: int, src: Source) -> Work:
    source = f"corpus text {src.family} piece {src.piece}"  # unique: the engine keys works by it
    return Work(f"work-{i:04d}", title_of(src), src.text, source, _bp_lines(src))


def _page(n: int, spec: _Spec, builder: _Builder) -> Page:
    site = spec.site or builder.rng.choice(builder.sites)
    text = site.wrap(spec.title, spec.body)
    if spec.traditional:
        text = to_traditional(text)
    detail = dict(spec.detail)
    for key in ("partner", "target"):
        if key in detail:
            detail[key] = f"work-{detail[key]:04d}"
    works = tuple(f"work-{w:04d}" for w in spec.works)
    url = f"https://www.{site.domain}/{site.section}/{1000 + n}.html"
    return Page(f"page-{n:05d}", url, site.name, text, spec.label, works, detail)


@cache
def _common_words(count: int = 20000) -> list[str]:
    """The ``count`` most frequent Han words of 2-4 characters in jieba's dictionary."""
    import jieba

    with jieba.get_dict_file() as fh:
        entries = [line.decode("utf-8").split() for line in fh]
    ranked = sorted(entries, key=lambda e: (-int(e[1]), e[0]))
    return [e[0] for e in ranked if 2 <= len(e[0]) <= 4 and HAN.fullmatch(e[0][0])][:count]


def synthetic_texts(count: int = 80, seed: int = 0) -> list[str]:
    """Documents of real Chinese words in random order, for tests that must not download.

    Words are the 20,000 most frequent of jieba's dictionary; each of 6 topics uses 600 of
    them, and shares heading and licence lines (boilerplate) across its documents.
    """
    words = _common_words()
    rng = random.Random(f"{seed}:synthetic")
    topics = [rng.sample(words, 600) for _ in range(6)]
    licences = [
        [
            f"版权所有 © {2000 + t} 自由文档项目第{t}组",
            "本文档是自由软件，您可以自由修改和重新发布。",
        ]
        for t in range(6)
    ]
    texts = []
    for n in range(count):
        t = n % 6
        target = rng.choice((900, 2000, 3000, 4500))
        lines = ["".join(rng.sample(topics[t], 3)), "相关主题"]
        while sum(map(len, lines)) < target:
            clauses = ["".join(rng.choices(topics[t], k=rng.randint(5, 12))) for _ in "123"]
            lines.append("，".join(clauses[: rng.randint(1, 3)]) + "。")
            if rng.random() < 0.1:
                lines.append(rng.choice(("描述", "参见", "示例", "注意")))
        texts.append("\n".join(lines + licences[t] * (n % 2)))
    return texts
