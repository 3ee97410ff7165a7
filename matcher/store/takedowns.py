"""Takedowns followed to the end (:mod:`matcher.evidence.takedowns`): ``notices`` (one per notice
sent: its recipient kind (:mod:`matcher.evidence.recipients`), the sites it names, time,
how and to whom, how many URLs, its matches by review status and whether the operator chose
to name unreviewed ones), ``takedown_cases`` (one per URL a notice names: its works, the
recipients told of it and when each was first, the rechecks due and made, its state) and
``site_contacts`` (per site: the address notices are emailed to, its hosting provider,
resolved or edited, the host's and registrar's abuse addresses an operator set, and the
RDAP lookup's ``hosting``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING
from pymongo.database import Database

from matcher.sites.rdap import NETWORK_FIELDS, REGISTRAR_FIELDS
from matcher.store.common import (
    StoreError,
    checked_date,
    checked_str,
    mongo_errors,
    object_id,
    site_name,
    status_name,
)
from matcher.store.recipient_kinds import RECIPIENTS

CASE_STATES = ("pending", "removed", "up", "reopened")
"""A case's state: no recheck decided yet; removed (404/410, or the page no longer copies
its works); still up (or changed and still copying); up again after a removal."""
CONTACT_FIELDS = (
    "contact", "provider", "provider_from", "host_email", "host_name", "registrar_email",
    "registrar_name",
)  # fmt: skip
"""The fields of a site's ``site_contacts`` document an operator (or the provider guess)
sets; the lookup's ``hosting`` is set apart (:meth:`Takedowns.set_hosting`)."""
MAX_CASES = 100_000
"""At most this many cases are read for the figures at once (the newest)."""
MAX_LIST = 50
"""A hosting document keeps at most this many addresses, networks and errors."""
BOOTSTRAP_NAMES = frozenset({"dns.json", "ipv4.json", "ipv6.json"})


class Takedowns:
    """The ``notices``, ``takedown_cases``, ``site_contacts`` and ``rdap_bootstrap``
    collections."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def record_notice(
        self,
        site: str,
        cases: list[dict[str, Any]],
        *,
        sent_at: datetime,
        via: str,
        to: str,
        provider: str,
        due: list[datetime],
        statuses: Mapping[str, int] | None = None,
        unreviewed_chosen: bool = False,
        recipient: str = "operator",
    ) -> ObjectId:
        """Keep a sent notice and open a case for each of ``cases`` (``url``, ``page_id``,
        ``work_ids``, ``match_ids``, ``content_hash``; ``site`` and ``provider`` when a
        notice to a host or registrar names several sites, else ``site`` and ``provider``)
        with rechecks ``due``; the notice's id. A URL of the site with a case still open is
        given the new notice's rechecks, and the ``recipient`` kind is added to those told
        of it (``recipients``; ``sent_to``: when each was first). The notice keeps its
        ``recipient``, its ``sites`` and ``providers``, ``statuses`` (its matches by review
        status) and ``unreviewed_chosen`` (whether the operator chose to name unreviewed
        matches)."""
        if recipient not in RECIPIENTS:
            raise StoreError(f"recipient must be one of {', '.join(RECIPIENTS)}")
        site, provider = site_name(site), checked_str(provider, "provider")
        of_site = [site_name(c.get("site", site)) for c in cases]
        of_provider = [checked_str(c.get("provider", provider), "provider") for c in cases]
        notice = {
            "site": site,
            "sites": sorted(set(of_site)) or [site],
            "recipient": recipient,
            "sent_at": sent_at,
            "via": checked_str(via, "via"),
            "to": checked_str(to, "to"),
            "urls": len(cases),
            "provider": provider,
            "providers": sorted(set(of_provider)) or [provider],
            "statuses": {status_name(k): int(n) for k, n in (statuses or {}).items()},
            "unreviewed_chosen": bool(unreviewed_chosen),
        }
        notice_id = self.db.notices.insert_one(notice).inserted_id
        for case, case_site, case_provider in zip(cases, of_site, of_provider, strict=True):
            url = checked_str(case["url"], "url")
            works = [object_id(str(w), "work id") for w in case["work_ids"]]
            self.db.takedown_cases.update_one(
                {"site": case_site, "url": url},
                {
                    "$set": {
                        "notice_id": notice_id,
                        "sent_at": sent_at,
                        "provider": case_provider,
                        "recipient": recipient,
                        "due": list(due),
                        "next_at": due[0] if due else None,
                        "page_id": case.get("page_id"),
                        "content_hash": checked_str(case.get("content_hash", ""), "hash"),
                        "state": "pending",
                        "removed_at": None,
                    },
                    "$addToSet": {
                        "work_ids": {"$each": works},
                        "match_ids": {"$each": list(case.get("match_ids", ()))},
                        "recipients": recipient,
                    },
                    "$min": {f"sent_to.{recipient}": sent_at},
                    "$setOnInsert": {"first_sent_at": sent_at, "checks": []},
                    "$inc": {"notices": 1},
                },
                upsert=True,
            )
        return notice_id

    @mongo_errors
    def due_cases(self, at: datetime, limit: int) -> list[dict]:
        """Up to ``limit`` cases whose next recheck is due at ``at``, the most overdue first."""
        found = self.db.takedown_cases.find({"next_at": {"$lte": at}}).sort("next_at", ASCENDING)
        return list(found.limit(int(limit)))

    @mongo_errors
    def record_check(
        self, case: dict[str, Any], check: dict[str, Any], state: str, at: datetime
    ) -> bool:
        """Keep one recheck of ``case`` (as read by :meth:`due_cases`) and its new ``state``;
        its next recheck is the next time due after ``at``. False when another process
        recorded it first (the case's ``next_at`` moved)."""
        if state not in CASE_STATES:
            raise ValueError(f"not a case state: {state!r}")
        later = [d for d in case.get("due", ()) if d > at]
        change: dict[str, Any] = {"state": state, "next_at": later[0] if later else None}
        change["last_check_at"] = at
        if state == "removed" and case.get("state") != "removed":
            change["removed_at"] = at
        if state == "reopened":
            change["reopened_at"] = at
        result = self.db.takedown_cases.update_one(
            {"site": case["site"], "url": case["url"], "next_at": case["next_at"]},
            {"$set": change, "$push": {"checks": check}},
        )
        return result.modified_count == 1

    @mongo_errors
    def cases(
        self, *, site: str | None = None, since: datetime | None = None, limit: int = MAX_CASES
    ) -> list[dict]:
        """Cases, newest notice first (of one site; sent since ``since``)."""
        query: dict[str, Any] = {}
        if site:
            query["site"] = site_name(site)
        if since is not None:
            query["sent_at"] = {"$gte": since}
        found = self.db.takedown_cases.find(query).sort("sent_at", DESCENDING)
        return list(found.limit(int(limit)))

    @mongo_errors
    def notices(self, limit: int = 1000) -> list[dict]:
        return list(self.db.notices.find({}).sort("sent_at", DESCENDING).limit(int(limit)))

    @mongo_errors
    def contact(self, site: str) -> dict[str, Any]:
        """A site's ``contact`` (email), ``provider``, the host's and registrar's abuse
        address and name an operator set (``host_email``, ``host_name``,
        ``registrar_email``, ``registrar_name``; "" when unset) and the lookup's
        ``hosting`` ({} when not looked up)."""
        doc = self.db.site_contacts.find_one({"_id": site_name(site)}) or {}
        kept = {k: doc.get(k, "") for k in CONTACT_FIELDS if k != "provider_from"}
        return {**kept, "hosting": doc.get("hosting") or {}}

    @mongo_errors
    def contacts(self, sites: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        query = {} if sites is None else {"_id": {"$in": [site_name(s) for s in sites]}}
        return {d["_id"]: d for d in self.db.site_contacts.find(query)}

    @mongo_errors
    def set_contact(self, site: str, **fields: str) -> None:
        """Set a site's fields of :data:`CONTACT_FIELDS`: ``contact``, ``provider`` and
        ``provider_from`` (``resolved`` from its address, or ``edited`` by an operator:
        never replaced by a resolved one), and the abuse addresses and names an operator
        set for its host and registrar (never replaced by a lookup, which writes
        ``hosting`` only)."""
        change = {k: checked_str(v, k) for k, v in fields.items() if k in CONTACT_FIELDS}
        self.db.site_contacts.update_one({"_id": site_name(site)}, {"$set": change}, upsert=True)

    @mongo_errors
    def set_resolved_provider(self, site: str, provider: str) -> bool:
        """Make ``provider`` the site's provider, resolved, unless an operator edited it
        (``provider_from`` ``edited``); whether it was set."""
        result = self.db.site_contacts.update_one(
            {"_id": site_name(site), "provider_from": {"$ne": "edited"}},
            {"$set": {"provider": checked_str(provider, "provider"), "provider_from": "resolved"}},
        )
        return result.matched_count == 1

    @mongo_errors
    def set_hosting(self, site: str, hosting: Mapping[str, Any]) -> None:
        """Keep who hosts the site (:mod:`matcher.sites.hosting`) on its contacts document:
        ``looked_up_at``, ``attempted_at``, ``host``, ``addresses``, ``networks`` (each of
        :data:`NETWORK_FIELDS`), ``domain``, ``registrar`` (:data:`REGISTRAR_FIELDS`) and
        ``errors``, every value a string (or a date)."""
        doc = {
            "looked_up_at": checked_date(hosting["looked_up_at"]),
            "attempted_at": checked_date(hosting.get("attempted_at", hosting["looked_up_at"])),
            "host": checked_str(hosting.get("host", ""), "host"),
            "addresses": [checked_str(a, "address") for a in hosting.get("addresses", ())],
            "networks": [
                {k: checked_str(n.get(k, ""), k) for k in NETWORK_FIELDS}
                for n in hosting.get("networks", ())
            ],
            "domain": checked_str(hosting.get("domain", ""), "domain"),
            "registrar": {
                k: checked_str((hosting.get("registrar") or {}).get(k, ""), k)
                for k in REGISTRAR_FIELDS
            },
            "errors": [checked_str(e, "error") for e in hosting.get("errors", ())],
        }
        for name in ("addresses", "networks", "errors"):
            doc[name] = doc[name][:MAX_LIST]
        self.db.site_contacts.update_one(
            {"_id": site_name(site)}, {"$set": {"hosting": doc}}, upsert=True
        )

    @mongo_errors
    def hosting(self, site: str) -> dict[str, Any] | None:
        """Who hosts the site, as kept by :meth:`set_hosting` (None: never looked up)."""
        doc = self.db.site_contacts.find_one({"_id": site_name(site)}, {"hosting": 1}) or {}
        return doc.get("hosting")

    @mongo_errors
    def hosting_due(self, sites: Iterable[str], before: datetime, limit: int) -> list[str]:
        """Those of ``sites`` whose hosting was never looked up or last tried before
        ``before``: the never looked up first, then the longest waiting; at most ``limit``."""
        names = [site_name(s) for s in sites]
        fields = {"hosting.attempted_at": 1}
        tried = {
            d["_id"]: (d.get("hosting") or {}).get("attempted_at")
            for d in self.db.site_contacts.find({"_id": {"$in": names}}, fields)
        }
        due = [n for n in names if tried.get(n) is None or tried[n] < before]
        due.sort(key=lambda n: (tried.get(n) is not None, tried.get(n) or before, n))
        return due[: int(limit)]

    @mongo_errors
    def bootstrap_file(self, name: str) -> dict[str, Any] | None:
        """A kept RDAP bootstrap file (``body``, ``fetched_at``), None when none is kept."""
        if name not in BOOTSTRAP_NAMES:
            raise ValueError(f"not an RDAP bootstrap file: {name!r}")
        return self.db.rdap_bootstrap.find_one({"_id": name})

    @mongo_errors
    def save_bootstrap_file(self, name: str, body: str, fetched_at: datetime) -> None:
        """Keep the RDAP bootstrap file ``name`` as fetched at ``fetched_at``."""
        if name not in BOOTSTRAP_NAMES:
            raise ValueError(f"not an RDAP bootstrap file: {name!r}")
        self.db.rdap_bootstrap.update_one(
            {"_id": name},
            {"$set": {"body": checked_str(body, "body"), "fetched_at": checked_date(fetched_at)}},
            upsert=True,
        )
