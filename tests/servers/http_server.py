"""Fixture servers on 127.0.0.1 for the benchmarks and the tests: one threaded server base.

:class:`FixtureServer` binds an ephemeral port of ``host`` when it is made (so its
:meth:`~FixtureServer.url` is known before it serves), serves in a daemon thread from
:meth:`~FixtureServer.start` and closes its socket in :meth:`~FixtureServer.stop`; it is
a context manager doing both. It is the shape of Scrapy's ``tests/mockserver`` servers
(``with MockServer() as mockserver: mockserver.url("/path")``), kept in-process: the
fixtures record what they were asked, and the tests read those records.

A subclass gives its request handler by overriding :meth:`~FixtureServer.make_handler`
(usually a class closed over ``self``), or passes a handler class to the constructor;
:meth:`~FixtureServer.make_server` may build another :class:`socketserver.BaseServer`
(a raw TCP server, a WSGI one: :class:`WSGIServer`).

:class:`QuietHTTPServer` and :class:`QuietHandler` keep a fixture's output clean: a client
hanging up early (a crawler cancelling a download) is no error, and no request is logged.

>>> class Hello(QuietHandler):
...     def do_GET(self) -> None:
...         self.send_response(200)
...         self.send_header("Content-Length", "2")
...         self.end_headers()
...         self.wfile.write(b"hi")
>>> import urllib.request
>>> with FixtureServer(Hello) as server:
...     urllib.request.urlopen(server.url("/")).read()
b'hi'
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

HOST = "127.0.0.1"

Handler = Callable[..., socketserver.BaseRequestHandler]
"""A request handler class (or a ``functools.partial`` of one)."""


class QuietHTTPServer(ThreadingHTTPServer):
    """A threaded HTTP server whose request threads do not outlive it, with room for a
    crawler's bursts, and silent when a client hangs up early."""

    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up early is normal here (cancelled downloads)


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs no request line."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class FixtureServer:
    """A threaded server on an ephemeral port of ``host`` (see the module docstring)."""

    scheme = "http"

    def __init__(self, handler: Handler | None = None, host: str = HOST) -> None:
        self.host = host
        self._handler = handler
        self._server = self.make_server((host, 0))
        self.port: int = self._server.server_address[1]
        self._thread: threading.Thread | None = None

    def make_handler(self) -> Handler:
        """The request handler class (default: the one given to the constructor)."""
        if self._handler is None:
            raise TypeError(f"{type(self).__name__} gives no request handler")
        return self._handler

    def make_server(self, address: tuple[str, int]) -> socketserver.BaseServer:
        """The bound server (default: a :class:`QuietHTTPServer` of :meth:`make_handler`)."""
        return QuietHTTPServer(address, self.make_handler())

    @property
    def netloc(self) -> str:
        """``host:port``, as :func:`matcher.sites.discovery.host_of` names a site."""
        return f"{self.host}:{self.port}"

    def url(self, path: str = "/", host: str | None = None) -> str:
        """The absolute URL of ``path`` here (optionally under another host name)."""
        return f"{self.scheme}://{host or self.host}:{self.port}{path}"

    def start(self) -> Self:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            name=f"{type(self).__name__}-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (if it served) and close the socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class WSGIServer(FixtureServer):
    """A WSGI app (the admin's Flask app) on werkzeug's server, as ``fptrack scan --serve``
    and ``fptrack serve`` run it: ``threaded`` (a thread per request) unless told not to;
    ``request_handler`` replaces werkzeug's (e.g. to keep connections alive or quiet)."""

    def __init__(
        self,
        app: Any,
        host: str = HOST,
        threaded: bool = True,
        request_handler: type[BaseHTTPRequestHandler] | None = None,
    ) -> None:
        self.app, self.threaded, self.request_handler = app, threaded, request_handler
        super().__init__(host=host)

    def make_server(self, address: tuple[str, int]) -> socketserver.BaseServer:
        from werkzeug.serving import make_server

        host, port = address
        return make_server(
            host, port, self.app, threaded=self.threaded, request_handler=self.request_handler
        )
