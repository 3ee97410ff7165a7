"""The MongoDB store: works, pages, fingerprints, matches, sites, users.

One :class:`Store` wraps a pymongo ``Database`` (or a mongomock one in tests and in the
embedded scan). Every write is an upsert on a unique key, so storing the same page or match
twice updates it and never duplicates it. Works and pages also get a small integer ``seq``
(from the ``counters`` collection), from which the Redis indexes' owner ids are made. A
work's text is kept by segments (``work_segments``), so a novel of millions of characters
fits MongoDB's document size and evidence reads only the segments it quotes.

Only the part of the pymongo API that real MongoDB and mongomock share is used; where they
differ the code follows MongoDB. Filters are built here from typed values only — an id must
be a valid ObjectId string, a URL a ``str`` — so nothing from outside can become an operator.
Connection failures raise :class:`matcher.errors.StoreUnavailable` (retryable).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

import pymongo
from bson import Binary, ObjectId
from bson.errors import InvalidId
from pymongo import ASCENDING, DESCENDING, IndexModel, ReturnDocument, UpdateOne
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError, PyMongoError

from matcher import alert_rules, archive, ids
from matcher.archive import Archive, open_archive
from matcher.errors import MatcherError, StoreUnavailable, transient
from matcher.keys import MAX_WORK_SEQ
from matcher.near_twins import LOOKUP_KEYS
from matcher.pages import CrawledPage
from matcher.statuses import STATUSES
from matcher.store import tallies

P = ParamSpec("P")
T = TypeVar("T")

KINDS = ("work", "page")
_LINKS = {"next_url": 1, "prev_url": 1}
VALIDATOR_CHARS = 200
"""At most this much of a page's ``ETag`` and ``Last-Modified`` is kept (hostile headers)."""

LIST_ORDER = (("first_seen", DESCENDING), ("_id", DESCENDING))
"""The match list's sort order."""
REGISTRATION_ORDER = (("registered_at", ASCENDING), ("_id", ASCENDING))
"""Works in the order they were registered (seqs come from striped counters: not in order)."""

INDEXES: dict[str, list[IndexModel]] = {
    "works": [
        IndexModel([("key", ASCENDING)], unique=True, name="key_unique"),
        IndexModel([("seq", ASCENDING)], name="seq"),
        IndexModel([("registered_at", DESCENDING)], name="registered_at"),
        IndexModel([("title", ASCENDING)], name="title"),
        IndexModel([("content_hash", ASCENDING), *REGISTRATION_ORDER], name="content_hash_order"),
        IndexModel([("same_text_as", ASCENDING)], name="same_text_as", sparse=True),
        IndexModel([("near_keys", ASCENDING)], name="near_keys", sparse=True),
    ],
    "pages": [
        IndexModel([("seq", ASCENDING)], name="seq"),
        IndexModel([("site", ASCENDING), ("last_seen", DESCENDING)], name="site_last_seen"),
        IndexModel([("fetched_at", DESCENDING)], name="fetched_at"),
        IndexModel([("pending", ASCENDING), ("seq", ASCENDING)], name="pending_seq"),
        IndexModel([("next_url", ASCENDING)], name="next_url"),
        IndexModel([("processed_at", ASCENDING)], name="processed_at"),
    ],
    "work_segments": [
        IndexModel(
            [("work_id", ASCENDING), ("index", ASCENDING)], unique=True, name="work_index_unique"
        ),
    ],
    "fingerprints": [
        IndexModel(
            [("owner_id", ASCENDING), ("owner_kind", ASCENDING), ("segment", ASCENDING)],
            unique=True,
            name="owner_kind_segment_unique",
        ),
        IndexModel([("owner_kind", ASCENDING), ("seq", ASCENDING)], name="kind_seq"),
    ],
    "matches": [
        IndexModel(
            [("page_id", ASCENDING), ("work_id", ASCENDING)], unique=True, name="pair_unique"
        ),
        IndexModel([("work_id", ASCENDING), ("last_seen", DESCENDING)], name="work_last_seen"),
        # The match list: every subset of (site, work_id, status), then its sort order
        # (first_seen, _id), so each filter combination is served by one index.
        *(
            IndexModel(
                [*((f, ASCENDING) for f in fields), *LIST_ORDER],
                name="_".join((*fields, "first_seen_id")),
            )
            for fields in (
                (),
                ("site",),
                ("work_id",),
                ("status",),
                ("site", "work_id"),
                ("site", "status"),
                ("work_id", "status"),
                ("site", "work_id", "status"),
            )
        ),
        alert_rules.PENDING_MATCHES,
    ],
    "sites": [IndexModel([("name", ASCENDING)], unique=True, name="name_unique")],
    "users": [IndexModel([("username", ASCENDING)], unique=True, name="username_unique")],
    "crawls": [
        IndexModel([("run_id", ASCENDING)], unique=True, name="run_unique"),
        IndexModel([("site", ASCENDING), ("started_at", DESCENDING)], name="site_started"),
    ],
    "failures": [
        IndexModel([("task", ASCENDING), ("ref", ASCENDING)], unique=True, name="task_ref_unique"),
        IndexModel([("failed_at", DESCENDING)], name="failed_at"),
    ],
    "state": [],
    "api_tokens": [IndexModel([("username", ASCENDING)], name="username")],
    "reports": [IndexModel([("day", ASCENDING)], unique=True, name="day_unique")],
    tallies.COLLECTION: tallies.INDEXES,
    tallies.WORKS_COLLECTION: tallies.WORKS_INDEXES,
    "counters": [],
    **alert_rules.INDEXES,
    **archive.INDEXES,
}

SHARD_KEYS: dict[str, dict[str, Any]] = {
    "works": {"key": ASCENDING},
    "pages": {"_id": ASCENDING},
    "work_segments": {"work_id": ASCENDING},
    "fingerprints": {"owner_id": ASCENDING},
    "matches": {"page_id": ASCENDING},
    "sites": {"name": ASCENDING},
    "users": {"username": ASCENDING},
    "crawls": {"run_id": ASCENDING},
    "failures": {"task": ASCENDING, "ref": ASCENDING},
    "state": {"_id": "hashed"},
    "api_tokens": {"_id": "hashed"},
    "reports": {"day": ASCENDING},
    tallies.COLLECTION: {"_id": "hashed"},
    tallies.WORKS_COLLECTION: {"_id": "hashed"},
    "counters": {"_id": "hashed"},
    **alert_rules.SHARD_KEYS,
    **archive.SHARD_KEYS,
}
"""The shard key of every collection (``sh.shardCollection``; ``deploy/mongodb-shards.js``).

MongoDB enforces a unique index on a sharded collection only when the collection's shard
key is ranged and a prefix of the index, so every unique index here starts with its
collection's shard key, and those keys are ranged. A page's ``_id`` is derived from its URL
(:mod:`matcher.ids`), uniform over 63 bits: ``pages`` and ``matches`` (by ``page_id``)
spread evenly on ranged keys, and the URL needs no unique index of its own; ``seq`` is
unique by construction (counter stripes). Collections without a unique index of their own
use a hashed ``_id``; the evidence archive's GridFS bucket is sharded as MongoDB documents
(:data:`matcher.archive.SHARD_KEYS`).

On a sharded collection MongoDB (7.0) refuses a single-document update, delete or
findAndModify, and any upsert, whose filter does not name the whole shard key: every such
write here names it (reading a document's shard key first where only its ``_id`` is
known), and no write changes a shard-key value. ``tests/command_audit.py`` checks every
write the test suites send."""


def shard_commands(db_name: str = "fptrack") -> str:
    """The mongosh commands that shard every collection of database ``db_name`` on its
    :data:`SHARD_KEYS`, run once on a mongos: before the first ``fptrack`` process starts,
    or on a database in use once ``fptrack migrate`` has run (``deploy/SCALING.md``).

    MongoDB shards a collection that holds documents only on an existing index that
    supports the key: :data:`INDEXES` holds one for every ranged key (``ensure_indexes``),
    and the commands create the hashed ones first (``createIndex`` does nothing when the
    index exists)."""
    import json

    lines = [
        f"// The shard keys of fptrack's database {db_name!r} (matcher/store.py SHARD_KEYS).",
        "// Run once with mongosh on a mongos: before the first fptrack process starts, or on",
        "// a database in use after fptrack migrate (deploy/SCALING.md).",
        f"sh.enableSharding({json.dumps(db_name)});",
    ]
    for name, key in SHARD_KEYS.items():
        spec = json.dumps(key)
        if "hashed" in key.values():
            lines.append(
                f"db.getSiblingDB({json.dumps(db_name)}).getCollection({json.dumps(name)})"
                f".createIndex({spec});"
            )
        lines.append(f"sh.shardCollection({json.dumps(f'{db_name}.{name}')}, {spec});")
    return "\n".join(lines) + "\n"


LEGACY_INDEXES = (
    ("fingerprints", "owner_unique"),
    ("fingerprints", "owner_segment_unique"),
    ("pages", "url_unique"),
    ("pages", "seq_unique"),
    ("works", "seq_unique"),
    *tallies.LEGACY_INDEXES,
)


@dataclass(frozen=True)
class TextWindow:
    """Part of a long text, sliced with offsets into the whole text (``len`` is the whole
    text's up to the window's end), so code written for the whole text reads the window.

    >>> w = TextWindow(10, "abc")
    >>> w[9:12], w[11:], len(w)
    ('ab', 'bc', 13)
    """

    offset: int
    text: str

    def __len__(self) -> int:
        return self.offset + len(self.text)

    def __getitem__(self, key: slice) -> str:
        start = 0 if key.start is None else key.start
        stop = len(self) if key.stop is None else key.stop
        return self.text[max(0, start - self.offset) : max(0, stop - self.offset)]


class StoreError(MatcherError, ValueError):
    """A request to the store names something invalid or absent."""


def now() -> datetime:
    """The current time, UTC, at MongoDB's millisecond precision."""
    t = datetime.now(UTC)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def mongo_errors(method: Callable[P, T]) -> Callable[P, T]:
    """Turn pymongo connection failures, and the server errors of an election or a restart
    (:func:`matcher.errors.transient`), into :class:`StoreUnavailable`."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except PyMongoError as exc:
            if not transient(exc):
                raise
            raise StoreUnavailable(f"MongoDB unavailable in {method.__name__}: {exc}") from exc

    return wrapper


def mongo_client(uri: str, timeout_ms: int = 5000) -> pymongo.MongoClient:
    """The one way fptrack opens MongoDB: aware UTC times, ``timeout_ms`` to find a server
    and connect, and every write acknowledged once it is in the journal (``j: true``), so a
    server killed the moment after keeps it (measured on SecantusDB killed by SIGKILL after
    200 inserts: 12 lost without it, none with it); a ``w`` or ``journal`` option in the URI
    is its owner's choice and wins."""
    options = pymongo.uri_parser.parse_uri(uri, warn=True)["options"] if uri else {}
    durable = {} if {"w", "journal"} & {k.lower() for k in options} else {"journal": True}
    return pymongo.MongoClient(
        uri, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms, tz_aware=True,
        **durable,
    )  # fmt: skip


def object_id(value: str | ObjectId, what: str = "id") -> ObjectId:
    """An ObjectId from its 24-hex-digit string; anything else is a :class:`StoreError`."""
    if isinstance(value, ObjectId):
        return value
    if not isinstance(value, str):
        raise StoreError(f"{what} must be a string, got {type(value).__name__}")
    try:
        return ObjectId(value)
    except InvalidId as exc:
        raise StoreError(f"{what} {value!r} is not a valid id") from exc


def page_key(value: str | int | ObjectId) -> int | ObjectId:
    """A page's ``_id`` from its string form (decimal digits, :mod:`matcher.ids`), or as
    given; a page stored before ``fptrack migrate`` keeps its ObjectId. Anything else is a
    :class:`StoreError`."""
    if isinstance(value, ObjectId):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= ids.ID_MASK:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19:
        number = int(value)
        if number <= ids.ID_MASK:
            return number
    if isinstance(value, str) and len(value) == 24:
        return object_id(value, "page id")
    raise StoreError(f"page id {value!r} is not a valid id")


NEAR_CANDIDATES = 256
"""Works a new work is compared with, at most, when looking for the one it nearly repeats."""


def _sketch_fields(sketch: Sequence[int]) -> dict[str, list[int]]:
    """A work's near-twin sketch and the smallest of its hashes the store looks it up by."""
    values = [int(v) for v in sketch]
    return {"near_sketch": values, "near_keys": values[:LOOKUP_KEYS]}


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise StoreError(f"{what} must be a string, got {type(value).__name__}")
    return value


def _method(name: str) -> str:
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise StoreError(f"fingerprint method must be a plain name, got {name!r}")
    return name


def _match_key(match: dict[str, Any]) -> dict[str, Any]:
    """The filter of one match record: its shard key (``page_id``) and ``_id``."""
    return {"page_id": match["page_id"], "_id": match["_id"]}


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise StoreError(f"owner kind must be one of {KINDS}, got {kind!r}")
    return kind


class Store:
    """Typed reads and idempotent writes over the fptrack MongoDB database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def client(self) -> Any:
        """The pymongo client of this store's database (shared; close it with :meth:`close`)."""
        return self.db.client

    def close(self) -> None:
        """Close the client of this store's database."""
        self.db.client.close()

    @classmethod
    def connect(cls, uri: str, db_name: str, client: Any = None) -> Store:
        """A store on ``client`` (a pymongo or mongomock client), or a new pymongo client
        (:func:`mongo_client`)."""
        if client is None:
            client = mongo_client(uri)
        return cls(client[db_name])

    @mongo_errors
    def ensure_indexes(self) -> None:
        """Create every collection's indexes; running it again changes nothing.

        The indexes of earlier layouts (:data:`LEGACY_INDEXES`) are dropped first: unique
        indexes that do not start with their collection's shard key, and
        ``fingerprints.owner_unique`` (one fingerprint document per owner, before works had
        segments).
        """
        for name, index in LEGACY_INDEXES:
            if index in self.db[name].index_information():
                self.db[name].drop_index(index)
        for name, models in INDEXES.items():
            self.db[name].create_indexes(models)

    @mongo_errors
    def next_seq(self, kind: str, stripe: int) -> int:
        """A new integer id for a work or page, from counter stripe ``stripe``
        (:mod:`matcher.ids`: an atomic ``$inc`` on one of the ``counters`` documents)."""
        limit = MAX_WORK_SEQ if _check_kind(kind) == "work" else ids.MAX_SEQ
        for _ in range(5):
            try:
                doc = self.db.counters.find_one_and_update(
                    {"_id": f"{kind}|{int(stripe)}"},
                    {"$inc": {"n": 1}},
                    upsert=True,
                    return_document=ReturnDocument.AFTER,
                )
            except DuplicateKeyError:  # two first upserts of one stripe raced: again
                continue
            if doc is None:  # the same race, as some servers report it
                continue
            try:
                return ids.seq_of(stripe=stripe, n=int(doc["n"]), limit=limit)
            except ids.SeqExhausted as exc:
                raise StoreError(f"no {kind} ids left: {exc}") from exc
        raise StoreUnavailable(f"counter {kind}|{stripe} could not be incremented")

    def _upsert_with_seq(
        self,
        collection: str,
        kind: str,
        key: dict[str, Any],
        fields: dict[str, Any],
        on_insert: dict[str, Any] | None = None,
        *,
        stripe: int,
        existing: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Upsert by ``key``; a new document gets ``first_seen``, ``on_insert`` and a ``seq``
        from counter stripe ``stripe``. ``existing``: the stored document, when the caller
        already read it (else it is read here)."""
        coll = self.db[collection]
        if existing is None:
            existing = coll.find_one(key, {"_id": 1, "seq": 1})
        stamp = fields.pop("_stamp", now())
        if existing is not None:
            doc = coll.find_one_and_update(
                key, {"$set": fields}, return_document=ReturnDocument.AFTER
            )
            return doc, False
        seq = self.next_seq(kind, stripe)
        insert = {"seq": seq, "first_seen": stamp, **(on_insert or {})}
        for _ in range(3):
            try:
                doc = coll.find_one_and_update(
                    key,
                    {"$set": fields, "$setOnInsert": insert},
                    upsert=True,
                    return_document=ReturnDocument.AFTER,
                )
            except DuplicateKeyError:  # a concurrent writer inserted the same key first
                doc = None
            if doc is None:  # (some servers answer a lost upsert race with no document)
                doc = coll.find_one_and_update(
                    key, {"$set": fields}, return_document=ReturnDocument.AFTER
                )
            if doc is not None:
                return doc, doc["seq"] == seq
        # The key's unique field is held by a document that does not match ``key`` (a
        # page's id slot taken by another URL): the caller looks again.
        raise DuplicateKeyError(f"{collection}: {sorted(key)} taken by another document")

    # works -----------------------------------------------------------------------------

    @mongo_errors
    def upsert_work(
        self,
        key: str,
        *,
        title: str,
        content_hash: str,
        length: int,
        segments: int,
        author: str = "",
        source: str = "",
        owner: str = "",
        tags: Iterable[str] = (),
        sketch: Sequence[int] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Store a work's metadata under its unique ``key``; returns ``(document, created)``.

        Its text is stored by segments (:meth:`save_work_segment`); ``length`` is its number
        of characters and ``segments`` how many there are; ``sketch`` is its near-twin
        sketch (:mod:`matcher.near_twins`).
        """
        stamp = now()
        fields = {
            "title": _text(title, "title"),
            "author": _text(author, "author"),
            "source": _text(source, "source"),
            "owner": _text(owner, "owner"),
            "tags": [_text(t, "tag") for t in tags],
            "content_hash": _text(content_hash, "content_hash"),
            "length": int(length),
            "segments": int(segments),
            "updated_at": stamp,
            "_stamp": stamp,
            **({} if sketch is None else _sketch_fields(sketch)),
        }
        key = _text(key, "key")
        doc, created = self._upsert_with_seq(
            "works",
            "work",
            {"key": key},
            fields,
            {"registered_at": stamp},
            stripe=ids.key_stripe(key),
        )
        if created:
            changes = tallies.Changes()
            changes.work(1)
            changes.apply(self.db)
        return doc, created

    def save_work_segment(self, work_id: ObjectId, segment: dict[str, Any]) -> None:
        """Store one segment of a work (see :meth:`save_work_segments`)."""
        self.save_work_segments(work_id, [segment])

    @mongo_errors
    def save_work_segments(self, work_id: ObjectId, segments: Iterable[dict[str, Any]]) -> None:
        """Store segments of a work, one unordered bulk write: each with ``index``,
        ``start``, ``end`` (its place in the work's text), ``title`` and ``text`` (the
        segment and its overlap with the next); idempotent upserts."""
        ops = []
        for segment in segments:
            fields = {
                "start": int(segment["start"]),
                "end": int(segment["end"]),
                "title": _text(segment["title"], "segment title"),
                "text": _text(segment["text"], "segment text"),
            }
            key = {"work_id": work_id, "index": int(segment["index"])}
            ops.append(UpdateOne(key, {"$set": fields}, upsert=True))
        if ops:
            self.db.work_segments.bulk_write(ops, ordered=False)

    @mongo_errors
    def drop_work_segments(self, work_id: ObjectId, from_index: int = 0) -> None:
        """Delete a work's segments (and their fingerprints) from ``from_index`` on."""
        self.db.work_segments.delete_many({"work_id": work_id, "index": {"$gte": from_index}})
        self.db.fingerprints.delete_many(
            {"owner_kind": "work", "owner_id": work_id, "segment": {"$gte": from_index}}
        )

    @mongo_errors
    def work_segments(
        self, work_id: ObjectId, indexes: Iterable[int] | None = None, text: bool = True
    ) -> list[dict]:
        """A work's segments in order (those of ``indexes`` only, when given)."""
        query: dict[str, Any] = {"work_id": work_id}
        if indexes is not None:
            query["index"] = {"$in": [int(i) for i in indexes]}
        projection = None if text else {"text": 0}
        return list(self.db.work_segments.find(query, projection).sort("index", ASCENDING))

    def work_text(self, work_id: str | ObjectId) -> str:
        """A work's whole text, joined from its segments."""
        segments = self.work_segments(object_id(work_id, "work id"))
        return "".join(s["text"][: s["end"] - s["start"]] for s in segments)

    @mongo_errors
    def work_window(self, work_id: str | ObjectId, spans: Iterable[Iterable[int]]) -> TextWindow:
        """The part of a work's text that the segments holding ``spans`` (``[start, end)``
        offsets into the whole text) cover, addressed by offsets into the whole text."""
        spans = [tuple(s) for s in spans]
        if not spans:
            return TextWindow(0, "")
        start, end = min(s[0] for s in spans), max(s[1] for s in spans)
        query = {
            "work_id": object_id(work_id, "work id"),
            "start": {"$lt": max(end, start + 1)},
            "end": {"$gt": start},
        }
        found = list(self.db.work_segments.find(query).sort("index", ASCENDING))
        if not found:
            return TextWindow(0, "")
        text = "".join(s["text"][: s["end"] - s["start"]] for s in found)
        return TextWindow(int(found[0]["start"]), text)

    @mongo_errors
    def get_work(self, work_id: str, projection: dict[str, int] | None = None) -> dict | None:
        return self.db.works.find_one({"_id": object_id(work_id, "work id")}, projection)

    @mongo_errors
    def twin_of(self, work_id: ObjectId, content_hash: str) -> dict | None:
        """The earliest registered other work with the same text that is indexed itself
        (not a twin of another): the work ``work_id`` duplicates, if any."""
        query = {
            "content_hash": _text(content_hash, "content_hash"),
            "_id": {"$ne": work_id},
            "same_text_as": None,
        }
        found = self.db.works.find(query, {"title": 1, "source": 1, "seq": 1})
        return next(iter(found.sort(list(REGISTRATION_ORDER)).limit(1)), None)

    @mongo_errors
    def near_twin_candidates(self, work_id: ObjectId, keys: Sequence[int]) -> list[dict]:
        """The other works, indexed themselves (not twins of another), whose near-twin
        sketch starts with one of ``keys`` (:mod:`matcher.near_twins`), earliest first, with
        their sketches; at most :data:`NEAR_CANDIDATES`."""
        query = {
            "near_keys": {"$in": [int(k) for k in keys]},
            "_id": {"$ne": work_id},
            "same_text_as": None,
        }
        projection = {"key": 1, "title": 1, "source": 1, "seq": 1, "near_sketch": 1}
        found = self.db.works.find(query, projection).sort(list(REGISTRATION_ORDER))
        return list(found.limit(NEAR_CANDIDATES))

    @mongo_errors
    def set_sketch(self, work_id: ObjectId, sketch: Sequence[int], *, key: str) -> None:
        """Store the near-twin sketch of the work ``work_id`` (unique ``key``)."""
        change = {"$set": _sketch_fields(sketch)}
        self.db.works.update_one({"key": _text(key, "key"), "_id": work_id}, change)

    @mongo_errors
    def set_same_text(
        self, work_id: ObjectId, twin: ObjectId | None, *, key: str, near: bool = False
    ) -> None:
        """Mark the work ``work_id`` (whose unique ``key`` is ``key``: the shard key) as
        having the same text as ``twin`` (None: as no other work), or nearly (``near``:
        ``near_twin`` is set, :mod:`matcher.near_twins`)."""
        if twin is None:
            change: dict[str, Any] = {"$unset": {"same_text_as": "", "near_twin": ""}}
        elif near:
            change = {"$set": {"same_text_as": twin, "near_twin": True}}
        else:
            change = {"$set": {"same_text_as": twin}, "$unset": {"near_twin": ""}}
        self.db.works.update_one({"key": _text(key, "key"), "_id": work_id}, change)

    @mongo_errors
    def twins(self, work_id: ObjectId) -> list[dict]:
        """The works marked as having the same (or nearly the same) text as ``work_id``,
        earliest first, with their sketches."""
        projection = {
            "key": 1, "title": 1, "source": 1, "seq": 1, "content_hash": 1, "near_twin": 1,
            "near_sketch": 1,
        }  # fmt: skip
        found = self.db.works.find({"same_text_as": work_id}, projection)
        return list(found.sort(list(REGISTRATION_ORDER)))

    @mongo_errors
    def twin_ids(self) -> set[ObjectId]:
        """Every work that has the same text as an earlier one (and is not indexed)."""
        return {d["_id"] for d in self.db.works.find({"same_text_as": {"$ne": None}}, {"_id": 1})}

    def works_by_seq(
        self, seqs: Iterable[int], projection: dict[str, int] | None = None
    ) -> dict[int, dict]:
        return self._by_seq("works", seqs, projection)

    @mongo_errors
    def _by_seq(
        self, collection: str, seqs: Iterable[int], projection: dict[str, int] | None
    ) -> dict[int, dict]:
        """Documents of ``collection`` by their ``seq`` (the projection always keeps it)."""
        wanted = [int(s) for s in seqs]
        projection = None if projection is None else {**projection, "seq": 1}
        found = self.db[collection].find({"seq": {"$in": wanted}}, projection)
        return {d["seq"]: d for d in found}

    @mongo_errors
    def work_seqs(self, work_ids: Iterable[ObjectId]) -> dict[ObjectId, int]:
        """The ``seq`` of each of the works ``work_ids`` still registered."""
        query = {"_id": {"$in": [object_id(w, "work id") for w in work_ids]}}
        return {w["_id"]: int(w["seq"]) for w in self.db.works.find(query, {"seq": 1})}

    @mongo_errors
    def count(self, collection: str) -> int:
        if collection not in INDEXES:
            raise StoreError(f"unknown collection {collection!r}")
        return self.db[collection].count_documents({})

    @mongo_errors
    def delete_work(self, work_id: str) -> dict | None:
        """Delete a work, its segments, fingerprints and unreviewed matches; returns it."""
        oid = object_id(work_id, "work id")
        found = self.db.works.find_one({"_id": oid}, {"key": 1})  # its shard key
        if found is None:
            return None
        doc = self.db.works.find_one_and_delete({"key": found["key"], "_id": oid})
        if doc is not None:
            self.drop_work_segments(oid)
            self.db.fingerprints.delete_many({"owner_kind": "work", "owner_id": oid})
            changes = tallies.Changes()
            changes.work(-1)
            self._delete_unreviewed({"work_id": oid}, changes)
        return doc

    def _delete_unreviewed(self, owner: dict[str, ObjectId], changes: tallies.Changes) -> None:
        """Delete the unreviewed matches of a work or page, and their tallies."""
        query = {**owner, "status": "new"}
        for match in self.db.matches.find(query, {"text": 0, "evidence": 0}):
            deleted = self.db.matches.delete_one(_match_key(match)).deleted_count
            if deleted and match.get("active", True):
                changes.match(match, -1)
        changes.apply(self.db)

    # pages -----------------------------------------------------------------------------

    @mongo_errors
    def get_page(self, page_id: str | int, projection: dict[str, int] | None = None) -> dict | None:
        return self.db.pages.find_one({"_id": page_key(page_id)}, projection)

    @mongo_errors
    def page_by_url(self, url: str, projection: dict[str, int] | None = None) -> dict | None:
        return self._page_slot(_text(url, "url"), projection)[0]

    def _page_slot(
        self, url: str, projection: dict[str, int] | None = None
    ) -> tuple[dict | None, int]:
        """``(the stored page of url or None, its _id or the free slot for it)``: one read
        of the URL's candidate ids (:mod:`matcher.ids`)."""
        slots = list(ids.candidates(ids.page_id(url)))
        wanted = None if projection is None else {**projection, "url": 1}
        found = {d["_id"]: d for d in self.db.pages.find({"_id": {"$in": slots}}, wanted)}
        for slot in slots:
            doc = found.get(slot)
            if doc is not None and doc.get("url") == url:
                return doc, slot
        for slot in slots:
            if slot not in found:
                return None, slot
        raise StoreError(f"every id slot of {url!r} holds another URL")

    def pages_by_seq(
        self, seqs: Iterable[int], projection: dict[str, int] | None = None
    ) -> dict[int, dict]:
        return self._by_seq("pages", seqs, projection)

    @mongo_errors
    def store_crawled_page(
        self, page: CrawledPage, content_hash: str, _attempt: int = 0
    ) -> tuple[dict, str]:
        """Store a fetched page under its unique URL; returns ``(document, state)``.

        ``state`` is ``"new"``, ``"changed"`` (its text or its next / previous page links
        differ from the stored ones) or ``"unchanged"``. A new or changed page is marked
        ``pending`` until :meth:`mark_processed` records that this very text was matched.
        """
        url = _text(page.url, "url")
        before, slot = self._page_slot(url, {"content_hash": 1, "seq": 1, **_LINKS})
        stamp = now()
        fields = {
            "site": _text(page.site, "site"),
            "title": _text(page.title, "title"),
            "text": _text(page.text, "text"),
            "content_hash": _text(content_hash, "content_hash"),
            "status": int(page.status),
            "encoding": _text(page.encoding, "encoding"),
            "fetched_at": page.fetched_at or stamp,
            "last_seen": stamp,
            "next_url": _text(page.next_url, "next url"),
            "prev_url": _text(page.prev_url, "previous url"),
            "etag": _text(page.etag, "etag")[:VALIDATOR_CHARS],
            "last_modified": _text(page.last_modified, "last modified")[:VALIDATOR_CHARS],
            "_stamp": stamp,
        }
        try:
            doc, created = self._upsert_with_seq(
                "pages",
                "page",
                {"_id": slot, "url": url},
                fields,
                stripe=ids.stripe_of(slot),
                existing=before,
            )
        except DuplicateKeyError:  # another URL took the slot first: look again
            if _attempt >= ids.PROBES:
                raise StoreError(f"no id slot of {url!r} could be taken") from None
            return self.store_crawled_page(page, content_hash, _attempt=_attempt + 1)
        if doc.get("gone"):  # it answers again
            self.db.pages.update_one({"_id": doc["_id"]}, {"$unset": {"gone": ""}})
            doc.pop("gone")
        changes = tallies.Changes()
        changes.page(doc.get("site", ""), doc["fetched_at"], created)
        changes.apply(self.db)
        if created:
            state = "new"
        elif (
            before is None
            or before.get("content_hash") != content_hash
            or any(before.get(k, "") != fields[k] for k in _LINKS)
        ):  # a concurrent writer stored it first: match this text again
            state = "changed"
        else:
            state = "unchanged"
        if state != "unchanged" or doc.get("processed_hash") != content_hash:
            doc = self.db.pages.find_one_and_update(
                {"_id": doc["_id"]},
                {"$set": {"pending": True}},
                return_document=ReturnDocument.AFTER,
            )
        return doc, state

    @mongo_errors
    def pages_by_url(
        self, urls: Iterable[str], projection: dict[str, int] | None = None
    ) -> dict[str, dict]:
        """Stored pages by URL (those not stored are absent)."""
        wanted = {_text(u, "url") for u in urls}
        slots = [slot for u in wanted for slot in ids.candidates(ids.page_id(u))]
        fields = None if projection is None else {**projection, "url": 1}
        found = self.db.pages.find({"_id": {"$in": slots}}, fields)
        return {d["url"]: d for d in found if d.get("url") in wanted}

    def page_validators(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored pages among ``urls``: ``{url: {fetched_at, etag, last_modified}}``,
        for an incremental crawl's conditional requests (read in batches)."""
        wanted = list(dict.fromkeys(_text(u, "url") for u in urls))
        fields = {"fetched_at": 1, "etag": 1, "last_modified": 1}
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(wanted), 1000):
            out.update(self.pages_by_url(wanted[start : start + 1000], fields))
        return out

    @mongo_errors
    def pages_linking_to(self, url: str, projection: dict[str, int] | None = None) -> list[dict]:
        """Pages whose "next page" link leads to ``url``."""
        return list(self.db.pages.find({"next_url": _text(url, "url")}, projection).limit(8))

    @mongo_errors
    def mark_processed(
        self,
        page_id: str | ObjectId,
        content_hash: str,
        considered: list[dict[str, Any]] | None = None,
        split: list[str] | None = None,
    ) -> bool:
        """Record that the page's text with ``content_hash`` was matched (no-op if it changed).

        ``considered``: the works verified for the page and not recorded, with the reason;
        ``split``: the URLs of the split chapter the page was matched with, in order.
        """
        fields: dict[str, Any] = {"processed_hash": content_hash, "pending": False}
        fields.update(processed_at=now(), considered=considered or [], split=split or [])
        result = self.db.pages.update_one(
            {"_id": page_key(page_id), "content_hash": _text(content_hash, "hash")},
            {"$set": fields},
        )
        return result.matched_count == 1

    @mongo_errors
    def set_page_archive(
        self, page_id: str | ObjectId, content_hash: str, ref: dict[str, Any]
    ) -> None:
        """Record where the exchange of the page's text with ``content_hash`` is archived
        (no-op if the text changed meanwhile)."""
        self.db.pages.update_one(
            {"_id": page_key(page_id), "content_hash": _text(content_hash, "hash")},
            {"$set": {"archive": dict(ref)}},
        )

    @mongo_errors
    def archive_refs(self) -> set[str]:
        """The SHA-256 of every archived exchange a page (its current text) or a match (the
        text it was found in) refers to."""
        refs: set[str] = set()
        for coll in (self.db.pages, self.db.matches):
            for doc in coll.find({"archive.sha256": {"$exists": True}}, {"archive.sha256": 1}):
                refs.add(str(doc["archive"]["sha256"]))
        return refs

    def evidence_archive(self, spec: str) -> Archive | None:
        """The evidence archive ``spec`` names (``FPTRACK_ARCHIVE``, see
        :func:`matcher.archive.open_archive`): GridFS in this store's database, a folder, or
        None."""
        return open_archive(spec, self.db)

    @mongo_errors
    def mark_page_gone(self, url: str, status: int, at: datetime) -> bool:
        """Record that the stored page at ``url`` answered ``status`` (404, 410) at ``at``,
        unless already recorded; False when no page is stored there. Storing the page again
        (:meth:`store_crawled_page`) clears it."""
        doc, _ = self._page_slot(_text(url, "url"), {"_id": 1})
        if doc is None:
            return False
        self.db.pages.update_one(
            {"_id": doc["_id"], "gone": {"$exists": False}},
            {"$set": {"gone": {"status": int(status), "at": at}}},
        )
        return True

    @mongo_errors
    def mark_page_unchanged(self, url: str, at: datetime) -> bool:
        """Record that the stored page at ``url`` answered 304 at ``at``: its text is still
        the stored one (``fetched_at`` and ``last_seen`` move on, so a sitemap date older
        than ``at`` does not ask for it again); False when nothing is stored there."""
        doc, _ = self._page_slot(_text(url, "url"), {"_id": 1})
        if doc is None:
            return False
        if not isinstance(at, datetime):
            raise StoreError("a page's fetch time must be a datetime")
        self.db.pages.update_one({"_id": doc["_id"]}, {"$set": {"fetched_at": at, "last_seen": at}})
        return True

    @mongo_errors
    def mark_enqueued(self, page_id: str | ObjectId, content_hash: str, at: datetime) -> None:
        """Record that a task to match the page's text with ``content_hash`` was enqueued at
        ``at`` (no-op if the text changed meanwhile)."""
        self.db.pages.update_one(
            {"_id": page_key(page_id), "content_hash": _text(content_hash, "hash")},
            {"$set": {"enqueued_hash": content_hash, "enqueued_at": at}},
        )

    @mongo_errors
    def set_split(self, page_id: ObjectId, urls: list[str]) -> None:
        """Record the URLs of the split chapter a page was last matched with, on the page
        and on its active matches."""
        urls = [_text(u, "part url") for u in urls]
        self.db.pages.update_one({"_id": page_id}, {"$set": {"split": urls}})
        self.db.matches.update_many({"page_id": page_id, "active": True}, {"$set": {"split": urls}})

    @mongo_errors
    def pending_pages(self, limit: int = 100_000) -> Iterator[str]:
        """Ids of pages whose current text was never processed, oldest first."""
        cursor = self.db.pages.find({"pending": True}, {"_id": 1}).sort("seq", ASCENDING)
        for doc in cursor.limit(int(limit)):
            yield str(doc["_id"])

    @mongo_errors
    def authorised_sites(self) -> set[str]:
        """Names of the sites licensed to carry the works (their matches are authorised)."""
        return {d["name"] for d in self.db.sites.find({"authorised": True}, {"name": 1})}

    # fingerprints ----------------------------------------------------------------------

    def save_fingerprints(
        self,
        kind: str,
        owner_id: ObjectId,
        seq: int,
        fingerprints: dict[str, dict[str, Any]],
        segment: int = 0,
    ) -> None:
        """Store an owner's fingerprints (see :meth:`save_fingerprints_many`)."""
        self.save_fingerprints_many(kind, owner_id, [(seq, segment, fingerprints)])

    @mongo_errors
    def save_fingerprints_many(
        self,
        kind: str,
        owner_id: ObjectId,
        items: Iterable[tuple[int, int, dict[str, dict[str, Any]]]],
    ) -> None:
        """Store an owner's fingerprints, ``(seq, segment, {method: {"version", "params",
        "value"}})`` per page or work segment, in one unordered bulk write.

        One document per page, or per segment of a work, holds every method
        (``methods.<method>``), replaced as a whole, so a re-fingerprinted owner never mixes
        old and new values; ``bytes`` values are stored as BSON binary. ``seq`` is the id the
        Redis indexes use (a work segment's owner id, :mod:`matcher.keys`).
        """
        kind = _check_kind(kind)
        ops = []
        for seq, segment, fingerprints in items:
            methods = {}
            for method, fp in fingerprints.items():
                value = fp["value"]
                methods[_method(method)] = {
                    "version": int(fp["version"]),
                    "params": fp.get("params", {}),
                    "value": Binary(value) if isinstance(value, bytes) else value,
                }
            key = {"owner_kind": kind, "owner_id": owner_id, "segment": int(segment)}
            fields = {"seq": int(seq), "methods": methods, "updated_at": now()}
            ops.append(UpdateOne(key, {"$set": fields}, upsert=True))
        if ops:
            self.db.fingerprints.bulk_write(ops, ordered=False)

    @staticmethod
    def _flatten(doc: dict, method: str) -> dict | None:
        fp = doc.get("methods", {}).get(method)
        if fp is None:
            return None
        segment = doc.get("segment", 0)
        return {"owner_id": doc["owner_id"], "seq": doc["seq"], "segment": segment, **fp}

    @mongo_errors
    def load_fingerprints(
        self, kind: str, owner_ids: Iterable[ObjectId], method: str
    ) -> dict[ObjectId, dict]:
        """Stored fingerprints of one method for several pages (or one-segment owners).

        Each value: ``{"owner_id", "seq", "segment", "version", "params", "value"}``.
        """
        query = {
            "owner_kind": _check_kind(kind),
            "owner_id": {"$in": list(owner_ids)},
            "segment": {"$in": [0, None]},
        }
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{_method(method)}": 1}
        out = {}
        for doc in self.db.fingerprints.find(query, projection):
            fp = self._flatten(doc, method)
            if fp is not None:
                out[doc["owner_id"]] = fp
        return out

    @mongo_errors
    def owner_fingerprints(self, kind: str, owner_id: ObjectId, method: str) -> list[dict]:
        """One owner's stored fingerprints of one method, one per segment, in order."""
        query = {"owner_kind": _check_kind(kind), "owner_id": owner_id}
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{_method(method)}": 1}
        found = self.db.fingerprints.find(query, projection).sort("segment", ASCENDING)
        return [fp for fp in (self._flatten(d, method) for d in found) if fp is not None]

    @mongo_errors
    def fingerprints_by_seq(self, kind: str, seqs: Iterable[int], method: str) -> list[dict]:
        """Stored fingerprints of one method for the pages (or work segments) of ``seqs``,
        the owner ids of the Redis indexes."""
        query = {"owner_kind": _check_kind(kind), "seq": {"$in": [int(s) for s in seqs]}}
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{_method(method)}": 1}
        found = (self._flatten(d, method) for d in self.db.fingerprints.find(query, projection))
        return [fp for fp in found if fp is not None]

    @mongo_errors
    def work_fingerprints(
        self, segments: Iterable[tuple[ObjectId, int]], method: str
    ) -> list[dict]:
        """Stored fingerprints of one method for the work segments ``(work id, segment
        index)``: a query per work, on the shard key and the unique index (``owner_id``,
        then its segments), so no other segment is read and no other shard asked."""
        by_work: dict[ObjectId, set[int]] = {}
        for oid, index in segments:
            by_work.setdefault(oid, set()).add(int(index))
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{_method(method)}": 1}
        out = []
        for oid, indexes in sorted(by_work.items()):
            query = {"owner_id": oid, "owner_kind": "work", "segment": {"$in": sorted(indexes)}}
            found = (self._flatten(d, method) for d in self.db.fingerprints.find(query, projection))
            out += [fp for fp in found if fp is not None]
        return out

    @mongo_errors
    def iter_fingerprints(self, kind: str, method: str) -> Iterator[dict]:
        """Every stored fingerprint of one method and owner kind, in ``seq`` order."""
        projection = {"owner_id": 1, "seq": 1, "segment": 1, f"methods.{_method(method)}": 1}
        cursor = self.db.fingerprints.find({"owner_kind": _check_kind(kind)}, projection)
        for doc in cursor.sort("seq", ASCENDING):
            fp = self._flatten(doc, method)
            if fp is not None:
                yield fp

    # matches ---------------------------------------------------------------------------

    @mongo_errors
    def upsert_match(self, record: dict[str, Any], initial_status: str = "new") -> dict:
        """Insert or update the match of ``(page_id, work_id)``; a reviewer's status stays.

        ``initial_status`` is the status of a new record (``authorised`` for licensed sites).
        The record's ``archive`` (the page's evidence when it was matched) is written when
        the match is created: the first exchange found to copy the work is kept when the
        page changes later. A new ``new`` match is created with ``alert: "pending"``, in the
        same write, until the alert rules have taken it (:mod:`matcher.alerts`): an alert is
        neither lost nor sent twice, whatever fails in between.
        """
        if initial_status not in STATUSES:
            raise StoreError(f"unknown status {initial_status!r}")
        key = {
            "page_id": page_key(record["page_id"]),
            "work_id": object_id(record["work_id"], "work id"),
        }
        stamp = record.get("last_seen") or now()
        fields = {
            k: v for k, v in record.items() if k not in ("page_id", "work_id", "status", "archive")
        }
        fields.update(last_seen=stamp, active=True)
        first = {"status": initial_status, "first_seen": stamp}
        if record.get("archive"):  # the exchange it was first found in, kept ever after
            first["archive"] = dict(record["archive"])
        if initial_status == "new":
            first["alert"] = "pending"
        before = self.db.matches.find_one_and_update(
            key,
            {"$set": fields, "$setOnInsert": first},
            upsert=True,
            return_document=ReturnDocument.BEFORE,
            projection={"active": 1},
        )
        doc = self.db.matches.find_one(key)
        if before is None or not before.get("active", True):
            changes = tallies.Changes()
            changes.match(doc, 1, created=before is None)
            changes.apply(self.db)
        return doc

    @mongo_errors
    def deactivate_matches(
        self, field: str, owner_id: ObjectId, keep: Iterable[ObjectId], via: str | None = None
    ) -> int:
        """Mark matches of a re-processed page (or work) that no longer hold as inactive
        (only those found ``via`` one way, ``"page"`` or ``"split"``, when given)."""
        if field not in ("page_id", "work_id"):
            raise StoreError(f"cannot deactivate matches by {field!r}")
        other = "work_id" if field == "page_id" else "page_id"
        query: dict[str, Any] = {field: owner_id, other: {"$nin": list(keep)}, "active": True}
        if via is not None:
            query["via"] = _text(via, "via")
        changes = tallies.Changes()
        stamp = now()
        deactivated = 0
        for match in self.db.matches.find(query, {"evidence": 0}):
            done = self.db.matches.update_one(
                {**_match_key(match), "active": True},
                {"$set": {"active": False, "last_checked": stamp}},
            )
            if done.modified_count:
                deactivated += 1
                changes.match(match, -1)
        changes.apply(self.db)
        return deactivated

    @mongo_errors
    def active_matched_works(
        self, page_ids: Iterable[int | ObjectId]
    ) -> dict[int | ObjectId, dict[ObjectId, str]]:
        """Per page, the works of its active matches and how each was found (``via``:
        ``page``, or ``split`` for a share of its chapter's)."""
        query = {"page_id": {"$in": [page_key(p) for p in page_ids]}, "active": True}
        out: dict[int | ObjectId, dict[ObjectId, str]] = {}
        for m in self.db.matches.find(query, {"page_id": 1, "work_id": 1, "via": 1}):
            out.setdefault(m["page_id"], {})[m["work_id"]] = m.get("via") or "page"
        return out

    @mongo_errors
    def own_matched_works(self, page_id: ObjectId) -> set[ObjectId]:
        """The works a page copies on its own (its active matches not found via its chapter)."""
        query = {"page_id": page_id, "active": True, "via": {"$ne": "split"}}
        return {m["work_id"] for m in self.db.matches.find(query, {"work_id": 1})}

    @mongo_errors
    def matches_for(self, field: str, owner_id: str, active_only: bool = True) -> list[dict]:
        if field not in ("page_id", "work_id"):
            raise StoreError(f"cannot list matches by {field!r}")
        key = page_key(owner_id) if field == "page_id" else object_id(owner_id, field)
        query: dict[str, Any] = {field: key}
        if active_only:
            query["active"] = True
        return list(self.db.matches.find(query).sort("first_seen", ASCENDING))
