"""Every service of the admin over one context, built together before the first request.

:class:`AdminServices` is the one place that takes the store, the engine, the archive and
the settings out of a :class:`~admin.context.Context` and hands each service what it needs;
the web's :class:`admin.web.deps.Services` extends it with what only the web holds (the lock,
the metrics).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.services.accounts import Users
from admin.services.alerts import AlertService
from admin.services.api_tokens import ApiTokens, KeptTokens
from admin.services.dashboard import DashboardService
from admin.services.discovery import DiscoveryService
from admin.services.matches import MatchService
from admin.services.query import QueryService
from admin.services.reports import ReportService
from admin.services.sites import SiteService
from admin.services.takedowns import TakedownService
from admin.services.works import WorkService

if TYPE_CHECKING:
    from admin.context import Context
    from admin.services.dispatch import Dispatch
    from matcher.worker.schedules import Schedules


class AdminServices:
    """The admin's services over ``ctx``: background work started through ``dispatch``,
    site schedules kept in ``schedules`` (None: in the store only).

    Building them builds every part of the context a request uses (its settings, engine,
    store and archive: ``functools.cached_property``, with no lock from Python 3.12), which
    two request threads of a worker could otherwise both do at once. The services that read
    settings take the context and read its settings at each call, as the views did."""

    def __init__(self, ctx: Context, dispatch: Dispatch, schedules: Schedules | None) -> None:
        _ = ctx.settings  # built now too: the services read it at each call
        engine, store, archive = ctx.engine, ctx.store, ctx.archive
        self.dispatch = dispatch
        self.schedules = schedules
        self.users = Users(store)
        self.api_tokens = ApiTokens(store)
        self.scrape_tokens = KeptTokens(store, self.users, role="viewer")
        """The tokens that may read ``/metrics`` (:mod:`admin.web.metrics`)."""
        self.dashboard = DashboardService(store)
        self.works = WorkService(lambda: engine, store, dispatch.work_added)
        self.sites = SiteService(store, schedules, dispatch)
        self.matches = MatchService(store, archive)
        self.query = QueryService(ctx)
        self.reports = ReportService(ctx)
        self.takedowns = TakedownService(ctx)
        self.discovery = DiscoveryService(store, self.sites)
        self.alerts = AlertService(ctx)
