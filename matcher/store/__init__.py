"""The MongoDB store: works, pages, fingerprints, matches, sites, crawl runs, accounts.

One module per family of collections, each a small class holding its collections and their
queries: :mod:`~matcher.store.works` (works and their text by segments; :mod:`~matcher.store.twins`
the works with the same text as another),
:mod:`~matcher.store.pages` (with :mod:`~matcher.store.page_links` and
:mod:`~matcher.store.page_marks`), :mod:`~matcher.store.fingerprints`,
:mod:`~matcher.store.matches` (:mod:`~matcher.store.archived_matches` those archived),
:mod:`~matcher.store.sites`, :mod:`~matcher.store.crawls`
(crawl runs), :mod:`~matcher.store.failures`, :mod:`~matcher.store.accounts` (users and API
tokens), :mod:`~matcher.store.state` (job state, daily reports, dashboard counters),
:mod:`~matcher.store.sequences` (the ``seq`` counters), :mod:`~matcher.store.alerts`,
:mod:`~matcher.store.index_state` and :mod:`~matcher.store.tallies`; the collections' indexes
and shard keys in :mod:`~matcher.store.layout`, the one client factory in
:mod:`~matcher.store.client`, which picks the backend by the URI (a MongoDB server, or
``memory://``: the in-memory one of :mod:`~matcher.store.memory`, mongomock's, which the
embedded scan uses). :class:`Store` composes the families: callers hold them
(``store.pages.get_page(...)``, ``store.matches.upsert_match(...)``); the store itself only
opens, indexes, resets and closes. No module outside this package reaches MongoDB
(``tests/test_seams.py``).

Every write is an upsert on a unique key, so storing the same page or match twice updates
it and never duplicates it. Works and pages also get a small integer ``seq`` (from the
``counters`` collection), from which the Redis indexes' owner ids are made. Only the part of
the pymongo API that real MongoDB and mongomock share is used; where they differ the code
follows MongoDB. Filters are built from typed values only (:mod:`~matcher.store.common`), so
nothing from outside can become an operator. Connection failures raise
:class:`matcher.errors.StoreUnavailable` (retryable).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matcher.store.client import MEMORY_URI, mongo_client
    from matcher.store.common import KINDS, StoreError, mongo_errors, now, object_id, page_key
    from matcher.store.database import Store
    from matcher.store.layout import (
        INDEXES,
        LEGACY_INDEXES,
        LIST_ORDER,
        REGISTRATION_ORDER,
        SHARD_KEYS,
        shard_commands,
    )
    from matcher.store.pages import VALIDATOR_CHARS
    from matcher.store.statuses import STATUSES
    from matcher.store.works import NEAR_CANDIDATES, TextWindow

_HOMES = {
    "INDEXES": "matcher.store.layout",
    "KINDS": "matcher.store.common",
    "LEGACY_INDEXES": "matcher.store.layout",
    "LIST_ORDER": "matcher.store.layout",
    "MEMORY_URI": "matcher.store.client",
    "NEAR_CANDIDATES": "matcher.store.works",
    "REGISTRATION_ORDER": "matcher.store.layout",
    "SHARD_KEYS": "matcher.store.layout",
    "STATUSES": "matcher.store.statuses",
    "Store": "matcher.store.database",
    "StoreError": "matcher.store.common",
    "TextWindow": "matcher.store.works",
    "VALIDATOR_CHARS": "matcher.store.pages",
    "mongo_client": "matcher.store.client",
    "mongo_errors": "matcher.store.common",
    "now": "matcher.store.common",
    "object_id": "matcher.store.common",
    "page_key": "matcher.store.common",
    "shard_commands": "matcher.store.layout",
}
"""Where each name of the package is defined."""

__all__ = [
    "INDEXES",
    "KINDS",
    "LEGACY_INDEXES",
    "LIST_ORDER",
    "MEMORY_URI",
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


def __getattr__(name: str) -> Any:
    """A name of the package, imported from its module on first use (PEP 562): a pure module
    of the package (``statuses``, ``ids``, ``field_names``) loads without pymongo."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
