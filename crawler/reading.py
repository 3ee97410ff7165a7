"""What the spider learns from one response body, as one pure function of plain values.

:func:`read_page` decodes a body (:mod:`crawler.encoding`), extracts its title and main
text (:mod:`crawler.extract`) and finds its links, its "next page" and "previous page"
links and its neighbours among whole pages (上一章/下一章), and the URL its head declares
canonical (``<link rel="canonical">``). It takes and returns only
picklable values, so that it can run in another process (:mod:`crawler.reader_pool`) under
a time limit: a page built to be slow to extract never holds the thread that drives the
downloads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crawler.encoding import UndecodableBody, decode_body
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

PLAIN_TITLE_CHARS = 120


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


def read_page(job: ReadJob, quick: bool = False) -> Reading:
    """The :class:`Reading` of ``job``'s body. ``quick`` extracts the cheap way (the
    densest block, see :func:`crawler.extract.extract`)."""
    try:
        html, encoding = decode_body(job.body, job.content_type or None)
    except UndecodableBody as exc:
        return Reading(undecodable=str(exc))
    if job.plain:
        return read_plain(html, encoding)
    page = parse_html(html)
    extracted = extract(html, job.url, job.content_selector, page=page, quick=quick)
    next_url = prev_url = None
    if job.next_page_texts:  # a labelled link, else the head's <link rel="next">
        next_url = find_page_link(page, job.url, job.next_page_texts, encoding)
        next_url = next_url or find_rel_link(page, job.url, {"next"}, encoding)
        prev_url = find_page_link(page, job.url, PREV_PAGE_TEXTS, encoding)
        prev_url = prev_url or find_rel_link(page, job.url, {"prev", "previous"}, encoding)
    links, beyond = [], 0
    if job.max_links:
        links, beyond = page_links_counted(page, job.url, encoding, limit=job.max_links)
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
    )


def read_plain(text: str, encoding: str) -> Reading:
    """A plain-text body as a page: its lines are the text, its first line (up to
    :data:`PLAIN_TITLE_CHARS` characters) the title; it has no links."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    first = text.split("\n", 1)[0].strip()
    return Reading(
        title=first[:PLAIN_TITLE_CHARS],
        text=text,
        method="plain",
        own_chars=content_chars(text),
        encoding=encoding,
    )
