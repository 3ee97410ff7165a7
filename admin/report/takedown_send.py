"""Sending a takedown notice to its recipient (:mod:`matcher.evidence.recipients`): the
site's operator (the notice of a site's selected matches, :mod:`admin.report.takedown`), or
the abuse desk of its hosting provider or of its registrar (:mod:`admin.report.abuse_notice`:
one notice naming every site whose host, or registrar, has the same abuse address, a
section each); by email through the SMTP of the alerts (``FPTRACK_SMTP_URL``) or marked sent
by hand; and the cases that follow it (:func:`matcher.evidence.takedowns.open_cases`):
rechecks scheduled, the matches marked ``takedown_sent``. The search engines are told by an
export (:func:`export_delisting`, :mod:`admin.report.delisting`), recorded as a notice to
``search`` so its URLs are rechecked too. An email that does not go records nothing. Used
by the admin, the API and ``fptrack takedowns send`` / ``export-delisting``.

The selection is taken as a notice's (:meth:`admin.report.selection.Selection.parse` with
``notice``): matches a person confirmed, and unreviewed ones only when the operator chose
them, a choice the notice keeps (``unreviewed_chosen``, and its matches counted by status
in ``statuses``); each unreviewed match it names says so in its status history. A notice
that is not ready (:func:`admin.report.takedown.not_ready`: placeholders left, nothing to
name) is refused with the reason, and nothing is recorded. A notice to a host, a registrar
or the search engines escalates: it leaves out the URLs whose case is removed already.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any
from urllib.parse import urlsplit

from admin.filters import MatchFilters
from admin.report.abuse_notice import SiteSection, abuse_notice, subject
from admin.report.delisting import delisting_csv, delisting_rows
from admin.report.selection import UNREVIEWED, Selection, find, left_out
from admin.report.takedown import (
    MAX_NOTICE_ITEMS,
    PLACEHOLDERS,
    Notice,
    NoticeError,
    not_ready,
    notice,
    notice_details,
    notice_items,
    placeholders_in,
)
from matcher.alerts import notify
from matcher.evidence import takedowns
from matcher.evidence.recipients import EMAILED, Address, address, domain_of
from matcher.settings import Settings
from matcher.sites import providers
from matcher.store import Store

MATCH_FIELDS = ("url", "site", "work_id", "page_id", "status")
"""What a notice reads of the matches it names."""

SENT_STATUSES = ("new", "confirmed")
"""Matches in these statuses become ``takedown_sent`` when their notice is sent."""


class SendError(Exception):
    """A notice that was not sent (nothing to send, placeholders left, no contact, the
    email refused)."""


@dataclass(frozen=True)
class Sent:
    """A notice sent: its id, site (the one asked for), URLs named, how and to whom, the
    site's provider, how many unreviewed matches it named (by the operator's choice), its
    recipient kind and every site it names (several for a host or registrar)."""

    notice_id: Any
    site: str
    urls: int
    via: str
    to: str
    provider: str
    unreviewed: int = 0
    recipient: str = "operator"
    sites: tuple[str, ...] = ()

    def line(self) -> str:
        """What the operator is told, after "notice N" or alone."""
        how = {"email": f"emailed to {self.to}", "export": "exported"}.get(self.via, "marked sent")
        named = f"{self.urls} URL(s)"
        if len(self.sites) > 1:
            named += f" on {len(self.sites)} sites"
        if self.unreviewed:
            named += f", {self.unreviewed} unreviewed match(es) named by choice"
        if self.recipient == "operator":
            return f"to {self.site} ({self.provider}) {how}: {named}"
        if self.recipient == "search":
            names = ", ".join(self.sites)
            return f"to the search engines (delisting export of {names}) {how}: {named}"
        return f"to the {self.recipient} of {', '.join(self.sites)} {how}: {named}"


@dataclass(frozen=True)
class Planned:
    """A notice to one recipient before it goes: the recipient's kind and address, the
    sites it names and their selected matches, and its rendered notice."""

    recipient: str
    to: Address
    sites: tuple[str, ...]
    matches: dict[str, list[dict[str, Any]]]
    notice: Notice
    subject: str


def site_provider(store: Store, site: str, url: str) -> str:
    """The site's provider: as kept (an operator's word, or resolved earlier), else guessed
    from ``url``'s address now and kept (:func:`matcher.sites.providers.provider_of`)."""
    kept = store.takedowns.contact(site)["provider"]
    if kept:
        return kept
    guessed = providers.provider_of(url)
    store.takedowns.set_contact(site, provider=guessed, provider_from="resolved")
    return guessed


def _removed(store: Store, sites: Sequence[str] | None) -> set[tuple[str, str]]:
    """The ``(site, URL)`` of every case removed already (of ``sites``; ``None``: all)."""
    cases = store.takedowns.cases() if sites is None else [
        c for s in sites for c in store.takedowns.cases(site=s)
    ]  # fmt: skip
    return {(c["site"], c["url"]) for c in cases if c.get("state") == "removed"}


def _of_site(selection: Selection, site: str) -> Selection:
    return replace(
        selection, filters=MatchFilters.parse({**selection.filters.args(), "site": site})
    )


def same_recipient(store: Store, site: str, kind: str) -> tuple[Address, list[str]]:
    """The address of ``site``'s ``kind`` (host or registrar) and every site it is the
    address of too (the same email, in any case), ``site`` first then by name; only ``site``
    when the address is unknown."""
    contacts = store.takedowns.contacts()
    target = address(contacts.get(site, {}), kind)
    if not target.email:
        return target, [site]
    folded = target.email.casefold()
    others = sorted(
        name
        for name, doc in contacts.items()
        if name != site and address(doc, kind).email.casefold() == folded
    )
    return target, [site, *others]


def plan(
    store: Store,
    settings: Settings,
    selection: Selection,
    recipient: str,
    *,
    html: bool,
    today: date | None = None,
) -> Planned:
    """The notice of ``selection``'s site to ``recipient`` (``operator``, ``host`` or
    ``registrar``), rendered (HTML-escaped when ``html``), with the matches it names per
    site; a :class:`SendError` when ``recipient`` is not one of those, and a
    :class:`NoticeError` when the stored template cannot be used."""
    site = str(selection.filters.site or "")
    if not site:
        raise SendError("a notice names one site")
    if recipient not in EMAILED:
        raise SendError(
            f"recipient must be one of {', '.join(EMAILED)} (the search engines are told by "
            "the delisting export)"
        )
    selection = replace(selection, notice=True)  # whatever the caller parsed: a notice's
    if recipient == "operator":
        matches = list(find(store, selection, MAX_NOTICE_ITEMS, MATCH_FIELDS))
        to = address(store.takedowns.contact(site), "operator")
        done = notice(store, selection, html=html)
        title = f"侵权通知 / Notice of copyright infringement: {site}"
        return Planned(recipient, to, (site,), {site: matches} if matches else {}, done, title)
    to, group = same_recipient(store, site, recipient)
    removed = _removed(store, group)
    contacts = store.takedowns.contacts(group)
    sections, by_site, more = [], {}, False
    for name in group:
        chosen = _of_site(selection, name)
        items, over = notice_items(store, chosen)
        items = [i for i in items if (name, i["url"]) not in removed]
        matches = [
            m for m in find(store, chosen, MAX_NOTICE_ITEMS, MATCH_FIELDS)
            if (name, str(m["url"])) not in removed
        ]  # fmt: skip
        if not items or not matches:
            continue
        more = more or over
        by_site[name] = matches
        for item in items:
            item["evidence_link"] = notify.admin_link(settings.admin_url, item["match_id"])
        doc = contacts.get(name, {})
        hosting = doc.get("hosting") if isinstance(doc.get("hosting"), dict) else {}
        host = str(hosting.get("host") or urlsplit(items[0]["url"]).hostname or "")
        ips = tuple(address(doc, "host").addresses)
        sections.append(SiteSection(name, host, domain_of(doc), ips, items))
    details = notice_details(store)
    text = abuse_notice(
        recipient, to, sections, details, today or datetime.now(UTC).date(), html=html
    )
    count = sum(len(s.items) for s in sections)
    unreviewed = sum(1 for s in sections for i in s.items if i.get("status") == UNREVIEWED)
    done = Notice(text, count, more, placeholders_in(text), unreviewed)
    return Planned(recipient, to, tuple(by_site), by_site, done, subject(recipient, sections))


def send_notice(
    store: Store,
    settings: Settings,
    selection: Selection,
    *,
    email: bool,
    by: str,
    at: datetime,
    recipient: str = "operator",
) -> Sent:
    """Send (or mark sent) the notice of ``selection``'s site to ``recipient`` (see the
    module docstring)."""
    site = str(selection.filters.site or "")
    planned = plan(store, settings, selection, recipient, html=False)
    if site not in planned.matches:
        chosen = replace(selection, notice=True)
        if recipient != "operator" and next(find(store, chosen, 1, ("url",)), None):
            raise SendError(f"every URL of {site} is removed already: nothing to escalate")
        raise SendError(f"{_nothing(store, chosen, site)}: nothing to notify")
    why = not_ready(planned.notice)
    if why:
        raise SendError(f"not ready: {why}")
    to = planned.to.email if recipient != "operator" else ""
    if email:
        to = _email(settings, site, planned, recipient)
    via = "email" if email else "marked"
    return _record(store, settings, planned, selection, via=via, to=to, by=by, at=at)


def _record(
    store: Store,
    settings: Settings,
    planned: Planned,
    selection: Selection,
    *,
    via: str,
    to: str,
    by: str,
    at: datetime,
) -> Sent:
    """Keep the notice ``planned`` as sent, open its cases and mark its matches sent."""
    matches = [m for found in planned.matches.values() for m in found]
    site = planned.sites[0]
    provider_of = {
        name: site_provider(store, name, str(found[0]["url"]))
        for name, found in planned.matches.items()
    }
    statuses = Counter(str(m.get("status")) for m in matches)
    notice_id, urls = takedowns.open_cases(
        store, site, matches, sent_at=at, via=via, to=to, provider=provider_of[site],
        days=settings.takedown_days, statuses=dict(statuses),
        unreviewed_chosen=selection.unreviewed, recipient=planned.recipient,
        providers=provider_of,
    )  # fmt: skip
    for m in matches:
        if m.get("status") in SENT_STATUSES:
            note = f"notice {notice_id}"
            if m.get("status") == UNREVIEWED:
                note += " (named unreviewed, by choice)"
            store.matches.set_status(str(m["_id"]), "takedown_sent", note, by)
    return Sent(
        notice_id, str(selection.filters.site or site), urls, via, to, provider_of[site],
        statuses[UNREVIEWED], planned.recipient, planned.sites,
    )  # fmt: skip


@dataclass(frozen=True)
class Exported:
    """A delisting export: its CSV text, rows, and the notice kept for it (``sent``)."""

    csv: str
    rows: int
    sent: Sent


DELISTING_FIELDS = ("url", "site", "work_id", "work_title", "first_seen", "page_id", "status")


def export_delisting(
    store: Store, settings: Settings, selection: Selection, *, by: str, at: datetime
) -> Exported:
    """The search engines' delisting export of the selection's matches (every site, or the
    selection's one), kept as a notice to ``search`` (``via`` ``export``) whose URLs are
    rechecked as any notice's: :mod:`admin.report.delisting`. At most
    :data:`~admin.report.takedown.MAX_NOTICE_ITEMS` matches (the newest): a
    :class:`SendError` when there are more (narrow the selection), none, or the rights
    holder is not set."""
    selection = replace(selection, notice=True)
    site = selection.filters.site
    found = list(find(store, selection, MAX_NOTICE_ITEMS + 1, DELISTING_FIELDS))
    if len(found) > MAX_NOTICE_ITEMS:
        raise SendError(
            f"more than {MAX_NOTICE_ITEMS:,} matches: narrow the selection (--site, --since) "
            "and export several times"
        )
    removed = _removed(store, [site] if site else None)
    found = [m for m in found if (str(m["site"]), str(m["url"])) not in removed]
    if not found:
        where = f" on {site}" if site else ""
        raise SendError(f"no confirmed match still up{where}: nothing to export")
    works = {}
    for work_id in {str(m["work_id"]) for m in found}:
        works[work_id] = (
            store.works.get_work(work_id, {"title": 1, "owner": 1, "source": 1, "key": 1}) or {}
        )
    holder = notice_details(store)["rights_holder"]
    rows = delisting_rows(found, works, holder or PLACEHOLDERS["rights_holder"], settings.admin_url)
    if any(r["rights_holder"] == PLACEHOLDERS["rights_holder"] for r in rows):
        raise SendError(
            "not ready: a work has no owner and the rights holder is not set: an admin sets "
            "it on the takedown template page first"
        )
    by_site: dict[str, list[dict[str, Any]]] = {}
    for m in found:
        by_site.setdefault(str(m["site"]), []).append(m)
    planned = Planned(
        "search", address({}, "search"), tuple(sorted(by_site)), dict(sorted(by_site.items())),
        Notice("", len(rows), False), "",
    )  # fmt: skip
    sent = _record(store, settings, planned, selection, via="export", to="", by=by, at=at)
    return Exported(delisting_csv(rows), len(rows), sent)


def _nothing(store: Store, selection: Selection, site: str) -> str:
    """Why a notice's selection names no match: none confirmed, unreviewed ones left out."""
    waiting = left_out(store, selection)
    if waiting:
        return (
            f"no confirmed match on {site}; {waiting} unreviewed match(es) are left out: "
            "review them, or choose to name them unreviewed"
        )
    return f"no selected match on {site}"


def _email(settings: Settings, site: str, planned: Planned, recipient: str) -> str:
    """Email the notice ``planned`` to its recipient; the address, or :class:`SendError`."""
    smtp = settings.smtp
    if smtp is None:
        raise SendError(notify.NO_SMTP)
    to = planned.to.email
    if not to:
        if recipient == "operator":
            raise SendError(f"no contact for {site}: set one (fptrack takedowns contact)")
        raise SendError(
            f"no {recipient} abuse address for {site}: set one (fptrack takedowns contact "
            f"{site} --to {recipient}=ADDR), or look it up"
        )
    message = EmailMessage()
    message["Subject"] = planned.subject
    message["From"] = smtp.sender
    message["To"] = to
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=smtp.sender.rpartition("@")[2] or None)
    message.set_content(planned.notice.text)
    outcome = notify.send_email(smtp, [to], message, settings.alert_timeout)
    if not outcome.ok:
        raise SendError(f"the notice was not sent to {to}: {outcome.error}")
    return to


__all__ = [
    "Exported",
    "NoticeError",
    "Planned",
    "SendError",
    "Sent",
    "export_delisting",
    "plan",
    "send_notice",
    "site_provider",
]
