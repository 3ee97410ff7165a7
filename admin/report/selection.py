"""The matches a report covers, and their counts by site and by work.

A selection is the match list's filters (:class:`admin.filters.MatchFilters`: ``since``/
``until`` dates, ``site``, ``work``, ``min_score``, ``status``; a bad value is a
:class:`admin.filters.FilterError`) with one addition: ``status`` may be empty, meaning the
infringing statuses :data:`INFRINGING_STATUSES` (``new``, ``confirmed``, ``takedown_sent``:
every status but ``false_positive`` and ``authorised``, as the dashboard's tallies count
them), or ``all`` (:data:`EVERY_STATUS`), meaning any status. Only active matches are
reported. Used by the admin's reports pages and the API's report routes alike.

A takedown notice's selection (``notice``) names only matches a person confirmed:
:data:`NOTICE_STATUSES` (``confirmed``, and ``takedown_sent``: named by a notice sent
before), within the statuses the filters select. Unreviewed (``new``) matches are named only
by an explicit choice, the ``unreviewed`` argument (``1`` or ``true``), which the notice
records when it is sent (:mod:`admin.report.takedown_send`); ``false_positive`` and
``authorised`` matches are never named.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from admin.filters import FilterError, MatchFilters
from matcher.errors import MatcherError
from matcher.store import STATUSES, Store
from matcher.store.tallies import NOT_INFRINGING

INFRINGING_STATUSES = tuple(s for s in STATUSES if s not in NOT_INFRINGING)
"""The statuses a report selects by default: ``new``, ``confirmed``, ``takedown_sent``."""
EVERY_STATUS = "all"
NOTICE_STATUSES = ("confirmed", "takedown_sent")
"""The statuses a takedown notice names by default: what a person confirmed."""
UNREVIEWED = "new"
"""The status a notice names only when the operator chooses to (``unreviewed``)."""
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})
MAX_SUMMARY_MATCHES = 100_000
MAX_EXPORT_ROWS = 100_000


class SelectionTooLarge(MatcherError, ValueError):
    """A selection with more matches than a report may hold (narrow it)."""


@dataclass(frozen=True)
class Selection:
    """The matches a report covers: the match list's filters and the status choice; for a
    takedown notice (``notice``), only what a person confirmed, and the unreviewed matches
    too when ``unreviewed`` was chosen (see the module docstring)."""

    filters: MatchFilters
    every_status: bool = False
    notice: bool = False
    unreviewed: bool = False

    @classmethod
    def parse(
        cls, args: Mapping[str, Any], site: str | None = None, *, notice: bool = False
    ) -> Selection:
        """From request arguments; ``site`` (a path part) replaces the ``site`` argument;
        ``notice``: a takedown notice's selection, which reads ``unreviewed`` too. A bad
        value is a :class:`admin.filters.FilterError`."""
        values = {k: v for k, v in args.items() if k in MatchFilters.__dataclass_fields__}
        status = values.get("status", "")
        every = isinstance(status, str) and status.strip() == EVERY_STATUS
        if every:
            values.pop("status")
        filters = MatchFilters.parse(values)
        if site is not None:
            filters = MatchFilters.parse({**filters.args(), "site": site})
        unreviewed = notice and _flag(args.get("unreviewed", ""), "unreviewed")
        return cls(filters, every, notice, unreviewed)

    @property
    def chosen(self) -> tuple[str, ...]:
        """The statuses the filters select (before a notice's own restriction)."""
        if self.filters.status is not None:
            return (self.filters.status,)
        return STATUSES if self.every_status else INFRINGING_STATUSES

    @property
    def statuses(self) -> tuple[str, ...]:
        """The statuses selected: for a notice, those of :data:`NOTICE_STATUSES` (and
        :data:`UNREVIEWED` when chosen) among the filters' choice."""
        if not self.notice:
            return self.chosen
        named = (*NOTICE_STATUSES, UNREVIEWED) if self.unreviewed else NOTICE_STATUSES
        return tuple(s for s in self.chosen if s in named)

    @property
    def status_arg(self) -> str:
        return self.filters.status or (EVERY_STATUS if self.every_status else "")

    def criteria(self) -> dict[str, Any]:
        """The selection as arguments of the store's match queries."""
        criteria = self.filters.criteria()
        if self.notice or (self.filters.status is None and not self.every_status):
            criteria.update(status=None, statuses=list(self.statuses))
        return criteria

    def args(self, **changes: str | None) -> dict[str, str]:
        """The selection as request arguments, with ``changes`` (``None`` drops one)."""
        out = self.filters.args()
        if self.every_status:
            out["status"] = EVERY_STATUS
        if self.unreviewed:
            out["unreviewed"] = "1"
        out.update(changes)
        return {k: v for k, v in out.items() if v is not None}

    def period(self) -> str:
        since, until = self.filters.since, self.filters.until
        if since and until:
            return f"{since} – {until}"
        if since:
            return f"{since} –"
        return f"– {until}" if until else ""

    def label(self) -> str:
        """A file name part (ASCII: site names and dates are)."""
        parts = [self.filters.site, self.filters.since, self.filters.until]
        return "-".join(p for p in parts if p) or "all"


def _flag(value: Any, name: str) -> bool:
    """A yes/no request argument (``1``, ``true``, ``yes``, ``on``; ``0``, ``false``...)."""
    word = value.strip().lower() if isinstance(value, str) else None
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise FilterError(f"{name} must be 1 or 0 (true or false), got {value!r}")


def left_out(store: Store, selection: Selection) -> int:
    """How many unreviewed matches a notice's selection leaves out (those it would name
    if ``unreviewed`` were chosen); 0 for any other selection."""
    if not selection.notice or selection.unreviewed or UNREVIEWED not in selection.chosen:
        return 0
    criteria = {**selection.filters.criteria(), "status": UNREVIEWED}
    return store.matches.count(active_only=True, **criteria)


def find(
    store: Store, selection: Selection, limit: int, fields: tuple[str, ...] = ()
) -> Iterator[dict[str, Any]]:
    """The selected matches, newest first: ``fields`` only, else all but their scores."""
    without = () if fields else ("scores",)
    return store.matches.find_matches(
        limit=limit, fields=fields, without=without, **selection.criteria()
    )


def export_rows(store: Store, selection: Selection) -> list[dict[str, Any]]:
    """Every selected match for an export; :class:`SelectionTooLarge` over
    :data:`MAX_EXPORT_ROWS`."""
    rows = list(find(store, selection, MAX_EXPORT_ROWS + 1))
    if len(rows) > MAX_EXPORT_ROWS:
        raise SelectionTooLarge(f"more than {MAX_EXPORT_ROWS:,} matches: narrow the selection")
    return rows


@dataclass
class Summary:
    total: int
    capped: bool
    by_site: list[tuple[str, int]]
    by_work: list[tuple[str, str, int]]


def summarise(store: Store, selection: Selection) -> Summary:
    """Counts by site and by work of the first :data:`MAX_SUMMARY_MATCHES` selected matches."""
    fields = ("site", "work_id", "work_title")
    sites: Counter[str] = Counter()
    works: Counter[str] = Counter()
    titles: dict[str, str] = {}
    total = 0
    for match in find(store, selection, MAX_SUMMARY_MATCHES + 1, fields):
        if total == MAX_SUMMARY_MATCHES:
            return _summary(total, True, sites, works, titles)
        total += 1
        sites[str(match.get("site", ""))] += 1
        work = str(match.get("work_id", ""))
        works[work] += 1
        titles.setdefault(work, str(match.get("work_title", "")))
    return _summary(total, False, sites, works, titles)


def _summary(
    total: int, capped: bool, sites: Counter[str], works: Counter[str], titles: dict[str, str]
) -> Summary:
    by_site = sorted(sites.items(), key=lambda kv: (-kv[1], kv[0]))
    by_work = [(w, titles[w], n) for w, n in sorted(works.items(), key=lambda kv: (-kv[1], kv[0]))]
    return Summary(total, capped, by_site, by_work)


def periods(today: date, selection: Selection) -> list[tuple[str, dict[str, str]]]:
    """Quick periods (label, request arguments) keeping the rest of the selection."""
    first = today.replace(day=1)
    last_month_end = first - timedelta(days=1)
    spans = [
        ("last 7 days", today - timedelta(days=6), today),
        ("last 30 days", today - timedelta(days=29), today),
        ("this month", first, today),
        ("last month", last_month_end.replace(day=1), last_month_end),
        ("this year", today.replace(month=1, day=1), today),
        ("all time", None, None),
    ]
    return [
        (
            name,
            selection.args(
                since=since.isoformat() if since else None,
                until=until.isoformat() if until else None,
            ),
        )
        for name, since, until in spans
    ]
