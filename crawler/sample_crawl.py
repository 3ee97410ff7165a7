"""A small bounded crawl of one site, outside Scrapy: what pirate-site discovery reads
(:mod:`matcher.sites.discovery`), from the watched sites (their outbound links) and from each
candidate (a sample of its pages to match).

:func:`sample_site` walks a site breadth-first from its start URLs, same host only, at most
``max_pages`` pages, each a GET under a :mod:`matcher.outbound` policy (one deadline per
request, a size cap, redirects followed and checked, internal addresses refused unless the
policy allows them), robots.txt obeyed (Python's ``urllib.robotparser``, as fptrack's user
agent; read under the same policy), and returns each page as
:func:`crawler.one_page.fetch_page` reads it: final URL, status, main text and links with
their anchor text. A fetch that fails is a page with its error.

:class:`Sampler` is what discovery crawls with: a watched site's own host and port may be
internal (the operator watches it, as the crawl does), a candidate's only with
``FPTRACK_OUTBOUND_ALLOW_PRIVATE`` (:func:`matcher.outbound.fetching`).
"""

from __future__ import annotations

import urllib.robotparser
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from crawler.one_page import Fetched, fetch_page
from matcher import outbound
from matcher.sites.discovery import host_of

USER_AGENT = "fptrack/0.1 (discovery)"
ROBOTS_MAX_BYTES = 512 * 1024


def _robots(start: str, policy: outbound.Policy) -> urllib.robotparser.RobotFileParser:
    parts = urlsplit(start)
    rules = urllib.robotparser.RobotFileParser(f"{parts.scheme}://{parts.netloc}/robots.txt")
    policy = replace(policy, max_bytes=min(policy.max_bytes, ROBOTS_MAX_BYTES))
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


def sample_site(starts: Sequence[str], max_pages: int, policy: outbound.Policy) -> list[Fetched]:
    """Up to ``max_pages`` pages of the site of ``starts`` (URLs of one host, read first;
    see the module docstring), every request under ``policy``."""
    host = host_of(starts[0])
    rules = _robots(starts[0], policy)
    queue, seen, pages = deque(dict.fromkeys(starts)), set(starts), []
    while queue and len(pages) < max_pages:
        url = queue.popleft()
        if not rules.can_fetch(USER_AGENT, url):
            continue
        page = fetch_page(url, policy, user_agent=USER_AGENT, links=True)
        pages.append(page)
        for link, _ in page.links:
            if host_of(link) == host and link not in seen:
                seen.add(link)
                queue.append(link)
    return pages


@dataclass(frozen=True)
class Sampler:
    """Discovery's crawls (:class:`matcher.sites.discovery.Crawler`) under ``policy``
    (:func:`matcher.outbound.fetching` of a deployment's settings)."""

    policy: outbound.Policy

    def __call__(self, urls: list[str], pages: int, *, watched: bool = False) -> list[Fetched]:
        """:func:`sample_site` from ``urls``; ``watched``: theirs is a watched site's host,
        reached even when internal (the hosts it leads to are not)."""
        try:
            policy = self.policy.owning(urls[0]) if watched else self.policy
        except outbound.OutboundError as exc:
            return [Fetched(url, None, error=exc.detail) for url in urls]
        return sample_site(urls, pages, policy)

    def refusal(self, url: str) -> str:
        """Why the host of ``url`` may not be sampled (an internal address the policy does
        not allow, not a host), or "" (a name that does not resolve now is tried)."""
        policy = self.policy
        return outbound.refusal(url, policy.allow_private, policy.deadline, unresolved_ok=True)


def sampler(settings: Any) -> Sampler:
    """The :class:`Sampler` of a deployment's settings (:func:`matcher.outbound.fetching`:
    ``FPTRACK_QUERY_DEADLINE``, ``FPTRACK_QUERY_MAX_BYTES``,
    ``FPTRACK_OUTBOUND_ALLOW_PRIVATE``)."""
    return Sampler(outbound.fetching(settings))
