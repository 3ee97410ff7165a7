"""What an incremental crawl reads besides pages: sitemaps, RSS/Atom feeds, stored validators.

An incremental crawl (``SiteConfig.recrawl``, :class:`crawler.spiders.site.SiteSpider` with
``incremental=True``) fetches the site's start pages, its sitemaps (the ``Sitemap:`` lines of
robots.txt, else ``/sitemap.xml``; sitemap indexes followed) and the RSS/Atom feeds its start
pages announce (``<link rel="alternate" type="application/rss+xml|atom+xml">``), then only:

- pages not stored yet (linked from a start page, listed in a sitemap or a feed, or linked
  from a new page, at most ``FPTRACK_RECRAWL_DEPTH`` links away);
- stored pages whose sitemap ``lastmod`` (or feed date) is newer than their stored fetch;
- the next and previous pages (下一页 / 上一页) of the pages it fetches.

A stored page is asked for with a conditional request (``If-None-Match`` /
``If-Modified-Since`` from the ``ETag`` / ``Last-Modified`` stored with it), so a site that
supports them answers 304 with no body; a page fetched again with the same text is not
matched again (:class:`matcher.worker.ingest.Ingest`). Stored pages with no newer date are not
requested at all.

Sitemaps and feeds are hostile input: a body over ``FPTRACK_FEED_MAX_BYTES`` (5 MiB, after
gunzip) or that does not parse gives one line in the log and the stats
(``fptrack/incremental/feed_problems``, the last one in ``fptrack/incremental/feed_problem``)
and the crawl goes on; so does one not fetched (robots.txt included: /sitemap.xml is then
tried), whatever the server does, since each is a Scrapy request of the crawl, cancelled at
``DOWNLOAD_TIMEOUT`` (its whole download: a server sending one byte a second is cut off) and
at ``DOWNLOAD_MAXSIZE``, and retried ``RETRY_TIMES`` as any request. At most
``FPTRACK_FEED_MAX_ENTRIES`` (50,000) entries of one file are read. Sitemaps are read by
Scrapy's :class:`scrapy.utils.sitemap.Sitemap` (lxml, entities not resolved); feeds by
:mod:`defusedxml` (no DTD, no entity expansion).
"""

from __future__ import annotations

import contextlib
import email.utils
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol
from xml.etree.ElementTree import Element, ParseError

import lxml.etree
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

FEED_TYPES = ("application/rss+xml", "application/atom+xml", "application/rdf+xml")
ITEM_TAGS = frozenset({"item", "entry"})
DATE_TAGS = ("updated", "modified", "pubDate", "published", "date", "issued")


class FeedProblem(ValueError):
    """A sitemap or feed that cannot be read (one line)."""


@dataclass(frozen=True)
class Entry:
    """A page a sitemap or feed lists, with its date when it gives one."""

    url: str
    lastmod: datetime | None = None


@dataclass(frozen=True)
class Stored:
    """What the store knows of a page: when it was fetched and its HTTP validators."""

    fetched_at: datetime | None
    etag: str = ""
    last_modified: str = ""

    def headers(self) -> dict[str, str]:
        """The conditional request headers these validators allow."""
        out = {}
        if self.etag:
            out["If-None-Match"] = self.etag
        if self.last_modified:
            out["If-Modified-Since"] = self.last_modified
        return out

    def older_than(self, lastmod: datetime | None) -> bool:
        """Whether ``lastmod`` says the page changed after it was fetched."""
        if lastmod is None:
            return False
        if self.fetched_at is None:
            return True
        fetched = self.fetched_at
        return lastmod > (fetched if fetched.tzinfo else fetched.replace(tzinfo=UTC))


class PageLedger(Protocol):
    """Where an incremental crawl learns which pages are stored: ``{url: fields}`` with
    ``fetched_at``, ``etag`` and ``last_modified``
    (:meth:`matcher.store.pages.Pages.page_validators`)."""

    def known_pages(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]: ...


def stored(fields: dict[str, Any]) -> Stored:
    """A :class:`Stored` from a page's stored fields."""
    fetched = fields.get("fetched_at")
    return Stored(
        fetched if isinstance(fetched, datetime) else None,
        str(fields.get("etag") or ""),
        str(fields.get("last_modified") or ""),
    )


def parse_date(text: str | None) -> datetime | None:
    """A sitemap or feed date (W3C / ISO 8601, or RFC 822 as RSS has it), UTC; None if not one.

    >>> parse_date("2026-11-27T05:00:00+08:00").isoformat()
    '2026-11-26T21:00:00+00:00'
    >>> parse_date("Fri, 27 Nov 2026 05:00:00 GMT").isoformat()
    '2026-11-27T05:00:00+00:00'
    >>> parse_date("2026-11-27").isoformat(), parse_date("soon")
    ('2026-11-27T00:00:00+00:00', None)
    """
    text = (text or "").strip()
    if not text or len(text) > 64:
        return None
    value: datetime | None = None
    with contextlib.suppress(ValueError):
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value is None:
        with contextlib.suppress(TypeError, ValueError, IndexError):
            value = email.utils.parsedate_to_datetime(text)
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _body(body: bytes, url: str, max_bytes: int) -> bytes:
    if url.split("?", 1)[0].endswith(".gz") or body[:2] == b"\x1f\x8b":
        try:
            body = gunzip(body, max_size=max_bytes)
        except (OSError, EOFError, ValueError, struct.error) as exc:  # ValueError: over max_size
            raise FeedProblem(f"{url}: not valid gzip or over {max_bytes} bytes ({exc})") from exc
    if len(body) > max_bytes:
        raise FeedProblem(f"{url}: {len(body)} bytes, over the limit of {max_bytes}")
    return body


def parse_sitemap(
    body: bytes, url: str, max_bytes: int, max_entries: int
) -> tuple[str, list[Entry]]:
    """``("urlset" | "sitemapindex", entries)`` of a sitemap; :class:`FeedProblem` if unreadable."""
    body = _body(body, url, max_bytes)
    try:
        sitemap = Sitemap(body)
        kind = sitemap.type
        entries = []
        for item in sitemap:
            loc = item.get("loc")
            if loc:
                entries.append(Entry(loc, parse_date(item.get("lastmod"))))
            if len(entries) >= max_entries:
                break
    except (lxml.etree.LxmlError, StopIteration, ValueError) as exc:
        raise FeedProblem(f"{url}: not a readable sitemap ({_line(exc)})") from exc
    if kind not in ("urlset", "sitemapindex"):
        raise FeedProblem(f"{url}: not a sitemap (root element {kind!r})")
    return kind, entries


def parse_feed(body: bytes, url: str, max_bytes: int, max_entries: int) -> list[Entry]:
    """The items of an RSS (0.9x, 1.0, 2.0) or Atom feed; :class:`FeedProblem` if unreadable."""
    body = _body(body, url, max_bytes)
    try:
        root = fromstring(body, forbid_dtd=True)
    except (ParseError, DefusedXmlException, ValueError) as exc:
        raise FeedProblem(f"{url}: not a readable feed ({_line(exc)})") from exc
    if _local(root.tag) not in ("rss", "feed", "RDF", "channel"):
        raise FeedProblem(f"{url}: not an RSS or Atom feed (root element {_local(root.tag)!r})")
    entries = []
    for element in root.iter():
        if _local(element.tag) not in ITEM_TAGS:
            continue
        link = _item_link(element)
        if link:
            entries.append(Entry(link, _item_date(element)))
        if len(entries) >= max_entries:
            break
    return entries


def feed_links(html_links: Iterable[tuple[str, str, str]]) -> list[str]:
    """The feed URLs among a page's ``<link>`` elements, given as ``(rel, type, href)``."""
    out = []
    for rel, kind, href in html_links:
        rels = rel.lower().split()
        if "alternate" in rels and kind.strip().lower() in FEED_TYPES and href.strip():
            out.append(href.strip())
    return list(dict.fromkeys(out))


def _item_link(item: Element) -> str:
    fallback = ""
    for child in item:
        if _local(child.tag) != "link":
            continue
        href = child.get("href")
        if href is None:  # RSS: the link is the element's text
            return (child.text or "").strip()
        if child.get("rel", "alternate") == "alternate":
            return href.strip()
        fallback = fallback or href.strip()
    return fallback


def _item_date(item: Element) -> datetime | None:
    found: dict[str, str] = {}
    for child in item:
        name = _local(child.tag)
        if name in DATE_TAGS and name not in found:
            found[name] = child.text or ""
    for name in DATE_TAGS:
        value = parse_date(found.get(name))
        if value is not None:
            return value
    return None


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _line(error: object) -> str:
    return " ".join(str(error).split())[:200] or type(error).__name__
