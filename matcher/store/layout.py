"""The store's layout: every collection, its indexes and its shard key.

:data:`INDEXES` is what :func:`ensure_indexes` creates (and what ``fptrack migrate``
checks); :data:`SHARD_KEYS` and :func:`shard_commands` are what ``deploy/SCALING.md`` runs on
a sharded cluster.
"""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.database import Database

from matcher.alerts import rules as alert_rules
from matcher.evidence import archive
from matcher.store import tallies

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
        IndexModel([("around", ASCENDING)], name="around"),
        IndexModel([("names", ASCENDING)], name="names"),
        IndexModel([("aliases", ASCENDING)], name="aliases", sparse=True),
        IndexModel([("processed_at", ASCENDING)], name="processed_at"),
    ],
    "takedown_cases": [
        IndexModel([("site", ASCENDING), ("url", ASCENDING)], unique=True, name="site_url_unique"),
        IndexModel([("next_at", ASCENDING)], name="next_at"),
        IndexModel([("sent_at", DESCENDING)], name="sent_at"),
    ],
    "notices": [IndexModel([("sent_at", DESCENDING)], name="sent_at")],
    "candidates": [
        IndexModel([("score", DESCENDING)], name="score"),
        IndexModel([("state", ASCENDING)], name="state"),
    ],
    "stamps": [IndexModel([("batch", ASCENDING), ("queued_at", ASCENDING)], name="waiting")],
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
        # A work registered again finds the archived matches of its earlier registration
        # by its key or its text (matcher.store.archived_matches.ArchivedMatches.restore_archived).
        IndexModel([("archived.work_key", ASCENDING)], name="archived_work_key", sparse=True),
        IndexModel([("archived.work_hash", ASCENDING)], name="archived_work_hash", sparse=True),
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
    "site_rules": [],
    tallies.COLLECTION: tallies.INDEXES,
    tallies.WORKS_COLLECTION: tallies.WORKS_INDEXES,
    "counters": [],
    "stamp_batches": [],
    "site_contacts": [],
    "rdap_bootstrap": [],
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
    "site_rules": {"_id": "hashed"},
    tallies.COLLECTION: {"_id": "hashed"},
    tallies.WORKS_COLLECTION: {"_id": "hashed"},
    "counters": {"_id": "hashed"},
    "stamps": {"_id": "hashed"},
    "takedown_cases": {"site": ASCENDING, "url": ASCENDING},
    "notices": {"_id": "hashed"},
    "candidates": {"_id": "hashed"},
    "site_contacts": {"_id": "hashed"},
    "rdap_bootstrap": {"_id": "hashed"},
    "stamp_batches": {"_id": "hashed"},
    **alert_rules.SHARD_KEYS,
    **archive.SHARD_KEYS,
}
"""The shard key of every collection (``sh.shardCollection``; ``deploy/mongodb-shards.js``).

MongoDB enforces a unique index on a sharded collection only when the collection's shard
key is ranged and a prefix of the index, so every unique index here starts with its
collection's shard key, and those keys are ranged. A page's ``_id`` is derived from its URL
(:mod:`matcher.store.ids`), uniform over 63 bits: ``pages`` and ``matches`` (by ``page_id``)
spread evenly on ranged keys, and the URL needs no unique index of its own; ``seq`` is
unique by construction (counter stripes). Collections without a unique index of their own
use a hashed ``_id``; the evidence archive's GridFS bucket is sharded as MongoDB documents
(:data:`matcher.evidence.archive.SHARD_KEYS`).

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
        f"// The shard keys of fptrack's database {db_name!r} (matcher.store.layout.SHARD_KEYS).",
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


def ensure_indexes(db: Database) -> None:
    """Create every collection's indexes in ``db``; running it again changes nothing.

    The indexes of earlier layouts (:data:`LEGACY_INDEXES`) are dropped first: unique
    indexes that do not start with their collection's shard key, and
    ``fingerprints.owner_unique`` (one fingerprint document per owner, before works had
    segments).
    """
    for name, index in LEGACY_INDEXES:
        if index in db[name].index_information():
            db[name].drop_index(index)
    for name, models in INDEXES.items():
        db[name].create_indexes(models)
