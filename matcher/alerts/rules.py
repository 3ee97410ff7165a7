"""Alert rules: who is told of new matches, about what, how and when.

A rule has a scope (every match, the matches of one work, or those of one site), a mode
(``immediate``: one message per new match, sent as soon as the page's matching job ends;
``daily``: one digest per day at ``FPTRACK_DIGEST_AT``), and a channel: a webhook (an
http(s) URL and the secret its payloads are signed with) or email (a list of addresses).
Rules are validated here, before anything is stored; the collections of the alerts and
their indexes are declared here too, for :mod:`matcher.store`.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from bson import ObjectId
from bson.errors import InvalidId
from pymongo import ASCENDING, DESCENDING, IndexModel

from matcher.errors import MatcherError
from matcher.sites.site_config import NAME

SCOPES = ("all", "work", "site")
MODES = ("immediate", "daily")
CHANNELS = ("webhook", "email")
MAX_NAME_CHARS = 100
MAX_URL_CHARS = 2000
MAX_EMAILS = 20
EMAIL = re.compile(r"^[^@\s<>,;\"']{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z0-9-]{2,63}$")

RULES = "alert_rules"
OUTBOX = "alert_outbox"
LOG = "alert_log"
INDEXES: dict[str, list[IndexModel]] = {
    RULES: [IndexModel([("created_at", ASCENDING)], name="created_at")],
    OUTBOX: [
        IndexModel([("key", ASCENDING)], unique=True, name="key_unique"),
        IndexModel([("state", ASCENDING), ("next_at", ASCENDING)], name="state_next_at"),
        IndexModel([("rule_id", ASCENDING), ("state", ASCENDING)], name="rule_state"),
    ],
    LOG: [IndexModel([("at", DESCENDING)], name="at")],
}
SHARD_KEYS: dict[str, dict[str, Any]] = {
    RULES: {"_id": "hashed"},
    OUTBOX: {"key": ASCENDING},
    LOG: {"_id": "hashed"},
}
PENDING_MATCHES = IndexModel([("alert", ASCENDING)], name="alert_pending", sparse=True)
"""The new matches not yet handed to the rules (``matches.alert``)."""


class AlertRuleError(MatcherError, ValueError):
    """A rule that cannot be stored as given."""


@dataclass(frozen=True)
class AlertRule:
    """One rule, validated (:meth:`from_dict` refuses anything malformed).

    >>> AlertRule.from_dict({"name": "ops", "scope": "site", "target": "pirate",
    ...     "mode": "daily", "channel": "email", "emails": ["a@example.com"]}).describe()
    'site pirate, daily, email a@example.com'
    """

    name: str
    scope: str = "all"
    target: str = ""
    """The work id (``scope == "work"``) or site name (``"site"``); empty for ``"all"``."""
    mode: str = "immediate"
    channel: str = "webhook"
    url: str = ""
    secret: str = field(default="", repr=False)
    emails: tuple[str, ...] = ()
    enabled: bool = True
    id: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AlertRule:
        """A rule from a form, a command line or a stored document; a webhook rule with no
        secret gets a random one."""
        name = _plain(data.get("name", ""), "name").strip()
        if not name or len(name) > MAX_NAME_CHARS:
            raise AlertRuleError(f"a rule's name has 1 to {MAX_NAME_CHARS} characters")
        scope = _choice(data.get("scope", "all"), SCOPES, "scope")
        target = _plain(data.get("target", ""), "target").strip()
        if scope == "work":
            try:
                target = str(ObjectId(target))
            except (InvalidId, TypeError):
                raise AlertRuleError(f"a work scope needs a work id, got {target!r}") from None
        elif scope == "site":
            if not NAME.match(target):
                raise AlertRuleError(f"a site scope needs a site name, got {target!r}")
        else:
            target = ""
        mode = _choice(data.get("mode", "immediate"), MODES, "mode")
        channel = _choice(data.get("channel", "webhook"), CHANNELS, "channel")
        url, secret, emails = "", "", ()
        if channel == "webhook":
            url = webhook_url(data.get("url", ""))
            secret = _plain(data.get("secret", ""), "secret").strip() or secrets.token_hex(32)
        else:
            emails = email_list(data.get("emails", ()))
        enabled = data.get("enabled", True)
        if not isinstance(enabled, bool):
            raise AlertRuleError("enabled must be true or false")
        rule_id = data.get("_id", data.get("id", ""))
        return cls(name, scope, target, mode, channel, url, secret, emails, enabled, str(rule_id))

    def to_document(self) -> dict[str, Any]:
        """The stored fields (without the id)."""
        return {
            "name": self.name,
            "scope": self.scope,
            "target": self.target,
            "mode": self.mode,
            "channel": self.channel,
            "url": self.url,
            "secret": self.secret,
            "emails": list(self.emails),
            "enabled": self.enabled,
        }

    def applies_to(self, match: dict[str, Any]) -> bool:
        """Whether a match (its ``work_id`` and ``site``) is in this rule's scope."""
        if self.scope == "work":
            return str(match.get("work_id", "")) == self.target
        if self.scope == "site":
            return match.get("site") == self.target
        return True

    def describe(self) -> str:
        """One line: scope, mode, channel and where it sends."""
        scope = "every match" if self.scope == "all" else f"{self.scope} {self.target}"
        where = self.url if self.channel == "webhook" else ", ".join(self.emails)
        return f"{scope}, {self.mode}, {self.channel} {where}"


def webhook_url(value: Any) -> str:
    """An http(s) URL with a host; anything else is an :class:`AlertRuleError`."""
    url = _plain(value, "url").strip()
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError as exc:  # an unclosed "[" ...: whether its host is one is the policy's
        raise AlertRuleError(f"a webhook URL must be an http(s) URL, got {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not hostname or len(url) > MAX_URL_CHARS:
        raise AlertRuleError(f"a webhook URL must be http:// or https:// with a host, got {url!r}")
    if any(ord(c) < 33 for c in url):
        raise AlertRuleError("a webhook URL may not hold spaces or control characters")
    return url


def email_list(value: Any) -> tuple[str, ...]:
    """Addresses from a list, or a string of them separated by commas, spaces or lines."""
    if isinstance(value, str):
        value = re.split(r"[\s,;]+", value)
    if not isinstance(value, list | tuple):
        raise AlertRuleError("emails must be a list of addresses")
    emails = tuple(dict.fromkeys(_plain(e, "email").strip() for e in value if str(e).strip()))
    if not emails or len(emails) > MAX_EMAILS:
        raise AlertRuleError(f"an email rule needs 1 to {MAX_EMAILS} addresses")
    for email in emails:
        if not EMAIL.match(email):
            raise AlertRuleError(f"not an email address: {email!r}")
    return emails


def _plain(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise AlertRuleError(f"{what} must be a string, got {type(value).__name__}")
    return value


def _choice(value: Any, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise AlertRuleError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    return value
