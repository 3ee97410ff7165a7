"""The admin platform's accounts (``users``, with their login throttles) and API tokens
(``api_tokens``, kept by the SHA-256 of their secret)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.database import Database

from matcher.store.common import (
    checked_date,
    checked_str,
    checked_token,
    mongo_errors,
    now,
    plain_fields,
)


class Users:
    """The ``users`` collection."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def has_users(self) -> bool:
        """Whether the admin platform has at least one account."""
        return self.db.users.find_one({}, {"_id": 1}) is not None

    @mongo_errors
    def user_record(self, *, username: str, fields: dict[str, int] | None = None) -> dict | None:
        """The account document of ``username`` (a validated name), or None."""
        return self.db.users.find_one({"username": checked_str(username, "username")}, fields)

    @mongo_errors
    def user_records(self) -> list[dict]:
        """Every account (no password hashes), by username."""
        fields = {"username": 1, "role": 1, "created_at": 1, "last_login": 1}
        return list(self.db.users.find({}, fields).sort("username", ASCENDING))

    @mongo_errors
    def save_user(self, *, username: str, fields: dict[str, Any]) -> None:
        """Create or update the account ``username`` with ``fields`` (plain values)."""
        stamp = now()
        self.db.users.update_one(
            {"username": checked_str(username, "username")},
            {
                "$set": {**plain_fields(fields), "updated_at": stamp},
                "$setOnInsert": {"created_at": stamp},
            },
            upsert=True,
        )

    @mongo_errors
    def update_user(self, *, username: str, fields: dict[str, Any]) -> None:
        """Set ``fields`` (plain values) on the existing account ``username``."""
        self.db.users.update_one(
            {"username": checked_str(username, "username")}, {"$set": plain_fields(fields)}
        )

    @mongo_errors
    def count_login_failure(self, *, username: str, client: str) -> int:
        """Add one failed login of ``client`` (a hex digest of its address) to the account
        ``username``, in one atomic update (logins failing at once all count); the client's
        failures now (0 when there is no such account)."""
        field = f"throttle.{checked_token(client)}"
        doc = self.db.users.find_one_and_update(
            {"username": checked_str(username, "username")},
            {"$inc": {f"{field}.failures": 1}},
            projection={field: 1},
            return_document=ReturnDocument.AFTER,
        )
        mine = ((doc or {}).get("throttle") or {}).get(client) or {}
        return int(mine.get("failures", 0))

    @mongo_errors
    def hold_logins(self, *, username: str, client: str, until: datetime) -> None:
        """Refuse ``client``'s logins to ``username`` until ``until`` (or a later time
        already set)."""
        self.db.users.update_one(
            {"username": checked_str(username, "username")},
            {"$max": {f"throttle.{checked_token(client)}.until": checked_date(until)}},
        )

    @mongo_errors
    def login_succeeded(self, *, username: str, client: str, fields: dict[str, Any]) -> None:
        """Forget ``client``'s failed logins to ``username`` and set ``fields`` (plain
        values), the other clients' failures left as they are."""
        self.db.users.update_one(
            {"username": checked_str(username, "username")},
            {"$unset": {f"throttle.{checked_token(client)}": ""}, "$set": plain_fields(fields)},
        )


class ApiTokens:
    """The ``api_tokens`` collection."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def save_api_token(self, *, digest: str, fields: dict[str, Any]) -> None:
        """Store a new API token under the SHA-256 ``digest`` of its secret."""
        self.db.api_tokens.insert_one({**plain_fields(fields), "_id": checked_str(digest, "id")})

    @mongo_errors
    def api_token(self, *, digest: str) -> dict | None:
        """The unrevoked token whose secret has SHA-256 ``digest``, or None."""
        return self.db.api_tokens.find_one(
            {"_id": checked_str(digest, "token"), "revoked_at": None}
        )

    @mongo_errors
    def api_tokens(self, *, username: str | None = None) -> list[dict]:
        """Unrevoked tokens (of ``username``; of everyone when None), newest first."""
        query: dict[str, Any] = {"revoked_at": None}
        if username is not None:
            query["username"] = checked_str(username, "username")
        return list(self.db.api_tokens.find(query).sort("created_at", DESCENDING))

    @mongo_errors
    def revoke_api_token(self, *, token_id: str, username: str | None = None) -> bool:
        """Revoke the token whose id (its digest's first characters) is ``token_id``, of
        ``username`` when given; whether one was revoked. The token is found first, then
        revoked by its digest (``_id``, the shard key)."""
        query: dict[str, Any] = {"token_id": checked_str(token_id, "token id"), "revoked_at": None}
        if username is not None:
            query["username"] = checked_str(username, "username")
        found = self.db.api_tokens.find_one(query, {"_id": 1})
        if found is None:
            return False
        result = self.db.api_tokens.update_one(
            {"_id": found["_id"], "revoked_at": None}, {"$set": {"revoked_at": now()}}
        )
        return result.modified_count == 1

    @mongo_errors
    def api_token_used(self, *, digest: str, at: datetime) -> None:
        self.db.api_tokens.update_one(
            {"_id": checked_str(digest, "token")}, {"$set": {"last_used_at": checked_date(at)}}
        )
