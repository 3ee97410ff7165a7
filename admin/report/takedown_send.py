"""Sending a takedown notice: the notice of a site's selected matches (:mod:`admin.report.
takedown`), by email to the site's contact through the SMTP of the alerts
(``FPTRACK_SMTP_URL``) or marked sent by hand, and the cases that follow it
(:func:`matcher.evidence.takedowns.open_cases`): rechecks scheduled, the matches marked
``takedown_sent``. An email that does not go records nothing. Used by the admin, the API
and ``fptrack takedowns send``.

The selection is taken as a notice's (:meth:`admin.report.selection.Selection.parse` with
``notice``): matches a person confirmed, and unreviewed ones only when the operator chose
them, a choice the notice keeps (``unreviewed_chosen``, and its matches counted by status
in ``statuses``); each unreviewed match it names says so in its status history. A notice
that is not ready (:func:`admin.report.takedown.not_ready`: placeholders left, nothing to
name) is refused with the reason, and nothing is recorded.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from admin.report.selection import UNREVIEWED, Selection, find, left_out
from admin.report.takedown import MAX_NOTICE_ITEMS, NoticeError, not_ready, notice
from matcher.alerts import notify
from matcher.evidence import takedowns
from matcher.settings import Settings
from matcher.sites import providers
from matcher.store import Store

SENT_STATUSES = ("new", "confirmed")
"""Matches in these statuses become ``takedown_sent`` when their notice is sent."""


class SendError(Exception):
    """A notice that was not sent (nothing to send, placeholders left, no contact, the
    email refused)."""


@dataclass(frozen=True)
class Sent:
    """A notice sent: its id, site, URLs named, how and to whom, the site's provider, and
    how many unreviewed matches it named (by the operator's choice)."""

    notice_id: Any
    site: str
    urls: int
    via: str
    to: str
    provider: str
    unreviewed: int = 0

    def line(self) -> str:
        """What the operator is told, after "notice N" or alone."""
        how = f"emailed to {self.to}" if self.via == "email" else "marked sent"
        named = f"{self.urls} URL(s)"
        if self.unreviewed:
            named += f", {self.unreviewed} unreviewed match(es) named by choice"
        return f"to {self.site} ({self.provider}) {how}: {named}"


def site_provider(store: Store, site: str, url: str) -> str:
    """The site's provider: as kept (an operator's word, or resolved earlier), else guessed
    from ``url``'s address now and kept (:func:`matcher.sites.providers.provider_of`)."""
    kept = store.takedowns.contact(site)["provider"]
    if kept:
        return kept
    guessed = providers.provider_of(url)
    store.takedowns.set_contact(site, provider=guessed, provider_from="resolved")
    return guessed


def send_notice(
    store: Store,
    settings: Settings,
    selection: Selection,
    *,
    email: bool,
    by: str,
    at: datetime,
) -> Sent:
    """Send (or mark sent) the notice of ``selection``'s site (see the module docstring)."""
    site = str(selection.filters.site or "")
    if not site:
        raise SendError("a notice names one site")
    selection = replace(selection, notice=True)  # whatever the caller parsed: a notice's
    fields = ("url", "work_id", "page_id", "status")
    matches = list(find(store, selection, MAX_NOTICE_ITEMS, fields))
    if not matches:
        raise SendError(f"{_nothing(store, selection, site)}: nothing to notify")
    done = notice(store, selection, html=False)
    why = not_ready(done)
    if why:
        raise SendError(f"not ready: {why}")
    to = ""
    if email:
        to = _email(store, settings, site, done.text)
    provider = site_provider(store, site, str(matches[0]["url"]))
    statuses = Counter(str(m.get("status")) for m in matches)
    notice_id, urls = takedowns.open_cases(
        store, site, matches, sent_at=at, via="email" if email else "marked", to=to,
        provider=provider, days=settings.takedown_days, statuses=dict(statuses),
        unreviewed_chosen=selection.unreviewed,
    )  # fmt: skip
    for m in matches:
        if m.get("status") in SENT_STATUSES:
            note = f"notice {notice_id}"
            if m.get("status") == UNREVIEWED:
                note += " (named unreviewed, by choice)"
            store.matches.set_status(str(m["_id"]), "takedown_sent", note, by)
    via = "email" if email else "marked"
    return Sent(notice_id, site, urls, via, to, provider, statuses[UNREVIEWED])


def _nothing(store: Store, selection: Selection, site: str) -> str:
    """Why a notice's selection names no match: none confirmed, unreviewed ones left out."""
    waiting = left_out(store, selection)
    if waiting:
        return (
            f"no confirmed match on {site}; {waiting} unreviewed match(es) are left out: "
            "review them, or choose to name them unreviewed"
        )
    return f"no selected match on {site}"


def _email(store: Store, settings: Settings, site: str, text: str) -> str:
    """Email the notice to the site's contact; the address, or :class:`SendError`."""
    smtp = settings.smtp
    if smtp is None:
        raise SendError(notify.NO_SMTP)
    to = store.takedowns.contact(site)["contact"]
    if not to:
        raise SendError(f"no contact for {site}: set one (fptrack takedowns contact)")
    message = EmailMessage()
    message["Subject"] = f"侵权通知 / Notice of copyright infringement: {site}"
    message["From"] = smtp.sender
    message["To"] = to
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=smtp.sender.rpartition("@")[2] or None)
    message.set_content(text)
    outcome = notify.send_email(smtp, [to], message, settings.alert_timeout)
    if not outcome.ok:
        raise SendError(f"the notice was not sent to {to}: {outcome.error}")
    return to


__all__ = ["NoticeError", "SendError", "Sent", "send_notice", "site_provider"]
