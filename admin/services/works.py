"""Works: the list with its search (and infringing counts), keyset pages of it, one work with
its matches and twins, registration (files or a text, each matched against the pages already
crawled) and removal.

Used by the admin's work pages (:mod:`admin.web.works`), the API's work routes
(:mod:`admin.web.api.works`) and ``fptrack works`` (:mod:`admin.commands.works`), which
registers through the engine itself and asks the service what became of each work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from admin.registration import Registered, Upload, register_text, register_uploads
from admin.services.paging import Page, page_of
from matcher.store.common import object_id

if TYPE_CHECKING:
    from matcher.matching.engine import Engine
    from matcher.store import Store

MATCHES_SHOWN = 500
"""The most matches one work's page lists."""


@dataclass(frozen=True)
class WorkDetail:
    """One work (without its text), its matches, the work it has the same text as, and the
    works with its text."""

    work: dict[str, Any]
    matches: list[dict[str, Any]]
    same_as: dict[str, Any] | None
    twins: list[dict[str, Any]]


class WorkService:
    """The works of ``store`` and the index of them of the engine ``engine()`` gives, asked
    for at its first use (listing works opens no index); ``added(work_id)`` after each
    registration (the dispatch's matching against the pages already crawled)."""

    def __init__(
        self, engine: Callable[[], Engine], store: Store, added: Callable[[str], None]
    ) -> None:
        self._engine, self.store, self.added = engine, store, added

    @property
    def engine(self) -> Engine:
        return self._engine()

    def all_works(self) -> list[dict[str, Any]]:
        """Every work, newest first."""
        return self.store.works.list_works()

    def find(self, ref: str) -> list[dict[str, Any]]:
        """The works whose id, title or source is ``ref``."""
        return self.store.works.find_works(ref)

    def archived_matches(self, work_id: str) -> int:
        """How many matches of the work ``work_id`` are archived."""
        return self.store.matches.count(work_id=work_id, archived=True)

    def same_text_note(self, work_id: str) -> str:
        """What the work ``work_id`` shares its text with, in a line ("" when nothing)."""
        return self.store.twins.same_text_note(work_id)

    def match_against_pages(self, work_id: str) -> list[Any]:
        """Match the work ``work_id`` against the pages already crawled, those of authorised
        sites classified as such; the matches found."""
        return self.engine.match_work_against_pages(work_id, self.store.sites.authorised_sites())

    def search(self, text: str, limit: int) -> tuple[list[dict[str, Any]], dict[Any, int]]:
        """The works whose title or source holds ``text`` (all: empty), newest first, and the
        matches not cleared of each."""
        works = self.store.works.search_works(text=text, limit=limit)
        counts = self.store.dashboard.infringing_by_work(work_ids=[w["_id"] for w in works])
        return works, counts

    def page(self, text: str, *, after: str | None, limit: int) -> Page:
        """A keyset page of :meth:`search`'s works, after the work id ``after``."""
        rows = self.store.works.search_works(text=text, limit=limit + 1, keyset=True, before=after)
        return page_of(rows, limit, lambda w: str(w["_id"]))

    def get(self, work_id: str) -> dict[str, Any] | None:
        """The work ``work_id`` without its text (a bad id is a
        :class:`~matcher.store.StoreError`)."""
        return self.store.works.get_work(work_id, {"text": 0})

    def detail(self, work_id: str) -> WorkDetail | None:
        work = self.get(work_id)
        if work is None:
            return None
        matches = self.store.matches.list_matches(limit=MATCHES_SHOWN, work_id=work_id)
        first = work.get("same_text_as")
        same_as = self.store.works.get_work(str(first), {"title": 1}) if first else None
        return WorkDetail(work, matches, same_as, self.store.twins.twins(work["_id"]))

    def register_uploads(self, files: Iterable[Upload]) -> Registered:
        """Register uploaded files (:func:`admin.registration.register_uploads`)."""
        return register_uploads(self.engine, self.store, files, added=self.added)

    def register_text(self, text: str, *, title: str, source: str, author: str) -> Registered:
        """Register one work from its text (:func:`admin.registration.register_text`)."""
        return register_text(
            self.engine, self.store, text, title=title, source=source, author=author,
            added=self.added,
        )  # fmt: skip

    def remove(self, work_id: str) -> bool:
        """Remove a work and its index entries (its matches archived with their reviews);
        False: no such work."""
        object_id(work_id, "work id")
        return self.engine.remove_work(work_id)
