"""One page fetched outside a crawl, and its main text: what a takedown's recheck reads
(:mod:`matcher.evidence.takedowns`) and what a query by URL reads (:mod:`admin.fetch`).

:func:`fetch_page` is a GET under a :mod:`matcher.outbound` policy its caller gives (one
deadline for the whole request, a size cap, redirects checked, internal addresses refused
unless the policy allows them); it answers the status whatever it is (a 404 or 410 is what
a recheck looks for) and, for a 2xx answer, the text as the crawler reads it
(:func:`read_body`, a whole-book download included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import lxml.html

from crawler.encoding import decode_body
from crawler.extract import extract
from crawler.reading import ReadJob, body_kind, read_download, read_plain
from matcher import outbound

USER_AGENT = "fptrack/0.1 (recheck)"
MAX_LINKS = 500
"""At most this many links are read from one page."""


@dataclass(frozen=True)
class Fetched:
    """What one fetch came to: the URL asked, the final status (None when there was no
    answer) and URL (after redirects), the main text of a 2xx answer, its links
    ``(absolute URL, anchor text)`` when asked for, and a one-line error ("" when it was
    answered)."""

    url: str
    status: int | None
    text: str = ""
    error: str = ""
    final_url: str = ""
    links: tuple[tuple[str, str], ...] = ()


def read_body(body: bytes, content_type: str, url: str) -> tuple[str, str]:
    """``(its main text, its markup)`` of a ``body`` read as the crawler reads it
    (:func:`crawler.reading.body_kind`): a ZIP, EPUB or 7z archive as a book, every chapter
    of it (a whole-book download; no markup); a text/plain body that is not markup, all of
    it; anything else decoded and extracted. :class:`ValueError` when it cannot be decoded,
    or is a download past a bound."""
    kind = body_kind(body, content_type)
    if kind == "download":
        reading = read_download(ReadJob(body, content_type, url, download=True))
        if reading.refused:
            raise ValueError(f"download not read: {reading.refused}")
        return "\n".join(text for _, text in reading.parts) or reading.text, ""
    html, encoding = decode_body(body, content_type)
    if kind == "plain":
        return read_plain(html, encoding).text, ""
    return extract(html, url).text, html


def page_text(body: bytes, content_type: str, url: str) -> str:
    """The main text of a page's ``body`` (:func:`read_body`)."""
    return read_body(body, content_type, url)[0]


def links_of(html: str, base: str) -> tuple[tuple[str, str], ...]:
    """The ``http(s)`` links of a page, absolute, with their anchor text (at most
    :data:`MAX_LINKS`)."""
    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return ()
    out = []
    for a in tree.iter("a"):
        href = (a.get("href") or "").strip()
        if not href:
            continue
        url = urldefrag(urljoin(base, href))[0]
        if urlsplit(url).scheme in ("http", "https"):
            out.append((url, " ".join(a.text_content().split())[:100]))
        if len(out) >= MAX_LINKS:
            break
    return tuple(out)


def fetch_page(
    url: str, policy: outbound.Policy, *, user_agent: str = USER_AGENT, links: bool = False
) -> Fetched:
    """``url`` fetched once under ``policy`` (see the module docstring), its links read too
    when ``links``; never raises."""
    try:
        answer = outbound.request("GET", url, policy, headers={"User-Agent": user_agent})
    except outbound.OutboundError as exc:
        return Fetched(url, None, error=exc.detail)
    if not 200 <= answer.status < 300:
        return Fetched(url, answer.status, error=f"HTTP {answer.status} {answer.reason}",
                       final_url=answer.url)  # fmt: skip
    try:
        text, html = read_body(answer.body, answer.headers.get("Content-Type", ""), url)
    except ValueError as exc:
        return Fetched(url, answer.status, error=f"{url}: {exc}", final_url=answer.url)
    found = links_of(html, answer.url) if links and html else ()
    return Fetched(url, answer.status, text, "", answer.url, found)


def fetcher(settings: Any) -> Callable[[str], Fetched]:
    """What a takedown's recheck fetches with: :func:`fetch_page` under
    :func:`matcher.outbound.fetching` (``FPTRACK_QUERY_DEADLINE``,
    ``FPTRACK_QUERY_MAX_BYTES``), the noticed page's own host and port reached even when
    internal (a watched site's, where the crawl found it), a redirect elsewhere only when
    ``FPTRACK_OUTBOUND_ALLOW_PRIVATE`` allows it."""
    policy = outbound.fetching(settings)

    def fetch(url: str) -> Fetched:
        try:
            own = policy.owning(url)
        except outbound.OutboundError as exc:
            return Fetched(url, None, error=exc.detail)
        return fetch_page(url, own)

    return fetch
