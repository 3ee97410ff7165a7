"""What the spider learns from one response body, as one pure function of plain values.

:func:`read_page` decodes a body (:mod:`crawler.encoding`), extracts its title and main
text (:mod:`crawler.extract`) and finds its links, its "next page" and "previous page"
links and its neighbours among whole pages (上一章/下一章), and the URL its head declares
canonical (``<link rel="canonical">``). Before the text is extracted, what a browser would not
show is dropped from the tree, the page's web fonts decoded and its images' texts put in
place (:mod:`crawler.visible`, from the page's CSS and :class:`PageAssets`); its links to
crawl are read before (a menu hidden until hovered still leads somewhere), its title, text
and 上一章/下一章 links after; and whether its text is built by script so that only a
browser shows it (:func:`crawler.scripted.needs_browser`). It takes and returns only
picklable values, so that it can run in another process (:mod:`crawler.reader_pool`) under
a time limit: a page built to be slow to extract never holds the thread that drives the
downloads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lxml import etree
from parsel import Selector

from crawler.downloads import Book, DownloadRefused, book_parts, read_book, text_chapters
from crawler.downloads import kind_of as download_kind
from crawler.encoding import UndecodableBody, decode_body, sniff_html
from crawler.extract import (
    PREV_PAGE_TEXTS,
    SEQUENCE_TEXTS,
    content_chars,
    extract,
    find_page_link,
    find_page_links,
    find_rel_link,
    page_links_counted,
    parse_html,
)
from crawler.scripted import needs_browser
from crawler.visible import make_visible
from crawler.webfont import FontDecoder, shared_reference
from crawler.webfont.reference import DEFAULT_REFERENCE

PLAIN_TITLE_CHARS = 120


@dataclass(frozen=True)
class PageAssets:
    """What a page needs besides its body to be read as a browser shows it, fetched by the
    spider with the page (within bounds, cached per site): its external stylesheets' text
    in document order (``<style>`` blocks are in the body), the web fonts its ``@font-face``
    rules name, by their absolute URL, and the text read by OCR from the images placed in
    its content, by the image's absolute URL."""

    stylesheets: tuple[tuple[str, str], ...] = ()  # (absolute URL, CSS text), document order
    fonts: tuple[tuple[str, bytes], ...] = ()  # (absolute URL, font file bytes)
    image_texts: tuple[tuple[str, str], ...] = ()  # (absolute URL, text read from the image)


@dataclass(frozen=True)
class ReadJob:
    """One response body and what the site asks of it."""

    body: bytes
    content_type: str  # the Content-Type header, "" when absent
    url: str
    content_selector: str = ""
    next_page_texts: Sequence[str] = ()  # empty: neither next nor previous page is looked for
    max_links: int = 0  # links wanted (the first in the page); 0: none
    plain: bool = False  # a text/plain body (a novel's "TXT下载"): all of it is the text
    download: bool = False  # a ZIP, EPUB or 7z body (:mod:`crawler.downloads`)
    part_chars: int = 0  # a download, or a plain text longer than this, is read in parts
    assets: PageAssets = PageAssets()
    webfont_reference: str = DEFAULT_REFERENCE  # the reference font (crawler.webfont)
    webfont_cache: str = ""  # where its index is kept between processes; "": not kept


@dataclass(frozen=True)
class Reading:
    """A decoded page's title, main text, links and neighbours, or why it could not be read."""

    title: str = ""
    text: str = ""
    method: str = "none"  # as :attr:`crawler.extract.Extracted.method`, or "plain"
    own_chars: int = 0
    encoding: str = ""
    links: tuple[str, ...] = ()
    links_beyond: int = 0  # link attributes after the last of ``links`` when capped
    next_url: str | None = None
    prev_url: str | None = None
    sequence: tuple[str, ...] = ()  # its neighbours among whole pages (上一章/下一章 ...)
    canonical: str | None = None  # its head's <link rel="canonical">, when another URL
    undecodable: str = ""  # why the body could not be decoded; "" when it was
    parts: tuple[tuple[str, str], ...] = ()  # a book's parts, (title, text) each, in order
    refused: str = ""  # why a download was not read; "" when it was (or is no download)
    hidden: int = 0  # elements whose text a browser does not show, dropped (crawler.visible)
    fonts: int = 0  # web fonts whose text was decoded
    fonts_refused: tuple[str, ...] = ()  # why a web font was not decoded, one line each
    images: int = 0  # images replaced by the text read from them
    needs_browser: bool = False  # little text and a script that builds it (crawler.scripted)


HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PLAIN_TYPES = frozenset({"text/plain"})


def body_kind(body: bytes, content_type: str) -> str:
    """How a response body is read: ``download`` (a ZIP, EPUB or 7z archive, whatever its
    name and ``Content-Type`` say), ``html``, ``plain`` (text/plain that is not markup) or
    empty (anything else: not read)."""
    if download_kind(body):
        return "download"
    mime = content_type.split(";", 1)[0].strip().lower()
    if mime in PLAIN_TYPES:
        return "html" if sniff_html(body) else "plain"
    if mime:
        return "html" if mime in HTML_TYPES else ""
    return "html" if sniff_html(body) else ""


def read_page(job: ReadJob, quick: bool = False) -> Reading:
    """The :class:`Reading` of ``job``'s body. ``quick`` extracts the cheap way (the
    densest block, see :func:`crawler.extract.extract`); a download has no cheap way: it is
    then refused."""
    if job.download:
        if quick:
            return Reading(method="download", refused="it took too long to unpack")
        return read_download(job)
    try:
        html, encoding = decode_body(job.body, job.content_type or None)
    except UndecodableBody as exc:
        return Reading(undecodable=str(exc))
    if job.plain:
        return read_plain(html, encoding, job.part_chars)
    page = parse_html(html)
    links, beyond = [], 0
    if job.max_links:  # before the hidden elements go: a hidden menu still leads somewhere
        links, beyond = page_links_counted(page, job.url, encoding, limit=job.max_links)
    assets = job.assets
    seen = make_visible(
        page.root,
        job.url,
        assets.stylesheets,
        assets.fonts,
        assets.image_texts,
        font_decoder=_font_decoder(job.webfont_reference, job.webfont_cache),
    )
    if seen.changed:
        html = serialize(page)
    extracted = extract(html, job.url, job.content_selector, page=page, quick=quick)
    next_url = prev_url = None
    if job.next_page_texts:  # a labelled link, else the head's <link rel="next">
        next_url = find_page_link(page, job.url, job.next_page_texts, encoding)
        next_url = next_url or find_rel_link(page, job.url, {"next"}, encoding)
        prev_url = find_page_link(page, job.url, PREV_PAGE_TEXTS, encoding)
        prev_url = prev_url or find_rel_link(page, job.url, {"prev", "previous"}, encoding)
    sequence = find_page_links(page, job.url, SEQUENCE_TEXTS, encoding)
    canonical = find_rel_link(page, job.url, {"canonical"}, encoding)
    return Reading(
        title=extracted.title,
        text=extracted.text,
        method=extracted.method,
        own_chars=extracted.own_chars,
        encoding=encoding,
        links=tuple(links),
        links_beyond=beyond,
        next_url=next_url,
        prev_url=prev_url,
        sequence=sequence,
        canonical=canonical,
        hidden=seen.dropped + seen.muted,
        fonts=seen.fonts,
        fonts_refused=tuple(seen.fonts_refused),
        images=seen.images,
        needs_browser=needs_browser(page.root, extracted.own_chars, html, seen.hidden_chars),
    )


def serialize(page: Selector) -> str:
    """The HTML of a parsed page as it now is (for trafilatura, which parses its own)."""
    return etree.tostring(page.root, encoding="unicode", method="html")


_decoders: dict[tuple[str, str], FontDecoder] = {}


def _font_decoder(reference: str, cache: str) -> Callable[[], FontDecoder]:
    """A function giving this process's :class:`crawler.webfont.FontDecoder` for the
    ``reference`` font (its index built or loaded once, :func:`shared_reference`, only
    when a page has a web font to decode)."""

    def decoder() -> FontDecoder:
        key = (reference, cache)
        if key not in _decoders:
            _decoders[key] = FontDecoder(shared_reference(reference, cache or None))
        return _decoders[key]

    return decoder


def read_plain(text: str, encoding: str, part_chars: int = 0) -> Reading:
    """A plain-text body as a page: its lines are the text, its first line (up to
    :data:`PLAIN_TITLE_CHARS` characters) the title; it has no links. One longer than
    ``part_chars`` (when given: a whole novel's "TXT下载") is read in parts, cut at its
    chapter headings (:func:`crawler.downloads.book_parts`)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    first = text.split("\n", 1)[0].strip()
    parts: tuple[tuple[str, str], ...] = ()
    if part_chars and len(text) > part_chars:
        book = Book("txt", first, tuple(text_chapters(text)))
        parts = tuple((p.title, p.text) for p in book_parts(book, part_chars))
    return Reading(
        title=first[:PLAIN_TITLE_CHARS],
        text=text,
        method="plain",
        own_chars=content_chars(text),
        encoding=encoding,
        parts=parts,
    )


def read_download(job: ReadJob) -> Reading:
    """A download as a book (:func:`crawler.downloads.read_book`): its title, its text (the
    first part's) and its parts, each at most ``job.part_chars`` characters (all of it one
    part without a limit); ``refused`` says why when it could not be read."""
    try:
        book = read_book(job.body)
    except DownloadRefused as exc:
        return Reading(method="download", refused=str(exc))
    limit = job.part_chars or sum(len(c.title) + len(c.text) + 2 for c in book.chapters)
    parts = tuple((p.title, p.text) for p in book_parts(book, limit))
    text = parts[0][1]
    return Reading(
        title=book.title[:PLAIN_TITLE_CHARS],
        text=text,
        method=f"download:{book.kind}",
        own_chars=content_chars(text),
        parts=parts,
    )
