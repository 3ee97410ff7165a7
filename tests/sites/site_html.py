"""HTML of the benchmark sites, written the way the generators and CMSs of the field write it.

Each function returns one page. Links are relative, as the generators make them
(:func:`rel`); every link of a page points at a page of the same site.

- :func:`docbook_page`: DocBook XSL chunked output in the zh_CN locale: a ``navheader`` and
  a ``navfooter`` table with 上一页 / 上一级 / 起始页 / 下一页 and the neighbours' titles.
- :func:`sphinx_page`: a Sphinx build (``nature`` theme, zh_CN): ``related`` bars above and
  below with 上一页 / 下一页 / 起始页 / 上一级, and a sidebar naming the neighbours.
- :func:`novel_chapter`, :func:`novel_book`, :func:`novel_list`: a novel site in the biquge
  style (``#content`` with ``<br>`` paragraphs and 上一章 / 章节目录 / 下一章 bars), or its
  variant that links chapters with 上一页 / 下一页 and puts paragraphs in ``<p>``.
- :func:`forum_thread`, :func:`forum_board`: Discuz! X3 boards and threads (posts in
  ``table.plhin``, pagers with 上一页 / 下一页 and page numbers).
- :func:`wenku_page`, :func:`link_page`: a document library page and a page of links.

Every page of a site wears its :class:`tests.sites.eval_corpus.Site` chrome (name, navigation,
footer with copyright, ICP number and disclaimer) where the generator would have a theme.
"""

from __future__ import annotations

import html
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from tests.sites.eval_corpus import Site

esc = html.escape


def rel(source: str, target: str) -> str:
    """The relative link from page ``source`` to page ``target`` (both site paths).

    >>> rel("books/a/ch01.html", "books/a/ch01s02.html"), rel("books/a/index.html", "toc.html")
    ('ch01s02.html', '../../toc.html')
    """
    return posixpath.relpath(target, posixpath.dirname(source) or ".")


def anchor(source: str, target: str | None, label: str, **attrs: str) -> str:
    """An ``<a>`` from ``source`` to ``target`` (plain text when there is no target)."""
    if target is None:
        return esc(label)
    extra = "".join(f' {k.rstrip("_")}="{esc(v)}"' for k, v in attrs.items())
    return f'<a href="{esc(rel(source, target))}"{extra}>{esc(label)}</a>'


def paragraphs(lines: Sequence[str]) -> str:
    """Lines as ``<p>`` elements."""
    return "\n".join(f"<p>{esc(line)}</p>" for line in lines)


@dataclass(frozen=True)
class Nav:
    """A page's neighbours in reading order, its parent and its start page (site paths)."""

    prev: str | None
    next: str | None
    up: str | None
    home: str
    prev_title: str = ""
    next_title: str = ""
    up_title: str = ""


def _chrome_top(path: str, site: Site) -> str:
    return (
        f'<div class="header"><a href="{esc(rel(path, "index.html"))}">{esc(site.name)}</a>'
        f" <span>www.{esc(site.domain)}</span> <span>{esc(site.header[0])}</span></div>\n"
    )


def _chrome_bottom(site: Site) -> str:
    return "".join(f"<p>{esc(x)}</p>" for x in site.footer[1:])


# --- documentation -----------------------------------------------------------------------
def docbook_page(
    path: str, title: str, body: str, nav: Nav, site: Site, book: str, toc: str = ""
) -> str:
    """A DocBook XSL chunk: navheader, the section (``body`` is its HTML), navfooter."""
    a = lambda target, label, key: anchor(path, target, label, accesskey=key)  # noqa: E731
    header = (
        '<div class="navheader"><table width="100%" summary="Navigation header">'
        f'<tr><th colspan="3" align="center">{esc(title)}</th></tr>'
        f'<tr><td width="20%" align="left">{a(nav.prev, "上一页", "p")} </td>'
        f'<th width="60%" align="center">{esc(nav.up_title)}</th>'
        f'<td width="20%" align="right"> {a(nav.next, "下一页", "n")}</td></tr></table><hr></div>'
    )
    footer = (
        '<div class="navfooter"><hr><table width="100%" summary="Navigation footer"><tr>'
        f'<td width="40%" align="left">{a(nav.prev, "上一页", "p")} </td>'
        f'<td width="20%" align="center">{a(nav.up, "上一级", "u")}</td>'
        f'<td width="40%" align="right"> {a(nav.next, "下一页", "n")}</td></tr>'
        f'<tr><td width="40%" align="left" valign="top">{esc(nav.prev_title)} </td>'
        f'<td width="20%" align="center">{a(nav.home, "起始页", "h")}</td>'
        f'<td width="40%" align="right" valign="top"> {esc(nav.next_title)}</td></tr>'
        "</table></div>"
    )
    return (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8">'
        f"<title>{esc(title)}</title>"
        '<meta name="generator" content="DocBook XSL Stylesheets V1.79.2">'
        f'<link rel="home" href="{esc(rel(path, nav.home))}" title="{esc(book)}"></head>\n'
        '<body bgcolor="white" text="black" link="#0000FF" vlink="#840084" alink="#0000FF">\n'
        + _chrome_top(path, site)
        + header
        + '\n<div class="section"><div class="titlepage"><div><div>'
        f'<h2 class="title" style="clear: both">{esc(title)}</h2></div></div></div>\n'
        + (f'<div class="toc"><p><b>目录</b></p>{toc}</div>\n' if toc else "")
        + body
        + "\n</div>\n"
        + footer
        + f'\n<div class="footer">{_chrome_bottom(site)}</div></body></html>\n'
    )


def docbook_toc(path: str, entries: Sequence[tuple[str, str]]) -> str:
    """A DocBook ``<dl class="toc">`` of (target, title) entries."""
    items = "".join(
        f'<dt><span class="section">{anchor(path, t, title)}</span></dt>' for t, title in entries
    )
    return f'<dl class="toc">{items}</dl>'


def sphinx_page(path: str, title: str, body: str, nav: Nav, site: Site, project: str) -> str:
    """A Sphinx page (nature theme, zh_CN) with its related bars and sidebar."""
    related = (
        '<div class="related" role="navigation" aria-label="related navigation"><h3>导航</h3><ul>'
        f'<li class="right">{anchor(path, nav.next, "下一页", accesskey="N")}</li>'
        f'<li class="right">{anchor(path, nav.prev, "上一页", accesskey="P")} |</li>'
        f'<li class="nav-item nav-item-0">{anchor(path, nav.home, "起始页")} &#187;</li>'
        f'<li class="nav-item nav-item-1">{anchor(path, nav.up, "上一级", accesskey="U")}'
        f" &#187;</li><li>{esc(title)}</li></ul></div>\n"
    )
    sidebar = (
        '<div class="sphinxsidebar" role="navigation" aria-label="main navigation">'
        '<div class="sphinxsidebarwrapper">'
        f'<h4>上一个主题</h4><p class="topless">{anchor(path, nav.prev, nav.prev_title)}</p>'
        f'<h4>下一个主题</h4><p class="topless">{anchor(path, nav.next, nav.next_title)}</p>'
        "</div></div>\n"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8" />'
        f"<title>{esc(title)} — {esc(project)} 文档</title></head><body>\n"
        + _chrome_top(path, site)
        + related
        + '<div class="document"><div class="documentwrapper"><div class="bodywrapper">'
        f'<div class="body" role="main"><section><h1>{esc(title)}</h1>\n{body}\n</section>'
        "</div></div></div>\n"
        + sidebar
        + '<div class="clearer"></div></div>\n'
        + related
        + f'<div class="footer" role="contentinfo">{_chrome_bottom(site)}'
        f"<p>由 Sphinx 7.2.6 创建。</p></div></body></html>\n"
    )


def sphinx_toc(path: str, entries: Sequence[tuple[str, str]]) -> str:
    """A Sphinx ``toctree`` list of (target, title) entries."""
    items = "".join(f'<li class="toctree-l1">{anchor(path, t, title)}</li>' for t, title in entries)
    return f'<div class="toctree-wrapper compound"><ul>{items}</ul></div>'


def link_page(
    path: str,
    title: str,
    intro: Sequence[str],
    links: Sequence[tuple[str, str]],
    site: Site,
    nav: Nav | None = None,
) -> str:
    """A start page or a table of contents: heading, a few lines, a list of links."""
    items = "\n".join(f"<li>{anchor(path, t, label)}</li>" for t, label in links)
    pager = ""
    if nav is not None:
        pager = (
            f'<div class="navfooter">{anchor(path, nav.prev, "上一页")} '
            f"{anchor(path, nav.up, '上一级')} {anchor(path, nav.home, '起始页')} "
            f"{anchor(path, nav.next, '下一页')}</div>\n"
        )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{esc(title)}</title>'
        "</head><body>\n"
        + _chrome_top(path, site)
        + f'<div class="main"><h1>{esc(title)}</h1>\n{paragraphs(intro)}\n'
        f'<ul class="toc">\n{items}\n</ul></div>\n'
        + pager
        + f'<div class="footer">{_chrome_bottom(site)}</div></body></html>\n'
    )


# --- novels ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pager:
    """Links of a chapter page: (target, label) pairs, the catalogue in the middle."""

    left: tuple[str | None, str]
    catalogue: str
    right: tuple[str | None, str]


def novel_chapter(
    path: str,
    heading: str,
    lines: Sequence[str],
    book: str,
    site: Site,
    pager: Pager,
    book_index: str,
    br_style: bool,
) -> str:
    """A chapter page: biquge style (``br_style``) or the ``<p>``/上一页 variant."""
    left, right = pager.left, pager.right
    bar = (
        f"{anchor(path, left[0], left[1])} &larr; {anchor(path, pager.catalogue, '章节目录')}"
        f" &rarr; {anchor(path, right[0], right[1])}"
    )
    if br_style:
        text = "<br /><br />".join(f"&nbsp;&nbsp;&nbsp;&nbsp;{esc(x)}" for x in lines)
        content = f'<div id="content">{text}</div>'
    else:
        content = f'<div class="read-content">{paragraphs(lines)}</div>'
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{esc(heading)}_{esc(book)}_{esc(site.name)}</title>"
        f'<meta name="keywords" content="{esc(book)},{esc(heading)}"></head><body>\n'
        + _chrome_top(path, site)
        + f'<div class="con_top">{anchor(path, "index.html", site.name)} &gt; '
        f"{anchor(path, book_index, book)} &gt; {esc(heading)}</div>\n"
        f'<div class="bookname"><h1>{esc(heading)}</h1><div class="bottem1">{bar}</div></div>\n'
        f"{content}\n"
        f'<div class="bottem2">{bar}</div>\n'
        f'<div class="footer">{_chrome_bottom(site)}</div></body></html>\n'
    )


def novel_book(
    path: str,
    book: str,
    author: str,
    blurb: Sequence[str],
    catalogue: str,
    latest: Sequence[tuple[str, str]],
    site: Site,
    downloads: Sequence[tuple[str, str]] = (),
) -> str:
    """A book's page: title, author, blurb, its latest chapters, links to read (and to
    ``downloads``, (target, label) each)."""
    offered = "".join(f" {anchor(path, t, label)}" for t, label in downloads)
    items = "".join(f"<dd>{anchor(path, t, label)}</dd>" for t, label in latest)
    first = latest[-1][0] if latest else catalogue
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{esc(book)}最新章节_'
        f"{esc(author)}_{esc(site.name)}</title></head><body>\n"
        + _chrome_top(path, site)
        + f'<div id="info"><h1>{esc(book)}</h1><p>作　者：{esc(author)}</p>'
        f"<p>{anchor(path, catalogue, '章节目录')} {anchor(path, first, '开始阅读')}{offered}</p>"
        "</div>\n"
        f'<div id="intro">{paragraphs(blurb)}</div>\n'
        f'<div id="list"><dl><dt>《{esc(book)}》最新章节</dt>{items}</dl></div>\n'
        f'<div class="footer">{_chrome_bottom(site)}</div></body></html>\n'
    )


def novel_list(
    path: str, book: str, entries: Sequence[tuple[str, str]], lists: Sequence[str], site: Site
) -> str:
    """One page (``path``, one of ``lists``) of a book's chapter list; when there are several,
    a pager with 上一页, every page's number and 下一页."""
    items = "".join(f"<dd>{anchor(path, t, label)}</dd>\n" for t, label in entries)
    pager = ""
    if len(lists) > 1:
        at = lists.index(path)
        numbers = " ".join(
            f"<b>{n}</b>" if n == at + 1 else anchor(path, t, str(n))
            for n, t in enumerate(lists, 1)
        )
        prev = lists[at - 1] if at else None
        nxt = lists[at + 1] if at + 1 < len(lists) else None
        pager = (
            f'<div class="page">{anchor(path, prev, "上一页")} {numbers} '
            f"{anchor(path, nxt, '下一页')}</div>\n"
        )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{esc(book)}章节目录_'
        f"{esc(site.name)}</title></head><body>\n"
        + _chrome_top(path, site)
        + f'<div id="list"><dl><dt>《{esc(book)}》正文</dt>\n{items}</dl></div>\n'
        + pager
        + f'<div class="footer">{_chrome_bottom(site)}</div></body></html>\n'
    )


# --- forum -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Post:
    """One post of a thread: its author, floor label, date and paragraphs."""

    pid: int
    author: str
    floor: str
    date: str
    lines: tuple[str, ...]


def discuz_pager(path: str, targets: Sequence[str], current: int) -> str:
    """A Discuz! pager: 上一页, the page numbers (current in ``<strong>``), 下一页."""
    if len(targets) < 2:
        return ""
    cells = [
        f"<strong>{n}</strong>" if n == current else anchor(path, t, str(n))
        for n, t in enumerate(targets, 1)
    ]
    if current > 1:
        cells.insert(0, anchor(path, targets[current - 2], "上一页", class_="prev"))
    if current < len(targets):
        cells.append(anchor(path, targets[current], "下一页", class_="nxt"))
    return f'<div class="pg">{"".join(cells)}</div>'


def forum_thread(
    path: str,
    title: str,
    board: tuple[str, str],
    posts: Sequence[Post],
    pager: str,
    site: Site,
) -> str:
    """One page of a Discuz! thread: breadcrumbs, pager, the posts, pager."""
    body = "\n".join(
        f'<div id="post_{p.pid}"><table id="pid{p.pid}" class="plhin" cellspacing="0" '
        f'cellpadding="0"><tr><td class="pls" rowspan="2"><div class="pi"><div class="authi">'
        f'<span class="xw1">{esc(p.author)}</span></div></div></td><td class="plc">'
        f'<div class="pi"><strong>{esc(p.floor)}</strong><div class="pti"><div class="authi">'
        f'发表于 {esc(p.date)}</div></div></div><div class="pct"><div class="pcb">'
        f'<div class="t_fsz"><table cellspacing="0" cellpadding="0"><tr>'
        f'<td class="t_f" id="postmessage_{p.pid}">{"<br />".join(map(esc, p.lines))}</td>'
        "</tr></table></div></div></div></td></tr></table></div>"
        for p in posts
    )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{esc(title)} - '
        f"{esc(board[1])} - {esc(site.name)}</title></head><body>\n"
        + _chrome_top(path, site)
        + f'<div id="pt" class="bm cl"><div class="z">{anchor(path, "index.html", "论坛")} '
        f"<em>›</em> {anchor(path, board[0], board[1])} <em>›</em> {esc(title)}</div></div>\n"
        f'<div class="pgs mtm mbm cl">{pager}</div>\n'
        f'<h1 class="ts"><span id="thread_subject">{esc(title)}</span></h1>\n'
        f'<div id="postlist" class="pl bm">\n{body}\n</div>\n'
        f'<div class="pgs mtm mbm cl">{pager}</div>\n'
        f'<div id="ft" class="footer">{_chrome_bottom(site)}</div></body></html>\n'
    )


def forum_board(
    path: str, board: str, threads: Sequence[tuple[str, str, str, int]], pager: str, site: Site
) -> str:
    """One page of a board's thread list: (target, title, author, replies) rows."""
    rows = "\n".join(
        f"<tbody><tr><th>{anchor(path, t, title, class_='s xst')}</th>"
        f'<td class="by"><cite>{esc(author)}</cite></td><td class="num"><em>{replies}</em></td>'
        "</tr></tbody>"
        for t, title, author, replies in threads
    )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{esc(board)} - '
        f"{esc(site.name)}</title></head><body>\n"
        + _chrome_top(path, site)
        + f'<div id="pt" class="bm cl"><div class="z">{anchor(path, "index.html", "论坛")} '
        f"<em>›</em> {esc(board)}</div></div>\n"
        f'<div class="pgs">{pager}</div>\n<table summary="forum" id="threadlisttableid">'
        f"\n{rows}\n</table>\n"
        f'<div id="ft" class="footer">{_chrome_bottom(site)}</div></body></html>\n'
    )


# --- document library --------------------------------------------------------------------
def wenku_page(
    path: str, title: str, lines: Sequence[str], crumbs: Sequence[tuple[str, str]], site: Site
) -> str:
    """A document page of a document library: breadcrumbs, title, paragraphs."""
    trail = " &gt; ".join(anchor(path, t, label) for t, label in crumbs)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{esc(title)}_'
        f"{esc(site.name)}</title></head><body>\n"
        + _chrome_top(path, site)
        + f'<div class="crumbs">{trail} &gt; {esc(title)}</div>\n'
        f'<div class="doc-content"><h1>{esc(title)}</h1>\n{paragraphs(lines)}\n</div>\n'
        f'<div class="footer">{_chrome_bottom(site)}</div></body></html>\n'
    )
