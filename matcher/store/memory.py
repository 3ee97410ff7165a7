"""The embedded scan's in-memory MongoDB: a mongomock client whose collections find
documents by ``_id`` without reading the whole collection, read their cursors in linear
time, and take pymongo's bulk writes.

Three things of MongoDB's that the scan's store needs and mongomock lacks:

- mongomock answers every filter by testing every document of the collection, so a scan
  that looks pages up by id (:meth:`matcher.store.pages.Pages.get_page`, ``page_slot``, the
  page upserts and marks) costs time proportional to the pages already stored, squared
  over the crawl. A :class:`MemoryCollection` answers a filter whose ``_id`` is one plain
  value or an ``$in`` of plain values (ints, strings, ObjectIds) by taking those documents
  from its store, then applying the whole filter to them as before: the same documents,
  found without the scan. So it does for a filter on the first field of one of the
  collection's indexes (a page's ``next_url`` or ``aliases``, a fingerprint's ``owner_id``,
  a match's ``page_id`` ...), through a :class:`FieldIndex` of those fields' values kept
  with the collection's documents; this also makes mongomock's check of the unique indexes
  at every write (a filter on the index's fields) cheap. Any other filter goes the usual
  way.
- mongomock's cursor copies the rest of its results at every step (a slice of what is
  left), so reading a cursor of n documents costs n²/2 copies: minutes for the tallies'
  recount of a large store, and for every aggregation, which reads its collection through
  ``find``. A :class:`MemoryCollection`'s ``find`` gives a :class:`LinearCursor`, which
  steps through the same results by index.
- mongomock's ``bulk_write`` hands each request a builder whose ``add_update`` does not
  take the ``sort`` that current pymongo's ``UpdateOne`` passes (a ``TypeError``). A
  :class:`MemoryCollection` gives the requests a builder of its own that applies each one
  as the single write it stands for (``update_one``, ``insert_one``, ...).

Both are overrides in subclasses of mongomock's public classes (``MongoClient``,
``Database``, ``Collection``), made by :func:`memory_client`: no mongomock object or class is
patched. The subclasses' objects are built on the stores mongomock made for its own
(``_store``, ``_db_store``), so listing, dropping and counting work as in mongomock, and
``_iter_documents``, ``_insert``, ``_update``, ``_ensure_uniques`` and the cursor's step
are overridden, not
replaced; an upgrade of mongomock that changes those fails ``tests/admin/test_scan_store.py``,
which compares the answers with plain mongomock's and the server's, or
``tests/admin/test_memory_index.py``, which compares them with plain mongomock's through
random writes.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import Any

import mongomock
from bson import ObjectId
from mongomock.collection import Cursor
from mongomock.filtering import filter_applies
from pymongo.errors import BulkWriteError, DuplicateKeyError
from pymongo.results import BulkWriteResult

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


class FieldIndex:
    """The ids of a collection's documents by the values of some top-level fields (the
    first field of each of its indexes), in the order mongomock keeps the documents.

    Kept up to date from the writes' own steps (:class:`MemoryCollection`): every insert
    and every update that changes a document ends in mongomock's check of the unique
    indexes, which indexes the document first; a document deleted (or rolled back to what
    it was) may leave its old entries, which only ever add candidates: every candidate is
    looked up in the store and tested against the whole filter. A value that is not a
    plain int, string or ObjectId (a date, a sub-document) puts its document among every
    query's candidates for that field.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.fields: tuple[str, ...] = ()
        self.by: dict[str, dict[Any, set[Any]]] = {}
        self.unplain: dict[str, set[Any]] = {}
        self.keys_of: dict[Any, list[tuple[str, Any]]] = {}
        self.order: dict[Any, int] = {}
        self.counter = itertools.count()

    def rebuild(self, fields: tuple[str, ...], documents: Iterable[dict]) -> None:
        with self.lock:
            self.fields = fields
            self.by = {f: {} for f in fields}
            self.unplain = {f: set() for f in fields}
            self.keys_of, self.order = {}, {}
            for doc in documents:
                self.order[_store_key(doc["_id"])] = next(self.counter)
                self.add(doc)

    def add(self, doc: dict) -> None:
        """(Re)index ``doc``: its old entries out, its current values in."""
        with self.lock:
            key = _store_key(doc["_id"])
            for field, value in self.keys_of.pop(key, ()):
                bucket = self.unplain[field] if value is _UNPLAIN else self.by[field].get(value)
                if bucket is not None:
                    bucket.discard(key)
            entries = []
            for field in self.fields:
                if field not in doc:
                    continue
                value = doc[field]
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, _PLAIN):
                        self.by[field].setdefault(item, set()).add(key)
                        entries.append((field, item))
                    else:
                        self.unplain[field].add(key)
                        entries.append((field, _UNPLAIN))
            self.keys_of[key] = entries
            self.order.setdefault(key, next(self.counter))

    def inserted(self, key: Any) -> None:
        """A document (re)inserted under ``key``: last in the collection's order."""
        with self.lock:
            self.order[_store_key(key)] = next(self.counter)

    def candidates(self, spec: Any) -> list[Any] | None:
        """The ids of every document that may match ``spec`` (and others), in the
        collection's order; None when no indexed field of ``spec`` is plainly given."""
        if not isinstance(spec, dict):
            return None
        for field in self.fields:
            values = _plain_values(spec.get(field))
            if values is None:
                continue
            with self.lock:
                found = set(self.unplain[field])
                for value in values:
                    found |= self.by[field].get(value, set())
                return sorted(found, key=lambda k: self.order.get(k, -1))
        return None


def _store_key(key: Any) -> Any:
    """The key mongomock keeps a document under (a sub-document ``_id`` made hashable)."""
    return mongomock.helpers.hashdict(key) if isinstance(key, dict) else key


_UNPLAIN = object()
_INDEXES: weakref.WeakKeyDictionary[Any, FieldIndex] = weakref.WeakKeyDictionary()


class MemoryCollection(mongomock.Collection):
    """A mongomock collection with the ``_id`` and indexed-field fast paths and pymongo's
    bulk requests."""

    def _field_index(self) -> FieldIndex:
        """The :class:`FieldIndex` of this collection's documents (one per mongomock
        store, whichever collection object reaches it), rebuilt when its indexes change."""
        index = _INDEXES.get(self._store)
        if index is None:
            index = _INDEXES[self._store] = FieldIndex()
        firsts = (
            next(iter(list(spec.get("key") or [])), ("_id", 1))[0]
            for spec in self._store.indexes.values()
        )
        fields = tuple(dict.fromkeys(f for f in firsts if f != "_id" and "." not in f))
        if fields != index.fields:
            index.rebuild(fields, self._store.documents)
        return index

    def find(self, *args: Any, **kwargs: Any) -> LinearCursor:
        """mongomock's ``find``, its cursor a :class:`LinearCursor`."""
        cursor = super().find(*args, **kwargs)
        cursor.__class__ = LinearCursor
        return cursor

    def _iter_documents(self, spec: Any) -> Iterator[dict]:
        """mongomock's one way to the documents a filter selects (find, update, delete and
        count all go through it): those of a plain ``_id`` filter taken by their ids, those
        of a plain filter on an indexed field by its :class:`FieldIndex`."""
        ids = _ids(spec)
        if ids is None and not self._store.is_empty:
            ids = self._field_index().candidates(spec)
        if ids is None:
            return super()._iter_documents(spec)
        found = [self._store[key] for key in dict.fromkeys(ids) if key in self._store]
        return (doc for doc in found if filter_applies(spec, doc))

    def _insert(self, data: Any, session: Any = None, ordered: bool = True) -> Any:
        inserted = super()._insert(data, session=session, ordered=ordered)
        if isinstance(data, dict):
            self._field_index().inserted(inserted)
        return inserted

    def _ensure_uniques(self, new_data: dict) -> None:
        """Every insert and every update that changed a document comes here: it is indexed
        before its uniqueness is checked (the check looks it up by its fields)."""
        self._field_index().add(new_data)
        super()._ensure_uniques(new_data)

    def _update(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super()._update(*args, **kwargs)
        except DuplicateKeyError:  # the document was rolled back to what it was
            index = self._field_index()
            index.rebuild(index.fields, self._store.documents)
            raise

    def bulk_write(
        self, requests: Iterable[Any], ordered: bool = True, **_: Any
    ) -> BulkWriteResult:
        """Apply pymongo's bulk ``requests`` one by one, in order, and answer as pymongo
        does: a :class:`~pymongo.results.BulkWriteResult` (the ids upserted by request
        index), or a :class:`~pymongo.errors.BulkWriteError` naming the requests refused on
        a duplicate key (an ordered write stops at the first)."""
        builder = _Requests(self)
        for request in requests:
            try:
                request._add_to_bulk(builder)
            except DuplicateKeyError as exc:
                builder.refused(exc)
                if ordered:
                    break
            builder.index += 1
        if builder.details["writeErrors"]:
            raise BulkWriteError(builder.details)
        return BulkWriteResult(builder.details, acknowledged=True)


class LinearCursor(Cursor):
    """A mongomock cursor that steps through its results by index: the same documents in
    the same order, without copying those left at every step."""

    def __next__(self) -> Any:
        results = self._compute_results()
        if self._limit and self._emitted >= abs(self._limit):
            raise StopIteration
        index = self._skip + self._emitted
        if index >= len(results):
            raise StopIteration
        self._emitted += 1
        return results[index]

    next = __next__


class _Requests:
    """What pymongo's requests add themselves to (``_add_to_bulk``), each applied at once;
    ``details`` counts them as a server's bulk write reply does."""

    def __init__(self, collection: MemoryCollection) -> None:
        self.collection = collection
        self.index = 0
        self.details: dict[str, Any] = {
            "writeErrors": [],
            "writeConcernErrors": [],
            "nInserted": 0,
            "nUpserted": 0,
            "nMatched": 0,
            "nModified": 0,
            "nRemoved": 0,
            "upserted": [],
        }

    def refused(self, exc: DuplicateKeyError) -> None:
        self.details["writeErrors"].append({"index": self.index, "code": 11000, "errmsg": str(exc)})

    def add_insert(self, document: dict) -> None:
        self.collection.insert_one(document)
        self.details["nInserted"] += 1

    def add_update(
        self, selector: dict, update: Any, multi: bool, upsert: bool = False, **options: Any
    ) -> None:
        if options.get("array_filters") or options.get("sort"):
            raise NotImplementedError("the in-memory store takes no array filters or sort")
        write = self.collection.update_many if multi else self.collection.update_one
        self._updated(write(selector, update, upsert=bool(upsert)))

    def add_replace(
        self, selector: dict, replacement: dict, upsert: bool = False, **_: Any
    ) -> None:
        self._updated(self.collection.replace_one(selector, replacement, upsert=bool(upsert)))

    def add_delete(self, selector: dict, limit: int, **_: Any) -> None:
        if limit == 1:
            done = self.collection.delete_one(selector)
        else:
            done = self.collection.delete_many(selector)
        self.details["nRemoved"] += done.deleted_count

    def _updated(self, result: Any) -> None:
        if result.upserted_id is not None:
            self.details["nUpserted"] += 1
            self.details["upserted"].append({"index": self.index, "_id": result.upserted_id})
        else:
            self.details["nMatched"] += result.matched_count
            self.details["nModified"] += result.modified_count


def _plain_values(value: Any) -> list[Any] | None:
    """The values an equality (or ``$in``) on a field admits, when all are plain ints
    (not booleans), strings or ObjectIds; else None."""
    if isinstance(value, dict):
        if set(value) != {"$in"} or not isinstance(value["$in"], list | tuple):
            return None
        values = list(value["$in"])
    else:
        values = [value]
    if all(isinstance(v, _PLAIN) and not isinstance(v, bool) for v in values):
        return values
    return None


def _ids(spec: Any) -> list[Any] | None:
    """The ``_id`` values a filter admits, when it names them plainly; else None."""
    if not isinstance(spec, dict) or "_id" not in spec:
        return None
    return _plain_values(spec["_id"])
