"""Calls bounded in time: each runs in a daemon thread of its own, and is waited for only
until a deadline.

A driver's call can wait on a server that accepted the connection and never answers (a
process stopped with SIGSTOP, a host that drops packets, a store stuck on its disk) for as
long as its socket timeout, and then retry: a Redis client of a command waited 20 s per
command (:data:`matcher.index.redis_clients.COMMAND`), and ``fptrack check`` took 82 s against a
Redis stopped with SIGSTOP. What must answer in seconds whatever hangs (``fptrack check``,
``fptrack schedules``) runs its calls through :func:`started` and waits for each only until
its deadline; a call still running then is left to its thread, which the process does not
wait for when it ends (the threads of :mod:`concurrent.futures`' executors are joined at
exit, so a hung call would hold the process).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


def started(call: Callable[[], T], name: str) -> Future[T]:
    """``call()`` running in a daemon thread named ``name``: its future (``result(timeout)``
    raises :class:`TimeoutError` while it runs, and the call's own exception once it
    failed)."""
    future: Future[T] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(call())
        except BaseException as exc:  # handed to whoever waits for the result
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def done_within(future: Future[T], seconds: float) -> bool:
    """Wait at most ``seconds`` for ``future``; whether it is done (with a result or an
    exception of its own: a call that raised :class:`TimeoutError` itself is done)."""
    try:
        future.exception(timeout=max(0.0, seconds))
    except TimeoutError:  # raised only while the future is not done
        return False
    return True


def bounded(call: Callable[[], T], seconds: float, name: str) -> T:
    """``call()``'s result (or its exception), or :class:`TimeoutError` once it has run
    ``seconds`` without one (the call goes on in its daemon thread, unwaited for)."""
    future = started(call, name)
    if not done_within(future, seconds):
        raise TimeoutError(f"{name}: timed out, no answer within {seconds:g} s")
    return future.result()
