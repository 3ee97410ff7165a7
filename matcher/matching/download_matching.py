"""Whole-book downloads matched as one (:class:`DownloadMatcher`): a download longer than
``FPTRACK_DOWNLOAD_PART_CHARS`` is stored as one page per part (the download's URL, then
``URL#part2`` ...; :func:`matcher.pages.part_url`), and the first part's task matches every
part under the first part's lock and records one match per work on the first part's page
(:func:`matcher.matching.download_records.merge`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from matcher.errors import IndexLost, IndexUnavailable, UnusableText
from matcher.index.integrity import Snapshot
from matcher.matching import download_records
from matcher.matching.page_locks import locked
from matcher.matching.page_writes import PageWrites, authorised, never_matched
from matcher.matching.prepared import prepare
from matcher.matching.works_of_text import WorksOfText
from matcher.pages import fetched_url, part_number, part_url

if TYPE_CHECKING:
    from matcher.matching.engine_protocol import MatchingEngine


class DownloadMatcher:
    """The downloads of one engine's pages (see the module docstring)."""

    def __init__(self, engine: MatchingEngine, texts: WorksOfText, writes: PageWrites) -> None:
        self.engine = engine
        self.texts = texts
        self.writes = writes

    def first_part(self, doc: dict) -> dict | None:
        """The first part's page of the download ``doc`` is a part of (``doc`` itself for
        the first part); None for a page that is not, or a next part whose download's page
        is gone or no longer has it (matched alone, as any page)."""
        number = part_number(doc["url"])
        if number == 1:
            return doc if int(doc.get("parts") or 0) > 1 else None
        first = self.engine.store.pages.page_by_url(fetched_url(doc["url"]))
        if first is None or int(first.get("parts") or 0) < number:
            return None
        return first

    def match(
        self, first: dict, authorised_sites: Iterable[str] | Callable[[], Iterable[str]]
    ) -> list[dict[str, Any]]:
        """Match every part of a download, under its first part's lock, and record one match
        per work on the first part's page (:func:`matcher.matching.download_records.merge`);
        each part gets its index entries, fingerprints and processed mark, and a part's
        records of before (when parts were matched apart) are let go."""
        engine = self.engine
        lost = 0
        while True:
            snap = engine.integrity.ready()
            try:
                lease = engine.settings.page_lock_seconds
                with locked(engine.storage, engine.keys, [first], lease) as lock_lost:
                    return self._records(first["_id"], authorised_sites, snap, lock_lost)
            except IndexLost:
                lost += 1
                if lost > 1:
                    raise

    def _records(
        self,
        first_id: Any,
        authorised_sites: Iterable[str] | Callable[[], Iterable[str]],
        snap: Snapshot,
        lock_lost: threading.Event,
    ) -> list[dict[str, Any]]:
        """:meth:`match`'s work, its pages read under the lock. A work matched before and
        found in no part now is verified on all its segments in every part
        (:meth:`WorksOfText.recheck <matcher.matching.works_of_text.WorksOfText.recheck>`'s
        rule)."""
        engine = self.engine
        store = engine.store
        first = store.pages.get_page(first_id)
        if first is None:
            raise UnusableText(f"no page with id {first_id}")
        urls = [part_url(first["url"], n) for n in range(2, int(first.get("parts") or 0) + 1)]
        others = store.pages.pages_by_url(urls)
        parts = [first, *(others[u] for u in urls if u in others)]
        limit = engine.settings.max_text_chars
        pages = [prepare(p["text"], limit, f"page {p['url']}") for p in parts]
        found = [self.texts.find(page) for page in pages]
        previous = store.matches.active_matched_works([p["_id"] for p in parts])
        before = previous.get(first["_id"], {})
        if before:
            held = {v.work for verdicts in found for v in verdicts if v.matched}
            seqs = store.works.work_seqs(list(before)).values()
            again = {seq for seq in seqs if seq not in held}
            if again:
                found = [self.texts.find(page, verify=again) for page in pages]
        per_part, start = [], 0
        for part, page, verdicts in zip(parts, pages, found, strict=True):
            matched = [v for v in verdicts if v.matched]
            extra = {"split": [], "via": "page"}
            records = engine.evidence.records(matched, page.located, part, extra)
            per_part.append((part_number(part["url"]), start, records))
            start += len(part["text"]) + 1
        records = download_records.merge(first, per_part)
        recorded = {r["work_id"] for r in records}
        engine.integrity.confirm(snap, "the download was matched")
        if lock_lost.is_set():
            raise IndexUnavailable(f"the lock of page {first['seq']} expired; try again")
        licensed = first.get("site") in authorised(authorised_sites, bool(records))
        written: list[dict[str, Any]] = []
        for part, page, verdicts in zip(parts, pages, found, strict=True):
            own = records if part is first else []
            considered = self.writes.considered(verdicts, recorded)
            mine = previous.get(part["_id"], {})
            never = part is first and never_matched(part)
            done = self.writes.record_page(
                part, page, own, licensed, considered, [], mine, never=never
            )
            if part is first:
                written = done
        return written
