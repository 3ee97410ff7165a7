"""Accounts of the admin platform: argon2-hashed passwords, roles and lock-out.

Users live in the ``users`` collection (unique ``username``). A password is stored only as
its argon2id hash (argon2-cffi's defaults, RFC 9106's second recommended parameter set).
After :data:`MAX_FAILURES` failed logins in a row an account is locked for
:data:`LOCK_MINUTES` minutes; a successful login resets the count. There is no default
account: the first one is made with ``fptrack admin create-user``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from matcher.errors import MatcherError
from matcher.operations import Operations
from matcher.store import Store, now

ROLES = ("viewer", "reviewer", "admin")
"""Each role may do what the roles before it may."""
MAX_FAILURES = 5
LOCK_MINUTES = 15
MIN_PASSWORD_CHARS = 10
USERNAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")

_hasher = PasswordHasher()
# Verified against when the user does not exist, so both cases cost the same time.
_DUMMY_HASH = _hasher.hash("fptrack: no such user")


class UserError(MatcherError, ValueError):
    """A bad username, password or role."""


@dataclass(frozen=True)
class User:
    username: str
    role: str

    def can(self, role: str) -> bool:
        """Whether this user has ``role`` or a stronger one."""
        return ROLES.index(self.role) >= ROLES.index(role)


class Users:
    """Create, check and list accounts."""

    def __init__(self, store: Store) -> None:
        self.ops = Operations(store)

    @staticmethod
    def _name(username: Any) -> str:
        if not isinstance(username, str) or not USERNAME.match(username):
            raise UserError("a username is 1-64 letters, digits or _ . @ -")
        return username

    def create(self, username: str, password: str, role: str, replace: bool = False) -> User:
        """Add an account (or, with ``replace``, set its password and role)."""
        name = self._name(username)
        if role not in ROLES:
            raise UserError(f"role must be one of {', '.join(ROLES)}")
        if not isinstance(password, str) or len(password) < MIN_PASSWORD_CHARS:
            raise UserError(f"a password has at least {MIN_PASSWORD_CHARS} characters")
        if not replace and self.ops.user_record(username=name, fields={"_id": 1}):
            raise UserError(f"user {name!r} exists (use --replace to reset it)")
        fields = {
            "password_hash": _hasher.hash(password),
            "role": role,
            "failures": 0,
            "locked_until": None,
        }
        self.ops.save_user(username=name, fields=fields)
        return User(name, role)

    def get(self, username: Any) -> User | None:
        if not isinstance(username, str) or not USERNAME.match(username):
            return None
        doc = self.ops.user_record(username=username, fields={"role": 1})
        return User(username, doc["role"]) if doc and doc.get("role") in ROLES else None

    def list(self) -> list[dict[str, Any]]:
        return self.ops.user_records()

    def authenticate(self, username: Any, password: Any) -> tuple[User | None, str]:
        """``(user, "")`` on success, else ``(None, reason)`` with a reason safe to show."""
        refused = "wrong username or password"
        if not isinstance(username, str) or not USERNAME.match(username):
            _verify(_DUMMY_HASH, str(password))
            return None, refused
        doc = self.ops.user_record(username=username)
        if doc is None:
            _verify(_DUMMY_HASH, str(password))
            return None, refused
        stamp = now()
        locked = doc.get("locked_until")
        if locked is not None and _aware(locked) > stamp:
            return None, "too many failed logins: this account is locked for a while"
        if not isinstance(password, str) or not _verify(doc["password_hash"], password):
            failures = int(doc.get("failures", 0)) + 1
            update: dict[str, Any] = {"failures": failures}
            if failures >= MAX_FAILURES:
                update = {"failures": 0, "locked_until": stamp + timedelta(minutes=LOCK_MINUTES)}
            self.ops.update_user(username=username, fields=update)
            return None, refused
        update = {"failures": 0, "locked_until": None, "last_login": stamp}
        if _hasher.check_needs_rehash(doc["password_hash"]):
            update["password_hash"] = _hasher.hash(password)
        self.ops.update_user(username=username, fields=update)
        return User(username, doc["role"]), ""


def _verify(hashed: str, password: str) -> bool:
    try:
        return _hasher.verify(hashed, password)
    except (VerificationError, InvalidHashError):
        return False


def _aware(value: Any) -> Any:
    from datetime import UTC

    return value if value.tzinfo else value.replace(tzinfo=UTC)
