"""The pirate novel site of the release-speed benchmark: chapters that appear while it runs.

:class:`NovelSite` serves, on 127.0.0.1 (a free port, threads of the benchmark process: a
:class:`tests.servers.http_server.FixtureServer`):

- ``/book/``: the novel's index, the latest chapters first (最新章节), then every chapter;
- ``/book/N.html``: chapter N (its title, its text in paragraphs, 上一章 / 下一章 links), with
  an ``ETag`` (a hash of the body) and a ``Last-Modified`` (the chapter's publication);
  a request whose ``If-None-Match`` is the ETag gets 304 with no body;
- ``/sitemap.xml``: every chapter with its ``lastmod``; ``/robots.txt`` names it;
- ``/feed.xml``: an RSS 2.0 feed of the 20 latest chapters, announced on the index page.

:meth:`NovelSite.publish` adds a chapter (page, index link, sitemap and feed entries at
once) and returns the time it appeared. Every request is logged (time, path, status, body
bytes) for the crawl costs.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.servers.http_server import FixtureServer, QuietHandler

FEED_ITEMS = 20


@dataclass(frozen=True)
class Hit:
    """One request the site answered."""

    at: float
    path: str
    status: int
    bytes: int


@dataclass(frozen=True)
class Chapter:
    number: int
    title: str
    text: str
    published: datetime


class NovelSite(FixtureServer):
    """The novel's site (see the module docstring)."""

    def __init__(self, title: str = "逆天邪神") -> None:
        self.title = title
        self.chapters: dict[int, Chapter] = {}
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        super().__init__()

    def make_handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler(self)

    def publish(self, number: int, title: str, text: str) -> float:
        """Put chapter ``number`` online everywhere at once; the time (``time.time()``) it did."""
        with self._lock:
            at = time.time()
            published = datetime.fromtimestamp(at, UTC)
            self.chapters[number] = Chapter(number, title, text, published)
        return at

    def withdraw(self, numbers: Any) -> None:
        """Take chapters offline (between rounds)."""
        with self._lock:
            for n in numbers:
                self.chapters.pop(n, None)

    def hits_since(self, start: float) -> list[Hit]:
        with self._lock:
            return [h for h in self.hits if h.at >= start]

    # rendering ------------------------------------------------------------------------

    def render(self, path: str) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            chapters = sorted(self.chapters.values(), key=lambda c: c.number)
        if path == "/robots.txt":
            body = f"User-agent: *\nAllow: /\nSitemap: {self.url('/sitemap.xml')}\n"
            return 200, {"Content-Type": "text/plain"}, body.encode()
        if path == "/book/":
            return 200, {"Content-Type": "text/html; charset=utf-8"}, self._index(chapters)
        if path == "/sitemap.xml":
            return 200, {"Content-Type": "application/xml"}, self._sitemap(chapters)
        if path == "/feed.xml":
            return 200, {"Content-Type": "application/rss+xml"}, self._feed(chapters)
        if path.startswith("/book/") and path.endswith(".html"):
            number = path[6:-5]
            found = {c.number: c for c in chapters}
            if number.isdigit() and int(number) in found:
                chapter = found[int(number)]
                body = self._chapter(chapter, set(found))
                return (
                    200,
                    {
                        "Content-Type": "text/html; charset=utf-8",
                        "ETag": '"' + hashlib.sha1(body).hexdigest()[:16] + '"',
                        "Last-Modified": format_datetime(chapter.published, usegmt=True),
                    },
                    body,
                )
        return 404, {"Content-Type": "text/html"}, b"<h1>404</h1>"

    def _index(self, chapters: list[Chapter]) -> bytes:
        def item(c: Chapter) -> str:
            return f'<li><a href="/book/{c.number}.html">{html.escape(c.title)}</a></li>'

        latest = "".join(item(c) for c in reversed(chapters[-5:]))
        every = "".join(item(c) for c in chapters)
        feed = '<link rel="alternate" type="application/rss+xml" title="最新章节" href="/feed.xml">'
        return (
            f"<html><head><title>{self.title}最新章节</title>{feed}</head><body>"
            f"<h1>{self.title}</h1><h2>最新章节</h2><ul>{latest}</ul>"
            f"<h2>全部章节</h2><ul>{every}</ul></body></html>"
        ).encode()

    def _chapter(self, chapter: Chapter, online: set[int]) -> bytes:
        n = chapter.number
        nav = ['<a href="/book/">目录</a>']
        if n - 1 in online:
            nav.insert(0, f'<a href="/book/{n - 1}.html">上一章</a>')
        if n + 1 in online:
            nav.append(f'<a href="/book/{n + 1}.html">下一章</a>')
        paragraphs = "".join(f"<p>{html.escape(line)}</p>" for line in chapter.text.splitlines())
        return (
            f"<html><head><title>{html.escape(chapter.title)}_{self.title}</title></head><body>"
            f"<h1>{html.escape(chapter.title)}</h1><div id='content'>{paragraphs}</div>"
            f"<div class='nav'>{' '.join(nav)}</div></body></html>"
        ).encode()

    def _sitemap(self, chapters: list[Chapter]) -> bytes:
        urls = "".join(
            f"<url><loc>{self.url(f'/book/{c.number}.html')}</loc>"
            f"<lastmod>{c.published.isoformat(timespec='seconds')}</lastmod></url>"
            for c in chapters
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
        ).encode()

    def _feed(self, chapters: list[Chapter]) -> bytes:
        items = "".join(
            f"<item><title>{html.escape(c.title)}</title>"
            f"<link>{self.url(f'/book/{c.number}.html')}</link>"
            f"<pubDate>{format_datetime(c.published, usegmt=True)}</pubDate></item>"
            for c in reversed(chapters[-FEED_ITEMS:])
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel>'
            f"<title>{self.title}</title><link>{self.url('/book/')}</link>{items}</channel></rss>"
        ).encode()


def _handler(site: NovelSite) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            status, headers, body = site.render(self.path.split("?", 1)[0])
            etag = headers.get("ETag")
            if etag and self.headers.get("If-None-Match") == etag:
                status, body = 304, b""
            self.send_response(status)
            for name, value in headers.items():
                if status != 304 or name == "ETag":
                    self.send_header(name, value)
            if status != 304:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)
            with site._lock:
                site.hits.append(Hit(time.time(), self.path, status, len(body)))

    return Handler
