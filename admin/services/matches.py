"""Matches: the list with its filters and keyset pages, one match with its evidence and the
texts around it, the exchange it was found in, and reviews of one match or many.

Used by the admin's match pages (:mod:`admin.web.matches`), the API's match routes
(:mod:`admin.web.api.matches`) and ``fptrack matches`` (:mod:`admin.commands.matches`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from admin.filters import MatchFilters, cursor_of
from admin.services.paging import Page, page_of
from matcher.errors import MatcherError
from matcher.store.common import object_id
from matcher.store.statuses import STATUSES

if TYPE_CHECKING:
    from matcher.evidence.archive import Archive
    from matcher.store import Store, TextWindow

__all__ = ["MAX_BULK", "STATUSES", "BulkTooLarge", "MatchEvidence", "MatchService"]

MAX_BULK = 10_000
"""The most matches one bulk review over the filters may set."""
LISTED_WITHOUT = ("evidence", "scores")
"""Fields a list leaves out (one match's page shows them)."""
EVIDENCE_PAGE_FIELDS = {
    "text": 1, "url": 1, "fetched_at": 1, "title": 1, "considered": 1, "split": 1,
    "archive": 1, "gone": 1, "parts": 1,
}  # fmt: skip
"""What one match's page shows of the page it was found on."""


class BulkTooLarge(MatcherError, ValueError):
    """A bulk review over more matches than :data:`MAX_BULK` (narrow the filters)."""


@dataclass(frozen=True)
class MatchEvidence:
    """One match with what its evidence is read against: its work (title, source), its page,
    the work's text around the evidence (a window sliced with whole-work offsets), the
    page's text, and the works with the same text as its work."""

    match: dict[str, Any]
    work: dict[str, Any] | None
    page: dict[str, Any] | None
    work_text: TextWindow
    page_text: str
    twins: list[dict[str, Any]]


class MatchService:
    """The matches of ``store``; their archived exchanges in ``archive`` (None: no
    evidence archive)."""

    def __init__(self, store: Store, archive: Archive | None) -> None:
        self.store, self.archive = store, archive

    def page(self, filters: MatchFilters, *, after: Any, limit: int) -> Page:
        """The matches ``filters`` select, newest first, after the cursor ``after``
        (:func:`admin.filters.parse_cursor`), without their evidence and scores."""
        rows = self.store.matches.find_matches(
            limit=limit + 1, without=LISTED_WITHOUT, after=after, **filters.criteria()
        )
        return page_of(list(rows), limit, cursor_of)

    def listed(self, limit: int, **criteria: Any) -> list[dict[str, Any]]:
        """The newest ``limit`` matches the store's ``criteria`` select (``fptrack matches
        list``: ``site``, ``work_id``, ``since``, ``status``, ``archived``), whole."""
        return self.store.matches.list_matches(limit=limit, **criteria)

    def get(self, match_id: str) -> dict[str, Any] | None:
        return self.store.matches.match(match_id=match_id)

    def evidence(self, match_id: str) -> MatchEvidence | None:
        """The match ``match_id`` and the texts its evidence spans point into; None when
        there is no such match."""
        match = self.get(match_id)
        if match is None:
            return None
        work = self.store.works.get_work(str(match["work_id"]), {"title": 1, "source": 1})
        page = self.store.pages.get_page(str(match["page_id"]), EVIDENCE_PAGE_FIELDS)
        spans = [e["work_span"] for e in match.get("evidence", [])]
        window = self.store.works.work_window(match["work_id"], spans)
        page_text = self.store.pages.download_text(page) if page else ""
        twins = [t for t in self.store.twins.twins(match["work_id"]) if not t.get("near_twin")]
        return MatchEvidence(match, work, page, window, page_text, twins)

    def archived_exchange(self, match: dict[str, Any]) -> bytes | None:
        """The HTTP exchange ``match`` was first found in, as a gzipped WARC file; None when
        none was kept (or there is no archive); an :class:`~matcher.evidence.archive.ArchiveError`
        when it was kept and is missing."""
        sha256 = (match.get("archive") or {}).get("sha256")
        if not sha256 or self.archive is None:
            return None
        return self.archive.get(sha256)

    def review(self, match_id: str, status: str, note: str, by: str) -> bool:
        """Set a match's review status, in the name of user ``by``; False: no such match."""
        return self.store.matches.set_status(match_id, status, note, by)

    def review_ticked(self, ids: Iterable[str], status: str, note: str, by: str) -> int:
        """Set the status of the matches ``ids`` (each checked an id first); how many."""
        ids = list(ids)
        for match_id in ids:
            object_id(match_id, "match id")
        return self._review_all(ids, status, note, by)

    def review_selected(self, filters: MatchFilters, status: str, note: str, by: str) -> int:
        """Set the status of every match ``filters`` select, at most :data:`MAX_BULK`
        (:class:`BulkTooLarge` beyond, nothing set); how many."""
        ids = self.store.matches.match_ids(limit=MAX_BULK + 1, **filters.criteria())
        if len(ids) > MAX_BULK:
            raise BulkTooLarge(f"more than {MAX_BULK:,} matches: narrow the filters")
        return self._review_all(ids, status, note, by)

    def _review_all(self, ids: Iterable[Any], status: str, note: str, by: str) -> int:
        return sum(self.store.matches.set_status(i, status, note, by) for i in ids)
