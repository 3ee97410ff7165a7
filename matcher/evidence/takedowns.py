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
- **Figures** (:func:`figures`), per site and per provider: notices sent, URLs named, URLs
  rechecked, removed, the removal rate (removed / rechecked), the median days from notice
  to removal, and the URLs still up (or up again) ``escalate_days`` after their notice: the
  list to escalate.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from matcher.store import Store

log = logging.getLogger(__name__)

RECHECK_BATCH = 500
"""At most this many due rechecks are made per run (the rest wait for the next)."""
REMOVED_KINDS = frozenset({"gone", "no_copy"})
UP_KINDS = frozenset({"copies", "changed"})


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
) -> tuple[Any, int]:
    """Keep a notice naming the URLs of ``matches`` (match records) and open their cases;
    ``(the notice's id, how many URLs)``. ``statuses`` (the matches named, by review status)
    and ``unreviewed_chosen`` (the operator chose to name unreviewed matches) are kept with
    the notice."""
    by_url: dict[str, dict[str, Any]] = {}
    for m in matches:
        case = by_url.setdefault(
            str(m["url"]),
            {"url": str(m["url"]), "page_id": m.get("page_id"), "work_ids": [], "match_ids": []},
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


def _scopes(doc: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return (("sites", doc["site"]), ("providers", doc.get("provider") or "unknown"))


@dataclass
class Figures:
    """One site's or provider's takedown figures."""

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


def figures(
    cases: Iterable[dict[str, Any]],
    notices: Iterable[dict[str, Any]],
    at: datetime,
    escalate_days: float,
) -> dict[str, list[Figures]]:
    """``{"sites": [...], "providers": [...]}`` of ``cases`` and the ``notices`` sent, each
    sorted by URLs still up, then URLs."""
    groups: dict[str, dict[str, Figures]] = {"sites": {}, "providers": {}}
    late = at - timedelta(days=escalate_days)
    for notice in notices:
        for scope, key in _scopes(notice):
            groups[scope].setdefault(key, Figures(key)).notices += 1
    for case in cases:
        for scope, key in _scopes(case):
            f = groups[scope].setdefault(key, Figures(key))
            f.urls += 1
            state = case.get("state", "pending")
            if state != "pending":
                f.rechecked += 1
            if state == "removed":
                f.removed += 1
                if case.get("removed_at"):
                    seconds = (case["removed_at"] - case["first_sent_at"]).total_seconds()
                    f.days_to_removal.append(seconds / 86400)
            if state == "reopened":
                f.reopened += 1
            if state in ("up", "reopened") and case["first_sent_at"] <= late:
                f.escalate.append(
                    {
                        "url": case["url"],
                        "site": case["site"],
                        "state": state,
                        "sent_at": case["first_sent_at"],
                        "notices": case.get("notices", 1),
                    }
                )
    return {
        scope: sorted(found.values(), key=lambda f: (-len(f.escalate), -f.urls, f.name))
        for scope, found in groups.items()
    }


def stored_figures(store: Store, at: datetime, escalate_days: float) -> dict[str, list[Figures]]:
    """:func:`figures` of every case and notice the store keeps."""
    return figures(store.takedowns.cases(), store.takedowns.notices(), at, escalate_days)
