"""``fptrack admin serve``: the admin application under gunicorn.

``--workers`` gunicorn worker processes (default 2) of :class:`AdminWorker`, gunicorn's
asyncio worker, each building the application from the ``FPTRACK_*`` settings after the
fork (so no MongoDB client crosses a fork) and serving it through the buffering front
(:class:`admin.web.front.BufferedFront`): every connection is read in the worker's event
loop, so a client that sends its headers or its body slowly costs a buffer, never a thread
(gunicorn's ``gthread`` worker gives each new connection a thread that waits for its
headers: eight clients sending a byte every 2 s held the 2 x 4 threads of the default
server). A request whose headers and body are in runs in one of the worker's ``--threads``
threads (default 4). A request that waits on a slow server outside (a query by URL, a
webhook's test: each bounded by its own outbound deadline, :mod:`matcher.outbound`) holds
one thread, not the worker: the other threads go on answering everyone else. Building the
application needs MongoDB (its indexes, the session key) and Redis: a worker that starts
while one of them is away (gunicorn replaces a worker that died or timed out) waits for
it, retrying with a backoff (:data:`BOOT_RETRY_S` doubling up to :data:`BOOT_RETRY_MAX_S`)
and telling gunicorn it is alive meanwhile, instead of failing to boot, which makes
gunicorn stop the whole server. The master's watch (:class:`admin.health.Watch`) names the
server away. gunicorn's control socket (``gunicornc``; one path for every gunicorn of a
user by default, which a second admin on the machine would take over) is off: the server
is run by its service manager (signals), and shares nothing with another on the machine
but what ``--bind`` names.

What the threads of one worker share, reviewed for thread safety: the context
(:mod:`admin.context`: its lazily built clients and the evidence archive are built once,
in :class:`admin.web.app.Services` before the first request); the pymongo, redis-py and
Celery clients (thread-safe; every Redis pipeline is made per call, the rate limit's
too, :mod:`admin.web.rate_limit`); the session and CSRF token (Flask's signed cookie, per
request); the Jinja environment (its filters set once at start; the takedown template
renders in a child process of its own); the metrics' cache and clients (under a lock,
:mod:`admin.metrics`); the engine's caches and index directory (the segment and evidence
caches under locks, :mod:`matcher.matching.segment_cache`, :mod:`matcher.matching.match_records`;
the simhash
index's split directory replaced whole and read once per operation,
:mod:`matcher.index.simhash_index`; the index rebuild lease taken by one thread at a time,
:mod:`matcher.index.integrity`); login throttling (counted by atomic updates in the store,
:mod:`admin.services.accounts`). The embedded admin's mongomock store is not shared with threads
here (``fptrack scan --serve`` serves under its own lock).
"""

from __future__ import annotations

import asyncio
import functools
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

import pymongo.errors
import redis
from gunicorn.app.base import BaseApplication
from gunicorn.asgi.protocol import ASGIProtocol
from gunicorn.workers import gasgi
from gunicorn.workers.gasgi import ASGIWorker

from admin.errors import CommandError
from matcher.errors import Retryable
from matcher.settings import Settings

DEFAULT_BIND = "127.0.0.1:8000"
DEFAULT_WORKERS = 2
DEFAULT_THREADS = 4
"""Requests each gunicorn worker runs at once (the threads of its front)."""
DEFAULT_TIMEOUT_S = 120
OUTBOUND_MARGIN_S = 60
"""gunicorn's worker timeout is at least this much above a request's outbound deadline."""
BOOT_RETRY_S = 1.0
BOOT_RETRY_MAX_S = 10.0
OUTAGES = (CommandError, Retryable, pymongo.errors.PyMongoError, redis.ConnectionError, OSError)
"""What building the application raises while MongoDB or Redis does not answer."""


@dataclass(frozen=True)
class Connections:
    """How long a connection may take to send a request's headers (``header_s``: from its
    opening, or from the end of the answer before on a kept-alive one; nginx's
    ``client_header_timeout`` is 60 s), and how many one worker keeps open at once
    (``most``). gunicorn's asyncio worker has neither bound: a client dripping its headers
    costs only a buffer (the front), but thousands of them would hold every descriptor."""

    header_s: float = 30.0
    most: int = 1000


class BoundedConnection(ASGIProtocol):
    """gunicorn's asyncio protocol, with the bounds of :class:`Connections`: a connection
    over ``most`` is closed as it opens, one whose headers are not in ``header_s`` after it
    opened (or after the answer before) is closed then."""

    bounds = Connections()

    def connection_made(self, transport: Any) -> None:
        self._headers_due: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        if self.worker.nr_conns > self.bounds.most:
            transport.close()
            return
        self._await_headers()

    def _await_headers(self) -> None:
        self._headers_in()
        self._headers_due = self.worker.loop.call_later(self.bounds.header_s, self._too_slow)

    def _headers_in(self) -> None:
        if self._headers_due is not None:
            self._headers_due.cancel()
            self._headers_due = None

    def _too_slow(self) -> None:
        self._headers_due = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def _on_headers_complete(self) -> Any:
        self._headers_in()
        return super()._on_headers_complete()

    def _arm_keepalive_timer(self) -> None:
        super()._arm_keepalive_timer()
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_in()
        super().connection_lost(exc)


class AdminWorker(ASGIWorker):
    """gunicorn's asyncio worker (``gunicorn.workers.gasgi``), which can wait while its
    application is built (:meth:`pause`), and serves its connections with
    :class:`BoundedConnection` (the worker makes its protocol by the module's name, set here
    in the worker's own process)."""

    def init_process(self) -> None:
        gasgi.ASGIProtocol = BoundedConnection
        super().init_process()

    def pause(self, seconds: float) -> None:
        """Wait ``seconds`` in the worker's event loop, which handles the signals meanwhile
        (a SIGTERM while the application waits for a server stops the worker)."""
        self.loop.run_until_complete(asyncio.sleep(seconds))


class AdminServer(BaseApplication):
    def __init__(self, options: dict[str, Any], secure_cookies: bool, threads: int) -> None:
        self.options = options
        self.secure_cookies = secure_cookies
        self.threads = threads
        self.booting: Any = None
        """The gunicorn worker being started in this process (set after the fork)."""
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)
        self.cfg.set("post_fork", self._forked)

    def _forked(self, server: Any, worker: Any) -> None:
        self.booting = worker

    def load(self) -> Any:
        from admin.context import Context
        from admin.web.app import create_app
        from admin.web.deps import EXTENSION
        from admin.web.front import BufferedFront
        from admin.web.security import body_limit
        from matcher.index.redis_clients import SERVICE

        wait = BOOT_RETRY_S
        while True:
            ctx = Context(patience=SERVICE)  # requests ride out a Redis restart
            try:
                app = create_app(ctx, secure_cookies=self.secure_cookies)
                app.extensions[EXTENSION].scrape_tokens.reload_every()
                return BufferedFront(app, functools.partial(body_limit, app), self.threads)
            except OUTAGES:
                client = ctx.__dict__.get("mongo_client")  # opened before the outage was met
                if client is not None:
                    client.close()
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if self.booting is not None:
                    if not self.booting.alive:  # told to stop while waiting
                        sys.exit(0)
                    self.booting.notify()  # gunicorn kills a worker silent for its timeout
                    self.booting.pause(min(0.5, wait))
                else:
                    time.sleep(min(0.5, wait))
            wait = min(wait * 2, BOOT_RETRY_MAX_S)


def worker_timeout(settings: Settings) -> int:
    """gunicorn's worker timeout: :data:`DEFAULT_TIMEOUT_S`, or the longest outbound
    deadline of a request (``FPTRACK_QUERY_DEADLINE``, ``FPTRACK_ALERT_TIMEOUT``: see
    :mod:`matcher.outbound`) plus :data:`OUTBOUND_MARGIN_S` when that is longer.

    A worker tells gunicorn it is alive from its event loop, at least once a second
    whatever its request threads are doing, so this timeout never ends a request:
    a thread waiting on a slow server is bounded by that fetch's own deadline (it ends with
    a one-line error), and gunicorn kills only a worker whose main loop stopped for this
    long (a hung process) or whose boot was silent that long (the boot's waits say they are
    alive, :meth:`AdminServer.load`). It stays above every outbound deadline, as it had to
    for sync workers, so that a main loop kept waiting by its threads is not killed before
    their fetches could have ended.

    >>> worker_timeout(Settings()), worker_timeout(Settings(query_deadline=100.5))
    (120, 161)
    """
    longest = max(settings.query_deadline, settings.alert_timeout)
    return max(DEFAULT_TIMEOUT_S, math.ceil(longest) + OUTBOUND_MARGIN_S)


def serve(
    bind: str,
    workers: int,
    secure_cookies: bool,
    access_log: bool,
    timeout: int = DEFAULT_TIMEOUT_S,
    threads: int = DEFAULT_THREADS,
    connections: Connections = Connections(),
) -> None:
    BoundedConnection.bounds = connections  # inherited by the workers, made by fork
    options = {
        "bind": bind,
        "workers": workers,
        "worker_class": f"{__name__}.AdminWorker",
        "timeout": timeout,
        "preload_app": False,
        "accesslog": "-" if access_log else None,
        "control_socket_disable": True,
    }
    AdminServer(options, secure_cookies, threads).run()
