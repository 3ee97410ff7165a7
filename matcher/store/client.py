"""The one way fptrack opens MongoDB: settings in, a client of the backend the URI names
out, as Celery's ``app/backends.py`` picks a result backend by URL (:data:`BACKENDS`):

- ``mongodb://`` and ``mongodb+srv://``: a pymongo client with the product's options
  (aware UTC times, short timeouts to find a server, journaled writes,
  :func:`mongo_client`);
- ``memory://``: a new, empty in-memory database server of this process
  (:func:`matcher.store.memory.memory_client`, mongomock): the embedded ``fptrack scan``'s
  and the benchmarks'. Each client is a server of its own: two clients of ``memory://``
  share nothing.

Every entry point (the command line's context, the workers' engine, the crawl subprocess,
the benchmarks) gets its client here, so no two clients of one deployment differ in how
they read times or acknowledge writes.
"""

from __future__ import annotations

from typing import Any

import pymongo
import pymongo.errors
import pymongo.uri_parser

from matcher.errors import SettingsError
from matcher.settings import Settings

TIMEOUT_MS = 5000
"""How long a client waits to find a server and connect, by default (ms)."""

MEMORY_URI = "memory://"
"""The URI of the in-memory backend."""

BACKENDS = {"mongodb": "server", "mongodb+srv": "server", "memory": "memory"}
"""The backend of each URI scheme: a MongoDB server (pymongo) or the in-memory one."""


def backend_of(uri: str) -> str:
    """The backend ``uri`` names (:data:`BACKENDS`; a URI without a scheme is pymongo's to
    refuse, or its default server when empty)."""
    scheme, sep, _ = uri.partition("://")
    return BACKENDS.get(scheme.lower(), "server") if sep else "server"


def client_of(uri: str, timeout_ms: int = TIMEOUT_MS) -> Any:
    """A client of the backend ``uri`` names: a new in-memory server for ``memory://``
    (:func:`matcher.store.memory.memory_client`), else :func:`mongo_client`."""
    if backend_of(uri) == "memory":
        from matcher.store.memory import memory_client

        return memory_client()
    return mongo_client(uri, timeout_ms)


def mongo_client(uri: str, timeout_ms: int = TIMEOUT_MS) -> pymongo.MongoClient:
    """A client of ``uri``: aware UTC times, ``timeout_ms`` to find a server and connect,
    and every write acknowledged once it is in the journal (``j: true``), so a server
    killed the moment after keeps it (measured on SecantusDB killed by SIGKILL after 200
    inserts: 12 lost without it, none with it); a ``w`` or ``journal`` option in the URI is
    its owner's choice and wins, and so does a ``serverSelectionTimeoutMS`` or
    ``connectTimeoutMS`` there."""
    options = pymongo.uri_parser.parse_uri(uri, warn=True)["options"] if uri else {}
    given = {k.lower() for k in options}
    durable = {} if {"w", "journal"} & given else {"journal": True}
    timeouts = {
        name: timeout_ms
        for name in ("serverSelectionTimeoutMS", "connectTimeoutMS")
        if name.lower() not in given
    }
    return pymongo.MongoClient(uri, tz_aware=True, **timeouts, **durable)


def client_for(settings: Settings, timeout_ms: int = TIMEOUT_MS) -> Any:
    """A client of ``settings.mongo_uri`` (:func:`client_of`); a URI pymongo refuses is a
    :class:`~matcher.errors.SettingsError` naming ``FPTRACK_MONGO_URI``."""
    try:
        return client_of(settings.mongo_uri, timeout_ms)
    except (pymongo.errors.ConfigurationError, ValueError) as exc:
        raise SettingsError(f"FPTRACK_MONGO_URI {settings.mongo_uri!r}: {exc}") from exc
