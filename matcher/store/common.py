"""What every family of the store shares: its error, its clock, the wrapper that turns
connection failures into :class:`~matcher.errors.StoreUnavailable`, the checks that turn
outside values into typed filter values (an id must be a valid ObjectId string, a URL a
``str``, a site name :data:`matcher.sites.site_config.NAME`, so nothing from outside can become an
operator), and :class:`Forward`, by which the facades delegate to the families.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

from bson import ObjectId
from bson.errors import InvalidId
from pymongo import UpdateOne
from pymongo.collection import Collection
from pymongo.errors import BulkWriteError, PyMongoError

from matcher.errors import (
    INTERNAL_ERRORS,
    MatcherError,
    StoreFailing,
    StoreUnavailable,
    store_failing,
    transient,
)
from matcher.sites.site_config import NAME
from matcher.store import ids
from matcher.store.statuses import STATUSES

P = ParamSpec("P")
T = TypeVar("T")

KINDS = ("work", "page")
"""The owners of fingerprints: works (by segment) and pages."""
MAX_LIST = 10_000
"""Documents one listing returns at most."""
TOKEN = re.compile(r"^[0-9a-f]{8,64}$")
"""A lowercase hex token: a crawler process's, or a client's address digest."""


class StoreError(MatcherError, ValueError):
    """A request to the store names something invalid or absent."""


def now() -> datetime:
    """The current time, UTC, at MongoDB's millisecond precision."""
    return to_millis(datetime.now(UTC))


def to_millis(t: datetime) -> datetime:
    """``t`` at MongoDB's millisecond precision: as a server stores it, and reads it back."""
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def mongo_errors(method: Callable[P, T]) -> Callable[P, T]:
    """Turn pymongo connection failures, and the server errors of an election or a restart
    (:func:`matcher.errors.transient`), into :class:`StoreUnavailable`; a server's internal
    errors (:func:`matcher.errors.store_failing`) into :class:`StoreFailing`."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except PyMongoError as exc:
            if not transient(exc):
                raise
            if store_failing(exc):
                raise StoreFailing(f"MongoDB {INTERNAL_ERRORS} in {method.__name__}") from exc
            raise StoreUnavailable(f"MongoDB unavailable in {method.__name__}: {exc}") from exc

    return wrapper


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
    """A page's ``_id`` from its string form (decimal digits, :mod:`matcher.store.ids`), or as
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


def checked_str(value: Any, what: str) -> str:
    """``value`` when it is a ``str``; anything else is a :class:`StoreError`."""
    if not isinstance(value, str):
        raise StoreError(f"{what} must be a string, got {type(value).__name__}")
    return value


def checked_kind(kind: str) -> str:
    """An owner kind of :data:`KINDS`; anything else is a :class:`StoreError`."""
    if kind not in KINDS:
        raise StoreError(f"owner kind must be one of {KINDS}, got {kind!r}")
    return kind


def checked_date(value: datetime) -> datetime:
    """``value`` when it is a ``datetime``; anything else is a :class:`StoreError`."""
    if not isinstance(value, datetime):
        raise StoreError(f"a date is needed, got {type(value).__name__}")
    return value


def checked_token(value: Any) -> str:
    """A lowercase hex token (8 to 64 digits) fit for a field name."""
    if not isinstance(value, str) or not TOKEN.match(value):
        raise StoreError(f"not a hex token: {value!r}")
    return value


def plain_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` when no name is an operator or a path (they are set as given)."""
    for name in fields:
        if not isinstance(name, str) or not name or name[0] == "$" or "." in name:
            raise StoreError(f"not a field name: {name!r}")
    return dict(fields)


def period(field: str, since: datetime | None, until: datetime | None) -> dict[str, Any]:
    """A filter of ``field`` in ``[since, until)`` (either end open when None)."""
    clause: dict[str, Any] = {}
    if since is not None:
        clause["$gte"] = checked_date(since)
    if until is not None:
        clause["$lt"] = checked_date(until)
    return {field: clause} if clause else {}


def site_name(value: Any) -> str:
    """A site name fit for a filter; anything else is a :class:`StoreError`."""
    if not isinstance(value, str) or not NAME.match(value):
        raise StoreError(f"not a site name: {value!r}")
    return value


def status_name(value: Any) -> str:
    """A review status of :data:`matcher.store.statuses.STATUSES`; anything else is a
    :class:`StoreError`."""
    if value not in STATUSES:
        raise StoreError(f"status must be one of {', '.join(STATUSES)}, got {value!r}")
    return value


DUPLICATE_KEY = 11000


def write_fresh(collection: Collection, keyed: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Write documents of ``(key, fields)`` that should not exist yet (a newly created
    work's segments): one unordered ``insert_many`` of ``key | fields``, which costs the
    server less than an upsert (no lookup of a matching document first); those a unique
    index refuses as already there are then upserted (``$set`` of their fields), so the
    write stays idempotent if one was there after all."""
    if not keyed:
        return
    try:
        collection.insert_many([{**key, **fields} for key, fields in keyed], ordered=False)
    except BulkWriteError as exc:
        errors = exc.details.get("writeErrors", [])
        if any(e.get("code") != DUPLICATE_KEY for e in errors):
            raise
        redo = [keyed[e["index"]] for e in errors]
        collection.bulk_write(
            [UpdateOne(key, {"$set": fields}, upsert=True) for key, fields in redo],
            ordered=False,
        )
