"""Takedowns followed to the end (:mod:`matcher.evidence.takedowns`): the figures per site,
per hosting provider and per recipient kind with the URLs to escalate, every case, the
sites' contacts, providers and recipients' addresses, who hosts each site (RDAP lookups,
:mod:`matcher.sites.hosting`), sending a notice to its recipient and the search engines'
delisting export (:mod:`admin.report.takedown_send`).

Used by the admin's takedown pages (:mod:`admin.web.takedowns`), the API's takedown
routes (:mod:`admin.web.api.takedowns`) and ``fptrack takedowns``
(:mod:`admin.commands.takedowns`), which also rechecks the URLs due; the hosting by the
admin's site pages and reports, the API's site resource and ``fptrack sites hosting``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from admin.report.selection import Selection
from admin.report.takedown_send import (
    Exported,
    Planned,
    Sent,
    export_delisting,
    plan,
    send_notice,
)
from matcher.evidence.recipients import RECIPIENTS, Address, address
from matcher.evidence.takedowns import Figures, Rechecked, recheck_due, stored_figures
from matcher.store.common import now

if TYPE_CHECKING:
    from admin.context import Context
    from matcher.sites.hosting import Looked


class TakedownService:
    """The takedown cases, notices and site contacts of the store of ``ctx``; notices
    emailed through the SMTP of its settings as they are at each call."""

    def __init__(self, ctx: Context) -> None:
        self.ctx, self.store = ctx, ctx.store

    def figures(self, escalate_days: float) -> dict[str, list[Figures]]:
        """Per site, per provider and per recipient kind, as of now, with the URLs still up
        ``escalate_days`` after their latest notice
        (:func:`matcher.evidence.takedowns.stored_figures`)."""
        return stored_figures(self.store, now(), escalate_days)

    def contacts(self) -> dict[str, dict[str, Any]]:
        """Every site's contact and provider, by site name."""
        return self.store.takedowns.contacts()

    def cases(self) -> list[dict[str, Any]]:
        """The cases, newest notice first."""
        return self.store.takedowns.cases()

    def addresses(self) -> dict[str, dict[str, Address]]:
        """Every site's recipients' addresses (:func:`matcher.evidence.recipients.address`),
        by site name and recipient kind."""
        return {
            site: {kind: address(doc, kind) for kind in RECIPIENTS}
            for site, doc in self.store.takedowns.contacts().items()
        }

    def preview(self, selection: Selection, recipient: str, *, html: bool) -> Planned:
        """The notice of a site's selection to ``recipient``, not sent
        (:func:`admin.report.takedown_send.plan`)."""
        return plan(self.store, self.ctx.settings, selection, recipient, html=html)

    def send(
        self, selection: Selection, *, email: bool, by: str, recipient: str = "operator"
    ) -> Sent:
        """Send the notice of a site's selection now to ``recipient`` (``operator``,
        ``host`` or ``registrar``), by email or marked sent
        (:func:`admin.report.takedown_send.send_notice`), in the name of user ``by``."""
        return send_notice(
            self.store, self.ctx.settings, selection, email=email, by=by, at=now(),
            recipient=recipient,
        )  # fmt: skip

    def export_delisting(self, selection: Selection, *, by: str) -> Exported:
        """The search engines' delisting export of the selection (every site, or its one),
        kept as a notice to ``search`` (:func:`admin.report.takedown_send.export_delisting`)."""
        return export_delisting(self.store, self.ctx.settings, selection, by=by, at=now())

    def set_contact(self, site: str, **fields: str) -> None:
        """Set a site's ``contact``, ``provider``, ``provider_from`` and its host's and
        registrar's abuse addresses and names
        (:data:`matcher.store.takedowns.CONTACT_FIELDS`)."""
        self.store.takedowns.set_contact(site, **fields)

    def contact(self, site: str) -> dict[str, Any]:
        """A site's contact fields as kept, and the lookup's ``hosting``."""
        return self.store.takedowns.contact(site)

    def hosting(self, site: str) -> dict[str, Any] | None:
        """Who hosts the site, as last looked up (None: never)."""
        return self.store.takedowns.hosting(site)

    def look_up_hosting(self, sites: list[str], *, refresh: bool, limit: int) -> list[Looked]:
        """Look up who hosts ``sites`` now (names of watched sites), or, none named, the
        sites with matches whose hosting was last tried a week ago or never (all of them
        with ``refresh``), at most ``limit``; :class:`KeyError` naming a site not watched."""
        from matcher.sites import hosting

        at = now()
        if sites:
            urls = {}
            for name in sites:
                config = self.store.sites.get_site(name)
                if config is None or not config.start_urls:
                    raise KeyError(name)
                urls[name] = config.start_urls[0]
        elif refresh:
            urls = dict(list(hosting.sites_with_matches(self.store).items())[:limit])
        else:
            urls = hosting.due_sites(self.store, at, limit)
        lookups = hosting.Lookups.from_settings(self.store, self.ctx.settings)
        return hosting.look_up_sites(self.store, lookups, urls, at)

    def recheck(self) -> Rechecked:
        """Fetch again, now, the noticed URLs whose recheck is due, and record whether each
        still copies its work (:func:`matcher.evidence.takedowns.recheck_due`, with the
        matching engine of the context)."""
        from crawler.one_page import fetcher

        engine = self.ctx.engine
        return recheck_due(engine.store, fetcher(self.ctx.settings), engine.still_copies, now())
