"""Accounts of the admin platform: argon2-hashed passwords, roles, throttled logins and
sessions that end server-side.

Users live in the ``users`` collection (unique ``username``). A password is stored only as
its argon2id hash (:data:`HASH_PARAMETERS`: 19 MiB, 2 passes, OWASP's first configuration).
Failed logins are throttled per client and account (:meth:`Users.authenticate`), never by
locking the account; every refusal reads the same and takes the same time. A session holds
its account's session epoch: logging out or setting a new password writes a new one, which
ends every session of the account, a copied cookie included. There is no default account:
the first one is made with ``fptrack admin create-user``.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from argon2 import Parameters, PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError

from matcher.errors import MatcherError
from matcher.store import Store, now

ROLES = ("viewer", "reviewer", "admin")
"""Each role may do what the roles before it may."""
MAX_FAILURES = 5
"""Failed logins from one client to one account before it must wait."""
FIRST_WAIT_SECONDS = 30
MAX_WAIT_SECONDS = 15 * 60
"""The wait doubles with each further failure, up to this."""
REFUSED = "wrong username or password (after repeated failures, wait a few minutes)"
MIN_PASSWORD_CHARS = 10
USERNAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")

HASH_PARAMETERS = Parameters(
    type=Type.ID, version=19, salt_len=16, hash_len=32,
    time_cost=2, memory_cost=19 * 1024, parallelism=1,
)  # fmt: skip
"""Argon2id with 19 MiB of memory, 2 passes, 1 lane: the OWASP Password Storage Cheat
Sheet's first configuration. A login is the one costly thing an anonymous client can ask
for, so its memory is kept well under the admin's 50 MB bound per anonymous request
(RFC 9106's second set takes 64 MiB); hashes made with other parameters still verify and
are made again at the next login."""

_hasher = PasswordHasher.from_parameters(HASH_PARAMETERS)
# Verified against when the user does not exist, so both cases cost the same time.
_DUMMY_HASH = _hasher.hash("fptrack: no such user")


class UserError(MatcherError, ValueError):
    """A bad username, password or role."""


@dataclass(frozen=True)
class User:
    username: str
    role: str
    epoch: str | None = None
    """The account's session epoch: a session made under another one has ended."""

    def can(self, role: str) -> bool:
        """Whether this user has ``role`` or a stronger one."""
        return ROLES.index(self.role) >= ROLES.index(role)


class Users:
    """Create, check and list accounts."""

    def __init__(self, store: Store) -> None:
        self.store = store

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
        if not replace and self.store.users.user_record(username=name, fields={"_id": 1}):
            raise UserError(f"user {name!r} exists (use --replace to reset it)")
        fields = {
            "password_hash": _hasher.hash(password),
            "role": role,
            "throttle": {},
            "session_epoch": secrets.token_hex(16),  # a new password ends every session
        }
        self.store.users.save_user(username=name, fields=fields)
        return User(name, role)

    def get(self, username: Any, epoch: Any = None) -> User | None:
        """The account of a session, if the session is still valid (its ``epoch`` is the
        account's: no logout or password change since it was made)."""
        if not isinstance(username, str) or not USERNAME.match(username):
            return None
        doc = self.store.users.user_record(
            username=username, fields={"role": 1, "session_epoch": 1}
        )
        if not doc or doc.get("role") not in ROLES or doc.get("session_epoch") != epoch:
            return None
        return User(username, doc["role"], epoch)

    def get_role(self, username: str) -> str | None:
        """The role of the account ``username``, or None when there is no such account."""
        if not isinstance(username, str) or not USERNAME.match(username):
            return None
        doc = self.store.users.user_record(username=username, fields={"role": 1})
        return doc["role"] if doc and doc.get("role") in ROLES else None

    def end_sessions(self, username: str) -> None:
        """Log the account out everywhere: every session made before now is refused."""
        self.store.users.update_user(
            username=self._name(username), fields={"session_epoch": secrets.token_hex(16)}
        )

    def list(self) -> list[dict[str, Any]]:
        return self.store.users.user_records()

    def authenticate(
        self, username: Any, password: Any, client: str = ""
    ) -> tuple[User | None, str]:
        """``(user, "")`` on success, else ``(None, reason)``, one reason for every refusal.

        Failures are counted per client (its address, hashed) and account: after
        :data:`MAX_FAILURES`, that client waits :data:`FIRST_WAIT_SECONDS`, doubled at each
        further failure up to :data:`MAX_WAIT_SECONDS`, while the account stays open to
        everyone else (no one can lock another out). The password is always checked, also
        for unknown or waiting accounts, so the time taken tells nothing.
        """
        if not isinstance(username, str) or not USERNAME.match(username):
            _verify(_DUMMY_HASH, str(password))
            return None, REFUSED
        doc = self.store.users.user_record(username=username)
        right = _verify(doc["password_hash"] if doc else _DUMMY_HASH, str(password))
        if doc is None:
            return None, REFUSED
        stamp = now()
        who = hashlib.sha256(client.encode("utf-8", "replace")).hexdigest()[:16]
        mine = (doc.get("throttle") or {}).get(who) or {}
        waiting = mine.get("until") is not None and aware(mine["until"]) > stamp
        if waiting or not right or not isinstance(password, str):
            if not waiting:  # counted in the store at once: guesses sent together all count
                failures = self.store.users.count_login_failure(username=username, client=who)
                over = failures - MAX_FAILURES
                if over >= 0:
                    wait = min(FIRST_WAIT_SECONDS * 2**over, MAX_WAIT_SECONDS)
                    until = stamp + timedelta(seconds=wait)
                    self.store.users.hold_logins(username=username, client=who, until=until)
            return None, REFUSED
        update: dict[str, Any] = {"last_login": stamp}
        if _hasher.check_needs_rehash(doc["password_hash"]):
            update["password_hash"] = _hasher.hash(password)
        self.store.users.login_succeeded(username=username, client=who, fields=update)
        return User(username, doc["role"], doc.get("session_epoch")), ""


def _verify(hashed: str, password: str) -> bool:
    try:
        return _hasher.verify(hashed, password)
    except (VerificationError, InvalidHashError):
        return False


def aware(value: Any) -> Any:
    """A datetime read back from a store without time zones, as UTC."""
    from datetime import UTC

    return value if value.tzinfo else value.replace(tzinfo=UTC)
