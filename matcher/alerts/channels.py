"""Alert channels: how a rule's messages go out, one class per channel.

A channel validates the fields of a rule that are its own (:meth:`Channel.fields`), names
where the rule sends (:meth:`Channel.target`), says why a rule may not be saved
(:meth:`Channel.refusal`) or will not be delivered (:meth:`Channel.warning`), and sends one
message (:meth:`Channel.send`). :data:`CHANNELS` holds them by name: a new channel is one
class added there, and the rules, the delivery jobs, the command line and the admin's form
take it from there.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

from matcher import outbound
from matcher.alerts import notify
from matcher.errors import MatcherError
from matcher.settings import Settings

MAX_URL_CHARS = 2000
MAX_EMAILS = 20
EMAIL = re.compile(r"^[^@\s<>,;\"']{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z0-9-]{2,63}$")


class AlertRuleError(MatcherError, ValueError):
    """A rule that cannot be stored as given."""


class Addressed(Protocol):
    """What a channel reads of a rule (:class:`matcher.alerts.rules.AlertRule`)."""

    id: str
    name: str
    url: str
    secret: str
    emails: tuple[str, ...]


class Channel:
    """One way of sending a rule's messages."""

    name: ClassVar[str]

    def fields(self, data: dict[str, Any]) -> dict[str, Any]:
        """The rule's fields of this channel from ``data`` (a form, a command line, a
        stored document), validated: :class:`AlertRuleError` when malformed."""
        raise NotImplementedError

    def target(self, rule: Addressed) -> str:
        """Where ``rule`` sends, in one line."""
        raise NotImplementedError

    def refusal(self, settings: Settings, rule: Addressed) -> str:
        """Why ``rule`` may not be saved here, or ""."""
        return ""

    def warning(self, settings: Settings) -> str:
        """Why a rule of this channel, saved, would not be delivered here, or ""."""
        return ""

    def send(
        self, rule: Addressed, delivery: str, mode: str, matches: list[dict[str, Any]],
        settings: Settings, clock: Callable[[], float] = time.time,
    ) -> notify.Outcome:  # fmt: skip
        """Send one message of ``rule`` about ``matches`` (:func:`notify.describe_match`
        values); ``delivery`` names the message, the same on every attempt."""
        raise NotImplementedError


class Webhook(Channel):
    """A signed JSON POST to an http(s) URL (:func:`matcher.alerts.notify.post_webhook`); a
    rule given no secret gets a random one."""

    name = "webhook"

    def fields(self, data: dict[str, Any]) -> dict[str, Any]:
        secret = plain(data.get("secret", ""), "secret").strip() or secrets.token_hex(32)
        return {"url": webhook_url(data.get("url", "")), "secret": secret}

    def target(self, rule: Addressed) -> str:
        return rule.url

    def refusal(self, settings: Settings, rule: Addressed) -> str:
        """Its host is or resolves to an internal address and ``FPTRACK_ALERT_ALLOW_PRIVATE``
        is off. A name that does not resolve yet passes: sending checks again
        (:mod:`matcher.outbound`), as a name may resolve elsewhere later."""
        why = outbound.refusal(
            rule.url, settings.alert_allow_private, settings.alert_timeout, unresolved_ok=True
        )
        if not why:
            return ""
        return f"webhook {rule.url} refused: {why} (FPTRACK_ALERT_ALLOW_PRIVATE=true allows it)"

    def send(
        self, rule: Addressed, delivery: str, mode: str, matches: list[dict[str, Any]],
        settings: Settings, clock: Callable[[], float] = time.time,
    ) -> notify.Outcome:  # fmt: skip
        data = notify.payload(
            delivery=delivery, mode=mode, rule={"id": rule.id, "name": rule.name},
            matches=matches, sent_at=datetime.now(UTC),
        )  # fmt: skip
        return notify.post_webhook(
            rule.url, rule.secret, notify.json_body(data), delivery, settings.alert_timeout,
            clock, allow_private=settings.alert_allow_private,
        )  # fmt: skip


class Email(Channel):
    """One message with a text and an HTML part to a list of addresses, over the SMTP
    server of ``FPTRACK_SMTP_URL`` (:func:`matcher.alerts.notify.send_email`)."""

    name = "email"

    def fields(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"emails": email_list(data.get("emails", ()))}

    def target(self, rule: Addressed) -> str:
        return ", ".join(rule.emails)

    def warning(self, settings: Settings) -> str:
        return "" if settings.smtp else "email is not configured (FPTRACK_SMTP_URL)"

    def send(
        self, rule: Addressed, delivery: str, mode: str, matches: list[dict[str, Any]],
        settings: Settings, clock: Callable[[], float] = time.time,
    ) -> notify.Outcome:  # fmt: skip
        smtp = settings.smtp
        if smtp is None:
            return notify.Outcome(False, None, notify.NO_SMTP, permanent=True)
        message = notify.email_message(smtp, rule.emails, rule.name, matches)
        return notify.send_email(smtp, rule.emails, message, settings.alert_timeout)


CHANNELS: dict[str, Channel] = {c.name: c for c in (Webhook(), Email())}
"""Every channel by name; the first is a rule's default."""


def webhook_url(value: Any) -> str:
    """An http(s) URL with a host; anything else is an :class:`AlertRuleError`."""
    url = plain(value, "url").strip()
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
    emails = tuple(dict.fromkeys(plain(e, "email").strip() for e in value if str(e).strip()))
    if not emails or len(emails) > MAX_EMAILS:
        raise AlertRuleError(f"an email rule needs 1 to {MAX_EMAILS} addresses")
    for email in emails:
        if not EMAIL.match(email):
            raise AlertRuleError(f"not an email address: {email!r}")
    return emails


def plain(value: Any, what: str) -> str:
    """``value`` if it is a string, else an :class:`AlertRuleError` naming ``what``."""
    if not isinstance(value, str):
        raise AlertRuleError(f"{what} must be a string, got {type(value).__name__}")
    return value
