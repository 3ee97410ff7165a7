"""Hostile HTTP servers on 127.0.0.1 for the outbound policy's tests (:mod:`matcher.outbound`):
a slow-loris that sends its status line, its headers or its body one byte at a time."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

DRIP_S = 0.2
"""Seconds between two bytes of a slow-loris answer."""
GIVE_UP_S = 30.0
"""A slow-loris connection ends by itself after this long (so a failed test cannot hang)."""
STATUS = b"HTTP/1.1 200 OK\r\n"
HEADERS = b"Content-Type: text/html; charset=utf-8\r\nX-Pad: " + b"a" * 4000 + b"\r\n\r\n"


class _Handler(socketserver.BaseRequestHandler):
    """``/status``: the status line slowly; ``/headers``: the status line at once, then the
    headers slowly; ``/body``: status and headers at once (``Content-Length`` 100000), then
    the body slowly; ``/hang``: nothing at all. The path is the request line's second word,
    any method."""

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
        if mode == "status":
            now, drip = b"", STATUS + HEADERS
        elif mode == "headers":
            now, drip = STATUS, HEADERS
        elif mode == "body":
            now, drip = STATUS + b"Content-Length: 100000\r\n\r\n", b"x" * 100000
        else:
            now, drip = b"", b""
        ends = time.monotonic() + GIVE_UP_S
        try:
            sock.sendall(now)
            for i in range(len(drip)):
                if self.server.stopping.is_set() or time.monotonic() > ends:
                    return
                sock.sendall(drip[i : i + 1])
                time.sleep(DRIP_S)
            while not self.server.stopping.is_set() and time.monotonic() < ends:
                time.sleep(0.05)  # /hang, or all sent: keep the connection open
        except OSError:
            return  # the client gave up: what the tests want


class _Greeter(_Handler):
    """A server that speaks first (SMTP): its greeting, one byte at a time."""

    def handle(self) -> None:
        with self.server.lock:
            self.server.paths.append("greeting")
        ends = time.monotonic() + GIVE_UP_S
        try:
            for byte in b"220 slow.example ESMTP\r\n":
                if self.server.stopping.is_set() or time.monotonic() > ends:
                    return
                self.request.sendall(bytes([byte]))
                time.sleep(DRIP_S)
        except OSError:
            return


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handler: type[_Handler] = _Handler) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.lock = threading.Lock()
        self.paths: list[str] = []
        self.stopping = threading.Event()


class SlowServer:
    def __init__(self, server: _Server) -> None:
        self._server = server
        self.base = f"http://127.0.0.1:{server.server_address[1]}/"

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, mode: str) -> str:
        return self.base + mode

    @property
    def paths(self) -> list[str]:
        with self._server.lock:
            return list(self._server.paths)


@contextmanager
def slow_server(speaks_first: bool = False) -> Iterator[SlowServer]:
    """A slow-loris HTTP server (modes: see :class:`_Handler`), or with ``speaks_first`` one
    dripping an SMTP greeting."""
    server = _Server(_Greeter if speaks_first else _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield SlowServer(server)
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()


def private_address() -> str | None:
    """A private (not loopback) IPv4 address of this machine, or None when it has none."""
    import ipaddress

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # UDP: no packet sent, only a route chosen
        address = ipaddress.ip_address(probe.getsockname()[0])
    except OSError:
        return None
    finally:
        probe.close()
    return str(address) if address.is_private and not address.is_loopback else None


def self_signed(folder: str) -> tuple[str, str]:
    """A certificate for 127.0.0.1 signed by itself, and its key: ``(cert.pem, key.pem)``."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = f"{folder}/cert.pem", f"{folder}/key.pem"
    with open(cert_path, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as out:
        out.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


@contextmanager
def tls_slow_server(cert: str, key: str) -> Iterator[SlowServer]:
    """:func:`slow_server` over TLS (``https://127.0.0.1:PORT/MODE``)."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = _Server()
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        slow = SlowServer(server)
        slow.base = slow.base.replace("http://", "https://")
        yield slow
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
