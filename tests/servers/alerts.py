"""Real receivers of alerts on 127.0.0.1: a webhook endpoint that checks the signature as the
docs/admin.md (Alerts) tells receivers to, and an SMTP server (aiosmtpd) that keeps what it is
sent."""

from __future__ import annotations

import email
import email.policy
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiosmtpd.controller import Controller

from tests.servers.http_server import FixtureServer, QuietHandler
from tests.servers.net import free_port


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    signed: bool
    """The signature checked out against the receiver's secret and a fresh timestamp."""

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.body)


def verify(secret: str, headers: dict[str, str], body: bytes, tolerance: int = 300) -> bool:
    """The verification docs/admin.md (Alerts) gives: HMAC-SHA256 over timestamp + "." +
    body, timestamp fresh."""
    timestamp = headers.get("X-Fptrack-Timestamp", "")
    expected = (
        "sha256="
        + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    )
    fresh = timestamp.isdigit() and abs(time.time() - int(timestamp)) <= tolerance
    return fresh and hmac.compare_digest(expected, headers.get("X-Fptrack-Signature", ""))


@dataclass
class Receiver:
    """A webhook endpoint answering 500 to its first ``fail_first`` requests, then 204."""

    secret: str
    fail_first: int = 0
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def delivered(self) -> list[Received]:
        """The requests answered with success."""
        with self.lock:
            return self.requests[self.fail_first :]


@contextmanager
def webhook_receiver(
    secret: str, fail_first: int = 0, host: str = "127.0.0.1"
) -> Iterator[Receiver]:
    receiver = Receiver(secret, fail_first)

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k: v for k, v in self.headers.items()}
            with receiver.lock:
                receiver.requests.append(Received(headers, body, verify(secret, headers, body)))
                failing = len(receiver.requests) <= receiver.fail_first
            self.send_response(500 if failing else 204)
            self.send_header("Content-Length", "0")
            self.end_headers()

    with FixtureServer(Handler, host) as server:
        receiver.url = server.url("/hook")
        yield receiver


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connections are refused)."""
    return f"http://127.0.0.1:{free_port()}/hook"


class _Keep:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], email.message.EmailMessage]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        self.messages.append((list(envelope.rcpt_tos), parsed))
        return "250 OK"


@contextmanager
def smtp_server() -> Iterator[tuple[str, list]]:
    """A real SMTP server on a free port: ``(its smtp:// URL, the messages it received)``."""
    keep = _Keep()
    port = free_port()
    controller = Controller(keep, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield f"smtp://127.0.0.1:{port}", keep.messages
    finally:
        controller.stop()


def text_of(message: email.message.EmailMessage, subtype: str) -> str:
    part = message.get_body(preferencelist=(subtype,))
    return part.get_content() if part is not None else ""
