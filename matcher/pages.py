"""A crawled page as the crawler hands it to the store: one dataclass for every layer.

The spider yields it (``crawler.items.PageItem`` is this class), the item pipeline passes it
to :class:`matcher.worker.ingest.Ingest`, the store keeps its fields, and
:meth:`matcher.matching.engine.Engine.process_page` accepts it for pages that were never crawled
(tests, the evaluation).

``next_url`` and ``prev_url`` are the canonical URLs of the page's "next page" and
"previous page" links (下一页 / 上一页, as the site's configuration labels them), or "".
They are recorded, not interpreted: :mod:`matcher.matching.split` decides from them, the titles and
the URLs whether neighbouring pages are parts of one split chapter.

``exchange`` is the HTTP exchange as fetched (:class:`matcher.evidence.archive.Exchange`), which the
ingest keeps as evidence when it has an archive; None for pages that were never fetched.
``etag`` and ``last_modified`` are the response's ``ETag`` and ``Last-Modified`` headers (""
when absent), stored with the page so that an incremental crawl asks for it again with a
conditional request (:mod:`crawler.incremental`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from matcher.evidence.archive import Exchange


@dataclass
class CrawledPage:
    """One fetched HTML page with main text, under its own canonical URL."""

    url: str
    site: str
    title: str
    text: str
    status: int = 200
    encoding: str = ""
    fetched_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    next_url: str = ""
    prev_url: str = ""
    exchange: Exchange | None = field(default=None, repr=False)
    etag: str = ""
    last_modified: str = ""
    aliases: tuple[str, ...] = ()
    """Other URLs the crawl reached this page under (``/index.html`` for ``/``)."""
    parts: int = 0
    """On the page of a download's first part, how many parts the download has (its next
    parts' pages are at :func:`part_url`); 0 on any other page."""


PART_MARK = "#part"
"""How the page of a download's part after the first is named: its URL, then this and the
part's number (:mod:`crawler.downloads`: a whole book is stored in parts)."""


def part_url(url: str, n: int) -> str:
    """The page URL of part ``n`` (from 1) of the download at ``url``.

    >>> part_url("http://x/down/1.zip", 1), part_url("http://x/down/1.zip", 2)
    ('http://x/down/1.zip', 'http://x/down/1.zip#part2')
    """
    return url if n == 1 else f"{url}{PART_MARK}{n}"


def part_number(url: str) -> int:
    """Which part of a download the page at ``url`` is (1: the first, or not a part).

    >>> part_number("http://x/down/1.zip#part2"), part_number("http://x/down/1.zip")
    (2, 1)
    """
    _, mark, number = url.rpartition(PART_MARK)
    return int(number) if mark and number.isdigit() and int(number) > 1 else 1


def fetched_url(url: str) -> str:
    """The URL a page was fetched under: a download's part names the download.

    >>> fetched_url("http://x/down/1.zip#part2"), fetched_url("http://x/1.html")
    ('http://x/down/1.zip', 'http://x/1.html')
    """
    head, mark, number = url.rpartition(PART_MARK)
    return head if mark and number.isdigit() else url


@dataclass
class PageAlias:
    """Another URL of a page the crawl already yielded: ``alias`` is the page at ``url``."""

    url: str
    alias: str


@dataclass
class UnchangedPage:
    """A stored page that answered 304 Not Modified to a conditional request: its text is
    still the stored one as of ``fetched_at``."""

    url: str
    fetched_at: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass
class GonePage:
    """A URL that answered 404 or 410 Not Found / Gone: a stored page there was removed."""

    url: str
    status: int
    fetched_at: datetime = field(default_factory=lambda: datetime.now(UTC))
