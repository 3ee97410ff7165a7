"""A pirate site that takes pages down, keeps them, changes them or puts them back, as a site
told of a takedown does, and links or redirects to others: for the takedown and discovery
tests and benchmarks.

:class:`ChangingSite` serves ``pages`` (path -> :class:`Page`: status and HTML, GBK like many
such sites) on 127.0.0.1 (or another loopback address); :meth:`ChangingSite.remove`,
:meth:`~ChangingSite.restore` and :meth:`~ChangingSite.replace` change what a path answers,
and ``requests`` counts the requests per path.
"""

from __future__ import annotations

import contextlib
import html
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tests.servers.http_server import HOST, FixtureServer, QuietHandler


@dataclass
class Page:
    status: int
    body: bytes
    location: str = ""
    """Where a 3xx answer sends the client."""


def chapter_html(title: str, text: str) -> bytes:
    """A chapter page as such sites serve it (navigation, the text, an ad line), in GBK."""
    paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in text.split("\n") if p.strip())
    page = (
        "<html><head><meta charset='gbk'><title>" + html.escape(title) + "</title></head><body>"
        "<div class='nav'><a href='/'>首页</a> | <a href='/list.html'>目录</a></div>"
        f"<h1>{html.escape(title)}</h1><div id='content'>{paragraphs}</div>"
        "<div class='ad'>本站域名已更换，请收藏新地址</div></body></html>"
    )
    return page.encode("gbk", "replace")


class ChangingSite(FixtureServer):
    """See the module docstring."""

    def __init__(self, host: str = HOST) -> None:
        self.pages: dict[str, Page] = {}
        self.kept: dict[str, Page] = {}
        self.requests: Counter[str] = Counter()
        super().__init__(host=host)

    def put(self, path: str, title: str, text: str) -> str:
        """Serve a chapter at ``path``; its URL."""
        self.pages[path] = Page(200, chapter_html(title, text))
        return self.url(path)

    def remove(self, path: str, status: int = 404) -> None:
        """Take ``path`` down (404, or 410), keeping its page to restore."""
        self.kept[path] = self.pages[path]
        self.pages[path] = Page(status, b"<html><body>not found</body></html>")

    def restore(self, path: str) -> None:
        self.pages[path] = self.kept.pop(path)

    def replace(self, path: str, title: str, text: str) -> None:
        self.pages[path] = Page(200, chapter_html(title, text))

    def redirect(self, path: str, to: str, status: int = 302) -> None:
        """Answer ``path`` with a redirect to the URL ``to``."""
        self.pages[path] = Page(status, b"", to)

    def raw(self, path: str, body: str, status: int = 200) -> str:
        """Serve ``body`` (HTML, or robots.txt) at ``path`` as it is; its URL."""
        self.pages[path] = Page(status, body.encode("gbk", "replace"))
        return self.url(path)

    def make_handler(self) -> type[QuietHandler]:
        site = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                site.requests[self.path] += 1
                page = site.pages.get(self.path, Page(404, b"not found"))
                self.send_response(page.status)
                if page.location:
                    self.send_header("Location", page.location)
                kind = "text/plain" if self.path.endswith(".txt") else "text/html"
                self.send_header("Content-Type", f"{kind}; charset=gbk")
                self.send_header("Content-Length", str(len(page.body)))
                self.end_headers()
                self.wfile.write(page.body)

        return Handler


@contextmanager
def loopback_sites(*names: str, first: int = 2) -> Iterator[dict[str, ChangingSite]]:
    """A :class:`ChangingSite` per name, each on a loopback address of its own (127.0.0.2,
    127.0.0.3 ... from ``first``), serving until the block ends."""
    sites = {name: ChangingSite(host=f"127.0.0.{n}") for n, name in enumerate(names, first)}
    with contextlib.ExitStack() as stack:
        for site in sites.values():
            stack.enter_context(site)
        yield sites
