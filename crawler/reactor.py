"""One Twisted reactor per process, running in a background thread, reused by every crawl.

Twisted's reactor cannot be restarted once stopped, so a process that crawls more than once
(the test session, the embedded ``fptrack scan``, an admin process) starts it once, here,
in a daemon thread (``installSignalHandlers=False``), and schedules each crawl on it from
its own thread (:func:`call_in_reactor`, :func:`run_in_reactor`). Callers block on a
:class:`concurrent.futures.Future`; state they own (a mongomock store) stays in the calling
process and is used from the reactor thread while they wait.

Reactor: Twisted's asyncio reactor (:data:`REACTOR_PATH`), Scrapy's default since 2.13,
installed with an event loop of its own (the calling thread's asyncio event loop is left
alone). If some other reactor was installed first (something imported
``twisted.internet.reactor``), that one is used and :func:`reactor_setting` tells Scrapy
not to insist on the asyncio reactor. If a reactor is already running in another thread
(a caller that runs its own), crawls are scheduled on it and no thread is started.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

REACTOR_PATH = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0

_lock = threading.Lock()
_thread: threading.Thread | None = None


def install() -> None:
    """Install the asyncio reactor with a new event loop, unless a reactor is installed."""
    if "twisted.internet.reactor" in sys.modules:
        return
    from twisted.internet import asyncioreactor

    asyncioreactor.install(eventloop=asyncio.new_event_loop())


def reactor_setting() -> str | None:
    """Scrapy's ``TWISTED_REACTOR`` for the installed reactor (None: whatever is installed)."""
    install()
    from twisted.internet import reactor

    cls = type(reactor)
    path = f"{cls.__module__}.{cls.__qualname__}"
    return REACTOR_PATH if path == REACTOR_PATH else None


def ensure_running() -> Any:
    """The reactor, started in the background thread on first use; raises if it stopped."""
    global _thread
    with _lock:
        install()
        from twisted.internet import reactor

        if _thread is None:
            if reactor.running:
                return reactor  # somebody else runs it
            started = threading.Event()
            reactor.callWhenRunning(started.set)
            _thread = threading.Thread(
                target=_run, args=(reactor,), name="fptrack-reactor", daemon=True
            )
            _thread.start()
            if not started.wait(START_TIMEOUT):
                raise RuntimeError(f"the Twisted reactor did not start in {START_TIMEOUT} s")
            atexit.register(stop)
        elif not _thread.is_alive():
            raise RuntimeError("the Twisted reactor thread has stopped and cannot be restarted")
    return reactor


def call_in_reactor(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """Call ``fn`` in the reactor thread; the future holds its result (a Deferred's result).

    Must not be called from the reactor thread itself (waiting there would deadlock).
    """
    from twisted.internet.defer import maybeDeferred
    from twisted.python import threadable

    reactor = ensure_running()
    if threadable.isInIOThread():
        raise RuntimeError("call_in_reactor() from the reactor thread would deadlock")
    future: Future[Any] = Future()

    def call() -> None:
        deferred = maybeDeferred(fn, *args, **kwargs)
        deferred.addCallbacks(future.set_result, lambda f: future.set_exception(f.value))

    reactor.callFromThread(call)
    return future


def run_in_reactor(
    fn: Callable[..., Any], *args: Any, timeout: float | None = None, **kwargs: Any
) -> Any:
    """:func:`call_in_reactor` and wait at most ``timeout`` seconds for the result."""
    return call_in_reactor(fn, *args, **kwargs).result(timeout)


def stop() -> None:
    """Stop the background reactor (at interpreter exit); it cannot be started again."""
    thread = _thread
    if thread is None or not thread.is_alive():
        return
    from twisted.internet import reactor

    def halt() -> None:
        with contextlib.suppress(Exception):
            reactor.stop()

    reactor.callFromThread(halt)
    thread.join(STOP_TIMEOUT)


def _run(reactor: Any) -> None:
    loop = getattr(reactor, "_asyncioEventloop", None)
    if loop is not None:
        asyncio.set_event_loop(loop)
    reactor.run(installSignalHandlers=False)


def deferred_from_future(future: Future[Any]) -> Any:
    """A Deferred, fired in the reactor thread, with the result (or error) of ``future``, a
    :class:`concurrent.futures.Future` settled in another thread. Cancelling the Deferred
    (a timeout) cancels ``future`` if it has not started, and its result is then dropped."""
    from twisted.internet import reactor
    from twisted.internet.defer import Deferred

    deferred: Deferred[Any] = Deferred(canceller=lambda d: future.cancel())

    def fire(outcome: Any, error: bool) -> None:
        if not deferred.called:  # not cancelled meanwhile
            (deferred.errback if error else deferred.callback)(outcome)

    def settle(done: Future[Any]) -> None:
        error = done.exception() if not done.cancelled() else RuntimeError("cancelled")
        if error is not None:
            reactor.callFromThread(fire, error, True)
        else:
            reactor.callFromThread(fire, done.result(), False)

    future.add_done_callback(settle)
    return deferred
