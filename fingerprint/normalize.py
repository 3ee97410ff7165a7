"""Normalisation of Chinese web text, keeping a map back to the original.

Steps, in order (design, "Fingerprints" -> Normalisation):

1. per character: NFKC (full-width to half-width, compatibility forms), lower-case, zero-width
   and other control / format characters removed, every whitespace character made a space or
   a newline; done through a code-point table built once, so it is a numpy gather;
2. Traditional to Simplified with OpenCC (``t2s``);
3. noise removal: links (URLs and bare domain names) are cut out; ad / spam lines (lines of
   at most ``ad_line_max_chars`` that match an ad pattern) are dropped whole, while a longer
   line, which is prose, keeps its words; microblog noise (``//@user:`` repost chains,
   @mentions, #topics#, [emoticons], short links) is cut out;
4. whitespace runs folded to one space, or one newline when the run holds a line break.

``Normalized.offsets[i]`` is the index in the original text of normalised character i, so a
span found in normalised text can be quoted from the original.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache

import numpy as np

from fingerprint.tokens import codepoints, from_codepoints

_BMP = 0x10000
_DELETE = -1
_EXPAND = -2
_SPACE = ord(" ")
_NEWLINE = ord("\n")
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")

LINK_PATTERN = r"(?:https?://|www\.)\S+"
_LINK_PARTS = (r"https?://\S+", r"www\.\S+")
DEFAULT_AD_PATTERNS: tuple[str, ...] = (
    r"请访问|请记住|记住本站|本站域名|一秒记住|最新章节|本章未完|点击下一页|请点击|继续阅读"
    r"|手机阅读|手机用户|加入书签|推荐票|求月票|月票|首发|笔趣阁|免费阅读|无弹窗|全文阅读|txt下载"
    r"|关注公众号|微信公众号|扫码|二维码|广告|转载请注明",
)
"""Default ad / spam phrases, matched against normalised (Simplified, lower-case) text.

A short line that holds a link (URL or bare domain name such as ``biquge.com``) together with
nothing but ad phrases is dropped too, since the link is cut out first."""

AD_TOP_LEVEL_DOMAINS: tuple[str, ...] = (
    "com",
    "net",
    "org",
    "cc",
    "cn",
    "co",
    "info",
    "me",
    "la",
    "tw",
    "xyz",
    "top",
    "vip",
    "club",
)
_TLD = re.compile(r"\.(?:" + "|".join(AD_TOP_LEVEL_DOMAINS) + r")\b")
_DOMAIN_LABELS = re.compile(r"(?<![a-z0-9-])[a-z0-9][a-z0-9.-]{0,40}$")

MICROBLOG_PATTERNS: tuple[str, ...] = (
    r"//@[^\n]*",
    r"@[\w\-]{1,30}",
    r"#[^#\n]{1,60}#",
    r"\[[\w]{1,10}\]",
    r"t\.cn/\w+",
)
"""Microblog noise: repost chains (to line end), @mentions, #topics#, [emoticons], short links.

Full links are ad patterns already."""


@dataclass(frozen=True)
class NormalizeConfig:
    """Switches and patterns of :func:`normalize`; the defaults are what fingerprints use."""

    t2s: bool = True
    lowercase: bool = True
    ad_patterns: tuple[str, ...] = DEFAULT_AD_PATTERNS
    ad_line_max_chars: int = 60
    links: bool = True
    microblog: bool = True


@dataclass(frozen=True, eq=False)
class Normalized:
    """Normalised text and, per character, its index in ``original``."""

    text: str
    offsets: np.ndarray
    original: str

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that normalised ``text[start:end]`` came from."""
        if not 0 <= start < end <= len(self.text):
            raise ValueError(f"span [{start}, {end}) outside normalised text of {len(self.text)}")
        return int(self.offsets[start]), int(self.offsets[end - 1]) + 1

    def quote(self, start: int, end: int) -> str:
        """The original text behind normalised ``text[start:end]``."""
        a, b = self.original_span(start, end)
        return self.original[a:b]


@cache
def char_table(lowercase: bool = True) -> np.ndarray:
    """BMP code point -> mapped code point, -1 (delete) or -2 (maps to several characters)."""
    table = np.empty(_BMP, dtype=np.int64)
    for cp in range(_BMP):
        ch = chr(cp)
        if ch in _LINE_BREAKS:
            table[cp] = _NEWLINE
        elif ch.isspace():
            table[cp] = _SPACE
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co"):
            table[cp] = _DELETE
        else:
            table[cp] = _map_one(ch, lowercase)
    table.setflags(write=False)
    return table


def _map_one(ch: str, lowercase: bool) -> int:
    mapped = _expand(ch, lowercase)
    if not mapped:
        return _DELETE
    return ord(mapped) if len(mapped) == 1 else _EXPAND


def _expand(ch: str, lowercase: bool) -> str:
    mapped = unicodedata.normalize("NFKC", ch)
    if lowercase:
        mapped = mapped.lower()
    out = []
    for c in mapped:
        if c in _LINE_BREAKS:
            out.append("\n")
        elif c.isspace():
            out.append(" ")
        elif unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co"):
            out.append(c)
    return "".join(out)


def map_chars(text: str, lowercase: bool) -> tuple[np.ndarray, np.ndarray]:
    """Step 1: mapped code points and the original index of each."""
    codes = codepoints(text)
    mapped = char_table(lowercase)[np.minimum(codes, _BMP - 1)]
    astral = codes >= _BMP
    if astral.any():
        mapped = mapped.copy()
        mapped[astral] = [_map_one(chr(int(c)), lowercase) for c in codes[astral]]
    offsets = np.arange(len(codes), dtype=np.int64)
    expand = np.flatnonzero(mapped == _EXPAND)
    if len(expand) == 0:
        keep = mapped != _DELETE
        return mapped[keep], offsets[keep]
    pieces, origins, start = [], [], 0
    for i in expand:
        pieces.append(mapped[start:i])
        origins.append(offsets[start:i])
        extra = codepoints(_expand(chr(int(codes[i])), lowercase)).astype(np.int64)
        pieces.append(extra)
        origins.append(np.full(len(extra), i, dtype=np.int64))
        start = i + 1
    pieces.append(mapped[start:])
    origins.append(offsets[start:])
    mapped, offsets = np.concatenate(pieces), np.concatenate(origins)
    keep = mapped != _DELETE
    return mapped[keep], offsets[keep]


@cache
def opencc_t2s():
    import opencc

    return opencc.OpenCC("t2s")


def to_simplified(text: str) -> str:
    """Traditional to Simplified Chinese (OpenCC ``t2s``), keeping the text's length.

    OpenCC converts phrase by phrase and a phrase can change length; where it does, that line
    is converted character by character instead, so offsets stay aligned.
    """
    converter = opencc_t2s()
    converted = converter.convert(text)
    if len(converted) == len(text):
        return converted
    lines = []
    for line in text.split("\n"):
        out = converter.convert(line)
        if len(out) != len(line):
            out = "".join(c if len(s := converter.convert(c)) != 1 else s for c in line)
        lines.append(out)
    return "\n".join(lines)


@cache
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)


def domain_spans(text: str) -> list[tuple[int, int]]:
    """Spans of bare domain names (``xxx.biquge.com``) ending in an ``AD_TOP_LEVEL_DOMAINS`` TLD."""
    spans = []
    for match in _TLD.finditer(text):
        labels = _DOMAIN_LABELS.search(text, max(0, match.start() - 41), match.start())
        if labels is not None:
            spans.append((labels.start(), match.end()))
    return spans


def _kept_at_most(text: str, drop: np.ndarray, start: int, end: int, limit: int) -> bool:
    """Whether ``text[start:end]`` keeps at most ``limit`` characters that are neither
    dropped already nor spaces (counting stops past the limit)."""
    kept = 0
    for i in range(start, end):
        if not drop[i] and text[i] != " ":
            kept += 1
            if kept > limit:
                return False
    return True


_METACHARACTERS = frozenset(".^$*+?{}[]\\|()#")


@cache
def literal_alternatives(pattern: str) -> tuple[str, ...] | None:
    """The alternatives of ``pattern`` when it is ``a|b|c...`` of plain, non-empty literals
    (no regular-expression syntax in any), else None."""
    parts = tuple(pattern.split("|"))
    if any(not p or _METACHARACTERS.intersection(p) or p.isspace() for p in parts):
        return None
    return parts


def _pattern_spans(pattern: str, text: str, codes: np.ndarray | None):
    """Spans of ``re.finditer(pattern, text)``; by the compiled scanner of
    :func:`fingerprint.literal_scan.literal_matches` when ``codes`` (``text``'s code
    points) are given and ``pattern`` is an alternation of literals."""
    literals = literal_alternatives(pattern) if codes is not None else None
    if literals is None:
        return [m.span() for m in _compiled((pattern,))[0].finditer(text)]
    from fingerprint.literal_scan import literal_matches

    return literal_matches(codes, literals)


def noise_mask(text: str, config: NormalizeConfig, codes: np.ndarray | None = None) -> np.ndarray:
    """Step 3: True for each character of ``text`` in a link, an ad line or microblog noise.

    ``codes``: ``text``'s code points, when known; then the ad patterns that are alternations
    of literals (the default one) are matched by a compiled scanner, with the same matches.
    """
    drop = np.zeros(len(text), dtype=bool)
    if config.links:
        # LINK_PATTERN's two alternatives scanned apart, each from its literal prefix (which
        # re finds fast): every match of either lies inside a match of LINK_PATTERN, which
        # is one of theirs, so the characters dropped are the same.
        spans = [m.span() for pattern in _compiled(_LINK_PARTS) for m in pattern.finditer(text)]
        _mark(drop, spans + domain_spans(text))
    for pattern in config.ad_patterns:
        for start, end in _pattern_spans(pattern, text, codes):
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", end)
            line_end = len(text) if line_end < 0 else line_end
            if _kept_at_most(text, drop, line_start, line_end, config.ad_line_max_chars):
                drop[line_start:line_end] = True
    if config.microblog:
        patterns = _compiled(MICROBLOG_PATTERNS)
        _mark(drop, [m.span() for pattern in patterns for m in pattern.finditer(text)])
    return drop


def _mark(drop: np.ndarray, spans: list[tuple[int, int]]) -> None:
    """Set ``drop[start:end]`` for every span (in place; spans may overlap)."""
    if not spans:
        return
    bounds = np.array(spans, dtype=np.int64)
    size = len(drop) + 1
    depth = np.bincount(bounds[:, 0], minlength=size) - np.bincount(bounds[:, 1], minlength=size)
    drop |= np.cumsum(depth[:-1]) > 0


def _fold_whitespace(codes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step 4: each whitespace run becomes one character; runs at either end go."""
    space = (codes == _SPACE) | (codes == _NEWLINE)
    if not space.any():
        return codes, offsets
    run_start = space & ~np.concatenate([[False], space[:-1]])
    run_ids = np.cumsum(run_start) - 1
    newline_runs = run_ids[codes == _NEWLINE]
    has_newline = np.bincount(newline_runs, minlength=int(run_start.sum())) > 0
    keep = ~space | run_start
    codes = codes.copy()
    starts = np.flatnonzero(run_start)
    codes[starts] = np.where(has_newline, _NEWLINE, _SPACE)
    codes, offsets = codes[keep], offsets[keep]
    lo, hi = 0, len(codes)
    while lo < hi and codes[lo] in (_SPACE, _NEWLINE):
        lo += 1
    while hi > lo and codes[hi - 1] in (_SPACE, _NEWLINE):
        hi -= 1
    return codes[lo:hi], offsets[lo:hi]


def normalize(text: str, config: NormalizeConfig | None = None) -> Normalized:
    """Normalise ``text`` (module docstring) and map each character back to the original.

    >>> n = normalize("　ＡＢＣ，這是繁體字！")
    >>> n.text, n.quote(4, 6)
    ('abc,这是繁体字!', '這是')
    """
    config = config or NormalizeConfig()
    codes, offsets = map_chars(text, config.lowercase)
    mapped = from_codepoints(codes)
    if config.t2s:
        mapped = to_simplified(mapped)
    drop = noise_mask(mapped, config)
    codes = codepoints(mapped)
    if drop.any():
        codes, offsets = codes[~drop], offsets[~drop]
    codes, offsets = _fold_whitespace(codes, offsets)
    return Normalized(from_codepoints(codes), offsets, text)
