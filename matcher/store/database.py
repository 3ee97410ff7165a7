"""The store's database as its families of collections: :class:`Store`, which composes
them, opens, indexes, resets and closes (the package's overview: :mod:`matcher.store`)."""

from __future__ import annotations

from typing import Any

from pymongo import MongoClient
from pymongo.database import Database

from matcher.evidence.archive import Archive, open_archive
from matcher.settings import Settings
from matcher.store import tallies
from matcher.store.accounts import ApiTokens, Users
from matcher.store.archived_matches import ArchivedMatches
from matcher.store.client import client_for, client_of
from matcher.store.common import (
    StoreError,
    mongo_errors,
)
from matcher.store.crawls import CrawlRuns
from matcher.store.discovery import Discovery
from matcher.store.failures import Failures
from matcher.store.fingerprints import Fingerprints
from matcher.store.layout import (
    INDEXES,
    ensure_indexes,
)
from matcher.store.matches import Matches
from matcher.store.page_links import PageLinks
from matcher.store.page_marks import PageMarks
from matcher.store.pages import Pages
from matcher.store.sequences import Sequences
from matcher.store.sites import Sites
from matcher.store.stamps import Stamps
from matcher.store.state import Dashboard, Reports, State
from matcher.store.takedowns import Takedowns
from matcher.store.twins import Twins
from matcher.store.works import Works


class Store:
    """The fptrack MongoDB database as its families of collections (``store.pages``,
    ``store.matches``, ...: each holds its collections' typed reads and idempotent writes),
    opened (:meth:`open`, :meth:`connect`: the backend chosen by the URI), indexed
    (:meth:`ensure_indexes`), reset (:meth:`reset_pages`) and closed (:meth:`close`)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.sequences = Sequences(db)
        self.fingerprints = Fingerprints(db)
        self.tallies = tallies.Sender(db)
        self.matches = Matches(db, self.tallies)
        self.failure_log = Failures(db)
        self.archived_matches = ArchivedMatches(db, self.tallies)
        self.works = Works(
            db, self.sequences, self.fingerprints, self.archived_matches, self.tallies
        )
        self.twins = Twins(db)
        self.pages = Pages(db, self.sequences, self.failure_log, self.tallies)
        self.page_links = PageLinks(db, self.pages.layout_ready)
        self.page_marks = PageMarks(db, self.pages, self.failure_log)
        self.crawls = CrawlRuns(db, self.page_marks, self.matches)
        self.sites = Sites(db)
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
        """A store on ``client`` (a pymongo or mongomock client), or on a new client of the
        backend ``uri`` names (:func:`~matcher.store.client.client_of`: a MongoDB server, or
        ``memory://``)."""
        if client is None:
            client = client_of(uri)
        return cls(client[db_name])

    @classmethod
    def open(cls, settings: Settings, client: Any = None) -> Store:
        """A store on database ``settings.mongo_db`` of ``client`` (a pymongo or mongomock
        client), or of a new client of the settings (:func:`~matcher.store.client.client_for`,
        the one way fptrack opens MongoDB: ``memory://`` an in-memory one)."""
        if client is None:
            client = client_for(settings)
        return cls(client[settings.mongo_db])

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

    def evidence_archive(self, spec: str) -> Archive | None:
        """The evidence archive ``spec`` names (``FPTRACK_ARCHIVE``, see
        :func:`matcher.evidence.archive.open_archive`): GridFS in this store's database, a folder,
        or
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
