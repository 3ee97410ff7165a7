"""Hostile clients of a served admin, over raw sockets and HTTP, and the memory they cost it:
a browser's session (:class:`Browser`), requests sent by hand (:func:`raw_request`), clients
that send a byte at a time (:func:`slow_clients`), and :class:`Rise`, the resident sizes of
the server's processes sampled meanwhile. The hostile benchmark's service cases
(``bench/hostile_service.py``) and the served admin's tests drive the admin with them.
"""

from __future__ import annotations

import http.cookiejar
import re
import select
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

PASSWORD = "a-bench-password-1"
"""The admin account's password (the benchmark creates it, the browser logs in with it)."""
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
DRIVER_WORDS = ("Topology", "Errno", "ServerSelection", "pymongo", "Traceback", "unavailable in")
"""Words of driver text that no page may show."""
SAMPLE_S = 0.02
TIMEOUT_S = 30.0
"""How long a client waits for an answer."""


def rss_mb(pid: int) -> float:
    """``VmRSS`` of ``pid`` in MiB (0 once gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Rise:
    """From ``with`` to its end, every :data:`SAMPLE_S`: the resident size of each process
    ``pids()`` names; ``rise`` (the largest rise of one process above its size at the
    start), ``own`` (the largest size of one process), ``tree`` (the largest sum)."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids
        self.start: dict[int, float] = {}
        self.rise = self.own = self.tree = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            sizes = {pid: rss_mb(pid) for pid in self.pids()}
            for pid, size in sizes.items():
                self.start.setdefault(pid, size)
                self.rise = max(self.rise, size - self.start[pid])
            self.own = max(self.own, *sizes.values(), 0.0)
            self.tree = max(self.tree, sum(sizes.values()))
            if self._done.wait(SAMPLE_S):
                return

    def __enter__(self) -> Rise:
        self._thread.start()
        time.sleep(SAMPLE_S * 3)
        return self

    def __exit__(self, *_: object) -> None:
        time.sleep(SAMPLE_S * 5)  # the last moments of the answer
        self._done.set()
        self._thread.join()

    def figures(self) -> dict[str, float]:
        return {"scan_rss_mb": self.own, "tree_rss_mb": self.tree, "rise_mb": self.rise}


# -- clients --------------------------------------------------------------------------------


class Browser:
    """One browser's session (cookies kept; the CSRF token read from the pages)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        self.token = ""

    def request(
        self, path: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, str, dict[str, str]]:
        """``(status, page, headers)`` of a GET, or of a POST of ``form`` with the token
        (the headers' names in lower case); status 0 when no answer came within
        :data:`TIMEOUT_S`."""
        data = None
        if form is not None:
            if not self.token:
                self.request("login")
            data = urllib.parse.urlencode({**form, "csrf_token": self.token}).encode()
        request = urllib.request.Request(self.base + path, data, headers or {})
        try:
            with self.opener.open(request, timeout=TIMEOUT_S) as reply:
                status, page, got = reply.status, reply.read(), reply.headers
        except urllib.error.HTTPError as exc:
            status, page, got = exc.code, exc.read(), exc.headers
        except OSError as exc:  # no answer in time
            return 0, f"no answer: {exc}", {}
        got = {name.lower(): value for name, value in got.items()}
        text = page.decode("utf-8", errors="replace")
        token = CSRF.search(text)
        if token:
            self.token = token.group(1)
        return status, text, got

    def login(self, username: str = "alice", password: str = PASSWORD) -> int:
        """Log in; the answer's status once logged in, else 0."""
        status, page, _ = self.request("login", {"username": username, "password": password})
        return status if 'action="/logout"' in page else 0


def raw_request(base: str, head: str, body: Any, timeout: float = 120) -> tuple[int, str]:
    """Send ``head`` (the request line and headers, CRLF-separated, without the blank line)
    and then ``body`` (bytes, or an iterable of bytes sent chunked) over a socket, watching
    for the answer between chunks; ``(status, the answer)`` once it comes, ``(0, why)`` if
    none does. A server that answers before the whole body is sent is read all the same."""
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n")
        chunks = [body] if isinstance(body, bytes) else body
        chunked = not isinstance(body, bytes)
        try:
            for chunk in chunks:
                if select.select([sock], [], [], 0)[0]:
                    break  # the answer came: stop sending
                for start in range(0, len(chunk), 256 * 1024):
                    piece = chunk[start : start + 256 * 1024]
                    if chunked:
                        piece = b"%x\r\n%s\r\n" % (len(piece), piece)
                    sock.sendall(piece)
                    if select.select([sock], [], [], 0)[0] or time.monotonic() > deadline:
                        break
                else:
                    continue
                break
            else:
                if chunked:
                    sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server closed after answering: its answer may be read still
        answer = b""
        sock.settimeout(max(1.0, deadline - time.monotonic()))
        try:
            while b"\r\n\r\n" not in answer or len(answer) < 200:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        except OSError as exc:
            if not answer:
                return 0, f"no answer: {exc}"
    text = answer.decode("latin-1")
    found = re.match(r"HTTP/1\.[01] (\d{3})", text)
    return (int(found.group(1)), text) if found else (0, text[:200])


def message(answer: str) -> str:
    """The error line of an answer (the page's ``<p class="error">``, else its first body
    line)."""
    found = re.search(r'<p class="error">(.*?)</p>', answer, re.S)
    if found:
        import html

        return html.unescape(found.group(1)).strip()
    body = answer.partition("\r\n\r\n")[2] or answer
    return body.strip().splitlines()[0][:200] if body.strip() else ""


class SlowClient(threading.Thread):
    """A connection that sends ``prefix`` at once, then ``data`` one byte every ``drip``
    seconds until stopped."""

    def __init__(
        self, base: str, prefix: bytes, data: bytes, drip: float, stop: threading.Event
    ) -> None:
        super().__init__(daemon=True)
        self.base, self.prefix, self.data, self.drip = base, prefix, data, drip
        self.stop_event = stop
        self.connected = threading.Event()

    def run(self) -> None:
        host, port = urllib.parse.urlsplit(self.base).netloc.split(":")
        try:
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                sock.sendall(self.prefix)
                self.connected.set()
                for i in range(len(self.data)):
                    sock.sendall(self.data[i : i + 1])
                    if self.stop_event.wait(self.drip):
                        return
        except OSError:
            self.connected.set()


def slow_clients(base: str, count: int, drip: float, stop: threading.Event) -> list[SlowClient]:
    """``count`` slow clients, started: three in four send a request's headers byte by
    byte, the others a login form's headers at once and its body byte by byte."""
    host = urllib.parse.urlsplit(base).netloc
    head = f"GET /login HTTP/1.1\r\nHost: {host}\r\nX-Pad: {'a' * 200}\r\n\r\n".encode()
    body = b"username=alice&password=" + b"x" * 200
    form = (
        f"POST /login HTTP/1.1\r\nHost: {host}\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    clients = [
        SlowClient(base, form, body, drip, stop) if n % 4 == 3
        else SlowClient(base, b"", head, drip, stop)
        for n in range(count)
    ]  # fmt: skip
    for client in clients:
        client.start()
    return clients
