"""A small bounded crawl of one site, outside Scrapy: what pirate-site discovery reads
(:mod:`matcher.discovery`), from the watched sites (their outbound links) and from each
candidate (a sample of its pages to match).

:func:`sample_site` walks a site breadth-first from its start URLs, same host only, at most
``max_pages`` pages, each a GET under :mod:`matcher.outbound`'s policy (one deadline per
request, a size cap, redirects followed and checked), robots.txt obeyed (Python's
``urllib.robotparser``, as fptrack's user agent), and returns each page as
:func:`crawler.one_page.fetch_page` reads it: final URL, status, main text and links with
their anchor text. A fetch that fails is a page with its error.
"""

from __future__ import annotations

import urllib.robotparser
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from crawler.one_page import MAX_REDIRECTS, Fetched, fetch_page
from matcher import outbound
from matcher.discovery import host_of

USER_AGENT = "fptrack/0.1 (discovery)"


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
) -> list[Fetched]:
    """Up to ``max_pages`` pages of the site of ``starts`` (URLs of one host, read first;
    see the module docstring)."""
    host = host_of(starts[0])
    rules = _robots(starts[0], deadline)
    queue, seen, pages = deque(dict.fromkeys(starts)), set(starts), []
    while queue and len(pages) < max_pages:
        url = queue.popleft()
        if not rules.can_fetch(USER_AGENT, url):
            continue
        page = fetch_page(
            url, deadline=deadline, max_bytes=max_bytes, user_agent=USER_AGENT, links=True
        )
        pages.append(page)
        for link, _ in page.links:
            if host_of(link) == host and link not in seen:
                seen.add(link)
                queue.append(link)
    return pages


def sampler(settings: Any) -> Callable[[list[str], int], list[Fetched]]:
    """:func:`sample_site` under the query settings (``FPTRACK_QUERY_DEADLINE``,
    ``FPTRACK_QUERY_MAX_BYTES``): what discovery crawls with."""

    def crawl(urls: list[str], pages: int) -> list[Fetched]:
        deadline, size = settings.query_deadline, settings.query_max_bytes
        return sample_site(urls, pages, deadline=deadline, max_bytes=size)

    return crawl
