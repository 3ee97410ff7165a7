"""A small bounded crawl of one site, outside Scrapy: what pirate-site discovery reads
(:mod:`matcher.discovery`), from the watched sites (their outbound links) and from each
candidate (a sample of its pages to match).

:func:`sample_site` walks a site breadth-first from its start URLs, same host only, at most
``max_pages`` pages, each a GET under :mod:`matcher.outbound`'s policy (one deadline per
request, a size cap, redirects followed and checked), robots.txt obeyed (Python's
``urllib.robotparser``, as fptrack's user agent), and returns each page's final URL, status,
main text (the crawler's decoding and extraction, :func:`crawler.one_page.page_text`) and
links with their anchor text. A fetch that fails is a page with its error.
"""

from __future__ import annotations

import urllib.robotparser
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin, urlsplit

import lxml.html

from crawler.encoding import decode_body
from crawler.one_page import page_text
from matcher import outbound

USER_AGENT = "fptrack/0.1 (discovery)"
MAX_REDIRECTS = 5
MAX_LINKS = 500
"""At most this many links are read from one page."""


@dataclass
class SampledPage:
    """One page of a sample: the URL asked, the URL answered (after redirects), status,
    main text, links ``(absolute URL, anchor text)`` and a one-line error ("" if none)."""

    url: str
    final_url: str = ""
    status: int | None = None
    text: str = ""
    links: list[tuple[str, str]] = field(default_factory=list)
    error: str = ""


def netloc(url: str) -> str:
    """A URL's ``host[:port]``, lower-case: what names a site here."""
    return urlsplit(url).netloc.lower()


def fetch_html(url: str, *, deadline: float, max_bytes: int) -> SampledPage:
    """One page: its final URL, status, text and links (never raises)."""
    policy = outbound.Policy(deadline, max_bytes, True, MAX_REDIRECTS)
    try:
        answer = outbound.request("GET", url, policy, headers={"User-Agent": USER_AGENT})
    except outbound.OutboundError as exc:
        return SampledPage(url, error=exc.detail)
    page = SampledPage(url, answer.url, answer.status)
    if not 200 <= answer.status < 300:
        page.error = f"HTTP {answer.status} {answer.reason}"
        return page
    content_type = answer.headers.get("Content-Type", "")
    try:
        html, _ = decode_body(answer.body, content_type)
        page.text = page_text(answer.body, content_type, answer.url)
    except ValueError as exc:
        page.error = f"{url}: {exc}"
        return page
    page.links = links_of(html, answer.url)
    return page


def links_of(html: str, base: str) -> list[tuple[str, str]]:
    """The ``http(s)`` links of a page, absolute, with their anchor text (at most
    :data:`MAX_LINKS`)."""
    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
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
    return out


def _robots(start: str, deadline: float) -> urllib.robotparser.RobotFileParser:
    parts = urlsplit(start)
    rules = urllib.robotparser.RobotFileParser(f"{parts.scheme}://{parts.netloc}/robots.txt")
    policy = outbound.Policy(deadline, 512 * 1024, True, MAX_REDIRECTS)
    try:
        answer = outbound.request("GET", rules.url, policy, headers={"User-Agent": USER_AGENT})
    except outbound.OutboundError:
        rules.parse([])  # no answer: nothing forbidden, as Scrapy's middleware reads it
        return rules
    if answer.status in (401, 403):
        rules.disallow_all = True
    elif 200 <= answer.status < 300:
        rules.parse(answer.body.decode("utf-8", "replace").splitlines())
    else:
        rules.parse([])
    return rules


def sample_site(
    starts: Sequence[str], max_pages: int, *, deadline: float = 10.0, max_bytes: int = 10 << 20
) -> list[SampledPage]:
    """Up to ``max_pages`` pages of the site of ``starts`` (URLs of one host, read first;
    see the module docstring)."""
    host = netloc(starts[0])
    rules = _robots(starts[0], deadline)
    queue, seen, pages = deque(dict.fromkeys(starts)), set(starts), []
    while queue and len(pages) < max_pages:
        url = queue.popleft()
        if not rules.can_fetch(USER_AGENT, url):
            continue
        page = fetch_html(url, deadline=deadline, max_bytes=max_bytes)
        pages.append(page)
        for link, _ in page.links:
            if netloc(link) == host and link not in seen:
                seen.add(link)
                queue.append(link)
    return pages
