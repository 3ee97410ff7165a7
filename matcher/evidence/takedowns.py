"""Takedowns followed to the end: a notice sent starts scheduled rechecks of every URL it
names, each recheck is verified, and the figures per site and per hosting provider say
what to escalate.

- **Sent.** :func:`open_cases` keeps the notice and opens one case per URL it names (its
  works and match ids; :mod:`matcher.store.takedowns`), with rechecks due
  ``FPTRACK_TAKEDOWN_RECHECKS`` days after the notice (default 1, 3, 7 and 14). A URL whose
  case is open gets the new notice's rechecks.
- **Rechecked.** Beat's ``takedowns:recheck`` (every ``FPTRACK_TAKEDOWN_RECHECK_EVERY``
  seconds) runs :func:`recheck_due`: each due URL is fetched once (:mod:`crawler.one_page`),
  and the outcome is ``gone`` (404 or 410), ``no_copy`` (the page answers but no longer
  copies any of the case's works: each verified on all its segments read from the store,
  :meth:`matcher.matching.engine.Engine.still_copies`, never assumed from an index), ``copies`` (it
  still copies one: ``changed`` when its text differs from the one noticed) or
  ``unreachable`` (no answer, or another status: the case keeps its state).
- **State.** ``gone`` and ``no_copy`` make a case ``removed`` (``removed_at`` the first
  recheck that saw it so; a page gone is marked so on its stored page, as a crawl marks it,
  and its match view says "removed since" until a recheck finds it back); ``copies`` and
  ``changed`` make it ``up``, or ``reopened`` when it was removed before: a copy that comes
  back reopens the case, and is rechecked at the times still due.
- **Recipients.** A notice goes to one recipient (:mod:`matcher.evidence.recipients`: the
  site's operator, its host's or registrar's abuse desk, or the search engines' delisting
  forms); a URL keeps one case whatever the recipients told of it, which records each of
  them (``recipients``) and when each was first told (``sent_to``).
- **Figures** (:func:`figures`), per site, per provider and per recipient kind: notices
  sent, URLs named, URLs rechecked, removed, the removal rate (removed / rechecked), the
  median days from notice to removal, and the URLs still up (or up again) ``escalate_days``
  after their latest notice, with the next recipient to tell: the list to escalate.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from matcher.evidence.recipients import RECIPIENTS, next_recipient, recipient_of, sent_to
from matcher.store import Store

log = logging.getLogger(__name__)

RECHECK_BATCH = 500
"""At most this many due rechecks are made per run (the rest wait for the next)."""
REMOVED_KINDS = frozenset({"gone", "no_copy"})
UP_KINDS = frozenset({"copies", "changed"})
DECIDED_KINDS = REMOVED_KINDS | UP_KINDS
"""The recheck outcomes that decide a case's state (``unreachable`` keeps it)."""
UP_KINDS_STATES = frozenset({"up", "reopened"})
"""The case states of a copy still up: listed to escalate once late."""


class Fetched(Protocol):
    status: int | None
    text: str
    error: str


def due_times(sent_at: datetime, days: Iterable[float]) -> list[datetime]:
    return [sent_at + timedelta(days=d) for d in days]


def open_cases(
    store: Store,
    site: str,
    matches: Sequence[dict[str, Any]],
    *,
    sent_at: datetime,
    via: str,
    to: str,
    provider: str,
    days: Iterable[float],
    statuses: Mapping[str, int] | None = None,
    unreviewed_chosen: bool = False,
    recipient: str = "operator",
    providers: Mapping[str, str] | None = None,
) -> tuple[Any, int]:
    """Keep a notice to ``recipient`` naming the URLs of ``matches`` (match records) and open
    their cases; ``(the notice's id, how many URLs)``. A notice to a host or registrar names
    the URLs of several sites: each match's own ``site``, with its provider in
    ``providers`` (else ``provider``). ``statuses`` (the matches named, by review status)
    and ``unreviewed_chosen`` (the operator chose to name unreviewed matches) are kept with
    the notice."""
    by_url: dict[tuple[str, str], dict[str, Any]] = {}
    for m in matches:
        where = str(m.get("site") or site)
        case = by_url.setdefault(
            (where, str(m["url"])),
            {
                "url": str(m["url"]),
                "site": where,
                "provider": (providers or {}).get(where, provider),
                "page_id": m.get("page_id"),
                "work_ids": [],
                "match_ids": [],
            },
        )
        case["work_ids"].append(m["work_id"])
        case["match_ids"].append(m["_id"])
    pages = store.pages.pages_by_id(
        [c["page_id"] for c in by_url.values() if c["page_id"] is not None]
    )
    for case in by_url.values():
        page = pages.get(case["page_id"]) or {}
        case["content_hash"] = str(page.get("content_hash", ""))
    notice = store.takedowns.record_notice(
        site, list(by_url.values()), sent_at=sent_at, via=via, to=to, provider=provider,
        due=due_times(sent_at, days), statuses=statuses, unreviewed_chosen=unreviewed_chosen,
        recipient=recipient,
    )  # fmt: skip
    return notice, len(by_url)


@dataclass
class Rechecked:
    """What one run of :func:`recheck_due` did, by outcome."""

    checked: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)


def outcome_of(
    fetched: Fetched, case: dict[str, Any], still_copies: Callable[[str, list[Any]], set[str]]
) -> tuple[str, str]:
    """``(kind, detail)`` of one recheck (see the module docstring)."""
    if fetched.status in (404, 410):
        return "gone", f"HTTP {fetched.status}"
    if fetched.status is None or not 200 <= fetched.status < 300 or fetched.error:
        return "unreachable", fetched.error or f"HTTP {fetched.status}"
    copied = still_copies(fetched.text, list(case.get("work_ids", ())))
    if not copied:
        return "no_copy", "the page no longer copies the work (verified on all its segments)"
    from matcher.matching.prepared import content_hash

    if case.get("content_hash") and content_hash(fetched.text) != case["content_hash"]:
        return "changed", f"still copies {len(copied)} work(s), its text changed"
    return "copies", f"still copies {len(copied)} work(s)"


def next_state(before: str, kind: str) -> str:
    """A case's state after a recheck of ``kind``.

    >>> next_state("pending", "gone"), next_state("removed", "copies")
    ('removed', 'reopened')
    >>> next_state("up", "unreachable")
    'up'
    """
    if kind in REMOVED_KINDS:
        return "removed"
    if kind in UP_KINDS:
        return "reopened" if before in ("removed", "reopened") else "up"
    return before


def recheck_due(
    store: Store,
    fetch: Callable[[str], Fetched],
    still_copies: Callable[[str, list[Any]], set[str]],
    at: datetime,
    limit: int = RECHECK_BATCH,
) -> Rechecked:
    """Recheck every case due at ``at`` (at most ``limit``)."""
    done = Rechecked()
    for case in store.takedowns.due_cases(at, limit):
        fetched = fetch(case["url"])
        kind, detail = outcome_of(fetched, case, still_copies)
        check = {"at": at, "kind": kind, "status": fetched.status, "detail": detail[:300]}
        state = next_state(case.get("state", "pending"), kind)
        if store.takedowns.record_check(case, check, state, at):
            if kind == "gone":  # the match view says "removed since", as after a crawl
                store.page_marks.mark_page_gone(case["url"], int(fetched.status or 404), at)
            elif state == "reopened":
                store.page_marks.mark_page_back(case["url"])
            done.checked += 1
            done.outcomes[kind] = done.outcomes.get(kind, 0) + 1
    if done.checked:
        log.info("takedown rechecks: %d (%s)", done.checked, done.outcomes)
    return done


def _notice_scopes(notice: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Where a notice counts: each site and provider it names (one notice to a host may name
    several), and its recipient kind."""
    for name in notice.get("sites") or [notice["site"]]:
        yield "sites", name
    for name in notice.get("providers") or [notice.get("provider") or "unknown"]:
        yield "providers", name
    yield "recipients", recipient_of(notice)


@dataclass
class Figures:
    """One site's, provider's or recipient kind's takedown figures."""

    name: str
    notices: int = 0
    urls: int = 0
    rechecked: int = 0
    removed: int = 0
    reopened: int = 0
    days_to_removal: list[float] = field(default_factory=list)
    escalate: list[dict[str, Any]] = field(default_factory=list)

    @property
    def removal_rate(self) -> float | None:
        return self.removed / self.rechecked if self.rechecked else None

    @property
    def median_days(self) -> float | None:
        return statistics.median(self.days_to_removal) if self.days_to_removal else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "notices": self.notices,
            "urls": self.urls,
            "rechecked": self.rechecked,
            "removed": self.removed,
            "reopened": self.reopened,
            "removal_rate": self.removal_rate,
            "median_days_to_removal": self.median_days,
            "still_up": len(self.escalate),
            "escalate": self.escalate,
        }


def _escalation(case: dict[str, Any], state: str) -> dict[str, Any]:
    told = sorted(sent_to(case), key=RECIPIENTS.index)
    return {
        "url": case["url"],
        "site": case["site"],
        "state": state,
        "sent_at": case.get("sent_at") or case["first_sent_at"],
        "notices": case.get("notices", 1),
        "recipients": told,
        "next_recipient": next_recipient(told),
    }


def _count_case(f: Figures, case: dict[str, Any], since: datetime | None, credited: bool) -> None:
    """Count ``case`` in ``f``: named; rechecked when a recheck decided its state since
    ``since`` (``None``: its state says so); removed, reopened and days to removal only when
    ``credited``."""
    f.urls += 1
    state = case.get("state", "pending")
    if since is None:
        decided = state != "pending"
    else:
        decided = any(
            c.get("kind") in DECIDED_KINDS and c.get("at") and c["at"] >= since
            for c in case.get("checks", ())
        )
    if decided:
        f.rechecked += 1
    if not credited:
        return
    if state == "removed":
        f.removed += 1
        if case.get("removed_at"):
            start = since or case["first_sent_at"]
            f.days_to_removal.append((case["removed_at"] - start).total_seconds() / 86400)
    if state == "reopened":
        f.reopened += 1


def figures(
    cases: Iterable[dict[str, Any]],
    notices: Iterable[dict[str, Any]],
    at: datetime,
    escalate_days: float,
) -> dict[str, list[Figures]]:
    """``{"sites": [...], "providers": [...], "recipients": [...]}`` of ``cases`` and the
    ``notices`` sent, each sorted by URLs still up, then URLs.

    Per recipient kind, a URL counts as named (and rechecked, when a recheck decided its
    state after that recipient's first notice of it) for every recipient told of it; its
    removal (and a reopening) is credited to the recipient of its latest notice before the
    removal only (a new notice makes a case pending again, so that is its latest notice's),
    with the days counted from that recipient's first notice of it: a URL the operator
    ignored and the host took down counts as removed for the host, not the operator. A
    URL still up ``escalate_days`` after its latest notice is listed to escalate, under its
    site, provider and latest recipient, with the next recipient to tell
    (:func:`matcher.evidence.recipients.next_recipient`)."""
    groups: dict[str, dict[str, Figures]] = {"sites": {}, "providers": {}, "recipients": {}}
    late = at - timedelta(days=escalate_days)
    for notice in notices:
        for scope, key in _notice_scopes(notice):
            groups[scope].setdefault(key, Figures(key)).notices += 1
    for case in cases:
        state = case.get("state", "pending")
        escalate = None
        if state in UP_KINDS_STATES and (case.get("sent_at") or case["first_sent_at"]) <= late:
            escalate = _escalation(case, state)
        for scope, key in (
            ("sites", case["site"]),
            ("providers", case.get("provider") or "unknown"),
        ):
            f = groups[scope].setdefault(key, Figures(key))
            _count_case(f, case, None, True)
            if escalate:
                f.escalate.append(escalate)
        latest = recipient_of(case)
        for kind, first in sent_to(case).items():
            f = groups["recipients"].setdefault(kind, Figures(kind))
            _count_case(f, case, first or case["first_sent_at"], kind == latest)
            if escalate and kind == latest:
                f.escalate.append(escalate)
    return {
        scope: sorted(found.values(), key=lambda f: (-len(f.escalate), -f.urls, f.name))
        for scope, found in groups.items()
    }


def stored_figures(store: Store, at: datetime, escalate_days: float) -> dict[str, list[Figures]]:
    """:func:`figures` of every case and notice the store keeps."""
    return figures(store.takedowns.cases(), store.takedowns.notices(), at, escalate_days)
