"""Ports and waits of 127.0.0.1, for the benchmarks and the tests (one home for both).

- :func:`free_port` / :func:`free_ports`: ports nothing listened on a moment ago (bound to
  port 0, then released: the kernel's ephemeral choice, as Scrapy's ``tests/mockserver``
  and pytest-localserver pick theirs). Another process may take one before it is used;
  what starts a server on one should fail loudly if it cannot bind.
- :func:`wait_until`: call a predicate every ``interval`` seconds until it returns a truthy
  value or ``timeout`` seconds have passed (the polling loop every start-up waits in).
- :func:`port_open` / :func:`wait_for_port`: a TCP connection to ``host:port`` is accepted
  (for a server process starting there: until it listens, or exits).

>>> port = free_port()
>>> port_open("127.0.0.1", port)
False
>>> wait_until(lambda: 42, timeout=1.0)
42
>>> wait_until(lambda: 0, timeout=0.1, interval=0.05) is None
True
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    """A TCP port of ``host`` that nothing listened on a moment ago."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _bindable(port: int, host: str = HOST) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(count: int, *, also_free_at: int = 0, host: str = HOST) -> list[int]:
    """``count`` distinct free ports of ``host``; with ``also_free_at=N``, each port + N is
    free too (Redis Cluster's bus port is the client port + 10000).

    >>> ports = free_ports(3, also_free_at=10000)
    >>> len(set(ports)), all(p + 10000 <= 65535 for p in ports)
    (3, True)
    """
    ports: list[int] = []
    while len(ports) < count:
        port = free_port(host)
        if port in ports:
            continue
        if also_free_at and (port + also_free_at > 65535 or not _bindable(port + also_free_at)):
            continue
        ports.append(port)
    return ports


def wait_until(predicate: Callable[[], T], timeout: float, interval: float = 0.05) -> T | None:
    """Call ``predicate`` every ``interval`` seconds until it returns a truthy value, and
    return that value; ``None`` once ``timeout`` seconds have passed (the predicate is asked
    once more at the deadline, so a slow last call still counts). Exceptions propagate: a
    caller that expects some (a server still starting) catches them in its predicate."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            return None
        time.sleep(min(interval, max(deadline - time.monotonic(), 0.0)))


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    """A TCP connection to ``host:port`` is accepted (and closed at once)."""
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError:
        return False
    return True


def wait_for_port(
    host: str,
    port: int,
    timeout: float,
    interval: float = 0.05,
    process: subprocess.Popen | None = None,
) -> bool:
    """``host:port`` accepts a connection within ``timeout`` seconds; with ``process`` (the
    server starting there), False as soon as it has exited."""

    def settled() -> bool:
        return port_open(host, port) or (process is not None and process.poll() is not None)

    return bool(wait_until(settled, timeout, interval)) and port_open(host, port)
