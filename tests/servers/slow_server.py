"""Slow-loris servers on 127.0.0.1: the outbound policy's tests (:mod:`matcher.outbound`)
and the hostile benchmark's outbound cases drive the same ones, each at its own pace.

An HTTP :func:`slow_server` answers by path (the request line's second word, any method):
``/status`` sends its status line and headers one byte every ``drip`` seconds, ``/headers``
the status line at once and then its headers byte by byte, ``/body`` the status and headers
at once (``Content-Length`` 100000) and then the body byte by byte, ``/hang`` nothing at
all. Once all is sent the connection is kept open. Every path asked is recorded
(:attr:`SlowServer.paths`), so a case can tell whether a request reached the server at all.
With ``speaks_first`` the server drips an SMTP greeting instead. A connection ends by itself
after ``give_up`` seconds, so a client that never gives up cannot hang a test or a run; the
path of a connection the client closed first, while it was dripped to or held open, is
recorded too (:attr:`SlowServer.hung_up`), so a case can tell that the client gave up by
itself and not because the server did.
"""

from __future__ import annotations

import select
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests.servers.http_server import FixtureServer

STATUS = b"HTTP/1.1 200 OK\r\n"
HEADERS = b"Content-Type: text/html; charset=utf-8\r\nX-Pad: " + b"a" * 4000 + b"\r\n\r\n"
GREETING = b"220 slow.example ESMTP\r\n"
MODES = {
    "status": (b"", STATUS + HEADERS),
    "headers": (STATUS, HEADERS),
    "body": (STATUS + b"Content-Length: 100000\r\n\r\n", b"x" * 100000),
}
"""For each path: what is sent at once, then what is sent one byte at a time."""
POLL_S = 0.1
"""How often a connection held open looks whether the stop or the give-up came."""


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        ends = time.monotonic() + self.server.give_up
        if self.server.speaks_first:
            self.server.record("greeting")
            self._send(b"", GREETING, ends, "greeting")
            return
        sock = self.request
        sock.settimeout(5)
        try:
            head = sock.recv(65536)
        except OSError:
            return
        parts = head.split(b" ", 2)
        path = parts[1].decode("latin-1") if len(parts) > 1 else "/"
        self.server.record(path)
        now, drip = MODES.get(path.strip("/").split("?")[0], (b"", b""))
        if self._send(now, drip, ends, path):  # /hang, or all sent: keep the connection open
            self._hold(ends, path)

    def _send(self, now: bytes, drip: bytes, ends: float, path: str) -> bool:
        """``now`` at once, then ``drip`` byte by byte; False when cut short (the client
        hung up: recorded, or the server stopped or gave up)."""
        try:
            self.request.sendall(now)
            for i in range(len(drip)):
                if self.server.stopping.wait(self.server.drip) or time.monotonic() > ends:
                    return False
                if self._closed_by_client(0.0):
                    raise ConnectionResetError
                self.request.sendall(drip[i : i + 1])
        except OSError:  # the client gave up
            self.server.hang_up(path)
            return False
        return True

    def _hold(self, ends: float, path: str) -> None:
        """Keep the connection open until the server stops, gives up, or the client hangs up
        (recorded)."""
        while not self.server.stopping.is_set():
            left = ends - time.monotonic()
            if left <= 0:
                return
            if self._closed_by_client(min(left, POLL_S)):
                self.server.hang_up(path)
                return

    def _closed_by_client(self, wait: float) -> bool:
        """Whether the client closed the connection (seen within ``wait`` seconds): the
        socket reads as the end of the stream, or fails; anything it sends is dropped."""
        sock: socket.socket = self.request
        try:
            readable, _, _ = select.select([sock], [], [], wait)
            if not readable:
                return False
            sock.settimeout(0)
            try:
                return sock.recv(65536) == b""
            finally:
                sock.settimeout(5)
        except (BlockingIOError, ssl.SSLWantReadError):
            return False
        except (OSError, ValueError):
            return True


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], drip: float, give_up: float, speaks_first: bool
    ) -> None:
        super().__init__(address, _Handler)
        self.drip, self.give_up, self.speaks_first = drip, give_up, speaks_first
        self.lock = threading.Lock()
        self.paths: list[str] = []
        self.hung_up: list[str] = []
        self.stopping = threading.Event()

    def record(self, path: str) -> None:
        with self.lock:
            self.paths.append(path)

    def hang_up(self, path: str) -> None:
        with self.lock:
            self.hung_up.append(path)


class SlowServer(FixtureServer):
    """The slow-loris server (see the module docstring): its port, its URLs and the paths
    asked of it so far; serving from :meth:`start` (or as a context manager)."""

    def __init__(
        self,
        drip: float = 2.0,
        give_up: float = 60.0,
        speaks_first: bool = False,
        tls: tuple[str, str] | None = None,
    ) -> None:
        self.drip, self.give_up, self.speaks_first, self.tls = drip, give_up, speaks_first, tls
        self.scheme = "https" if tls else "http"
        super().__init__()
        self.base = self.url("/")

    def make_server(self, address: tuple[str, int]) -> _Server:
        server = _Server(address, self.drip, self.give_up, self.speaks_first)
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            server.socket = context.wrap_socket(server.socket, server_side=True)
        return server

    def url(self, path: str = "/", host: str | None = None) -> str:
        """The URL of a mode (``status``, ``headers``, ``body``, ``hang``) or of a path."""
        return super().url(path if path.startswith("/") else "/" + path, host)

    @property
    def paths(self) -> list[str]:
        server = self._server
        assert isinstance(server, _Server)
        with server.lock:
            return list(server.paths)

    @property
    def hung_up(self) -> list[str]:
        """The paths (``greeting`` for the SMTP one) of the connections the client closed
        while the server dripped to it or held it open, before the server's own give-up."""
        server = self._server
        assert isinstance(server, _Server)
        with server.lock:
            return list(server.hung_up)

    def stop(self) -> None:
        """End the dripping connections, then stop serving."""
        server = self._server
        assert isinstance(server, _Server)
        server.stopping.set()
        super().stop()


@contextmanager
def slow_server(
    drip: float = 2.0,
    give_up: float = 60.0,
    speaks_first: bool = False,
    tls: tuple[str, str] | None = None,
) -> Iterator[SlowServer]:
    """A slow-loris server sending one byte every ``drip`` seconds (see the module
    docstring); with ``tls`` (a certificate and its key, PEM files) over TLS."""
    with SlowServer(drip, give_up, speaks_first, tls) as server:
        yield server
