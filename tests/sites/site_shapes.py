"""The sites of the site benchmark, with their registered works and ground truth.

A :class:`Shape` is a set of registered works and one or more sites (:class:`SiteBuild`),
each a set of static HTML pages (:class:`Page`) written into a folder and served on
127.0.0.1. Ground truth follows the matching semantics being built: every page URL that
carries copied text of a work is a positive (page, work) pair, each part of a split chapter
its own pair; nothing else is.

- ``docs`` (:func:`docs_shape`): a documentation mirror. A start page, a table of contents,
  book title pages, chapter pages, section pages; every page has DocBook or Sphinx
  navigation (上一页 / 下一页 / 起始页 / 上一级) to its neighbours in one reading order
  through the whole site. The English Developer's Reference (:mod:`tests.sites.english`, Sphinx)
  and Chinese manuals (DocBook) are unrelated pages; copies of works (edited: Traditional,
  homophones, typos, ad lines, an excerpt, a work over two sections) sit at depth 3 behind a
  featured hub listed in the table of contents, and at depth 4 behind the appendices of the
  Chinese books; a few registered works are copied nowhere.
- ``novel`` (:func:`novel_shape`): two novel sites hosting the same three books, one linking
  chapters with 上一章 / 下一章 (biquge style), the other with 上一页 / 下一页; some
  chapters are split into 2 or 3 pages (``1012.html``, ``1012_2.html``) linked with
  下一页 / 上一页 and marked "(2/3)" or "第2页". Book A is registered whole (one file with
  第N章 headings), book B chapter by chapter, book C not at all.
- ``forum`` (:func:`forum_shape`): a Discuz! forum; a copy is the first post, a reply, or a
  first post continued on the thread's second page; other posts are chatter; threads and
  boards are paginated.
- ``related`` (:func:`related_shape`): a document library copying works that share text
  with other registered works: two series sharing a preface (one also a licence notice) and
  pairs of sibling manual pages sharing a section. A page is attributed only to the work it
  copies.
- ``reverse`` (:func:`reverse_shape`): one novel of about 2M characters published chapter by
  chapter (1,000 pages by default), for the other direction: crawled first, registered after.
"""

from __future__ import annotations

import io
import random
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from tests.sites import site_html as h
from tests.sites.english import Section
from tests.sites.eval_corpus import Site, make_sites, to_traditional
from tests.sites.site_text import (
    EDITS,
    Chapter,
    Editor,
    TextPool,
    chapter_heading,
    draw_novel,
    novel_text,
    split_lines,
)
from tests.sites.textconv import HAN

Pair = tuple[str, str]
"""(page path within its site, work name relative to the works folder)."""
DOC_CLASSES = (*EDITS, "excerpt", "split")
NOVEL_EDITS = (
    ("exact", "ads", "exact", "homophones", "ads", "typos"),
    ("traditional", "exact", "ads", "traditional", "combined", "exact"),
)
"""Edits of the chapters of the two novel sites, dealt in turn."""
LICENCE = (
    "本书是自由文档；您可以在自由软件基金会发布的 GNU 自由文档许可证 1.3 或任何更新版本的"
    "条款下复制、分发和/或修改本文档；本文档不含不变章节、封面文字和封底文字。",
    "发布本文档是希望它能有所用处，但不提供任何担保，亦无对适销性或特定用途适用性的暗示担保。"
    "许可证全文见本书附录“GNU 自由文档许可证”。",
)
"""The licence notice every volume of the first series ends with."""
CHATTER = (
    "顶一个",
    "谢谢楼主分享！",
    "mark一下，回头慢慢看",
    "楼主好人，一生平安",
    "支持一下",
    "沙发是我的",
    "已收藏，感谢",
    "这个版本有几个错别字啊",
    "求全本，有的发一下",
    "好文，顶起来",
    "前排围观",
    "路过看看",
    "楼主辛苦了",
    "学习了",
    "感觉还行吧，一般般",
    "有没有电子版",
    "同求后续",
    "不明觉厉",
    "占个楼，晚上回来看",
    "写得真好，推荐给朋友了",
)
EMOTES = ("", "", "[s:11]", "[呲牙]", "[赞]", "！！", "。。。", "~")
NAMES = ("墨", "书", "风", "云", "月", "星", "夜", "雨", "青", "白", "小", "老", "猫", "鱼")


@dataclass(frozen=True)
class Page:
    """One HTML file of a site and what it holds.

    ``works``: the works whose text the page carries (its positive pairs); ``record``: the
    page has main text of its own (every such page is a page record once the crawler stores
    each page under its own URL); ``depth``: the link depth from ``index.html`` the shape
    puts it at (copies of the ``docs`` shape), checked by the tests; ``parts``: the pages of
    the split text this page is a part of, in order; ``body``: the bytes of a file that is
    no HTML page (a book's download), ``html`` then empty.
    """

    path: str
    html: str
    kind: str
    works: tuple[str, ...] = ()
    note: str = ""
    record: bool = True
    depth: int | None = None
    parts: tuple[str, ...] = ()
    body: bytes | None = None  # a file that is not HTML (a download), written as it is


@dataclass
class SiteBuild:
    """A site: its pages, written as static files (with a robots.txt allowing all)."""

    name: str
    pages: list[Page]

    def truth(self) -> set[Pair]:
        """The positive (page path, work) pairs."""
        return {(p.path, w) for p in self.pages for w in p.works}

    def page(self, path: str) -> Page | None:
        """The page at ``path`` (None when the site has none)."""
        return self._by_path.get(path)

    @cached_property
    def _by_path(self) -> dict[str, Page]:
        return {p.path: p for p in self.pages}

    def write(self, folder: Path) -> Path:
        """Write every page under ``folder``; returns ``folder``."""
        for page in self.pages:
            target = folder / page.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if page.body is not None:
                target.write_bytes(page.body)
            else:
                target.write_text(page.html, encoding="utf-8")
        (folder / "robots.txt").write_text("User-agent: *\nAllow: /\n", encoding="utf-8")
        return folder


@dataclass
class Shape:
    """Registered works (name -> text) and the sites that copy them.

    ``related`` maps a work to the works it shares text with on purpose (``related``).
    """

    name: str
    works: dict[str, str]
    sites: list[SiteBuild]
    related: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def write_works(self, folder: Path) -> None:
        """Write every work as ``folder/NAME`` (UTF-8)."""
        for name, text in self.works.items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text + "\n", encoding="utf-8")


@dataclass(frozen=True)
class Sizes:
    """How big the shapes are (``QUICK_SIZES`` for the smoke test)."""

    doc_works: int = 36
    doc_decoys: int = 8
    doc_en_sections: int = 0  # 0: the whole manual
    doc_zh_books: int = 3
    doc_zh_chapters: int = 5
    doc_zh_sections: int = 5
    novel_chapters: tuple[int, int, int] = (80, 30, 30)
    novel_list_size: int = 50
    biquge_chapters: tuple[int, int] = (240, 100)
    """The biquge shape's two books: about 440 files, the size of the pirate site its crawl
    economy was first measured on. What a crawl spends learning a site's URL rules is
    about the same whatever its size (a few sightings per path pattern), so a smaller site
    shows more requests per page than a real one."""
    forum_works: int = 21
    forum_boards: int = 3
    forum_threads: int = 36
    related_series: tuple[int, ...] = (4, 3)
    related_pairs: int = 3
    related_fillers: int = 30
    reverse_chapters: int = 1000
    reverse_unrelated: int = 60
    reverse_list_size: int = 100
    edition_groups: int = 3
    """Groups of editions of each size, 2 to 5 (:mod:`tests.sites.edition_shape`)."""
    edition_chapters: int = 8
    edition_fillers: int = 24


QUICK_SIZES = Sizes(
    doc_works=8,
    doc_decoys=2,
    doc_en_sections=6,
    doc_zh_books=1,
    doc_zh_chapters=1,
    doc_zh_sections=3,
    novel_chapters=(6, 4, 2),
    novel_list_size=4,
    # 26 chapters, each with its own dead link: more than the 3 misses that make the
    # pattern dead and the 16 requests that may be in flight meanwhile, so that some of
    # them are skipped however the answers interleave
    biquge_chapters=(16, 10),
    forum_works=3,
    forum_boards=1,
    forum_threads=5,
    related_series=(3,),
    related_pairs=1,
    related_fillers=3,
    reverse_chapters=30,
    reverse_unrelated=4,
    reverse_list_size=12,
    edition_groups=1,
    edition_chapters=4,
    edition_fillers=4,
)


def short_title(lines: Sequence[str], limit: int = 24) -> str:
    """A title from the first line that holds a Han character, at most ``limit`` chars."""
    line = next((x for x in lines if HAN.search(x)), lines[0] if lines else "无题")
    return re.sub(r"\s+", " ", line).strip()[:limit]


# --- documentation mirror ----------------------------------------------------------------
@dataclass
class _DocNode:
    """A page of the documentation mirror before its navigation is known."""

    path: str
    title: str
    kind: str
    up: str | None
    home: str
    body: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    sphinx: bool = False
    works: tuple[str, ...] = ()
    note: str = ""
    depth: int | None = None
    parts: tuple[str, ...] = ()


class _Docs:
    """Builds the documentation mirror: nodes in reading order, then the HTML."""

    def __init__(self, pool: TextPool, editor: Editor, site: Site, rng: random.Random) -> None:
        self.pool, self.editor, self.site, self.rng = pool, editor, site, rng
        self.nodes: list[_DocNode] = []

    def add(self, node: _DocNode) -> _DocNode:
        self.nodes.append(node)
        if node.up:
            self.by_path(node.up).children.append(node.path)
        return node

    def by_path(self, path: str) -> _DocNode:
        return next(n for n in self.nodes if n.path == path)

    def english_book(self, sections: Sequence[Section]) -> None:
        """The Developer's Reference as a Sphinx build: a chapter page per source file."""
        root = "books/devref/index.html"
        self.add(
            _DocNode(
                root,
                "Debian Developer's Reference",
                "book",
                "toc.html",
                root,
                ["Debian Developer's Reference, a mirror."],
                sphinx=True,
            )
        )
        chapters: dict[str, list[Section]] = {}
        for section in sections:
            chapters.setdefault(section.chapter, []).append(section)
        for c, (name, group) in enumerate(chapters.items(), 1):
            head, *rest = group
            chapter = f"books/devref/ch-{name}.html"
            self.add(
                _DocNode(
                    chapter,
                    f"{c}. {head.title}",
                    "chapter",
                    root,
                    root,
                    list(head.paragraphs),
                    sphinx=True,
                )
            )
            for s, section in enumerate(rest, 1):
                path = f"books/devref/ch-{name}-{s:02d}.html"
                title = f"{c}.{s}. {section.title}"
                self.add(
                    _DocNode(
                        path, title, "section", chapter, root, list(section.paragraphs), sphinx=True
                    )
                )

    def chinese_book(
        self, b: int, chapters: int, sections: int, copies: Sequence[tuple[str, list[str], str]]
    ) -> None:
        """A Chinese manual (DocBook): chapters of unrelated text, an appendix of ``copies``
        (name, lines, class) at depth 4, and a glossary, as DocBook books end."""
        slug = f"books/manual-{b + 1}"
        root = f"{slug}/index.html"
        title = short_title(self.pool.take(200, min_han=0.3), 16) + " 手册"
        self.add(_DocNode(root, title, "book", "toc.html", root, []))
        for c in range(1, chapters + 1):
            intro = self.pool.take(self.rng.randint(150, 400), min_han=0.3)
            chapter = f"{slug}/ch{c:02d}.html"
            self.add(
                _DocNode(
                    chapter, f"第 {c} 章 {short_title(intro, 16)}", "chapter", root, root, intro
                )
            )
            for s in range(1, sections + 1):
                lines = self.pool.take(self.rng.randint(800, 2500), min_han=0.3)
                self.add(
                    _DocNode(
                        f"{slug}/ch{c:02d}s{s:02d}.html",
                        f"{c}.{s}. {short_title(lines)}",
                        "section",
                        chapter,
                        root,
                        lines,
                    )
                )
        appendix = f"{slug}/apa.html"
        self.add(_DocNode(appendix, "附录 A. 参考资料", "hub", root, root, []))
        self.copies(appendix, copies, depth=4)
        terms = self.pool.take(self.rng.randint(200, 400), min_han=0.3)
        self.add(_DocNode(f"{slug}/go01.html", "术语表", "section", root, root, terms))

    def copies(self, hub: str, works: Sequence[tuple[str, list[str], str]], depth: int) -> None:
        """Pages copying ``works`` (name, lines, class) under ``hub``, at ``depth``."""
        hub_node = self.by_path(hub)
        appendix = hub.endswith("/apa.html")
        stem = hub.removesuffix(".html") + "s" if appendix else hub.rsplit("/", 1)[0] + "/s"
        prefix = "A" if appendix else "F"
        n = 0
        for name, lines, kind in works:
            bodies = self.copy_bodies(lines, kind)
            paths = [f"{stem}{n + k + 1:02d}.html" for k in range(len(bodies))]
            for k, body in enumerate(bodies):
                n += 1
                title = f"{prefix}.{n}. {short_title(body)}"
                self.add(
                    _DocNode(
                        paths[k],
                        title,
                        "copy",
                        hub_node.path,
                        hub_node.home,
                        body,
                        works=(name,),
                        note=kind,
                        depth=depth,
                        parts=tuple(paths) if len(paths) > 1 else (),
                    )
                )

    def copy_bodies(self, lines: list[str], kind: str) -> list[list[str]]:
        """The page bodies of one copy: one page, or two for ``split``."""
        if kind == "split":
            return split_lines(lines, 2)
        if kind == "excerpt":
            return [self.editor.excerpt(lines, self.pool.take(1200, min_han=0.3))]
        return [self.editor.edit(lines, kind)]

    def pages(self) -> list[Page]:
        """Every node as HTML, linked to its neighbours in reading order."""
        out = []
        for i, node in enumerate(self.nodes):
            prev = self.nodes[i - 1] if i else None
            nxt = self.nodes[i + 1] if i + 1 < len(self.nodes) else None
            up = self.by_path(node.up) if node.up else None
            nav = h.Nav(
                prev.path if prev else None,
                nxt.path if nxt else None,
                node.up,
                node.home,
                prev.title if prev else "",
                nxt.title if nxt else "",
                up.title if up else "",
            )
            out.append(
                Page(
                    node.path,
                    self.render(node, nav),
                    node.kind,
                    node.works,
                    node.note,
                    bool(node.body),
                    node.depth,
                    node.parts,
                )
            )
        return out

    def render(self, node: _DocNode, nav: h.Nav) -> str:
        entries = [(c, self.by_path(c).title) for c in node.children]
        if node.kind in ("start", "toc"):
            return h.link_page(node.path, node.title, node.body, entries, self.site, nav)
        body = h.paragraphs(node.body)
        if node.sphinx:
            toc = h.sphinx_toc(node.path, entries) if entries else ""
            return h.sphinx_page(
                node.path, node.title, body + toc, nav, self.site, "Debian Developer's Reference"
            )
        toc = h.docbook_toc(node.path, entries) if entries else ""
        book = self.by_path(node.home).title
        return h.docbook_page(node.path, node.title, body, nav, self.site, book, toc)


def docs_shape(
    pool: TextPool, editor: Editor, english: Sequence[Section], sizes: Sizes, seed: int
) -> Shape:
    """The documentation mirror and its works (see the module docstring)."""
    rng = random.Random(f"{seed}:docs")
    site = make_sites(random.Random(f"{seed}:docs-chrome"), 1)[0]
    works = {
        f"docs/w{i:03d}.txt": pool.take(rng.randint(1500, 5000))
        for i in range(sizes.doc_works + sizes.doc_decoys)
    }
    copied = list(works.items())[: sizes.doc_works]
    plan = [
        (name, lines, DOC_CLASSES[i % len(DOC_CLASSES)]) for i, (name, lines) in enumerate(copied)
    ]
    docs = _Docs(pool, editor, site, rng)
    docs.add(
        _DocNode(
            "index.html",
            f"{site.name} 开源文档镜像",
            "start",
            None,
            "index.html",
            [f"{site.name}：{site.header[0]}。收录常用开源软件的中英文手册。"],
        )
    )
    docs.add(
        _DocNode(
            "toc.html",
            "文档目录",
            "toc",
            "index.html",
            "index.html",
            ["本站收录的全部文档，按书籍排列。"],
        )
    )
    en = english[: sizes.doc_en_sections] if sizes.doc_en_sections else english
    docs.english_book(en)
    featured = docs.add(
        _DocNode("featured/index.html", "精选文档", "hub", "toc.html", "featured/index.html", [])
    )
    docs.copies(featured.path, plan[::2], depth=3)
    for b in range(sizes.doc_zh_books):
        book_copies = plan[1::2][b :: sizes.doc_zh_books]
        docs.chinese_book(b, sizes.doc_zh_chapters, sizes.doc_zh_sections, book_copies)
    named = {name: "\n".join(lines) for name, lines in works.items()}
    return Shape("docs", named, [SiteBuild("docs", docs.pages())])


# --- novel sites -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Book:
    """A book on the novel sites: its id, title, author, chapters and the works it copies."""

    bid: int
    title: str
    author: str
    chapters: tuple[Chapter, ...]
    work_of: tuple[str | None, ...]  # per chapter: the registered work its text belongs to


def parts_of(n: int) -> int:
    """How many pages chapter ``n`` is split into: 2 when n % 7 == 3, 3 when n % 11 == 5."""
    return 3 if n % 11 == 5 else 2 if n % 7 == 3 else 1


def _chapter_parts(
    chapter: Chapter, n: int, edit: str, editor: Editor, base: str, markers: str, parts: int
) -> list[tuple[str, str, list[str]]]:
    """(path, heading, lines) of each of the ``parts`` pages of chapter ``n``, after its edit;
    ``markers`` "fraction" marks parts "（2/3）", "page" marks them "第2页"."""
    lines = editor.edit(chapter.lines, edit)
    traditional = edit in ("traditional", "combined")
    heading = to_traditional(chapter.heading) if traditional else chapter.heading
    runs = split_lines(lines, parts)
    out = []
    for k, run in enumerate(runs, 1):
        path = f"{base}/{1000 + n}{'' if k == 1 else f'_{k}'}.html"
        if len(runs) == 1:
            marked = heading
        else:
            marked = (
                f"{heading}（{k}/{len(runs)}）" if markers == "fraction" else (f"{heading} 第{k}页")
            )
        if k < len(runs) and markers == "page":
            run = [*run, "本章未完，请点击下一页继续阅读"]
        out.append((path, marked, run))
    return out


@dataclass(frozen=True)
class _NovelStyle:
    """How a novel site is made: chapter links (``variant`` 0: 上一章/下一章, 1: 上一页/下一页),
    whether it splits chapters (:func:`parts_of`), chapters per list page, its chrome, and
    whether each book offers its whole-book download (:func:`_download`)."""

    variant: int
    splits: bool
    list_size: int
    site: Site
    downloads: bool = False


def _novel_site(
    name: str,
    books: Sequence[_Book],
    editor: Editor,
    style: _NovelStyle,
    blurbs: Sequence[list[str]],
) -> SiteBuild:
    """One novel site: a home page, and per book its page, chapter lists and chapters."""
    site = style.site
    pages: list[Page] = []
    for book, blurb in zip(books, blurbs, strict=True):
        pages += _novel_book_pages(book, editor, style, blurb)
    home_links = [(f"book/{b.bid}/index.html", b.title) for b in books]
    home = h.link_page(
        "index.html",
        f"{site.name} - {site.header[0]}",
        ["最新小说，免费阅读，无弹窗。"],
        home_links,
        site,
    )
    return SiteBuild(name, [Page("index.html", home, "start"), *pages])


def _novel_book_pages(
    book: _Book, editor: Editor, style: _NovelStyle, blurb: list[str]
) -> list[Page]:
    base, site, variant = f"book/{book.bid}", style.site, style.variant
    edits = NOVEL_EDITS[variant]
    markers = "fraction" if variant == 0 else "page"
    chapters = [
        _chapter_parts(
            c,
            n,
            edits[(n - 1) % len(edits)],
            editor,
            base,
            markers,
            parts_of(n) if style.splits else 1,
        )
        for n, c in enumerate(book.chapters, 1)
    ]
    flat = [(n, k, part) for n, parts in enumerate(chapters) for k, part in enumerate(parts)]
    catalogue = f"{base}/index_list.html"
    pages = []
    for i, (n, k, (path, heading, lines)) in enumerate(flat):
        parts = tuple(p[0] for p in chapters[n]) if len(chapters[n]) > 1 else ()
        pager = _novel_pager(flat, i, variant, catalogue)
        html = h.novel_chapter(
            path,
            heading,
            lines,
            book.title,
            site,
            pager,
            f"{base}/index.html",
            br_style=variant == 0,
        )
        work = book.work_of[n]
        note = f"chapter {n + 1}" + (f" part {k + 1}/{len(parts)}" if parts else "")
        pages.append(Page(path, html, "chapter", (work,) if work else (), note, parts=parts))
    entries = [(parts[0][0], book.chapters[n].heading) for n, parts in enumerate(chapters)]
    pages += _novel_lists(base, book.title, entries, style.list_size, site)
    latest = entries[::-1][:9]
    downloads = [_download(book, variant)] if style.downloads else []
    pages.append(
        Page(
            f"{base}/index.html",
            h.novel_book(
                f"{base}/index.html",
                book.title,
                book.author,
                blurb,
                catalogue,
                latest,
                site,
                downloads=[(d.path, d.note) for d in downloads],
            ),
            "book",
        )
    )
    return pages + downloads


def _download(book: _Book, variant: int) -> Page:
    """The book's whole-book download: on the first novel site a ZIP of one GBK text file
    per chapter ("全本下载"), on the second one GBK text file of the whole book ("TXT下载");
    it copies every work the book's chapters copy."""
    works = tuple(sorted({w for w in book.work_of if w}))
    chapters = [c.text for c in book.chapters]
    if variant == 0:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for n, text in enumerate(chapters, 1):
                info = zipfile.ZipInfo(f"{book.title}/{n}.txt", date_time=(2026, 1, 1, 0, 0, 0))
                archive.writestr(info, text.encode("gbk", "replace"), zipfile.ZIP_DEFLATED)
        path, body, label = f"down/{book.bid}.zip", out.getvalue(), "全本下载"
    else:
        whole = "\n".join([book.title, f"作者：{book.author}", *chapters])
        path, body, label = f"down/{book.bid}.txt", whole.encode("gbk", "replace"), "TXT下载"
    return Page(path, "", "download", works, label, body=body)


def _novel_pager(flat: Sequence, i: int, variant: int, catalogue: str) -> h.Pager:
    """Links of page ``i`` of a book's pages in reading order (``flat``: chapter, part, page).

    Variant 1 links every page to the pages before and after it with 上一页 / 下一页.
    Variant 0 links the parts of a chapter so, and chapters with 上一章 (to the previous
    chapter's first page) and 下一章; the first and last chapters link the catalogue instead.
    """
    n, k, _ = flat[i]
    prev = flat[i - 1][2][0] if i else None
    nxt = flat[i + 1][2][0] if i + 1 < len(flat) else None
    if variant == 1:
        return h.Pager((prev, "上一页"), catalogue, (nxt, "下一页"))
    if k:
        left: tuple[str | None, str] = (prev, "上一页")
    else:
        start = i - 1
        while start > 0 and flat[start][1]:  # back to the previous chapter's first part
            start -= 1
        left = (flat[start][2][0] if i else catalogue, "上一章")
    last_part = i + 1 == len(flat) or flat[i + 1][0] != n
    right = (nxt or catalogue, "下一章") if last_part else (nxt, "下一页")
    return h.Pager(left, catalogue, right)


def _novel_lists(
    base: str, title: str, entries: Sequence[tuple[str, str]], size: int, site: Site
) -> list[Page]:
    """The chapter list pages of a book: ``index_list.html``, ``index_list_2.html``..."""
    groups = [entries[i : i + size] for i in range(0, len(entries), size)]
    paths = [f"{base}/index_list{'' if g == 0 else f'_{g + 1}'}.html" for g in range(len(groups))]
    return [
        Page(path, h.novel_list(path, title, group, paths, site), "list", record=False)
        for path, group in zip(paths, groups, strict=True)
    ]


def _book_text(pool: TextPool, rng: random.Random, chapters: int) -> tuple[Chapter, ...]:
    lengths = [rng.randint(2000, 5000) for _ in range(chapters)]
    return tuple(draw_novel(pool, lengths))


def novel_shape(pool: TextPool, editor: Editor, sizes: Sizes, seed: int) -> Shape:
    """Two novel sites and their works (see the module docstring)."""
    rng = random.Random(f"{seed}:novel")
    a, b, c = (_book_text(pool, rng, n) for n in sizes.novel_chapters)
    whole = "novel/book-a.txt"
    books = [
        _Book(1021, "寒江录", "江南烟雨", a, (whole,) * len(a)),
        _Book(
            1022,
            "青灯记",
            "北风",
            b,
            tuple(f"novel/book-b/ch{n:03d}.txt" for n in range(1, len(b) + 1)),
        ),
        _Book(1023, "星河旧梦", "无名氏", c, (None,) * len(c)),
    ]
    works = {whole: novel_text("寒江录", "江南烟雨", a)}
    works |= {name: ch.text for name, ch in zip(books[1].work_of, b, strict=True) if name}
    chromes = make_sites(random.Random(f"{seed}:novel-chrome"), 2)
    blurbs = [pool.take(150, min_han=0.3) for _ in books]
    sites = [
        _novel_site(
            name,
            books,
            editor,
            _NovelStyle(v, True, sizes.novel_list_size, chromes[v], downloads=True),
            blurbs,
        )
        for v, name in enumerate(("novel-chapters", "novel-pages"))
    ]
    return Shape("novel", works, sites)


# --- forum -------------------------------------------------------------------------------
@dataclass
class _Thread:
    """A thread before paging: its id, title, posts and which posts copy which work."""

    tid: int
    title: str
    posts: list[list[str]]
    copies: dict[int, str] = field(default_factory=dict)  # post index -> work
    note: str = ""


class _Forum:
    """Draws the threads of the forum."""

    def __init__(self, pool: TextPool, editor: Editor, rng: random.Random) -> None:
        self.pool, self.editor, self.rng = pool, editor, rng

    def chatter(self) -> list[str]:
        line = "，".join(self.rng.sample(CHATTER, self.rng.randint(1, 2)))
        return [line + self.rng.choice(EMOTES)]

    def replies(self, count: int) -> list[list[str]]:
        return [self.chatter() for _ in range(count)]

    def thread(
        self, tid: int, work: tuple[str, list[str]] | None, layout: str, edit: str
    ) -> _Thread:
        """A thread copying ``work`` as ``layout`` (first_post, reply, split) or none."""
        rng = self.rng
        if work is None:
            first = self.pool.take(rng.randint(300, 1500), min_han=0.3)
            return _Thread(tid, short_title(first, 20), [first, *self.replies(rng.randint(2, 25))])
        name, lines = work
        text = self.editor.edit(lines, edit)
        title = "【转载】" + short_title(text, 20)
        if layout == "first_post":
            posts = [text, *self.replies(rng.randint(2, 25))]
            return _Thread(tid, title, posts, {0: name}, f"{layout}, {edit}")
        if layout == "reply":
            posts = [[f"求{short_title(text, 12)}原文，谁有？"], *self.replies(rng.randint(3, 24))]
            at = rng.randint(1, len(posts) - 1)
            posts.insert(at, ["楼上要的原文，转过来了：", *text])
            return _Thread(
                tid, "求原文：" + short_title(text, 16), posts, {at: name}, f"{layout}, {edit}"
            )
        first, second = split_lines(text, 2)
        posts = [[*first, "（未完，见第二页）"], *self.replies(rng.randint(10, 13))]
        at = len(posts)  # the eleventh post or later: on the thread's second page
        posts += [["接上楼：", *second], *self.replies(rng.randint(0, 6))]
        return _Thread(tid, title, posts, {0: name, at: name}, f"{layout}, {edit}")


def _thread_pages(
    thread: _Thread, board: tuple[str, str], site: Site, rng: random.Random, per_page: int = 10
) -> list[Page]:
    """The pages of one thread (``thread-TID-PAGE-1.html``), ``per_page`` posts each."""
    n_pages = -(-len(thread.posts) // per_page)
    paths = [f"thread-{thread.tid}-{p}-1.html" for p in range(1, n_pages + 1)]
    floors = ("楼主", "沙发", "板凳", "地板")
    carrying = {i // per_page for i in thread.copies}
    pages = []
    for p, path in enumerate(paths):
        posts = [
            h.Post(
                thread.tid * 100 + i,
                _name(rng),
                floors[i] if i < 4 else f"{i + 1}#",
                f"2023-{rng.randint(1, 12)}-{rng.randint(1, 28)} {rng.randint(0, 23)}:"
                f"{rng.randint(10, 59)}",
                tuple(lines),
            )
            for i, lines in enumerate(thread.posts)
            if i // per_page == p
        ]
        works = tuple(dict.fromkeys(w for i, w in thread.copies.items() if i // per_page == p))
        parts = tuple(paths[q] for q in sorted(carrying)) if len(carrying) > 1 else ()
        html = h.forum_thread(
            path, thread.title, board, posts, h.discuz_pager(path, paths, p + 1), site
        )
        pages.append(
            Page(
                path,
                html,
                "thread",
                works,
                thread.note if works else "",
                parts=parts if p in carrying else (),
            )
        )
    return pages


def _name(rng: random.Random) -> str:
    return "".join(rng.sample(NAMES, 2)) + str(rng.randint(1, 999))


def forum_shape(pool: TextPool, editor: Editor, sizes: Sizes, seed: int) -> Shape:
    """The forum and its works (see the module docstring)."""
    rng = random.Random(f"{seed}:forum")
    site = make_sites(random.Random(f"{seed}:forum-chrome"), 1)[0]
    works = {
        f"forum/w{i:02d}.txt": pool.take(rng.randint(1200, 3500)) for i in range(sizes.forum_works)
    }
    forum = _Forum(pool, editor, rng)
    total = sizes.forum_boards * sizes.forum_threads
    slots = rng.sample(range(total), len(works))
    plan = dict(zip(slots, works.items(), strict=True))
    layouts = ("first_post", "reply", "split")
    threads = []
    for t in range(total):
        w = sorted(plan).index(t) if t in plan else -1
        layout, edit = layouts[w % 3], EDITS[w % len(EDITS)]
        threads.append(forum.thread(1000 + t, plan.get(t), layout, edit))
    pages: list[Page] = []
    boards = ("原创文学", "资料分享", "灌水闲聊", "读书交流")
    board_links = []
    for b in range(sizes.forum_boards):
        group = threads[b * sizes.forum_threads : (b + 1) * sizes.forum_threads]
        board = (f"forum-{b + 2}-1.html", boards[b % len(boards)])
        board_links.append(board)
        for thread in group:
            pages += _thread_pages(thread, board, site, rng)
        pages += _board_pages(b + 2, board[1], group, site, rng)
    index = h.link_page(
        "index.html", f"{site.name}论坛", ["欢迎来到本论坛，请遵守版规。"], board_links, site
    )
    named = {name: "\n".join(lines) for name, lines in works.items()}
    return Shape("forum", named, [SiteBuild("forum", [Page("index.html", index, "start"), *pages])])


def _board_pages(
    fid: int,
    board: str,
    threads: Sequence[_Thread],
    site: Site,
    rng: random.Random,
    per_page: int = 20,
) -> list[Page]:
    groups = [threads[i : i + per_page] for i in range(0, len(threads), per_page)]
    paths = [f"forum-{fid}-{p + 1}.html" for p in range(len(groups))]
    pages = []
    for p, (path, group) in enumerate(zip(paths, groups, strict=True)):
        rows = [(f"thread-{t.tid}-1-1.html", t.title, _name(rng), len(t.posts) - 1) for t in group]
        html = h.forum_board(path, board, rows, h.discuz_pager(path, paths, p + 1), site)
        pages.append(Page(path, html, "board", record=False))
    return pages


# --- related works -----------------------------------------------------------------------
def _related_works(
    pool: TextPool, rng: random.Random, sizes: Sizes
) -> tuple[dict[str, list[str]], dict[str, tuple[str, ...]], dict[str, list[str]]]:
    """Works (name -> lines), the works each shares text with, and each work's own body."""
    works: dict[str, list[str]] = {}
    bodies: dict[str, list[str]] = {}
    groups: list[list[str]] = []
    for s, volumes in enumerate(sizes.related_series, 1):
        preface = ["丛书序", *pool.take(rng.randint(500, 700), min_han=0.4)]
        licence = list(LICENCE) if s == 1 else []
        names = []
        for v in range(1, volumes + 1):
            name = f"related/series-{s}/vol{v}.txt"
            body = pool.take(rng.randint(2000, 3500))
            works[name] = [f"丛书之{v}：{short_title(body, 16)}", *preface, *body, *licence]
            bodies[name] = body
            names.append(name)
        groups.append(names)
    for p in range(1, sizes.related_pairs + 1):
        heading = rng.choice(("环境变量", "退出状态", "参见与说明"))
        shared = [heading, *pool.take(rng.randint(700, 900))]
        names = []
        for side in "ab":
            name = f"related/man/tool{p}{side}.1.txt"
            body = pool.take(rng.randint(1800, 2400))
            middle = len(body) // 2 if p % 2 else len(body)
            works[name] = [*body[:middle], *shared, *body[middle:]]
            bodies[name] = body
            names.append(name)
        groups.append(names)
    related = {n: tuple(m for m in g if m != n) for g in groups for n in g}
    return works, related, bodies


def related_shape(pool: TextPool, editor: Editor, sizes: Sizes, seed: int) -> Shape:
    """The document library copying related works (see the module docstring)."""
    rng = random.Random(f"{seed}:related")
    site = make_sites(random.Random(f"{seed}:related-chrome"), 1)[0]
    works, related, bodies = _related_works(pool, rng, sizes)
    docs: list[tuple[str, list[str], tuple[str, ...], str]] = []  # title, lines, works, note
    for i, (name, lines) in enumerate(works.items()):
        edit = EDITS[i % len(EDITS)]
        docs.append((short_title(lines), editor.edit(lines, edit), (name,), f"whole, {edit}"))
    series = [n for n in works if "/series-" in n]
    for name in series[:2]:
        docs.append((short_title(bodies[name]), bodies[name], (name,), "body only"))
    pair = [n for n in works if "/man/" in n][:1]
    if series and pair:
        both = [*works[series[0]], *works[pair[0]]]
        docs.append((short_title(both), both, (series[0], pair[0]), "two works"))
    host = pool.take(rng.randint(800, 1500), min_han=0.3)
    docs.append((short_title(host), [*host, *LICENCE], (), "licence notice only"))
    for _ in range(sizes.related_fillers):
        lines = pool.take(rng.randint(800, 2500), min_han=0.3)
        docs.append((short_title(lines), lines, (), "unrelated"))
    rng.shuffle(docs)
    pages = library_pages(docs, site)
    named = {name: "\n".join(lines) for name, lines in works.items()}
    return Shape("related", named, [SiteBuild("related", pages)], related)


def library_pages(
    docs: Sequence[tuple[str, list[str], tuple[str, ...], str]], site: Site, per_list: int = 20
) -> list[Page]:
    """Document pages ``doc/N.html`` and list pages ``list/N.html`` (下一页 between them)."""
    pages = []
    paths = [f"doc/{5000 + i}.html" for i in range(len(docs))]
    lists = [f"list/{g + 1}.html" for g in range(-(-len(docs) // per_list))]
    for i, (title, lines, works, note) in enumerate(docs):
        crumbs = [("index.html", "首页"), (lists[i // per_list], "文档库")]
        html = h.wenku_page(paths[i], title, lines, crumbs, site)
        pages.append(Page(paths[i], html, "document", works, note))
    for g, path in enumerate(lists):
        links = [
            (paths[i], docs[i][0]) for i in range(g * per_list, min(len(docs), (g + 1) * per_list))
        ]
        nav = h.Nav(
            lists[g - 1] if g else None,
            lists[g + 1] if g + 1 < len(lists) else None,
            "index.html",
            "index.html",
        )
        html = h.link_page(path, f"文档库 第{g + 1}页", [], links, site, nav)
        pages.append(Page(path, html, "list", record=False))
    index = h.link_page(
        "index.html", f"{site.name}文库", ["海量文档免费下载阅读。"], [(lists[0], "全部文档")], site
    )
    return [Page("index.html", index, "start"), *pages]


# --- the reverse direction -----------------------------------------------------------------
def reverse_lengths(rng: random.Random, chapters: int) -> list[int]:
    """Chapter lengths of 2,000-5,000 characters, most near 2,000 (mean about 2,180)."""
    return [2000 + int(3000 * rng.random() ** 16) for _ in range(chapters)]


def reverse_shape(texts: Sequence[str], sizes: Sizes, seed: int) -> Shape:
    """One long novel on a site of its own, with an unregistered book beside it."""
    pool = TextPool(texts, seed, "reverse")
    editor = Editor.for_pool(pool, seed, "reverse")
    rng = random.Random(f"{seed}:reverse")
    other_lengths = [rng.randint(2000, 3000) for _ in range(sizes.reverse_unrelated)]
    others = tuple(
        Chapter(chapter_heading(n, lines, arabic=True), tuple(lines))
        for n, lines in enumerate((pool.take(k, min_han=0.3) for k in other_lengths), 1)
    )
    blurbs = [pool.take(150, min_han=0.3) for _ in range(2)]
    # The novel last: it takes most of the corpus, the rest must not copy it.
    chapters = tuple(draw_novel(pool, reverse_lengths(rng, sizes.reverse_chapters), arabic=True))
    name = "reverse/novel.txt"
    books = [
        _Book(2001, "万古长歌", "云中客", chapters, (name,) * len(chapters)),
        _Book(2002, "故园旧事", "佚名", others, (None,) * len(others)),
    ]
    site = make_sites(random.Random(f"{seed}:reverse-chrome"), 1)[0]
    style = _NovelStyle(0, False, sizes.reverse_list_size, site)
    built = _novel_site("reverse", books, editor, style, blurbs)
    return Shape("reverse", {name: novel_text("万古长歌", "云中客", chapters)}, [built])


BUSTED_SHARE = 3
"""One link in this many carries a cache-buster in the ``biquge`` shape."""


def _bust(html: str, path: str) -> str:
    """``html`` with a cache-buster ``?t=NNN`` on one relative ``.html`` link in
    :data:`BUSTED_SHARE`, its value depending on the page and the link (as a pirate site
    stamps the time it wrote each page)."""
    count = 0

    def stamp(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        href = m.group(1)
        key = zlib.crc32(f"{path}|{href}|{count}".encode())
        if key % BUSTED_SHARE:
            return m.group(0)
        return f'href="{href}?t={1_700_000 + key % 100_000}"'

    return re.sub(r'href="([^":?#]+\.html)"', stamp, html)


def biquge_shape(texts: Sequence[str], sizes: Sizes, seed: int) -> Shape:
    """A 笔趣阁-style pirate novel site that repeats itself (issue 25): the novel shape's
    books (paginated chapter lists, chapters split into parts, 上一章/下一章), with
    cache-busters ``?t=NNN`` on a third of the links (:func:`_bust`), a dead link
    ``/user/addmark.php?bid=..&cid=..`` on every chapter, and the home page under ``/`` and
    ``/index.html``. Drawn from a pool of its own, so the other shapes are unchanged."""
    pool = TextPool(texts, seed, "biquge")
    editor = Editor.for_pool(pool, seed, "biquge")
    rng = random.Random(f"{seed}:biquge")
    a, b = (_book_text(pool, rng, n) for n in sizes.biquge_chapters)
    whole = "biquge/book-a.txt"
    books = [
        _Book(2031, "剑啸长风", "孤舟", a, (whole,) * len(a)),
        _Book(2032, "雪夜归人", "南山客", b, (None,) * len(b)),
    ]
    chrome = make_sites(random.Random(f"{seed}:biquge-chrome"), 1)[0]
    blurbs = [pool.take(150, min_han=0.3) for _ in books]
    built = _novel_site(
        "biquge", books, editor, _NovelStyle(0, True, sizes.novel_list_size, chrome), blurbs
    )
    pages = []
    for page in built.pages:
        html = _bust(page.html, page.path)
        if page.kind == "chapter":
            bid, cid = page.path.split("/")[1], page.path.rsplit("/", 1)[1].split(".")[0]
            mark = f'<a href="/user/addmark.php?bid={bid}&amp;cid={cid}">加入书签</a>'
            html = html.replace("</body>", mark + "</body>")
        pages.append(replace(page, html=html))
    works = {whole: novel_text("剑啸长风", "孤舟", a)}
    return Shape("biquge", works, [SiteBuild("biquge", pages)])


def forward_shapes(
    texts: Sequence[str], english: Sequence[Section], sizes: Sizes, seed: int
) -> list[Shape]:
    """The four forward shapes, drawn in a fixed order from one pool (see the module doc)."""
    pool = TextPool(texts, seed, "forward")
    editor = Editor.for_pool(pool, seed, "forward")
    return [
        docs_shape(pool, editor, english, sizes, seed),
        novel_shape(pool, editor, sizes, seed),
        forum_shape(pool, editor, sizes, seed),
        related_shape(pool, editor, sizes, seed),
    ]


def links(page_html: str) -> Iterator[tuple[str, str]]:
    """(label, href) of every ``<a href>`` of a page, in order."""
    for m in re.finditer(r'<a href="([^"]*)"[^>]*>([^<]*)</a>', page_html):
        yield m.group(2), m.group(1)
