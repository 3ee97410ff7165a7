"""The embedded scan's in-memory MongoDB: a mongomock client whose collections find
documents by ``_id`` without reading the whole collection, and take pymongo's bulk writes.

Two things of MongoDB's that the scan's store needs and mongomock lacks:

- mongomock answers every filter by testing every document of the collection, so a scan
  that looks pages up by id (:meth:`matcher.store.pages.Pages.get_page`, ``page_slot``, the
  page upserts and marks) costs time proportional to the pages already stored, squared
  over the crawl. A :class:`MemoryCollection` answers a filter whose ``_id`` is one plain
  value or an ``$in`` of plain values (ints, strings, ObjectIds) by taking those documents
  from its store, then applying the whole filter to them as before: the same documents,
  found without the scan. Any other filter goes the usual way.
- mongomock's ``bulk_write`` hands each request a builder whose ``add_update`` does not
  take the ``sort`` that current pymongo's ``UpdateOne`` passes (a ``TypeError``). A
  :class:`MemoryCollection` gives the requests a builder of its own that applies each one
  as the single write it stands for (``update_one``, ``insert_one``, ...).

Both are overrides in subclasses of mongomock's public classes (``MongoClient``,
``Database``, ``Collection``), made by :func:`memory_client`: no mongomock object or class is
patched. The subclasses' objects are built on the stores mongomock made for its own
(``_store``, ``_db_store``), so listing, dropping and counting work as in mongomock, and
``_iter_documents`` is overridden, not replaced; an upgrade of mongomock that changes those
fails ``tests/admin/test_scan_store.py``, which compares the answers with plain mongomock's
and the server's. ``tests/admin/test_scan_store.py`` checks that the scan's store answers
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import mongomock
from bson import ObjectId
from mongomock.filtering import filter_applies

_PLAIN = (int, str, ObjectId)


def memory_client() -> MemoryClient:
    """A new in-memory MongoDB client returning aware UTC datetimes like pymongo's clients
    of the deployed system (``tz_aware=True``): the embedded scan's and the benchmarks'."""
    return MemoryClient(tz_aware=True)


class MemoryClient(mongomock.MongoClient):
    """A mongomock client whose databases are :class:`MemoryDatabase`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memory_databases: dict[str, MemoryDatabase] = {}

    def get_database(self, name: str | None = None, **options: Any) -> Any:
        if name is None or options:
            return super().get_database(name, **options)
        if name not in self.memory_databases:
            plain = super().get_database(name)
            self.memory_databases[name] = MemoryDatabase(
                self, name, _store=plain._store, codec_options=plain.codec_options
            )
        return self.memory_databases[name]


class MemoryDatabase(mongomock.Database):
    """A mongomock database whose collections are :class:`MemoryCollection`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memory_collections: dict[str, MemoryCollection] = {}

    def get_collection(self, name: str, **options: Any) -> Any:
        if options:
            return super().get_collection(name, **options)
        if name not in self.memory_collections:
            plain = super().get_collection(name)  # checks the name
            self.memory_collections[name] = MemoryCollection(
                self, name, _db_store=plain._db_store, codec_options=plain.codec_options
            )
        return self.memory_collections[name]


class MemoryCollection(mongomock.Collection):
    """A mongomock collection with the ``_id`` fast path and pymongo's bulk requests."""

    def _iter_documents(self, spec: Any) -> Iterator[dict]:
        """mongomock's one way to the documents a filter selects (find, update, delete and
        count all go through it): those of a plain ``_id`` filter taken by their ids."""
        ids = _ids(spec)
        if ids is None:
            return super()._iter_documents(spec)
        found = [self._store[key] for key in dict.fromkeys(ids) if key in self._store]
        return (doc for doc in found if filter_applies(spec, doc))

    def bulk_write(self, requests: Iterable[Any], ordered: bool = True, **_: Any) -> None:
        """Apply pymongo's bulk ``requests`` one by one, in order."""
        builder = _Requests(self)
        for request in requests:
            request._add_to_bulk(builder)


class _Requests:
    """What pymongo's requests add themselves to (``_add_to_bulk``), applied at once."""

    def __init__(self, collection: MemoryCollection) -> None:
        self.collection = collection

    def add_insert(self, document: dict) -> None:
        self.collection.insert_one(document)

    def add_update(
        self, selector: dict, update: Any, multi: bool, upsert: bool = False, **options: Any
    ) -> None:
        if options.get("array_filters") or options.get("sort"):
            raise NotImplementedError("the in-memory store takes no array filters or sort")
        write = self.collection.update_many if multi else self.collection.update_one
        write(selector, update, upsert=bool(upsert))

    def add_replace(
        self, selector: dict, replacement: dict, upsert: bool = False, **_: Any
    ) -> None:
        self.collection.replace_one(selector, replacement, upsert=bool(upsert))

    def add_delete(self, selector: dict, limit: int, **_: Any) -> None:
        if limit == 1:
            self.collection.delete_one(selector)
        else:
            self.collection.delete_many(selector)


def _ids(spec: Any) -> list[Any] | None:
    """The ``_id`` values a filter admits, when it names them plainly; else None."""
    if not isinstance(spec, dict) or "_id" not in spec:
        return None
    value = spec["_id"]
    if isinstance(value, dict):
        if set(value) != {"$in"} or not isinstance(value["$in"], list | tuple):
            return None
        values = list(value["$in"])
    else:
        values = [value]
    if all(isinstance(v, _PLAIN) and not isinstance(v, bool) for v in values):
        return values
    return None
