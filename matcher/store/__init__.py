"""The MongoDB store: works, pages, fingerprints, matches, sites, crawl runs, accounts.

One module per family of collections, each a small class holding its collections and their
queries: :mod:`~matcher.store.works` (works and their text by segments),
:mod:`~matcher.store.pages`, :mod:`~matcher.store.fingerprints`,
:mod:`~matcher.store.matches`, :mod:`~matcher.store.sites`, :mod:`~matcher.store.crawls`
(crawl runs), :mod:`~matcher.store.failures`, :mod:`~matcher.store.accounts` (users and API
tokens), :mod:`~matcher.store.state` (job state, daily reports, dashboard counters),
:mod:`~matcher.store.sequences` (the ``seq`` counters), :mod:`~matcher.store.alerts`,
:mod:`~matcher.store.index_state` and :mod:`~matcher.store.tallies`; the collections' indexes
and shard keys in :mod:`~matcher.store.layout`, the one client factory in
:mod:`~matcher.store.client`. :class:`Store` composes the families (``store.pages``,
``store.works``, ...) and keeps its methods as forwards to them, so callers need not all
change at once; :class:`matcher.store.operations.Operations` does the same for the
operators' queries. No module outside this package reaches MongoDB (``tests/test_seams.py``).

Every write is an upsert on a unique key, so storing the same page or match twice updates
it and never duplicates it. Works and pages also get a small integer ``seq`` (from the
``counters`` collection), from which the Redis indexes' owner ids are made. Only the part of
the pymongo API that real MongoDB and mongomock share is used; where they differ the code
follows MongoDB. Filters are built from typed values only (:mod:`~matcher.store.common`), so
nothing from outside can become an operator. Connection failures raise
:class:`matcher.errors.StoreUnavailable` (retryable).
"""

from __future__ import annotations

from typing import Any

from pymongo import MongoClient
from pymongo.database import Database

from matcher.archive import Archive, open_archive
from matcher.settings import Settings
from matcher.statuses import STATUSES
from matcher.store import tallies
from matcher.store.accounts import ApiTokens, Users
from matcher.store.client import client_for, mongo_client
from matcher.store.common import (
    KINDS,
    Forward,
    StoreError,
    mongo_errors,
    now,
    object_id,
    page_key,
)
from matcher.store.crawls import CrawlRuns
from matcher.store.discovery import Discovery
from matcher.store.failures import Failures
from matcher.store.fingerprints import Fingerprints
from matcher.store.layout import (
    INDEXES,
    LEGACY_INDEXES,
    LIST_ORDER,
    REGISTRATION_ORDER,
    SHARD_KEYS,
    ensure_indexes,
    shard_commands,
)
from matcher.store.matches import Matches
from matcher.store.pages import VALIDATOR_CHARS, Pages
from matcher.store.sequences import Sequences
from matcher.store.sites import Sites
from matcher.store.stamps import Stamps
from matcher.store.state import Dashboard, Reports, State
from matcher.store.takedowns import Takedowns
from matcher.store.works import NEAR_CANDIDATES, TextWindow, Works

__all__ = [
    "INDEXES",
    "KINDS",
    "LEGACY_INDEXES",
    "LIST_ORDER",
    "NEAR_CANDIDATES",
    "REGISTRATION_ORDER",
    "SHARD_KEYS",
    "STATUSES",
    "VALIDATOR_CHARS",
    "Store",
    "StoreError",
    "TextWindow",
    "mongo_client",
    "mongo_errors",
    "now",
    "object_id",
    "page_key",
    "shard_commands",
]


class Store:
    """Typed reads and idempotent writes over the fptrack MongoDB database: the families of
    collections (attributes), and their methods forwarded (:class:`~matcher.store.common.
    Forward`) under the names callers have always used."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.sequences = Sequences(db)
        self.fingerprints = Fingerprints(db)
        self.tallies = tallies.Sender(db)
        self.matches = Matches(db, self.tallies)
        self.failure_log = Failures(db)
        self.works = Works(db, self.sequences, self.fingerprints, self.matches, self.tallies)
        self.pages = Pages(db, self.sequences, self.failure_log, self.tallies)
        self.sites = Sites(db)
        self.crawls = CrawlRuns(db, self.pages, self.matches)
        self.users = Users(db)
        self.tokens = ApiTokens(db)
        self.state = State(db)
        self.reports = Reports(db)
        self.dashboard = Dashboard(db)
        self.stamps = Stamps(db)
        self.takedowns = Takedowns(db)
        self.discovery = Discovery(db)

    @property
    def client(self) -> Any:
        """The pymongo client of this store's database (shared; close it with :meth:`close`)."""
        return self.db.client

    def close(self) -> None:
        """Close the client of this store's database."""
        self.db.client.close()

    @property
    def thread_safe(self) -> bool:
        """Whether the store may be used from several threads at once (a pymongo client is;
        the embedded scan's mongomock one is not)."""
        return isinstance(self.db.client, MongoClient)

    @classmethod
    def connect(cls, uri: str, db_name: str, client: Any = None) -> Store:
        """A store on ``client`` (a pymongo or mongomock client), or a new pymongo client
        (:func:`~matcher.store.client.mongo_client`)."""
        if client is None:
            client = mongo_client(uri)
        return cls(client[db_name])

    @classmethod
    def open(cls, settings: Settings, client: Any = None) -> Store:
        """A store on database ``settings.mongo_db`` of ``client`` (a pymongo or mongomock
        client), or of a new client of the settings (:func:`~matcher.store.client.client_for`,
        the one way fptrack opens MongoDB)."""
        if client is None:
            client = client_for(settings)
        return cls(client[settings.mongo_db])

    def gather_tallies(self, seconds: float | None) -> None:
        """From now on, gather the dashboard tallies of the match records and pages written
        through this store and send them every ``seconds`` (None: when
        :meth:`flush_tallies` or :meth:`send_tallies` is called;
        :class:`~matcher.store.tallies.Sender`: a worker's store, a crawl's, the embedded
        scan's)."""
        self.tallies.gather(seconds)

    def flush_tallies(self) -> bool:
        """Send the tallies gathered so far now (before the client is closed); False when
        the store refused them."""
        return self.tallies.flush()

    def send_tallies(self) -> bool:
        """Send the tallies gathered so far, and from now on each write's after it; False
        when the store refused them."""
        return self.tallies.send_each()

    @mongo_errors
    def ensure_indexes(self) -> None:
        """Create every collection's indexes (:func:`matcher.store.layout.ensure_indexes`)."""
        ensure_indexes(self.db)

    @mongo_errors
    def count(self, collection: str) -> int:
        """The documents of ``collection`` (one of :data:`~matcher.store.layout.INDEXES`)."""
        if collection not in INDEXES:
            raise StoreError(f"unknown collection {collection!r}")
        return self.db[collection].count_documents({})

    def archive_refs(self) -> set[str]:
        """The SHA-256 of every archived exchange a page (its current text) or a match (the
        text it was found in) refers to."""
        return self.pages.archive_refs() | self.matches.archive_refs()

    def evidence_archive(self, spec: str) -> Archive | None:
        """The evidence archive ``spec`` names (``FPTRACK_ARCHIVE``, see
        :func:`matcher.archive.open_archive`): GridFS in this store's database, a folder, or
        None."""
        return open_archive(spec, self.db)

    def reset_pages(self, *, crawls: bool = False) -> None:
        """Forget the crawled side, keep the works: delete every page, its fingerprints,
        every match and failure record (and crawl run, with ``crawls``), start the page ids
        again, and rebuild the dashboard's counters (:mod:`matcher.store.tallies`). The
        Redis page index is the engine's to clear."""
        self.pages.delete_all()
        self.fingerprints.delete_kind("page")
        self.matches.delete_all()
        self.failure_log.delete_all()
        if crawls:
            self.crawls.delete_all()
        self.sequences.reset("page")
        self.dashboard.recount()

    def set_split(self, page_id: Any, urls: list[str]) -> None:
        """Record the URLs of the split chapter a page was last matched with, on the page
        and on its active matches."""
        self.pages.set_split(page_id, urls)
        self.matches.set_split(page_id, urls)

    # sequences ---------------------------------------------------------------------------
    next_seq = Forward("sequences")

    # works -------------------------------------------------------------------------------
    upsert_work = Forward("works")
    save_work_segment = Forward("works")
    save_work_segments = Forward("works")
    drop_work_segments = Forward("works")
    work_segments = Forward("works")
    work_text = Forward("works")
    work_window = Forward("works")
    get_work = Forward("works")
    twin_of = Forward("works")
    near_twin_candidates = Forward("works")
    set_sketch = Forward("works")
    set_same_text = Forward("works")
    twins = Forward("works")
    twin_ids = Forward("works")
    works_by_seq = Forward("works")
    work_seqs = Forward("works")
    delete_work = Forward("works")

    # pages -------------------------------------------------------------------------------
    get_page = Forward("pages")
    page_by_url = Forward("pages")
    pages_by_seq = Forward("pages")
    store_crawled_page = Forward("pages")
    store_page_to_send = Forward("pages")
    store_pages_to_send = Forward("pages")
    pages_by_url = Forward("pages")
    download_text = Forward("pages")
    page_validators = Forward("pages")
    pages_linking_to = Forward("pages")
    pages_around = Forward("pages")
    page_and_around = Forward("pages")
    pages_and_around = Forward("pages")
    pages_by_id = Forward("pages")
    mark_processed = Forward("pages")
    gather_marks = Forward("pages")
    send_marks = Forward("pages")
    set_page_archive = Forward("pages")
    mark_page_gone = Forward("pages")
    mark_page_back = Forward("pages")
    mark_page_unchanged = Forward("pages")
    mark_enqueued = Forward("pages")
    pending_pages = Forward("pages")

    # fingerprints ------------------------------------------------------------------------
    save_fingerprints = Forward("fingerprints")
    save_fingerprints_many = Forward("fingerprints")
    load_fingerprints = Forward("fingerprints")
    owner_fingerprints = Forward("fingerprints")
    fingerprints_by_seq = Forward("fingerprints")
    work_fingerprints = Forward("fingerprints")
    iter_fingerprints = Forward("fingerprints")
    any_fingerprints = Forward("fingerprints")
    earlier_page_fingerprints = Forward("fingerprints")

    # matches -----------------------------------------------------------------------------
    upsert_match = Forward("matches")
    deactivate_matches = Forward("matches")
    active_matched_works = Forward("matches")
    own_matched_works = Forward("matches")
    matches_for = Forward("matches")

    # sites -------------------------------------------------------------------------------
    authorised_sites = Forward("sites")
