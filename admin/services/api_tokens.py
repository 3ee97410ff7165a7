"""API tokens: made by each user in the admin, hashed at rest, scoped by role.

A token is ``fpt_`` followed by 43 URL-safe characters (32 random bytes), shown once when it
is made. The ``api_tokens`` collection keeps only its SHA-256 (the document's ``_id``: a
token is looked up by its hash, and a leaked database gives no usable token; a plain hash
suffices for 256 random bits, which no one can guess or brute-force as they could a
password). Its ``token_id`` (the first 12 hex digits of the hash) names it in lists and
revocations; ``hint`` keeps its first characters, for the user to recognise it.

A token acts with its ``role``, at most its user's: a request made with it has the rights
of the weaker of the token's role and the account's role at that moment, so demoting or
removing an account limits or ends its tokens at once.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pymongo
import pymongo.errors

from admin.services.accounts import ROLES, User, UserError, Users, aware
from matcher.errors import StoreUnavailable
from matcher.store import Store, now

PREFIX = "fpt_"
TOKEN = re.compile(r"^fpt_[A-Za-z0-9_-]{43}$")
MAX_NAME_CHARS = 100
MAX_TOKENS_PER_USER = 50
TOUCH_EVERY = timedelta(minutes=1)
"""``last_used_at`` is written at most this often per token (not on every request)."""
CHECK_SECONDS = 1.0
"""How long :class:`KeptTokens` gives the store to check a token before it answers from
what it kept."""
RELOAD_SECONDS = 60.0
"""How often the served admin's :class:`KeptTokens` reads again the tokens that pass."""


@dataclass(frozen=True)
class Issued:
    """A token just made: its secret (shown once) and its stored record."""

    secret: str
    record: dict[str, Any]


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


class ApiTokens:
    def __init__(self, store: Store) -> None:
        self.store = store

    def create(self, user: User, name: str, role: str) -> Issued:
        """A new token of ``user`` named ``name`` acting with ``role`` (at most the user's)."""
        name = name.strip() if isinstance(name, str) else ""
        if not name or len(name) > MAX_NAME_CHARS:
            raise UserError(f"a token needs a name of 1 to {MAX_NAME_CHARS} characters")
        if role not in ROLES:
            raise UserError(f"role must be one of {', '.join(ROLES)}")
        if not user.can(role):
            raise UserError(f"a {user.role} cannot make a token with the {role} role")
        if len(self.store.tokens.api_tokens(username=user.username)) >= MAX_TOKENS_PER_USER:
            raise UserError(f"at most {MAX_TOKENS_PER_USER} tokens per user: revoke one first")
        secret = PREFIX + secrets.token_urlsafe(32)
        hashed = digest(secret)
        record = {
            "token_id": hashed[:12],
            "username": user.username,
            "name": name,
            "role": role,
            "hint": secret[: len(PREFIX) + 4],
            "created_at": now(),
            "last_used_at": None,
            "revoked_at": None,
        }
        self.store.tokens.save_api_token(digest=hashed, fields=record)
        return Issued(secret, {**record, "_id": hashed})

    def authenticate(self, secret: Any, users: Users) -> User | None:
        """The user a request with ``secret`` acts as (role: the weaker of the token's and the
        account's), or None for an unknown, revoked or malformed token or a gone account."""
        if not isinstance(secret, str) or not TOKEN.match(secret):
            return None
        hashed = digest(secret)
        record = self.store.tokens.api_token(digest=hashed)
        if record is None:
            return None
        account = users.get_role(record["username"])
        if account is None or record.get("role") not in ROLES:
            return None
        role = min(account, record["role"], key=ROLES.index)
        stamp = now()
        used = record.get("last_used_at")
        if used is None or stamp - aware(used) >= TOUCH_EVERY:
            self.store.tokens.api_token_used(digest=hashed, at=stamp)
        return User(record["username"], role)

    def list(self, user: User) -> list[dict[str, Any]]:
        """The user's tokens; an admin sees everyone's."""
        return self.store.tokens.api_tokens(username=None if user.can("admin") else user.username)

    def revoke(self, user: User, token_id: str) -> bool:
        """Revoke one of the user's tokens (an admin: anyone's)."""
        owner = None if user.can("admin") else user.username
        return self.store.tokens.revoke_api_token(token_id=token_id, username=owner)


class KeptTokens:
    """Bearer tokens checked for one role (``role`` or a stronger one) against the store, as
    :meth:`ApiTokens.authenticate` does, with the answers kept in this process for when the
    store does not answer: ``/metrics`` (:mod:`admin.web.metrics`) goes on serving its
    Prometheus while MongoDB is away, and says so in its figures.

    What is kept: the tokens that pass, read from the store when this process starts
    (:meth:`load`; a gunicorn worker starts only once the store answers) and again every
    :data:`RELOAD_SECONDS` in the served admin (:meth:`reload_every`), and brought up to
    date by every check the store answered (a token revoked, or whose account was removed
    or demoted, is dropped at its next check). While the store does not answer (nor within
    :data:`CHECK_SECONDS`), a kept token passes, any other is :meth:`allows`'s ``None``:
    not known. Only tokens that passed are kept, so made-up tokens cost no memory.
    """

    def __init__(self, store: Store, users: Users, role: str) -> None:
        self.tokens = ApiTokens(store)
        self.users = users
        self.role = role
        self._passed: set[str] = set()
        self._lock = threading.Lock()

    def load(self) -> None:
        """Keep every token of the store that passes now."""
        roles: dict[str, str | None] = {}
        passed = set()
        for record in self.tokens.store.tokens.api_tokens(username=None):
            name = record.get("username")
            if name not in roles:
                roles[name] = self.users.get_role(name)
            account, role = roles[name], record.get("role")
            usable = account is not None and role in ROLES
            if usable and User(name, min(account, role, key=ROLES.index)).can(self.role):
                passed.add(record["_id"])
        with self._lock:
            self._passed = passed

    def reload_every(self, seconds: float = RELOAD_SECONDS) -> None:
        """:meth:`load` every ``seconds`` in a thread of its own, for the process's life
        (a reload the store does not answer keeps what was kept)."""

        def reload() -> None:
            while True:
                time.sleep(seconds)
                try:
                    self.load()
                except (StoreUnavailable, pymongo.errors.PyMongoError):
                    continue

        threading.Thread(target=reload, name="metrics-tokens", daemon=True).start()

    def allows(self, secret: str) -> bool | None:
        """Whether ``secret`` is a token acting with :attr:`role` or a stronger one: asked
        of the store, else (it does not answer) as kept, None for a token not kept."""
        if not TOKEN.match(secret):
            return False
        hashed = digest(secret)
        try:
            with pymongo.timeout(CHECK_SECONDS):
                user = self.tokens.authenticate(secret, self.users)
        except (StoreUnavailable, pymongo.errors.PyMongoError):
            with self._lock:
                return True if hashed in self._passed else None
        passes = user is not None and user.can(self.role)
        with self._lock:
            if passes:
                self._passed.add(hashed)
            else:
                self._passed.discard(hashed)
        return passes
