"""The ``hiding`` shape of the site benchmark: copies served so that a text reader is fooled
while a person in a browser reads the chapter (issue 38, "What the reader sees").

A *technique* disguises one chapter page: a module ``tests/sites/hiding_<name>.py`` exposes
``disguise(title, text, rng) -> HiddenPage`` (the full HTML of a 笔趣阁-style chapter page
whose text as a browser shows it is ``title`` and ``text``, and the files it refers to by
site-root paths drawn from ``rng``). :data:`TECHNIQUES` names each one: ``"name":
"module"`` (its ``disguise``) or ``"name": "module:function"`` (one module holding several
variants); adding a technique is one line there.

For each technique selected, :func:`hiding_shape` builds a site of its own, 笔趣阁-style
(a home page, a chapter list per book, chapter pages linked by 上一章 / 章节目录 / 下一章,
added by the shape under the technique's HTML):

- a registered novel (:data:`CHAPTERS` chapters, registered whole with its ``第N章``
  headings), of which one chapter in :data:`PLAIN_EVERY` is served plain (as today's sites
  are, :func:`plain_page`) and the others disguised by the technique;
- an unregistered novel (:data:`FILLERS` chapters) disguised the same way: a page of it
  reported is a false pair.

Ground truth: every chapter page of a registered novel carries its work. Figures per
technique (:func:`score`): the disguised and plain chapters found, recall page by page over
both, and false pairs (a page reported with a work it does not copy, or an unregistered
chapter reported at all). Noise: :func:`noisy` puts 1-2 random common characters
(:data:`NOISE`) every :data:`NOISE_EVERY` characters of the text, in hidden elements, as
real sites do.
"""

from __future__ import annotations

import html
import importlib
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.sites.site_shapes import Page, Shape, SiteBuild
from tests.sites.site_text import Chapter, TextPool, draw_novel, novel_text

esc = html.escape

TECHNIQUES: dict[str, str] = {
    "css-external": "tests.sites.hiding_css:css_external",
    "css-style-block": "tests.sites.hiding_css:css_style_block",
    "css-inline": "tests.sites.hiding_css:css_inline",
    "font-white": "tests.sites.hiding_css:font_white",
    "color-as-background": "tests.sites.hiding_css:color_as_background",
    "offscreen": "tests.sites.hiding_css:offscreen",
    "font-size-0": "tests.sites.hiding_css:font_size_0",
    "opacity-0": "tests.sites.hiding_css:opacity_0",
    "zero-size-overflow": "tests.sites.hiding_css:zero_size_overflow",
    "visibility-hidden": "tests.sites.hiding_css:visibility_hidden",
    "clip": "tests.sites.hiding_css:clip",
    "chapter-images": "tests.sites.hiding_images",
    "font-pua": "tests.sites.hiding_fonts:pua",
    "font-shuffle": "tests.sites.hiding_fonts:shuffle",
    "script-base64": "tests.sites.hiding_scripts:disguise_base64",
    "script-json": "tests.sites.hiding_scripts:disguise_json",
    "script-reveal": "tests.sites.hiding_scripts:disguise_reveal",
}
"""Technique name -> ``module`` (its ``disguise``) or ``module:function``."""

CHAPTERS = (12, 3)
"""Chapters of each technique's registered novel (default, quick)."""
FILLERS = (6, 2)
"""Chapters of each technique's unregistered novel (default, quick)."""
CHAPTER_CHARS = ((1500, 3000), (700, 1000))
PLAIN_EVERY = 3
"""One registered chapter in this many is served plain, the others disguised."""
NOISE = (
    "的一是了不在有人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同"
    "工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二"
    "理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那"
    "社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条"
    "只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次"
    "品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几"
    "九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压"
    "志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场"
    "身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温"
    "传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断"
    "深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值"
    "号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆"
    "包火住调满县局照参红细引听该铁价严龙飞"
)
"""Common characters the noise is drawn from (what defeats a text fingerprint most)."""
NOISE_EVERY = (2, 6)


@dataclass(frozen=True)
class HiddenPage:
    """A disguised chapter page: its full HTML and the files it refers to (site-root path
    -> bytes: stylesheets, fonts, images, JSON)."""

    html: str
    files: dict[str, bytes] = field(default_factory=dict)


Disguise = Callable[[str, str, random.Random], HiddenPage]


def technique(name: str) -> Disguise:
    """The ``disguise`` function of technique ``name`` (:data:`TECHNIQUES`)."""
    module, _, function = TECHNIQUES[name].partition(":")
    return getattr(importlib.import_module(module), function or "disguise")


def token(rng: random.Random, size: int = 8) -> str:
    """A random lowercase name (class names, file names), starting with a letter."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return rng.choice(letters) + "".join(
        rng.choice(letters + "0123456789") for _ in range(size - 1)
    )


def noisy(line: str, rng: random.Random, hide: Callable[[str], str]) -> str:
    """``line`` as HTML with 1-2 noise characters every :data:`NOISE_EVERY` characters,
    each run of noise wrapped by ``hide`` (which returns the hiding element's HTML)."""
    out: list[str] = []
    at = 0
    while at < len(line):
        step = rng.randint(*NOISE_EVERY)
        out.append(esc(line[at : at + step]))
        at += step
        if at < len(line):
            out.append(hide("".join(rng.choice(NOISE) for _ in range(rng.randint(1, 2)))))
    return "".join(out)


SITE_NAME = "笔趣阁"


def chapter_page(
    title: str,
    content: str,
    head: str = "",
    body_attrs: str = "",
    content_attrs: str = 'id="content"',
) -> str:
    """A 笔趣阁-style chapter page around ``content`` (HTML of the chapter's paragraphs):
    the site's header and breadcrumb, the ``<h1>`` title, ``content`` in
    ``<div {content_attrs}>``, the footer; ``head`` goes into ``<head>``."""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{esc(title)}_{SITE_NAME}</title>{head}</head><body{body_attrs}>\n"
        f'<div class="header"><a href="/index.html">{SITE_NAME}</a> <span>www.biquge.test</span>'
        " <span>最好看的小说网</span></div>\n"
        f'<div class="con_top"><a href="/index.html">{SITE_NAME}</a> &gt; {esc(title)}</div>\n'
        f'<div class="bookname"><h1>{esc(title)}</h1></div>\n'
        f"<div {content_attrs}>{content}</div>\n"
        '<div class="footer"><p>本站所有小说为转载作品，所有章节均由网友上传，'
        "转载至本站只是为了宣传，让更多读者欣赏。</p>"
        f"<p>Copyright © {SITE_NAME} All Rights Reserved.</p></div>\n"
        "</body></html>\n"
    )


def br_paragraphs(lines: Iterable[str]) -> str:
    """Paragraphs in the 笔趣阁 way: indented, separated by ``<br /><br />`` (each line
    already HTML)."""
    return "<br /><br />".join(f"&nbsp;&nbsp;&nbsp;&nbsp;{x}" for x in lines)


def plain_page(title: str, text: str, rng: random.Random) -> HiddenPage:
    """A chapter served as today's sites serve it: no hiding."""
    return HiddenPage(chapter_page(title, br_paragraphs(esc(x) for x in text.split("\n"))))


def _nav(prev: str | None, index: str, nxt: str | None) -> str:
    left = f'<a href="{prev}">上一章</a>' if prev else "上一章"
    right = f'<a href="{nxt}">下一章</a>' if nxt else "下一章"
    return f'<div class="bottem2">{left} &larr; <a href="{index}">章节目录</a> &rarr; {right}</div>'


def with_links(page_html: str, prev: str | None, index: str, nxt: str | None) -> str:
    """``page_html`` with its 上一章 / 章节目录 / 下一章 bar before ``</body>``."""
    bar = _nav(prev, index, nxt)
    at = page_html.lower().rfind("</body>")
    return page_html + bar if at < 0 else page_html[:at] + bar + "\n" + page_html[at:]


@dataclass(frozen=True)
class ChapterPage:
    """What a chapter page of the shape is: its technique (``plain`` when served plain),
    the work it copies (None: an unregistered novel)."""

    technique: str
    served: str  # "disguised" or "plain"
    work: str | None
    shows: tuple[str, ...] = ()  # the lines a browser shows of it: heading and paragraphs


@dataclass
class HidingShape(Shape):
    """The ``hiding`` shape: :class:`Shape` with each chapter page's :class:`ChapterPage`
    by (site name, path)."""

    chapters: dict[tuple[str, str], ChapterPage] = field(default_factory=dict)
    techniques: tuple[str, ...] = ()


def _book_pages(
    name: str,
    bid: int,
    book: str,
    chapters: Sequence[Chapter],
    served: Sequence[str],
    disguise: Disguise,
    rng: random.Random,
) -> tuple[list[Page], list[tuple[str, str]]]:
    """A book's chapter pages (with their files) and its (path, label) entries."""
    paths = [f"book/{bid}/{1000 + n}.html" for n in range(len(chapters))]
    index = f"book/{bid}/index.html"
    pages: list[Page] = []
    for n, (chapter, how) in enumerate(zip(chapters, served, strict=True)):
        made = (plain_page if how == "plain" else disguise)(
            chapter.heading, "\n".join(chapter.lines), rng
        )
        prev = "/" + paths[n - 1] if n else None
        nxt = "/" + paths[n + 1] if n + 1 < len(paths) else None
        page_html = with_links(made.html, prev, "/" + index, nxt)
        pages.append(Page(paths[n], page_html, "chapter", note=f"{name}, {how}"))
        for path, data in made.files.items():
            pages.append(Page(path.lstrip("/"), "", "asset", record=False, body=data))
    items = "".join(
        f'<dd><a href="/{p}">{esc(c.heading)}</a></dd>\n'
        for p, c in zip(paths, chapters, strict=True)
    )
    list_html = (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{esc(book)}最新章节_'
        f'{SITE_NAME}</title></head><body>\n<div id="info"><h1>{esc(book)}</h1></div>\n'
        f'<div id="list"><dl><dt>《{esc(book)}》正文</dt>\n{items}</dl></div>\n</body></html>\n'
    )
    pages.append(Page(index, list_html, "book", record=False))
    return pages, [(index, book)]


def hiding_shape(
    texts: Sequence[str], seed: int, quick: bool = False, techniques: Sequence[str] = ()
) -> HidingShape:
    """The sites of the ``techniques`` (default: all of :data:`TECHNIQUES`), each mixing a
    registered novel disguised and plain with an unregistered one disguised (module doc).
    Drawn from a pool of its own, so the other shapes are unchanged."""
    names = tuple(techniques) or tuple(TECHNIQUES)
    unknown = sorted(set(names) - set(TECHNIQUES))
    if unknown:
        raise ValueError(f"unknown hiding techniques {unknown}; known: {', '.join(TECHNIQUES)}")
    pool = TextPool(texts, seed, "hiding")
    which = 1 if quick else 0
    lengths = CHAPTER_CHARS[which]
    works: dict[str, str] = {}
    sites: list[SiteBuild] = []
    chapters: dict[tuple[str, str], ChapterPage] = {}
    for t, name in enumerate(names):
        rng = random.Random(f"{seed}:hiding:{name}")
        disguise = technique(name)
        registered = draw_novel(pool, [rng.randint(*lengths) for _ in range(CHAPTERS[which])])
        filler = draw_novel(pool, [rng.randint(*lengths) for _ in range(FILLERS[which])])
        work = f"hiding/{name}.txt"
        works[work] = novel_text(f"藏书{t + 1}号", "佚名", registered)
        served = ["plain" if n % PLAIN_EVERY == PLAIN_EVERY - 1 else "disguised"
                  for n in range(len(registered))]  # fmt: skip
        site = f"hiding-{name}"
        pages: list[Page] = []
        entries: list[tuple[str, str]] = []
        for bid, book, chs, how, copied in (
            (3001, f"藏书{t + 1}号", registered, served, work),
            (3002, f"别传{t + 1}号", filler, ["disguised"] * len(filler), None),
        ):
            book_pages, listed = _book_pages(name, bid, book, chs, how, disguise, rng)
            for page in book_pages:
                if page.kind == "chapter":
                    n = int(page.path.rsplit("/", 1)[1].split(".")[0]) - 1000
                    shows = (chs[n].heading, *chs[n].lines)
                    chapters[(site, page.path)] = ChapterPage(name, how[n], copied, shows)
                    if copied:
                        page = Page(page.path, page.html, page.kind, (copied,), page.note)
                pages.append(page)
            entries += listed
        home = "".join(f'<li><a href="/{p}">{esc(label)}</a></li>' for p, label in entries)
        pages.append(Page(
            "index.html",
            f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{SITE_NAME}</title>'
            f"</head><body><h1>{SITE_NAME}</h1><ul>{home}</ul></body></html>\n",
            "home", record=False,
        ))  # fmt: skip
        sites.append(SiteBuild(site, pages))
    return HidingShape("hiding", works, sites, {}, chapters, names)


def score(shape: HidingShape, predicted: dict[str, set[tuple[str, str]]]) -> dict[str, Any]:
    """Figures per technique from the (path, work) pairs reported per site: ``disguised``
    and ``plain`` chapters of the registered novel and how many were found with their work,
    ``recall`` page by page over both, ``false_pairs`` (a pair not in the truth: a work the
    page does not copy, or a page of the unregistered novel), ``unregistered`` pages, and
    the misses and false pairs by path."""
    rows: dict[str, dict[str, Any]] = {}
    for name in shape.techniques:
        rows[name] = {"disguised": 0, "disguised_found": 0, "plain": 0, "plain_found": 0,
                      "unregistered": 0, "false_pairs": 0, "misses": [], "false": []}  # fmt: skip
    for site in shape.sites:
        got = predicted.get(site.name, set())
        truth = site.truth()
        for (site_name, path), chapter in shape.chapters.items():
            if site_name != site.name:
                continue
            row = rows[chapter.technique]
            if chapter.work is None:
                row["unregistered"] += 1
                continue
            row[chapter.served] += 1
            if (path, chapter.work) in got:
                row[f"{chapter.served}_found"] += 1
            else:
                row["misses"].append(f"{path} ({chapter.served})")
        for pair in sorted(got - truth):
            name = site.name.removeprefix("hiding-")
            rows[name]["false_pairs"] += 1
            rows[name]["false"].append(f"{pair[0]} x {pair[1]}")
    total = {k: sum(r[k] for r in rows.values()) for k in
             ("disguised", "disguised_found", "plain", "plain_found", "unregistered",
              "false_pairs")}  # fmt: skip
    for row in [*rows.values(), total]:
        pages = row["disguised"] + row["plain"]
        found = row["disguised_found"] + row["plain_found"]
        row["recall"] = found / pages if pages else 1.0
        row["disguised_recall"] = (
            row["disguised_found"] / row["disguised"] if row["disguised"] else 1.0
        )
    return {"techniques": rows, "all": total}
