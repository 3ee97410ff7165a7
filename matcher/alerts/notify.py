"""Sending alerts: signed webhook POSTs and email over SMTP (the IO of
:mod:`matcher.worker.alert_delivery`).

A webhook receives JSON (:func:`payload`) with three headers:

- ``X-Fptrack-Timestamp``: the send time, Unix seconds;
- ``X-Fptrack-Signature``: ``sha256=`` and the hex HMAC-SHA256, keyed with the rule's
  secret, of the timestamp, a ``.``, and the raw body (:func:`signature`): a receiver
  recomputes it, compares in constant time, and refuses an old timestamp (a replay);
- ``X-Fptrack-Delivery``: the outbox entry's id, the same on every attempt of one message,
  so a receiver can drop a repeat (delivery is at least once).

Only a 2xx answer counts as delivered; redirects are not followed. A webhook POST is
bounded by :mod:`matcher.outbound` (one deadline in all, no internal address unless
allowed). Email is one message with a plain-text part and an HTML part in which every value
is escaped.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import html
import json
import smtplib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from matcher import outbound
from matcher.settings import SmtpConfig

USER_AGENT = "fptrack-alerts/1"
MAX_ERROR_CHARS = 300
NO_SMTP = "email alerts need FPTRACK_SMTP_URL (and FPTRACK_SMTP_FROM), which is not set"


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to: ``ok``, the HTTP status (webhooks) and a one-line error.
    ``permanent``: retrying cannot help (the channel is not configured)."""

    ok: bool
    status: int | None = None
    error: str = ""
    permanent: bool = False


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>`` of HMAC-SHA256(secret, timestamp + "." + body).

    >>> signature("s3cret", "1700000000", b'{}')[:15]
    'sha256=97926816'
    """
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def admin_link(admin_url: str, match_id: Any) -> str:
    """The match's page on the admin platform, or "" when no base URL is configured."""
    return f"{admin_url.rstrip('/')}/matches/{match_id}" if admin_url else ""


def describe_match(match: dict[str, Any], admin_url: str) -> dict[str, Any]:
    """What an alert says of one match."""
    first_seen = match.get("first_seen")
    return {
        "id": str(match["_id"]),
        "work_id": str(match.get("work_id", "")),
        "work_title": str(match.get("work_title", "")),
        "site": str(match.get("site", "")),
        "url": str(match.get("url", "")),
        "score": round(float(match.get("score") or 0.0), 4),
        "containment": round(float(match.get("containment") or 0.0), 4),
        "methods": [str(m) for m in match.get("methods") or ()],
        "first_seen": first_seen.isoformat() if isinstance(first_seen, datetime) else None,
        "admin_url": admin_link(admin_url, match["_id"]),
    }


def payload(
    *, delivery: str, mode: str, rule: dict[str, str], matches: Sequence[dict[str, Any]],
    sent_at: datetime,
) -> dict[str, Any]:  # fmt: skip
    """The JSON of one webhook message (``matches``: :func:`describe_match` values)."""
    return {
        "event": "fptrack.matches",
        "delivery": delivery,
        "mode": mode,
        "rule": rule,
        "sent_at": sent_at.isoformat(),
        "matches": list(matches),
    }


def post_webhook(
    url: str,
    secret: str,
    body: bytes,
    delivery: str,
    timeout: float,
    clock: Callable[[], float] = time.time,
    allow_private: bool = False,
) -> Outcome:
    """POST a signed body under the outbound policy (:mod:`matcher.outbound`): ``timeout``
    seconds in all, the receiver's address checked now (``allow_private``:
    ``FPTRACK_ALERT_ALLOW_PRIVATE``), no redirect followed; never raises."""
    timestamp = str(int(clock()))
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        "User-Agent": USER_AGENT,
        "X-Fptrack-Timestamp": timestamp,
        "X-Fptrack-Signature": signature(secret, timestamp, body),
        "X-Fptrack-Delivery": delivery,
    }
    policy = outbound.Policy(timeout, allow_private=allow_private)
    try:
        answer = outbound.request("POST", url, policy, body=body, headers=headers, read_body=False)
    except outbound.OutboundError as exc:
        return Outcome(False, None, exc.detail[:MAX_ERROR_CHARS])
    if 200 <= answer.status < 300:
        return Outcome(True, answer.status)
    return Outcome(False, answer.status, f"HTTP {answer.status} {answer.reason}"[:MAX_ERROR_CHARS])


def email_message(
    smtp: SmtpConfig, recipients: Sequence[str], rule_name: str, matches: Sequence[dict[str, Any]]
) -> EmailMessage:
    """One email listing ``matches`` (:func:`describe_match` values) grouped by work, then
    site; plain text with an escaped HTML alternative."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for m in matches:
        groups.setdefault((m["work_title"] or m["work_id"], m["site"]), []).append(m)
    count = len(matches)
    subject = f"fptrack: {count} new match{'es' if count != 1 else ''} ({rule_name})"
    lines = [f"{count} new match(es) for the alert rule {rule_name!r}.", ""]
    parts = [f"<p>{_h(lines[0])}</p>"]
    for (work, site), items in groups.items():
        lines.append(f"{work} on {site}: {len(items)}")
        parts.append(f"<h3>{_h(work)} on {_h(site)}: {len(items)}</h3><ul>")
        for m in items:
            link = f" {m['admin_url']}" if m["admin_url"] else ""
            lines.append(f"  - {m['url']} (score {m['score']:.2f}){link}")
            review = f' (<a href="{_h(m["admin_url"])}">review</a>)' if m["admin_url"] else ""
            parts.append(f"<li>{_h(m['url'])} (score {m['score']:.2f}){review}</li>")
        lines.append("")
        parts.append("</ul>")
    message = EmailMessage()
    message["Subject"] = _header(subject)
    message["From"] = smtp.sender
    message["To"] = ", ".join(recipients)
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=smtp.sender.rpartition("@")[2] or None)
    message.set_content("\n".join(lines))
    message.add_alternative("<html><body>" + "".join(parts) + "</body></html>", subtype="html")
    return message


class _SMTP(smtplib.SMTP):
    """An SMTP client whose connection is :func:`matcher.outbound.connect`'s: one deadline
    for the whole exchange, not a timeout per read."""

    def __init__(self, deadline: outbound.Deadline, tls: bool, **kwargs: Any) -> None:
        self.deadline, self.tls = deadline, tls
        super().__init__(**kwargs)

    def _get_socket(self, host: str, port: int, timeout: float) -> Any:
        # the operator's own server (FPTRACK_SMTP_URL), often inside the network
        return outbound.connect(host, port, self.deadline, allow_private=True, tls=self.tls)

    def starttls(self, *args: Any, **kwargs: Any) -> Any:
        self.sock.settimeout(self.deadline.left())  # the handshake: the time left, at most
        answer = super().starttls(context=outbound.tls_context())
        self.sock.budget = self.deadline  # the TLS socket replaces the plain one
        return answer


def send_email(
    smtp: SmtpConfig, recipients: Sequence[str], message: EmailMessage, timeout: float
) -> Outcome:
    """Send one message within ``timeout`` seconds in all (connecting, TLS, every command
    and the data); never raises."""
    deadline = outbound.Deadline(timeout)
    try:
        client = _SMTP(deadline, smtp.tls, host=smtp.host, port=smtp.port, timeout=timeout)
        try:
            if smtp.starttls:
                client.starttls()
            if smtp.user:
                client.login(smtp.user, smtp.password)
            refused = client.send_message(message, smtp.sender, list(recipients))
            with contextlib.suppress(OSError, smtplib.SMTPException):
                client.quit()  # the message is accepted: a late QUIT changes nothing
        finally:
            client.close()
    except outbound.OutboundError as exc:
        return Outcome(False, None, exc.detail[:MAX_ERROR_CHARS])
    except (OSError, smtplib.SMTPException, ValueError) as exc:
        if isinstance(exc, TimeoutError) or deadline.passed():  # smtplib rewords timeouts
            late = f"{smtp.host}:{smtp.port}: no whole answer within {timeout:g} s"
            return Outcome(False, None, late)
        return Outcome(False, None, _line(exc))
    if refused:
        return Outcome(True, None, f"refused by the server: {', '.join(sorted(refused))}")
    return Outcome(True)


def json_body(data: dict[str, Any]) -> bytes:
    """The exact bytes sent (and signed)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _h(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _header(value: str) -> str:
    return " ".join(value.split())  # no line break from a work title into the headers


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:MAX_ERROR_CHARS]
