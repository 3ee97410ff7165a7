"""Where every view gets what a request uses: the services built once per application
(:class:`Services`: the admin's services of :mod:`admin.services`, the lock, the metrics),
and short lookups of them (:func:`matches`, :func:`works`, :func:`sites`, ...,
:func:`current_user`), on the model of the FastAPI template's ``api/deps.py``.

The views never reach the store: they call the services, which hold its queries.
:mod:`admin.web.app` builds the :class:`Services` and imports the views; the views import
this module, never the app, so no view module and the app import each other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from flask import abort, current_app, g

from admin.context import Context
from admin.metrics import StoreMetrics
from admin.services.accounts import User, Users
from admin.services.alerts import AlertService
from admin.services.api_tokens import ApiTokens
from admin.services.container import AdminServices
from admin.services.dashboard import DashboardService
from admin.services.discovery import DiscoveryService
from admin.services.dispatch import Dispatch
from admin.services.matches import MatchService
from admin.services.query import QueryService
from admin.services.reports import ReportService
from admin.services.sites import SiteService
from admin.services.takedowns import TakedownService
from admin.services.works import WorkService
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig, SiteConfigError

EXTENSION = "fptrack"
"""The key of :class:`Services` in ``app.extensions``."""


class Services(AdminServices):
    """What the views use: the admin's services over the context (:class:`AdminServices`,
    every part of the context a request uses built with them, before the first request),
    an optional lock, and the figures of ``/metrics``."""

    def __init__(
        self, ctx: Context, dispatch: Dispatch, lock: threading.RLock | None, schedules: bool
    ) -> None:
        self.ctx, self.lock = ctx, lock
        super().__init__(ctx, dispatch, ctx.schedules if schedules else None)
        self.metrics = StoreMetrics(ctx)
        self.metrics_registry = self.metrics.registry()
        self.scrape_tokens.load()


def services() -> Services:
    """The running application's :class:`Services`."""
    return current_app.extensions[EXTENSION]


def ctx() -> Context:
    return services().ctx


def settings() -> Settings:
    return services().ctx.settings


def users() -> Users:
    return services().users


def api_tokens() -> ApiTokens:
    return services().api_tokens


def dashboard() -> DashboardService:
    return services().dashboard


def works() -> WorkService:
    return services().works


def sites() -> SiteService:
    return services().sites


def matches() -> MatchService:
    return services().matches


def query() -> QueryService:
    return services().query


def reports() -> ReportService:
    return services().reports


def takedowns() -> TakedownService:
    return services().takedowns


def discovery() -> DiscoveryService:
    return services().discovery


def alerts() -> AlertService:
    return services().alerts


def current_user() -> User:
    """The user of this request (a session's or an API token's); the guards set it."""
    return g.user


def site_or_404(name: str) -> SiteConfig:
    """The stored site ``name``; 404 when there is none."""
    try:
        site = sites().get(name)
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
