"""What a matched page's task writes (:class:`PageWrites`): the page's index entries, match
records, the works it let go and why (``considered``), and its processed mark with its
fingerprints (:meth:`PageWrites.record_page`); another part's share of a split chapter's
matches (:meth:`PageWrites.record_share`).

Each write is an idempotent upsert, done only after everything read from Redis for the
match was read and verified in memory (the order of writes of
:mod:`matcher.matching.engine`). :func:`never_matched` tells a page whose records can be
inserted, :func:`authorised` asks for the authorised sites only when there is a match to
write, and :class:`ReadBeforeLock` asks for a page whose text changed meanwhile to be
matched again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from bson import ObjectId

from fingerprint.base import array_from_hex
from matcher.errors import UnusableText, redis_errors
from matcher.matching.prepared import INDEX_KEYS, Prepared, locate
from matcher.matching.verify import Verdict
from matcher.store.common import StoreError
from matcher.store.fingerprints import fitted_page_fingerprints, page_fingerprint

if TYPE_CHECKING:
    from matcher.matching.engine_protocol import MatchingEngine

CONSIDERED_KEPT = 10


class ReadBeforeLock(Exception):
    """A page matched as read before its lock changed meanwhile: match it again."""


class PageWrites:
    """The writes of one engine's page tasks (see the module docstring)."""

    def __init__(self, engine: MatchingEngine) -> None:
        self.engine = engine

    def record_page(
        self,
        doc: dict,
        page: Prepared,
        records: list[dict[str, Any]],
        authorised: bool,
        considered: list[dict],
        split_urls: list[str],
        previous: dict[ObjectId, str],
        read_before_lock: bool = False,
        never: bool = False,
    ) -> list[dict[str, Any]]:
        """Write a matched page's index entries, records and processed mark (with its
        fingerprints, :meth:`~matcher.store.page_marks.PageMarks.mark_processed`);
        ``previous``: its active matches before (work id -> how found), read under the
        page's lock, so those no longer found are the only ones to let go. With
        ``read_before_lock``, a page whose text or links changed since ``doc`` was read is
        not marked: :class:`ReadBeforeLock` asks for it to be matched again. ``never``:
        the page was never matched (:func:`never_matched`), its records are inserted.

        The page's new index entries are added before its old ones, those of a text it no
        longer has, are removed: an outage in between leaves a stale entry (a candidate
        verified against the stored fingerprints, never a match), never a page missing from
        the index that a work registered later looks it up in (one whose fingerprints are
        not stored yet is matched from its text,
        :meth:`PagesOfWork._sharing <matcher.matching.pages_of_work.PagesOfWork._sharing>`).
        The old entries are those of the fingerprints ``doc`` holds, stored with its last
        processed mark; a task that died before marking the page leaves entries no document
        names, stale entries too.
        """
        engine = self.engine
        store = engine.store
        seq = int(doc["seq"])
        try:
            fingerprints = fitted_page_fingerprints(doc["text"], page.stored_fingerprints())
        except StoreError as exc:
            raise UnusableText(f"page {doc['url']}: {exc}") from None
        old = _index_entries(page_fingerprint(doc, INDEX_KEYS))
        if engine.index_pages:
            with redis_errors("indexing a page"):
                engine.pages.add(seq, page.simhash, page.window_keys)
                if old is not None:
                    simhash, keys = old
                    engine.pages.remove_stale(seq, simhash, keys, page.simhash, page.window_keys)
        initial = "authorised" if authorised else "new"
        written = [store.matches.upsert_match(r, initial, fresh=never) for r in records]
        kept = [r["work_id"] for r in written]
        if any(w not in kept for w in previous):
            store.matches.deactivate_matches("page_id", doc["_id"], kept)
        links = {name: doc.get(name) for name in ("next_url", "prev_url")}
        marked = store.page_marks.mark_processed(
            doc["_id"], doc["content_hash"], considered, split_urls,
            links if read_before_lock else None, fingerprints,
        )  # fmt: skip
        if read_before_lock and not marked:
            raise ReadBeforeLock(doc["_id"])
        return written

    def record_share(
        self,
        part: dict,
        verdicts: list[Verdict],
        urls: list[str],
        authorised: bool,
        previous: dict[ObjectId, str],
    ) -> None:
        """Write another part's records of the chapter's matches (its own matches stay);
        ``previous``: its active matches before (work id -> how found)."""
        store = self.engine.store
        extra = {"split": urls, "via": "split"}
        records = self.engine.evidence.records(verdicts, locate(part["text"]), part, extra)
        initial = "authorised" if authorised else "new"
        written = [store.matches.upsert_match(r, initial)["work_id"] for r in records]
        if any(w not in written for w, via in previous.items() if via == "split"):
            store.matches.deactivate_matches("page_id", part["_id"], written, via="split")
        store.pages.set_split(part["_id"], urls)
        store.matches.set_split(part["_id"], urls)

    def considered(self, verdicts: Sequence[Verdict], recorded: set[ObjectId]) -> list[dict]:
        """The works verified and not recorded, with the reason (for the admin's match view)."""
        rejected: dict[int, Verdict] = {}
        for v in verdicts:
            if not v.matched and v.work not in rejected:
                rejected[v.work] = v
        top = sorted(rejected.values(), key=lambda v: -v.alignment.page_covered)[:CONSIDERED_KEPT]
        if not top:
            return []
        seqs = {v.work for v in top} | {v.explained_by for v in top if v.explained_by}
        meta = self.engine.work_names.of(seqs)
        out = []
        for v in top:
            work = meta.get(v.work)
            if work is None or work["_id"] in recorded:
                continue
            reason = v.reason
            if v.explained_by in meta:
                title = meta[v.explained_by].get("title", "")
                if v.edition_tie is None:
                    reason = f"its shared passages are explained better by {title!r}"
                elif v.edition_tie:
                    reason = f"an edition of {title!r}, which explains the page as well (a tie)"
                else:
                    reason = f"an edition of {title!r}, which explains the page better"
            out.append(
                {
                    "work_id": work["_id"],
                    "work_title": work.get("title", ""),
                    "reason": reason,
                    "containment_work": round(v.scores["containment_work"], 4),
                    "containment_page": round(v.scores["containment_page"], 4),
                }
            )
        return out


def authorised(sites: Iterable[str] | Callable[[], Iterable[str]], needed: bool) -> set[str]:
    """The authorised sites, asked of ``sites`` (a function is called) only when ``needed``:
    there is a match to write."""
    if not needed:
        return set()
    return set(sites() if callable(sites) else sites)


def never_matched(doc: dict) -> bool:
    """Whether a page has no match records: it was never matched, nor named a part of a
    split chapter by another part's task (which writes the part's share of the chapter's
    matches, :meth:`PageWrites.record_share`). A task that died between writing a page's
    records and its processed mark leaves records behind: the next one finds them when it
    writes its own (:meth:`~matcher.store.matches.Matches.upsert_match`), and
    lets go those it does not find again only when the page is matched once more."""
    return "processed_hash" not in doc and not doc.get("split")


def _index_entries(stored: dict | None) -> tuple[int, np.ndarray] | None:
    """The simhash and postings keys a page was indexed with, from its stored fingerprints
    (None: it never was)."""
    if stored is None:
        return None
    value = stored["value"]
    return int(value["simhash"], 16), array_from_hex(value["windows"], "<u8", np.uint64)
