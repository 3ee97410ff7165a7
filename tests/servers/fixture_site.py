"""A web site served on 127.0.0.1 from a dict, for real crawls in tests (e2e tests too) and
benchmarks (a :class:`tests.servers.http_server.FixtureServer`).

>>> with FixtureSite({"/": page("<p>你好</p>")}) as site:
...     import urllib.request
...     urllib.request.urlopen(site.url("/")).read().decode()
'<p>你好</p>'

``pages`` maps a path (with its query string, if any) to ``(status, headers, body)``; the
body is bytes, or a callable returning an iterable of byte chunks, which is streamed without
a ``Content-Length`` (the response ends when the connection closes). ``redirects`` maps a
path to ``(status, location)``. ``generated`` maps a path prefix to a function of the
path (with its query string) that makes its resource on each request, for sites without
end (link generators). Anything else is a 404. A resource whose headers carry an
``ETag`` answers 304 Not Modified (no body) to a request whose ``If-None-Match`` is that
ETag, as a server supporting conditional requests does. Every request is recorded in
:attr:`FixtureSite.requests` (path and headers), so tests can check what was fetched.
Pages may be added or replaced while the site runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler

from tests.servers.http_server import FixtureServer, QuietHandler

Body = bytes | Callable[[], Iterable[bytes]]
Resource = tuple[int, dict[str, str], Body]


def page(html: str, charset: str = "utf-8", header_charset: str | None = "") -> Resource:
    """A 200 ``text/html`` resource of ``html`` encoded in ``charset``.

    ``header_charset`` is the charset the ``Content-Type`` header declares: ``""`` (default)
    declares ``charset`` itself, ``None`` declares none.
    """
    declared = charset if header_charset == "" else header_charset
    content_type = "text/html" + (f"; charset={declared}" if declared else "")
    return 200, {"Content-Type": content_type}, html.encode(charset)


class FixtureSite(FixtureServer):
    """A threaded HTTP server on an ephemeral port of ``host`` serving ``pages``."""

    def __init__(
        self,
        pages: dict[str, Resource] | None = None,
        redirects: dict[str, tuple[int, str]] | None = None,
        host: str = "127.0.0.1",
        generated: dict[str, Callable[[str], Resource]] | None = None,
    ) -> None:
        self.pages: dict[str, Resource] = dict(pages or {})
        self.generated: dict[str, Callable[[str], Resource]] = dict(generated or {})
        self.redirects: dict[str, tuple[int, str]] = dict(redirects or {})
        self.requests: list[tuple[str, dict[str, str]]] = []
        self._lock = threading.Lock()
        super().__init__(host=host)

    def make_handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    def requested(self) -> list[str]:
        """The paths requested so far, in order."""
        with self._lock:
            return [path for path, _ in self.requests]

    def _record(self, path: str, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append((path, headers))


def _handler_for(site: FixtureSite) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        server_version = "fixture/1.0"

        def do_GET(self) -> None:
            site._record(self.path, dict(self.headers.items()))
            if self.path in site.redirects:
                status, location = site.redirects[self.path]
                self.send_response(status)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status, headers, body = site.pages.get(
                self.path, (404, {"Content-Type": "text/html"}, b"<h1>404 Not Found</h1>")
            )
            if self.path not in site.pages:
                for prefix, make in site.generated.items():
                    if self.path.startswith(prefix):
                        status, headers, body = make(self.path)
                        break
            etag = headers.get("ETag")
            if status == 200 and etag and self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.send_header("ETag", etag)
                self.end_headers()
                return
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            try:
                if isinstance(body, bytes):
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in body():
                        self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (e.g. a response above its size limit)

    return Handler
