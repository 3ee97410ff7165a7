"""The local site of the pipeline benchmark: registered works and a pirate site of HTML pages.

:func:`build_site` makes, from real Chinese texts (:mod:`tests.sites.corpus`, or any texts given),
``works`` registered works and ``pages`` page records of one imitation pirate site, drawn
from ``random.Random`` seeded with strings derived from ``seed`` (a site is a function of
the texts, the sizes and the seed). :meth:`BenchSite.write` writes it as static files.

Texts: Simplified-script texts only (the Traditional translations in the corpus are
near-copies of Simplified ones), cut at line ends into pieces of about
:data:`PIECE_CHARS` characters. Works are pieces of :data:`WORK_CHARS` characters that are
mostly Han (at least :data:`WORK_MIN_HAN`), distinct; every other piece that shares no line
of :data:`SHARED_LINE_CHARS` characters or more with a work is a *filler*.

Pages: a share ``copy_share`` copies works, one class per page dealt round-robin
(:data:`COPY_CLASSES`), each work copied in turn: ``exact``; ``excerpt`` (a contiguous 35%
of the work inside a filler); ``homophones`` (8% of Han characters); ``traditional``
(OpenCC s2t); ``ads`` (an ad line after every 2-3 lines); ``typos`` (3%); ``dropped`` (30%
of lines); ``shuffled`` (lines permuted); ``two_works`` (two works on one page); ``split``
(halves on two HTML files joined by a 下一页 link, which the crawler joins into one page
record). The transformations are :mod:`tests.sites.eval_corpus`'s. The other pages are
``unrelated``: 1-3 fillers, a random run of their lines, 600-2,500 characters.

Files: ``index.html`` links every list page; ``list/NNN.html`` links ``per_list`` (50)
pages each; ``p/NNNNN.html`` is a page (``p/NNNNN_2.html`` the second half of a split
one); ``robots.txt`` allows everything. Every page wears the same chrome (site name,
navigation, breadcrumb, a footer with a disclaimer and an ICP number); list pages carry no
text of their own beyond a short heading, so the crawler stores none of them.
"""

from __future__ import annotations

import hashlib
import html
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.sites.eval_corpus import (
    DROP_RATE,
    EXCERPT_SHARE,
    HOMOPHONE_RATE,
    TYPO_RATE,
    Site,
    apply_homophones,
    apply_typos,
    drop_lines,
    excerpt_span,
    homophone_table,
    insert_ads,
    is_traditional,
    make_sites,
    shuffle_lines,
    split_point,
    to_traditional,
)
from tests.sites.textconv import HAN, han_share

COPY_CLASSES = (
    "exact", "excerpt", "homophones", "traditional", "ads",
    "typos", "dropped", "shuffled", "two_works", "split",
)  # fmt: skip
"""Classes of the pages that copy works, dealt round-robin."""
PIECE_CHARS = 2500
WORK_CHARS = (1000, 4000)
WORK_MIN_HAN = 0.4
UNRELATED_CHARS = (600, 2500)
DEFAULT_PER_LIST = 50
TITLE_CHARS = 30
SHARED_LINE_CHARS = 12
"""A filler holding a line of this many characters that is also a work's line is dropped:
the Debian manuals repeat passages, and an unrelated page must share none with a work."""


@dataclass(frozen=True)
class Work:
    """A registered work: a file name (``wNNNN.txt``), a title and its text."""

    name: str
    title: str
    text: str


@dataclass(frozen=True)
class SitePage:
    """One page record of the site: its path, title, body lines and what it copies.

    ``second`` holds the body lines of the second HTML file of a ``split`` page (empty
    otherwise); ``works`` the indices of the works the page copies (empty: unrelated).
    """

    path: str
    title: str
    lines: tuple[str, ...]
    kind: str
    works: tuple[int, ...]
    second: tuple[str, ...] = ()

    @property
    def second_path(self) -> str:
        """The path of the second half of a split page."""
        return self.path.removesuffix(".html") + "_2.html"

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths of the page's HTML files (two for a split page)."""
        return (self.path, self.second_path) if self.second else (self.path,)


@dataclass
class BenchSite:
    """Works and pages of the benchmark site, and the chrome they are written in."""

    works: list[Work]
    pages: list[SitePage]
    chrome: Site
    per_list: int = DEFAULT_PER_LIST

    @property
    def copies(self) -> int:
        """How many page records copy at least one work (each part of a split page counts)."""
        return sum(len(p.paths) for p in self.pages if p.works)

    def records(self) -> int:
        """Page records a crawl stores: one per HTML file with main text (both halves of a
        split page)."""
        return sum(len(p.paths) for p in self.pages)

    def files(self) -> int:
        """HTML files the site holds (pages, second halves, list pages and the home page)."""
        lists = -(-len(self.pages) // self.per_list)
        return len(self.pages) + sum(bool(p.second) for p in self.pages) + lists + 1

    def counts(self) -> dict[str, int]:
        """Page records per kind."""
        return dict(Counter(p.kind for p in self.pages))

    def write(self, folder: Path) -> Path:
        """Write the site under ``folder``; returns ``folder``."""
        (folder / "p").mkdir(parents=True, exist_ok=True)
        (folder / "list").mkdir(exist_ok=True)
        (folder / "robots.txt").write_text("User-agent: *\nAllow: /\n", encoding="utf-8")
        lists = [
            self.pages[i : i + self.per_list] for i in range(0, len(self.pages), self.per_list)
        ]
        home_links = [(f"/list/{n:03d}.html", f"目录 第{n + 1}页") for n in range(len(lists))]
        (folder / "index.html").write_text(
            self._list_html(f"{self.chrome.name} 全部目录", home_links), encoding="utf-8"
        )
        for n, group in enumerate(lists):
            links = [(f"/{p.path}", p.title) for p in group]
            (folder / "list" / f"{n:03d}.html").write_text(
                self._list_html(f"目录 第{n + 1}页", links), encoding="utf-8"
            )
            for page in group:
                back = f"/list/{n:03d}.html"
                nxt = f"/{page.second_path}" if page.second else None
                (folder / page.path).write_text(
                    self._page_html(page.title, page.lines, back, next_url=nxt), encoding="utf-8"
                )
                if page.second:
                    (folder / page.second_path).write_text(
                        self._page_html(page.title, page.second, back, prev_url=f"/{page.path}"),
                        encoding="utf-8",
                    )
        return folder

    def write_works(self, folder: Path) -> Path:
        """Write every work as ``folder/wNNNN.txt`` (UTF-8); returns ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        for work in self.works:
            (folder / work.name).write_text(work.text + "\n", encoding="utf-8")
        return folder

    # html -------------------------------------------------------------------------------

    def _header(self, title: str) -> str:
        c = self.chrome
        e = html.escape
        nav = " ".join(f'<a href="/index.html">{e(x)}</a>' for x in c.header[1].split(" | "))
        return (
            f'<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
            f"<title>{e(title)}_{e(c.name)}</title>\n</head>\n<body>\n"
            f'<div class="header"><div class="logo"><a href="/index.html">{e(c.name)}</a> '
            f"<span>www.{e(c.domain)}</span></div>\n"
            f'<div class="nav">{nav}</div></div>\n'
        )

    def _list_html(self, heading: str, links: Sequence[tuple[str, str]]) -> str:
        e = html.escape
        items = "\n".join(f'<li><a href="{e(u)}">{e(t)}</a></li>' for u, t in links)
        return (
            self._header(heading)
            + f'<div class="list">\n<h2>{e(heading)}</h2>\n<ul>\n{items}\n</ul>\n</div>\n'
            + "</body>\n</html>\n"
        )

    def _page_html(
        self,
        title: str,
        lines: Sequence[str],
        back: str,
        next_url: str | None = None,
        prev_url: str | None = None,
    ) -> str:
        c = self.chrome
        e = html.escape
        body = "\n".join(f"<p>{e(line)}</p>" for line in lines)
        pager = [f'<a href="{back}">返回目录</a>']
        if prev_url:
            pager.insert(0, f'<a href="{prev_url}">上一页</a>')
        if next_url:
            pager.append(f'<a href="{next_url}">下一页</a>')
        footer = "\n".join(f"<p>{e(x)}</p>" for x in c.footer[1:])
        return (
            self._header(title) + f'<div class="crumbs"><a href="/index.html">首页</a> &gt; '
            f'<a href="{back}">{e(c.category)}</a> &gt; {e(title)}</div>\n'
            + f'<div id="content">\n<h1>{e(title)}</h1>\n{body}\n</div>\n'
            + f'<div class="pager">{" | ".join(pager)}</div>\n'
            + f'<div class="footer">\n{footer}\n</div>\n</body>\n</html>\n'
        )


def pieces(text: str, target: int = PIECE_CHARS) -> list[str]:
    """``text`` cut at line ends into pieces of about ``target`` characters.

    >>> pieces("一二三\\n四五六\\n七八九", 4)
    ['一二三\\n四五六', '七八九']
    """
    out: list[list[str]] = [[]]
    size = 0
    for line in (x.strip() for x in text.splitlines()):
        if not line:
            continue
        if size >= target:
            out.append([])
            size = 0
        out[-1].append(line)
        size += len(line) + 1
    return ["\n".join(p) for p in out if p]


def _title(text: str) -> str:
    line = next((x for x in text.splitlines() if HAN.search(x)), text.splitlines()[0])
    return re.sub(r"\s+", " ", line)[:TITLE_CHARS]


def _split_texts(texts: Sequence[str], works: int, rng: random.Random) -> tuple[list, list]:
    """Distinct Simplified pieces, shuffled: ``works`` of them as works, the rest fillers."""
    seen: set[bytes] = set()
    candidates: list[str] = []
    for text in texts:
        if is_traditional(text):
            continue
        for piece in pieces(text):
            digest = hashlib.sha1(piece.encode()).digest()
            if digest not in seen and han_share(piece) >= 0.2:
                seen.add(digest)
                candidates.append(piece)
    rng.shuffle(candidates)
    chosen, rest = [], []
    for piece in candidates:
        fits = WORK_CHARS[0] <= len(piece) <= WORK_CHARS[1] and han_share(piece) >= WORK_MIN_HAN
        (chosen if fits and len(chosen) < works else rest).append(piece)
    work_lines = {line for w in chosen for line in w.split("\n") if len(line) >= SHARED_LINE_CHARS}
    fillers = [
        piece
        for piece in rest
        if not any(
            line in work_lines for line in piece.split("\n") if len(line) >= SHARED_LINE_CHARS
        )
    ]
    if len(chosen) < works or not fillers:
        raise ValueError(
            f"the texts give only {len(chosen)} works of {WORK_CHARS[0]}-{WORK_CHARS[1]} "
            f"characters (and {len(fillers)} fillers); {works} were asked for"
        )
    return chosen, fillers


class _Maker:
    """Draws the pages of one site (holds the rng, fillers and substitution tables)."""

    def __init__(self, works: list[str], fillers: list[str], seed: int) -> None:
        self.works, self.fillers = works, fillers
        self.rng = random.Random(f"{seed}:pipeline-pages")
        counts = Counter(HAN.findall("".join(works)))
        self.homophones = homophone_table(counts)
        self.alphabet = sorted(counts, key=lambda ch: (-counts[ch], ch))[:2500]

    def unrelated(self) -> tuple[str, list[str]]:
        """A title and the lines of an unrelated page (1-3 fillers, a random run of lines)."""
        rng = self.rng
        want = rng.randint(*UNRELATED_CHARS)
        lines: list[str] = []
        title = ""
        while sum(map(len, lines)) < want:
            filler = rng.choice(self.fillers)
            title = title or _title(filler)
            own = filler.split("\n")
            start = rng.randrange(len(own))
            lines += own[start:] if start and rng.random() < 0.5 else own
        size, cut = 0, len(lines)
        for i, line in enumerate(lines):
            size += len(line)
            if size >= want:
                cut = i + 1
                break
        return title, lines[:cut]

    def copy(self, kind: str, w: int) -> tuple[str, list[str], tuple[int, ...], list[str]]:
        """Title, lines, copied works and (for ``split``) second-half lines of a copy page."""
        rng, text = self.rng, self.works[w]
        lines = text.split("\n")
        title = _title(text)
        if kind == "excerpt":
            start, end = excerpt_span(text, rng, EXCERPT_SHARE)
            host_title, host = self.unrelated()
            at = rng.randint(1, max(1, len(host) - 1))
            return host_title, host[:at] + text[start:end].split("\n") + host[at:], (w,), []
        if kind == "homophones":
            lines = apply_homophones(text, rng, HOMOPHONE_RATE, self.homophones).split("\n")
        elif kind == "traditional":
            title, lines = to_traditional(title), to_traditional(text).split("\n")
        elif kind == "ads":
            lines = insert_ads(lines, rng)
        elif kind == "typos":
            lines = apply_typos(text, rng, TYPO_RATE, self.alphabet).split("\n")
        elif kind == "dropped":
            lines = drop_lines(lines, rng, DROP_RATE)
        elif kind == "shuffled":
            lines = shuffle_lines(lines, rng)
        elif kind == "two_works":
            other = rng.choice([i for i in range(len(self.works)) if i != w])
            return title, lines + self.works[other].split("\n"), (w, other), []
        elif kind == "split":
            cut = split_point(text)
            first, second = text[:cut].strip("\n"), text[cut:].strip("\n")
            if first and second:
                return title, first.split("\n"), (w,), second.split("\n")
        return title, lines, (w,), []


def build_site(
    texts: Sequence[str],
    works: int,
    pages: int,
    seed: int = 0,
    copy_share: float = 0.4,
    per_list: int = DEFAULT_PER_LIST,
) -> BenchSite:
    """The benchmark site made from ``texts`` (see the module docstring)."""
    if works < 2 or pages < 1 or not 0.0 <= copy_share <= 1.0:
        raise ValueError("need works >= 2, pages >= 1 and 0 <= copy_share <= 1")
    work_texts, fillers = _split_texts(texts, works, random.Random(f"{seed}:pipeline-select"))
    maker = _Maker(work_texts, fillers, seed)
    n_copies = round(copy_share * pages)
    kinds = [COPY_CLASSES[i % len(COPY_CLASSES)] for i in range(n_copies)]
    kinds += ["unrelated"] * (pages - n_copies)
    maker.rng.shuffle(kinds)
    out: list[SitePage] = []
    copied = 0
    for n, kind in enumerate(kinds):
        path = f"p/{n:05d}.html"
        if kind == "unrelated":
            title, lines = maker.unrelated()
            out.append(SitePage(path, title, tuple(lines), kind, ()))
            continue
        title, lines, owners, second = maker.copy(kind, copied % works)
        copied += 1
        out.append(SitePage(path, title, tuple(lines), kind, owners, tuple(second)))
    chrome = make_sites(random.Random(f"{seed}:pipeline-chrome"), 1)[0]
    named = [Work(f"w{i:04d}.txt", _title(t), t) for i, t in enumerate(work_texts)]
    return BenchSite(named, out, chrome, per_list)
