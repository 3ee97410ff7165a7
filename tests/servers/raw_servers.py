"""TCP servers below HTTP and Redis on 127.0.0.1, for the tests of clients that must give up:
one that hangs up on every connection (a Redis that takes connections and answers none), and
the base both stand on."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress


@contextmanager
def raw_server(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A server on a free port of 127.0.0.1 (yielded) whose one thread accepts connections
    and hands each to ``handle``, in turn, until the block ends."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with suppress(OSError):
            while True:
                conn, _ = listener.accept()
                handle(conn)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        with suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()


@contextmanager
def hanging_up_redis(hold: threading.Event | None = None) -> Iterator[tuple[str, list[float]]]:
    """A Redis URL whose server closes each connection unanswered (once ``hold`` is set, when
    one is given; it is set when the block ends), and the times of the connections it took:
    one per attempt of a client."""
    connections: list[float] = []

    def hang_up(conn: socket.socket) -> None:
        connections.append(time.monotonic())
        if hold is not None:
            hold.wait(60)
        conn.close()

    with raw_server(hang_up) as port:
        try:
            yield f"redis://127.0.0.1:{port}/0", connections
        finally:
            if hold is not None:
                hold.set()
