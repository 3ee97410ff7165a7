"""Reports: the summary of a selection (:mod:`admin.report.selection`), its export rows, the
matches of the printable report with the texts around their evidence, takedown notices
(:mod:`admin.report.takedown`) and their template, and evidence bundles
(:mod:`admin.report.evidence`).

Used by the admin's report pages (:mod:`admin.web.reports`), the API's report routes
(:mod:`admin.web.api.reports`) and ``fptrack report`` (:mod:`admin.commands.report`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from admin.report.evidence import evidence_zip
from admin.report.html_report import match_texts
from admin.report.selection import Selection, Summary, export_rows, find, left_out, summarise
from admin.report.takedown import (
    DETAILS_STATE_KEY,
    TEMPLATE_STATE_KEY,
    Notice,
    notice,
    notice_details,
    notice_template,
)
from matcher.errors import MatcherError

if TYPE_CHECKING:
    from admin.context import Context
    from matcher.evidence.archive import Archive
    from matcher.store import TextWindow

PRINTED_PAGE_FIELDS = {"text": 1, "title": 1, "url": 1, "parts": 1}
"""What the printable report reads of the page of each match."""


class NoArchive(MatcherError, LookupError):
    """An evidence bundle asked of an admin without an evidence archive."""


@dataclass(frozen=True)
class PrintedMatch:
    """A match of the printable report, its page's title, the work's text around its first
    passages (a window sliced with whole-work offsets) and its page's text."""

    match: dict[str, Any]
    page_title: str
    work_text: TextWindow
    page_text: str


class ReportService:
    """Reports over the matches of the store of ``ctx``; evidence bundles from its archive
    (None: no evidence archive) with the TSA's CA certificates its settings name at each
    call."""

    def __init__(self, ctx: Context) -> None:
        self.ctx, self.store = ctx, ctx.store

    @property
    def archive(self) -> Archive | None:
        """The evidence archive of the context, opened at its first use (``fptrack report``
        reads none)."""
        return self.ctx.archive

    def matches(self, **criteria: Any) -> Iterator[dict[str, Any]]:
        """Every match the store's ``criteria`` select (``fptrack report``: ``site``,
        ``work_id``, ``since``, ``until``, ``status``), newest first."""
        return self.store.matches.iter_matches(**criteria)

    def match_texts(self, match: Mapping[str, Any]) -> tuple[Any, str]:
        """The texts the HTML report quotes for ``match``
        (:func:`admin.report.html_report.match_texts`)."""
        return match_texts(self.store, dict(match))

    def summary(self, selection: Selection) -> Summary:
        return summarise(self.store, selection)

    def site_choices(self, summary: Summary) -> list[str]:
        """The watched sites and the sites of the summary's matches, by name."""
        watched = {s.name for s in self.store.sites.list_sites()}
        return sorted(watched | {s for s, _ in summary.by_site if s})

    def work_choices(self, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` works."""
        return self.store.works.list_works(limit=limit)

    def export_rows(self, selection: Selection) -> list[dict[str, Any]]:
        return export_rows(self.store, selection)

    def printed(
        self, selection: Selection, limit: int, passages: int
    ) -> tuple[list[PrintedMatch], bool]:
        """The newest ``limit`` selected matches, each with the texts around its first
        ``passages`` evidence passages, and whether there were more."""
        rows = list(find(self.store, selection, limit + 1))
        entries = []
        for match in rows[:limit]:
            spans = [e["work_span"] for e in match.get("evidence", [])[:passages]]
            work_text = self.store.works.work_window(match["work_id"], spans)
            page = self.store.pages.get_page(str(match.get("page_id")), PRINTED_PAGE_FIELDS) or {}
            page_text = self.store.pages.download_text(page) if page else ""
            entries.append(PrintedMatch(match, page.get("title", ""), work_text, page_text))
        return entries, len(rows) > limit

    def notice(self, selection: Selection, *, html: bool) -> Notice:
        """The takedown notice of the selection's site (a template that cannot be used is a
        :class:`~admin.report.takedown.NoticeError`)."""
        return notice(self.store, selection, html=html)

    def left_out(self, selection: Selection) -> int:
        """How many unreviewed matches a notice's selection leaves out."""
        return left_out(self.store, selection)

    def evidence_zip(self, selection: Selection, notice: str = "") -> bytes:
        """The selection's evidence bundle (:func:`admin.report.evidence.evidence_zip`), with
        a takedown's ``notice``; :class:`NoArchive` without an evidence archive."""
        if self.archive is None:
            raise NoArchive("no evidence archive is configured")
        ca_pem = self.tsa_ca()
        return evidence_zip(self.store, self.archive, selection, notice=notice, ca_pem=ca_pem)

    def tsa_ca(self) -> bytes | None:
        """The TSA's CA certificates (``FPTRACK_TSA_CA``) for a bundle, None when unset or
        unreadable (the bundle's VERIFY.txt then says to use the TSA's published one)."""
        path = self.ctx.settings.tsa_ca
        try:
            return Path(path).read_bytes() if path else None
        except OSError:
            return None

    def template(self) -> tuple[str, dict[str, str]]:
        """The takedown template in use (the default until an admin saves one) and its
        details (rights holder, contact)."""
        return notice_template(self.store), notice_details(self.store)

    def save_template(self, source: str, details: dict[str, str]) -> None:
        self.store.state.set_state(TEMPLATE_STATE_KEY, source)
        self.store.state.set_state(DETAILS_STATE_KEY, details)

    def reset_template(self) -> None:
        """Use the default template again (the details are kept)."""
        self.store.state.set_state(TEMPLATE_STATE_KEY, "")
