"""The embedded scan's in-memory MongoDB (mongomock), made to find documents by ``_id``
without reading the whole collection.

mongomock answers every filter by testing every document of the collection, so a scan
that looks pages up by id (:meth:`matcher.store.Store.get_page`, ``_page_slot``, the page
upserts and marks) costs time proportional to the pages already stored, squared over the
crawl. :func:`by_id_lookups` makes each collection of a mongomock database answer a filter
whose ``_id`` is one plain value or an ``$in`` of plain values (ints, strings, ObjectIds) by
taking those documents from its store, then applying the whole filter to them as before:
the same documents, found without the scan. Any other filter goes the usual way.
:func:`bulk_upserts` makes ``bulk_write`` take the current pymongo's ``UpdateOne`` (which
mongomock's does not), applying each as ``update_one``; :func:`as_server` does both.
``tests/admin/test_scan_store.py`` checks that the scan's store answers as the server does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import MethodType
from typing import Any

from bson import ObjectId
from mongomock.collection import Collection
from mongomock.filtering import filter_applies
from pymongo import UpdateOne

from matcher.store import INDEXES

_PLAIN = (int, str, ObjectId)


def memory_client(database: str) -> Any:
    """A new mongomock client whose database ``database`` answers as :func:`as_server` makes
    it (the benchmarks' in-process store)."""
    import mongomock

    client = mongomock.MongoClient(tz_aware=True)
    as_server(client[database])
    return client


def as_server(database: Any) -> None:
    """Every collection of the store on a mongomock ``database``: both of the above."""
    by_id_lookups(database)
    bulk_upserts(database)


def bulk_upserts(database: Any, names: Iterable[str] = INDEXES) -> None:
    """Give the collections ``names`` a ``bulk_write`` of ``UpdateOne`` requests."""
    for name in names:
        collection = database[name]
        collection.bulk_write = MethodType(_bulk_write, collection)


def _bulk_write(self: Collection, requests: Iterable[Any], ordered: bool = True) -> None:
    for op in requests:
        if not isinstance(op, UpdateOne):
            raise TypeError(f"the scan's store takes UpdateOne requests only, not {op!r}")
        self.update_one(op._filter, op._doc, upsert=op._upsert)


def by_id_lookups(database: Any, names: Iterable[str] = INDEXES) -> None:
    """Give the collections ``names`` of a mongomock ``database`` the ``_id`` fast path."""
    for name in names:
        collection = database[name]
        collection._iter_documents = MethodType(_iter_documents, collection)


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


def _iter_documents(self: Collection, spec: Any) -> Iterator[dict]:
    ids = _ids(spec)
    if ids is None:
        return Collection._iter_documents(self, spec)
    found = []
    for key in dict.fromkeys(ids):
        if key in self._store:
            found.append(self._store[key])
    return (doc for doc in found if filter_applies(spec, doc))
