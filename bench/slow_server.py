"""A slow-loris HTTP server on 127.0.0.1 for the hostile benchmark's outbound cases.

The pattern of ``tests/outbound_support.py`` (the outbound policy's tests), with the pace a
parameter: ``/status`` sends its status line and headers one byte every ``drip`` seconds,
``/headers`` the status line at once and then its headers one byte every ``drip`` seconds.
Any other path, and any connection, is recorded (:attr:`SlowServer.paths`), so a case can
tell whether a request reached it at all. A connection ends by itself after ``give_up``
seconds, so a client that never gives up cannot hang the benchmark.
"""

from __future__ import annotations

import socketserver
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

STATUS = b"HTTP/1.1 200 OK\r\n"
HEADERS = b"Content-Type: text/html; charset=utf-8\r\nX-Pad: " + b"a" * 4000 + b"\r\n\r\n"


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock = self.request
        sock.settimeout(5)
        try:
            head = sock.recv(65536)
        except OSError:
            return
        parts = head.split(b" ", 2)
        path = parts[1].decode("latin-1") if len(parts) > 1 else "/"
        with self.server.lock:
            self.server.paths.append(path)
        mode = path.strip("/").split("?")[0]
        now, drip = {"status": (b"", STATUS + HEADERS), "headers": (STATUS, HEADERS)}.get(
            mode, (b"", b"")
        )
        ends = time.monotonic() + self.server.give_up
        try:
            sock.sendall(now)
            for i in range(len(drip)):
                if self.server.stopping.wait(self.server.drip) or time.monotonic() > ends:
                    return
                sock.sendall(drip[i : i + 1])
        except OSError:
            return  # the client gave up


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, drip: float, give_up: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.drip, self.give_up = drip, give_up
        self.lock = threading.Lock()
        self.paths: list[str] = []
        self.stopping = threading.Event()


class SlowServer:
    """The running server: its URLs and the paths asked of it so far."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        self.base = f"http://127.0.0.1:{server.server_address[1]}/"

    def url(self, mode: str) -> str:
        return self.base + mode

    @property
    def paths(self) -> list[str]:
        with self._server.lock:
            return list(self._server.paths)


@contextmanager
def slow_server(drip: float = 2.0, give_up: float = 60.0) -> Iterator[SlowServer]:
    """A slow-loris server sending one byte every ``drip`` seconds (modes above)."""
    server = _Server(drip, give_up)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield SlowServer(server)
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
