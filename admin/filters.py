"""The match list's filters: request arguments into typed values, then a MongoDB filter.

Every value is parsed and checked (a site name against :data:`matcher.sites.site_config.NAME`, a
work
id as an ObjectId, dates as ``YYYY-MM-DD``, a score as a number in [0, 1], a status from
:data:`matcher.store.STATUSES`); the filter is then built by
:meth:`matcher.store.matches.Matches.match_filter` from those values only, so nothing a
user types can become a MongoDB operator. A bad value is a :class:`FilterError` (400).

Every combination is served by an index of ``matches`` (:data:`matcher.store.INDEXES`):
the equality fields (``site``, ``work_id``, ``status``) then ``first_seen``, which the list
is sorted and paged by; ``score`` and ``active`` are checked on the documents the index
finds. ``tests/admin/test_match_list_indexes.py`` checks it for every combination.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId
from bson.errors import InvalidId

from matcher.errors import MatcherError
from matcher.store.common import site_name, status_name

PAGE_SIZE = 50
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
EQUALITY_FIELDS = ("site", "work_id", "status")


class FilterError(MatcherError, ValueError):
    """A filter value that cannot be used."""


@dataclass(frozen=True)
class MatchFilters:
    site: str | None = None
    work: str | None = None
    since: str | None = None
    until: str | None = None
    min_score: float | None = None
    status: str | None = None

    @classmethod
    def parse(cls, args: Any) -> MatchFilters:
        """From request arguments (a ``MultiDict``); empty values mean no filter."""

        def one(name: str) -> str | None:
            value = args.get(name, "")
            return value.strip() or None if isinstance(value, str) else None

        site, work, status = one("site"), one("work"), one("status")
        since, until, score = one("since"), one("until"), one("min_score")
        try:
            if site is not None:
                site = site_name(site)
            if status is not None:
                status = status_name(status)
            if work is not None:
                ObjectId(work)
        except (MatcherError, InvalidId, TypeError) as exc:
            raise FilterError(f"bad filter: {exc}") from exc
        for name, value in (("since", since), ("until", until)):
            if value is not None:
                _day(value, name)
        min_score = None
        if score is not None:
            try:
                min_score = float(score)
            except ValueError:
                raise FilterError("min_score must be a number from 0 to 1") from None
            if not 0.0 <= min_score <= 1.0:
                raise FilterError("min_score must be a number from 0 to 1")
        return cls(site, work, since, until, min_score, status)

    def criteria(self) -> dict[str, Any]:
        """The filters as arguments of the store's match queries
        (:meth:`matcher.store.matches.Matches.match_filter`; active matches only)."""
        until = _day(self.until, "until") + timedelta(days=1) if self.until else None
        return {
            "site": self.site,
            "work_id": self.work,
            "since": _day(self.since, "since") if self.since else None,
            "until": until,
            "status": self.status,
            "min_score": None if self.min_score is None else float(self.min_score),
        }

    def args(self) -> dict[str, str]:
        """The filters as request arguments (for links to other pages of the list)."""
        return {k: str(v) for k, v in asdict(self).items() if v is not None}


FIRST_YEAR, LAST_YEAR = 1900, 9998
"""The years a date filter takes (the day after the last must still be a date)."""


def _day(value: str, name: str) -> datetime:
    try:
        day = datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        raise FilterError(f"{name} must be a date YYYY-MM-DD, got {value!r}") from None
    if not FIRST_YEAR <= day.year <= LAST_YEAR:
        raise FilterError(f"{name} must be a date from {FIRST_YEAR} to {LAST_YEAR}, got {value!r}")
    return day.replace(tzinfo=UTC)


def parse_cursor(after: str | None) -> tuple[datetime, ObjectId] | None:
    """The ``(first_seen, id)`` of a page cursor ``<first_seen ms>-<id>`` (None: none)."""
    if not after:
        return None
    stamp, _, oid = after.partition("-")
    try:
        when = EPOCH + timedelta(milliseconds=int(stamp))
        last = ObjectId(oid)
    except (ValueError, InvalidId, OverflowError, OSError):
        raise FilterError("bad page cursor") from None
    return when, last


def cursor_of(match: dict[str, Any]) -> str:
    when = match["first_seen"]
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return f"{(when - EPOCH) // timedelta(milliseconds=1)}-{match['_id']}"
