"""The matching engine: page -> candidates -> verification -> decision -> match records.

Both directions run through here: a crawled page is looked up in the index of registered
works (:meth:`Engine.process_page`), and a newly registered work is looked up in the index
of crawled pages (:meth:`Engine.match_work_against_pages`).

Order of writes, so that an outage never leaves a half-written result: everything read
from Redis for matching is read first (candidates, then the compact fingerprints of the
candidates), verification runs in memory, and only then are the page, its fingerprints,
its index entries and its match records written — each an idempotent upsert, so a task
retried after a failure at any point converges on the same records.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import redis
from bson import ObjectId

from fingerprint.align import Alignment, align
from fingerprint.anchors import Anchors
from fingerprint.base import FingerprintError, array_from_hex
from matcher.errors import UnusableText, redis_errors
from matcher.evidence import evidence
from matcher.prepared import INDEX_KEYS, Prepared, as_text, from_blob, prepare
from matcher.settings import Settings
from matcher.simhash_index import SimhashIndex, SimhashIndexParams
from matcher.store import Store
from matcher.verify import ALIGN_PARAMS, Verdict, drop_boilerplate, verdict
from matcher.window_index import WindowIndex

log = logging.getLogger(__name__)

BOILERPLATE_WORKS = 2
WORK_CACHE_SIZE = 64


@dataclass
class Side:
    """The Redis indexes of one kind of owner (works or pages)."""

    simhash: SimhashIndex
    windows: WindowIndex

    def add(self, seq: int, simhash: int, keys: np.ndarray) -> None:
        self.simhash.add([seq], [simhash])
        self.windows.add(seq, keys)

    def remove(self, seq: int, simhash: int, keys: np.ndarray) -> None:
        self.simhash.remove([seq], [simhash])
        self.windows.remove(seq, keys)

    def clear(self) -> None:
        self.simhash.clear()
        self.windows.clear()


@dataclass
class Candidate:
    """An owner found in the indexes: by postings hits, by simhash, or both."""

    seq: int
    window_hits: int = 0


@dataclass
class Engine:
    """Matching over one store and one Redis server, with one set of settings."""

    settings: Settings
    store: Store
    redis: redis.Redis
    problems: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        prefix = self.settings.redis_prefix
        params = SimhashIndexParams(permuted=self.settings.simhash_permuted)
        self.works = Side(
            SimhashIndex(self.redis, f"{prefix}:works", params),
            WindowIndex(
                self.redis,
                f"{prefix}:works",
                self.settings.window_bucket_bits,
                self.settings.window_max_df,
            ),
        )
        self.pages = Side(
            SimhashIndex(self.redis, f"{prefix}:pages", params),
            WindowIndex(
                self.redis,
                f"{prefix}:pages",
                self.settings.window_bucket_bits,
                self.settings.window_max_df,
            ),
        )
        self._work_cache: dict[str, Prepared] = {}

    @classmethod
    def open(
        cls,
        settings: Settings,
        mongo_client: Any = None,
        redis_client: redis.Redis | None = None,
    ) -> Engine:
        """An engine on the given clients (or new ones from the settings), indexes ensured."""
        store = Store.connect(settings.mongo_uri, settings.mongo_db, mongo_client)
        store.ensure_indexes()
        if redis_client is None:
            redis_client = redis.Redis.from_url(settings.redis_url)
        return cls(settings, store, redis_client)

    # keys ------------------------------------------------------------------------------

    def _blob_key(self, seq: int) -> str:
        return f"{self.settings.redis_prefix}:works:anchors:{seq}"

    # works -----------------------------------------------------------------------------

    def add_work(
        self,
        text: str | bytes,
        *,
        title: str,
        source: str = "",
        author: str = "",
        owner: str = "",
        tags: Iterable[str] = (),
        key: str | None = None,
    ) -> str:
        """Register (or update) a work and index it; returns its id.

        The work's unique key is ``key``, else ``source`` (e.g. its file path), else the
        hash of its text: registering the same work again updates it in place.
        Raises :class:`UnusableText` when fewer than ``settings.min_work_chars`` content
        characters remain after normalisation.
        """
        text = as_text(text, f"work {title!r}")
        prepared = prepare(text, self.settings.max_text_chars, f"work {title!r}")
        if prepared.length < self.settings.min_work_chars:
            raise UnusableText(
                f"work {title!r} has {prepared.length} content characters after normalisation;"
                f" at least {self.settings.min_work_chars} are needed"
            )
        doc, created = self.store.upsert_work(
            key or source or prepared.content_hash,
            title=title,
            text=text,
            content_hash=prepared.content_hash,
            author=author,
            source=source,
            owner=owner,
            tags=tags,
        )
        self._index_work(doc, prepared, reindex=not created)
        return str(doc["_id"])

    def index_work(self, work_id: str) -> None:
        """Fingerprint and index a stored work again (the ``index_work`` task; idempotent)."""
        doc = self.store.get_work(work_id)
        if doc is None:
            raise UnusableText(f"no work with id {work_id}")
        prepared = prepare(doc["text"], self.settings.max_text_chars, f"work {work_id}")
        self._index_work(doc, prepared, reindex=True)

    def _index_work(self, doc: dict, prepared: Prepared, reindex: bool) -> None:
        seq = int(doc["seq"])
        if reindex:
            self._unindex("work", doc["_id"], seq)
        self.store.save_fingerprints("work", doc["_id"], seq, prepared.stored_fingerprints())
        with redis_errors("indexing a work"):
            self.works.add(seq, prepared.simhash, prepared.window_keys)
            self.redis.set(self._blob_key(seq), prepared.blob())

    def remove_work(self, work_id: str) -> bool:
        """Remove a work, its index entries and its unreviewed matches."""
        doc = self.store.get_work(work_id, {"seq": 1})
        if doc is None:
            return False
        self._unindex("work", doc["_id"], int(doc["seq"]))
        self.store.delete_work(work_id)
        return True

    def _index_keys(self, kind: str, owner_id: ObjectId) -> tuple[int, np.ndarray] | None:
        doc = self.store.load_fingerprints(kind, [owner_id], INDEX_KEYS).get(owner_id)
        if doc is None:
            return None
        value = doc["value"]
        return int(value["simhash"], 16), array_from_hex(value["windows"], "<u8", np.uint64)

    def _unindex(self, kind: str, owner_id: ObjectId, seq: int) -> None:
        keys = self._index_keys(kind, owner_id)
        side = self.works if kind == "work" else self.pages
        with redis_errors(f"removing a {kind} from the index"):
            if keys is not None:
                side.remove(seq, *keys)
            if kind == "work":
                self.redis.delete(self._blob_key(seq))

    # pages -> works --------------------------------------------------------------------

    def _candidates(self, side: Side, prepared: Prepared) -> list[Candidate]:
        policy = self.settings.policy
        with redis_errors("looking up candidates"):
            near = side.simhash.query(prepared.simhash, policy.simhash_k)
            owners, hits = side.windows.hits(prepared.window_keys)
        found: dict[int, Candidate] = {}
        order = np.argsort(-np.asarray(hits), kind="stable")
        for i in order[: policy.max_candidates]:
            if hits[i] < policy.min_window_hits:
                break
            found[int(owners[i])] = Candidate(int(owners[i]), window_hits=int(hits[i]))
        for seq, _ in near:
            found.setdefault(seq, Candidate(seq))
        return list(found.values())

    def _verdict(
        self,
        cand: Candidate,
        alignment: Alignment,
        work: tuple[int, Anchors],
        page: tuple[int, Anchors],
    ) -> Verdict:
        """The policy's verdict on an aligned pair; fingerprints as ``(simhash, anchors)``."""
        policy = self.settings.policy
        return verdict(
            alignment,
            work[1],
            page[1],
            work[0],
            page[0],
            policy,
            via_windows=cand.window_hits >= policy.min_window_hits,
        )

    def _work_blobs(self, seqs: Sequence[int]) -> dict[int, tuple[int, Anchors]]:
        if not seqs:
            return {}
        with redis_errors("reading work fingerprints"):
            blobs = self.redis.mget([self._blob_key(s) for s in seqs])
        out = {}
        for seq, blob in zip(seqs, blobs, strict=True):
            if blob is None:
                self._problem(f"work {seq} is in the index but its fingerprint is missing")
                continue
            try:
                out[seq] = from_blob(blob)
            except FingerprintError as exc:
                self._problem(f"work {seq}: stored fingerprint unusable: {exc}")
        return out

    def _problem(self, message: str) -> None:
        log.error("%s (run `fptrack index rebuild`)", message)
        self.problems.append(message)

    def find_works(self, page: Prepared) -> list[tuple[int, Verdict]]:
        """Works ``page`` copies, as ``(work seq, verdict)``; reads Redis only."""
        candidates = self._candidates(self.works, page)
        blobs = self._work_blobs([c.seq for c in candidates])
        pairs = [(c, *blobs[c.seq]) for c in candidates if c.seq in blobs]
        alignments = [align(anchors, page.anchors, ALIGN_PARAMS) for _, _, anchors in pairs]
        alignments = drop_boilerplate(alignments, page.length, BOILERPLATE_WORKS)
        out = []
        for (cand, simhash, anchors), alignment in zip(pairs, alignments, strict=True):
            v = self._verdict(cand, alignment, (simhash, anchors), (page.simhash, page.anchors))
            if v.matched:
                out.append((cand.seq, v))
        return out

    def match_text(self, text: str | bytes) -> list[dict[str, Any]]:
        """What ``text`` copies, with evidence; stores nothing (the CLI's and admin's query)."""
        page = prepare(text, self.settings.max_text_chars, "query text")
        return self._records(self.find_works(page), page)

    def process_page(
        self,
        url: str,
        text: str | bytes,
        *,
        site: str = "",
        title: str = "",
        status: int = 200,
        encoding: str = "",
        fetched_at: datetime | None = None,
        authorised: bool = False,
    ) -> list[dict[str, Any]]:
        """Fingerprint a page, match it against the works, store it and its match records.

        Returns the page's current match records. Re-processing a page updates its records;
        records of works it no longer copies are marked ``active: False``.
        """
        text = as_text(text, f"page {url}")
        page = prepare(text, self.settings.max_text_chars, f"page {url}")
        found = self.find_works(page) if page.length else []
        doc, _ = self.store.upsert_page(
            url,
            text=text,
            content_hash=page.content_hash,
            site=site,
            title=title,
            status=status,
            encoding=encoding,
            fetched_at=fetched_at,
        )
        return self._record_page(doc, page, found, authorised)

    def process_stored_page(
        self, page_id: str, authorised_sites: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        """Match a page the crawler already stored (by id); the ``process_page`` task's work.

        Idempotent: running it twice on the same text gives the same records. The page is
        marked processed for the text it was matched with. Matches on a page of one of
        ``authorised_sites`` are recorded with status ``authorised``.
        """
        doc = self.store.get_page(page_id)
        if doc is None:
            raise UnusableText(f"no page with id {page_id}")
        page = prepare(doc["text"], self.settings.max_text_chars, f"page {doc['url']}")
        found = self.find_works(page) if page.length else []
        authorised = doc.get("site") in set(authorised_sites)
        records = self._record_page(doc, page, found, authorised)
        self.store.mark_processed(doc["_id"], doc["content_hash"])
        return records

    def _record_page(
        self, doc: dict, page: Prepared, found: list[tuple[int, Verdict]], authorised: bool
    ) -> list[dict[str, Any]]:
        """Write a matched page's fingerprints, index entries and match records (all upserts)."""
        seq = int(doc["seq"])
        self._unindex("page", doc["_id"], seq)
        self.store.save_fingerprints("page", doc["_id"], seq, page.stored_fingerprints())
        with redis_errors("indexing a page"):
            self.pages.add(seq, page.simhash, page.window_keys)
        initial = "authorised" if authorised else "new"
        records = [self.store.upsert_match(r, initial) for r in self._records(found, page, doc)]
        self.store.deactivate_matches("page_id", doc["_id"], [r["work_id"] for r in records])
        return records

    def _records(
        self,
        found: list[tuple[int, Verdict]],
        page: Prepared,
        page_doc: dict | None = None,
        work: Prepared | None = None,
    ) -> list[dict[str, Any]]:
        """Match records of ``(work seq, verdict)`` pairs, with evidence.

        The works' metadata comes in one query; their texts (for evidence spans) come from
        a cache keyed by content hash, and the misses in one more query. ``work`` is the
        already prepared work when every pair is of the same work.
        """
        if not found:
            return []
        meta = self.store.works_by_seq(
            [seq for seq, _ in found], {"title": 1, "content_hash": 1, "source": 1}
        )
        prepared: dict[int, Prepared] = {}
        missing = []
        for seq, doc in meta.items():
            cached = work or self._work_cache.get(doc["content_hash"])
            if cached is None:
                missing.append(seq)
            else:
                prepared[seq] = cached
        if missing:
            for seq, doc in self.store.works_by_seq(missing, {"text": 1}).items():
                prepared[seq] = self._remember(meta[seq]["content_hash"], doc["text"])
        records = []
        for seq, v in found:
            work_doc = meta.get(seq)
            if work_doc is None or seq not in prepared:
                self._problem(f"work {seq} is in the index but not in the store")
                continue
            record: dict[str, Any] = {
                "work_id": work_doc["_id"],
                "work_title": work_doc.get("title", ""),
                "work_source": work_doc.get("source", ""),
                "score": v.score,
                "containment": v.scores["containment_work"],
                "containment_work": v.scores["containment_work"],
                "containment_page": v.scores["containment_page"],
                "scores": v.scores,
                "methods": list(v.methods),
                "evidence": evidence(v.alignment.passages, prepared[seq], page),
            }
            if page_doc is not None:
                record.update(
                    page_id=page_doc["_id"], url=page_doc["url"], site=page_doc.get("site", "")
                )
            records.append(record)
        return records

    def _remember(self, content_hash: str, text: str) -> Prepared:
        """Prepare a work's text for evidence, keeping the last few by content hash."""
        work = prepare(text, self.settings.max_text_chars)
        if len(self._work_cache) >= WORK_CACHE_SIZE:
            self._work_cache.pop(next(iter(self._work_cache)))
        self._work_cache[content_hash] = work
        return work

    # works -> pages --------------------------------------------------------------------

    def match_work_against_pages(
        self, work_id: str, authorised_sites: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        """Find pages already crawled that copy a work; store and return their matches.

        Matches on pages of ``authorised_sites`` are recorded with status ``authorised``.
        """
        authorised = set(authorised_sites)
        work_doc = self.store.get_work(work_id)
        if work_doc is None:
            raise UnusableText(f"no work with id {work_id}")
        work = prepare(work_doc["text"], self.settings.max_text_chars, f"work {work_id}")
        candidates = self._candidates(self.pages, work)
        page_docs = self.store.pages_by_seq([c.seq for c in candidates], {"url": 1, "site": 1})
        stored = self.store.load_fingerprints(
            "page", [d["_id"] for d in page_docs.values()], "anchors"
        )
        work_fp = (work.simhash, work.anchors)
        found: dict[int, Verdict] = {}
        for cand in candidates:
            doc = page_docs.get(cand.seq)
            fp = stored.get(doc["_id"]) if doc is not None else None
            if fp is None:
                continue
            try:
                page_fp = from_blob(bytes(fp["value"]))
            except FingerprintError as exc:
                self._problem(f"page {doc['url']}: stored fingerprint unusable: {exc}")
                continue
            v = self._verdict(cand, align(work.anchors, page_fp[1], ALIGN_PARAMS), work_fp, page_fp)
            if v.matched:
                found[cand.seq] = v
        texts = self.store.pages_by_seq(found, {"text": 1}) if found else {}
        records = []
        for seq, v in found.items():
            doc = page_docs[seq]
            page = prepare(texts[seq]["text"], self.settings.max_text_chars, f"page {doc['url']}")
            initial = "authorised" if doc.get("site") in authorised else "new"
            for record in self._records([(int(work_doc["seq"]), v)], page, doc, work):
                records.append(self.store.upsert_match(record, initial))
        return records

    # maintenance -----------------------------------------------------------------------

    def rebuild_indexes(self) -> dict[str, int]:
        """Drop every Redis index and rebuild it from the fingerprints stored in MongoDB."""
        counts = {}
        for kind, side in (("work", self.works), ("page", self.pages)):
            seqs, simhashes, owners, keys = [], [], [], []
            with redis_errors("rebuilding the index"):
                side.clear()
                if kind == "work":
                    blobs = self.redis.scan_iter(f"{self.settings.redis_prefix}:works:anchors:*")
                    for batch in _chunks(list(blobs), 1000):
                        self.redis.delete(*batch)
            for doc in self.store.iter_fingerprints(kind, INDEX_KEYS):
                seq = int(doc["seq"])
                value = doc["value"]
                window_keys = array_from_hex(value["windows"], "<u8", np.uint64)
                seqs.append(seq)
                simhashes.append(int(value["simhash"], 16))
                owners.append(np.full(len(window_keys), seq, dtype=np.uint32))
                keys.append(window_keys)
            with redis_errors("rebuilding the index"):
                side.simhash.bulk_load(
                    np.array(seqs, dtype=np.uint32), np.array(simhashes, dtype=np.uint64)
                )
                side.windows.bulk_load(
                    np.concatenate(owners) if owners else np.empty(0, np.uint32),
                    np.concatenate(keys) if keys else np.empty(0, np.uint64),
                )
                if kind == "work":
                    pipe = self.redis.pipeline(transaction=False)
                    for doc in self.store.iter_fingerprints("work", "anchors"):
                        pipe.set(self._blob_key(int(doc["seq"])), bytes(doc["value"]))
                    pipe.execute()
            counts[kind] = len(seqs)
        return counts

    def drop_indexes(self) -> None:
        """Delete every Redis key of this engine's prefix (the store is untouched)."""
        with redis_errors("dropping the indexes"):
            keys = list(self.redis.scan_iter(f"{self.settings.redis_prefix}:*", count=1000))
            for batch in _chunks(keys, 1000):
                self.redis.unlink(*batch)


def _chunks(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
