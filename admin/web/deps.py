"""Where every view gets what a request uses: the services built once per application
(:class:`Services`: the context, the dispatch, the accounts, the lock, the metrics), and
short lookups of their parts (:func:`ctx`, :func:`store`, :func:`engine`, :func:`current_user`),
on the model of the FastAPI template's ``api/deps.py``.

:mod:`admin.web.app` builds the :class:`Services` and imports the views; the views import
this module, never the app, so no view module and the app import each other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from flask import abort, current_app, g

from admin.context import Context
from admin.metrics import StoreMetrics
from admin.services.accounts import User, Users
from admin.services.api_tokens import KeptTokens
from admin.services.dispatch import Dispatch
from matcher.sites.site_config import SiteConfig, SiteConfigError

if TYPE_CHECKING:
    from matcher.matching.engine import Engine
    from matcher.store import Store

EXTENSION = "fptrack"
"""The key of :class:`Services` in ``app.extensions``."""


class Services:
    """What the views use: the context, the dispatch, the accounts, an optional lock.

    Every part of the context a request uses is built here, before the first request:
    the context builds its clients and archive on first use (``functools.cached_property``,
    with no lock from Python 3.12), which two request threads of a worker could otherwise
    both do at once."""

    def __init__(
        self, ctx: Context, dispatch: Dispatch, lock: threading.RLock | None, schedules: bool
    ) -> None:
        self.ctx, self.dispatch, self.lock = ctx, dispatch, lock
        _ = ctx.settings, ctx.engine, ctx.store, ctx.archive
        self.users = Users(ctx.engine.store)
        self.schedules = ctx.schedules if schedules else None
        self.metrics = StoreMetrics(ctx)
        self.metrics_registry = self.metrics.registry()
        self.scrape_tokens = KeptTokens(ctx.engine.store, self.users, role="viewer")
        """The tokens that may read ``/metrics`` (:mod:`admin.web.metrics`)."""
        self.scrape_tokens.load()


def services() -> Services:
    """The running application's :class:`Services`."""
    return current_app.extensions[EXTENSION]


def ctx() -> Context:
    return services().ctx


def store() -> Store:
    return services().ctx.store


def engine() -> Engine:
    return services().ctx.engine


def current_user() -> User:
    """The user of this request (a session's or an API token's); the guards set it."""
    return g.user


def site_or_404(name: str) -> SiteConfig:
    """The stored site ``name``; 404 when there is none."""
    try:
        site = store().sites.get_site(name)
    except SiteConfigError:
        site = None
    if site is None:
        abort(404, "no such site")
    return site


@contextmanager
def outside_lock() -> Iterator[None]:
    """Run a request's outbound IO (:mod:`matcher.outbound`: a query by URL's fetch, a test
    alert) without the embedded admin's lock, so no other request waits on a slow server;
    the lock is held again after it. The block must not touch the store. Without a lock
    (``fptrack admin serve``) it does nothing."""
    s = services()
    if s.lock is None or not g.get("locked"):
        yield
        return
    s.lock.release()
    try:
        yield
    finally:
        s.lock.acquire()
