"""Alert rules: who is told of new matches, about what, how and when.

A rule has a scope (every match, the matches of one work, or those of one site), a mode
(``immediate``: one message per new match, sent as soon as the page's matching job ends;
``daily``: one digest per day at ``FPTRACK_DIGEST_AT``), and a channel: a webhook (an
http(s) URL and the secret its payloads are signed with) or email (a list of addresses).
Rules are validated here (each channel's own fields by its class in
:mod:`matcher.alerts.channels`), before anything is stored; the collections of the alerts and
their indexes are declared here too, for :mod:`matcher.store`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bson import ObjectId
from bson.errors import InvalidId
from pymongo import ASCENDING, DESCENDING, IndexModel

from matcher.alerts.channels import CHANNELS, AlertRuleError, plain
from matcher.sites.site_config import NAME

SCOPES = ("all", "work", "site")
MODES = ("immediate", "daily")
MAX_NAME_CHARS = 100

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
        """A rule from a form, a command line or a stored document (its channel's fields
        validated by the channel: :meth:`matcher.alerts.channels.Channel.fields`)."""
        name = plain(data.get("name", ""), "name").strip()
        if not name or len(name) > MAX_NAME_CHARS:
            raise AlertRuleError(f"a rule's name has 1 to {MAX_NAME_CHARS} characters")
        scope = _choice(data.get("scope", "all"), SCOPES, "scope")
        target = plain(data.get("target", ""), "target").strip()
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
        channel = _choice(data.get("channel", next(iter(CHANNELS))), tuple(CHANNELS), "channel")
        fields = CHANNELS[channel].fields(data)
        enabled = data.get("enabled", True)
        if not isinstance(enabled, bool):
            raise AlertRuleError("enabled must be true or false")
        rule_id = data.get("_id", data.get("id", ""))
        return cls(name, scope, target, mode, channel, enabled=enabled, id=str(rule_id), **fields)

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
        return f"{scope}, {self.mode}, {self.channel} {self.where()}"

    def where(self) -> str:
        """Where the rule sends: its webhook's URL, its addresses."""
        return CHANNELS[self.channel].target(self)


def _choice(value: Any, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise AlertRuleError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    return value
