"""A site's crawl stays on its start URLs' ports: links and redirects to another port of the
same host are never requested.

A pirate page may link (or redirect) to ``http://its-host:6379/`` or any other service of
the machine it runs on; a crawler that follows such links maps the host's ports for whoever
wrote the page. :class:`SameOriginMiddleware` (a downloader middleware, before robots.txt is
fetched for the new address) drops every request whose host is a start URL's host on
another port, counted as ``fptrack/other_port``. http and https on their default ports
count as one (sites move between them); other hosts are left to ``allowed_domains``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest

DEFAULT_PORTS = {"http": 80, "https": 443}
STAT = "fptrack/other_port"


def origin(url: str) -> tuple[str, int | None]:
    """``(host, port)`` of a URL, the port None when it is its scheme's default.

    >>> origin("https://Example.com/a"), origin("http://127.0.0.1:8080/")
    (('example.com', None), ('127.0.0.1', 8080))
    """
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return ("", -1)
    if port == DEFAULT_PORTS.get(parts.scheme.lower()):
        port = None
    return ((parts.hostname or "").lower(), port)


class Origins:
    """The origins of a crawl's start URLs, and the test every other URL must pass."""

    def __init__(self, start_urls: list[str]) -> None:
        self.allowed = {origin(u) for u in start_urls}
        self.hosts = {host for host, _ in self.allowed}

    def admits(self, url: str) -> bool:
        host, port = origin(url)
        return host not in self.hosts or (host, port) in self.allowed


class SameOriginMiddleware:
    """Drops requests to another port of a start URL's host (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._origins: Origins | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SameOriginMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: Spider | None = None) -> Any:
        spider = spider or self.crawler.spider
        if self._origins is None:
            self._origins = Origins(list(getattr(spider, "start_urls", [])))
        if self._origins.admits(request.url):
            return None
        self.crawler.stats.inc_value(STAT)
        raise IgnoreRequest(f"{request.url}: another port of the site's host")
