"""One short line for an unreachable MongoDB, Redis or broker: the URI and what to do.

Drivers describe a failed connection at length (pymongo's server selection error runs to
hundreds of characters, with its topology); an operator needs the server, the cause in a few
words and the setting to change:

>>> line("MongoDB", "mongodb://u:secret@db/x", "connection refused")  # doctest: +ELLIPSIS
'MongoDB unreachable at mongodb://u:***@db/x (connection refused): start it, or set ...'

A server that answers, but only with internal errors (:func:`matcher.errors.store_failing`:
a MongoDB whose storage failed, its disk full for one), is not said to be unreachable: it
runs, and starting it is not what it needs.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

from matcher.errors import INTERNAL_ERRORS, store_failing

VARIABLES = {
    "MongoDB": "FPTRACK_MONGO_URI",
    "Redis": "FPTRACK_REDIS_URL",
    "the Celery broker": "FPTRACK_BROKER_URL",
    "the index Redis": "FPTRACK_INDEX_REDIS_URL",
}
"""The setting that names each server."""

_CAUSES = (
    (r"connection refused|errno 111\b", "connection refused"),
    (
        r"name or service not known|nodename nor servname|temporary failure in name|getaddrinfo",
        "unknown host",
    ),
    (r"timed out|timeout", "no answer in time"),
    (
        r"authentication failed|auth(entication)? required|noauth|wrongpass|invalid password",
        "authentication failed",
    ),
    (r"no route to host|network is unreachable", "no route to host"),
    (r"connection reset|closed by server|eof", "connection closed by the server"),
)


def redact(uri: str) -> str:
    """``uri`` with its password replaced by ``***``."""
    parts = urlsplit(uri)
    if not parts.password:
        return uri
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def cause(error: BaseException | str) -> str:
    """The cause of a connection error in a few words (``connection refused``...)."""
    if not isinstance(error, str) and store_failing(error):
        return INTERNAL_ERRORS
    text = str(error)
    lowered = text.lower()
    for pattern, words in _CAUSES:
        if re.search(pattern, lowered):
            return words
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return first[:80]


def line(service: str, uri: str, error: BaseException | str) -> str:
    """``<service> unreachable at <uri> (<cause>): start it, or set <variable>``; for a
    server that answers with internal errors, ``<service> at <uri> answers with internal
    errors (disk full?): ...``."""
    if not isinstance(error, str) and store_failing(error):
        return (
            f"{service} at {redact(uri)} {INTERNAL_ERRORS}: free space on its data disk "
            "and restart it (see its log)"
        )
    variable = VARIABLES[service]
    why = error if isinstance(error, str) else cause(error)
    return f"{service} unreachable at {redact(uri)} ({why}): start it, or set {variable}"


def unreachable(hosts: Iterable[tuple[str, int]], timeout: float) -> OSError | None:
    """``None`` if one of ``hosts`` accepts a TCP connection within ``timeout`` seconds, else
    the last error: a refused or unknown server is known in milliseconds, not after a
    driver's server-selection timeout."""
    error: OSError | None = None
    for host, port in hosts:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            return None
        except OSError as exc:
            error = exc
    return error
