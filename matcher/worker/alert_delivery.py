"""Alerts of new matches: the work behind the alert tasks, as plain functions.

:func:`deliver_due` hands the new matches to the rules (:meth:`AlertStore.take_new_matches`)
and sends every message that is due; the ``fptrack.deliver_alerts`` task runs it right
after a page's or work's matching job that made new matches, and beat runs it every
:data:`SWEEP_SECONDS` for retries. :func:`send_digests` (``fptrack.send_digests``, daily at
``FPTRACK_DIGEST_AT``) gathers each daily rule's matches into one message first.

A failed attempt is retried ``FPTRACK_ALERT_BACKOFF`` seconds later (default 30), the wait
doubled at each further attempt up to ``FPTRACK_ALERT_BACKOFF_MAX`` (3600), until
``FPTRACK_ALERT_MAX_ATTEMPTS`` (6) attempts have failed; then the message is ``failed``.
Every attempt is written to the delivery log. Nothing here raises on a receiver's failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from matcher.alerts import notify
from matcher.alerts.channels import CHANNELS
from matcher.alerts.rules import AlertRule
from matcher.settings import Settings
from matcher.store import now
from matcher.store.alerts import AlertStore

SWEEP_SECONDS = 60
"""How often beat runs ``fptrack.deliver_alerts`` (retries, and anything a task missed)."""
TAKE_BATCH = 500
MAX_PER_RUN = 500
"""Messages one run sends at most before it hands over to the next task."""
SILENT_STATUSES = ("false_positive", "authorised")
"""Matches reviewed into these statuses before their message went out are left out of it."""


def take_new_matches(alerts: AlertStore) -> int:
    """Hand every new match to the rules in scope; returns how many were taken."""
    taken = 0
    while True:
        n = alerts.take_new_matches(TAKE_BATCH)
        taken += n
        if n < TAKE_BATCH:
            return taken


def backoff(settings: Settings, attempt: int) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based).

    >>> [backoff(Settings(), a) for a in (1, 2, 3, 8)]
    [30.0, 60.0, 120.0, 3600.0]
    """
    return min(settings.alert_backoff * 2 ** (attempt - 1), settings.alert_backoff_max)


def deliver_due(
    alerts: AlertStore, settings: Settings, clock: Callable[[], float] = time.time
) -> dict[str, Any]:
    """Take the new matches, then send every due message (at most :data:`MAX_PER_RUN`).

    Returns the count of each outcome, ``more`` (the limit was reached) and ``next_due``
    (seconds until the next retry is due, None if none waits).
    """
    result: dict[str, Any] = {"taken": take_new_matches(alerts)}
    counts = dict.fromkeys(("delivered", "retry", "failed", "dropped"), 0)
    lease = settings.alert_timeout * 3 + 30
    sent = 0
    while sent < MAX_PER_RUN:
        entry = alerts.claim(lease)
        if entry is None:
            break
        counts[deliver_one(alerts, settings, entry, clock)] += 1
        sent += 1
    result.update(counts, more=sent >= MAX_PER_RUN)
    due = alerts.next_due()
    result["next_due"] = None if due is None else max(0.0, (due - now()).total_seconds())
    return result


def send_digests(
    alerts: AlertStore, settings: Settings, clock: Callable[[], float] = time.time
) -> dict[str, Any]:
    """Daily: one message per daily rule with the matches queued for it (several when over
    :data:`matcher.store.alerts.DIGEST_MAX_MATCHES`), then send."""
    take_new_matches(alerts)
    digests = 0
    for rule in alerts.rules(enabled_only=True):
        while rule.mode == "daily" and alerts.make_digest(rule) is not None:
            digests += 1
    return {"digests": digests, **deliver_due(alerts, settings, clock)}


def deliver_one(
    alerts: AlertStore, settings: Settings, entry: dict, clock: Callable[[], float] = time.time
) -> str:
    """Make one attempt at a claimed outbox entry and record it; its outcome: ``delivered``,
    ``retry``, ``failed`` or ``dropped``."""
    rule = alerts.rule(entry["rule_id"])
    if rule is None or not rule.enabled:
        reason = "its rule was removed" if rule is None else "its rule is disabled"
        alerts.finish(entry, "dropped", error=reason)
        return "dropped"
    found = alerts.matches(entry["match_ids"])
    found = [m for m in found if m.get("status") not in SILENT_STATUSES]
    if not found:
        alerts.finish(entry, "dropped", error="its matches were deleted or cleared since")
        return "dropped"
    matches = [notify.describe_match(m, settings.admin_url) for m in found]
    mode = "digest" if entry.get("mode") == "digest" else "immediate"
    outcome = send(rule, str(entry["_id"]), mode, matches, settings, clock)
    attempt = int(entry.get("attempts", 1))
    alerts.log(
        outbox_id=entry["_id"], rule_id=entry["rule_id"], rule=rule.name, channel=rule.channel,
        target=rule.where(), attempt=attempt, ok=outcome.ok, status=outcome.status,
        error=outcome.error, matches=len(matches), mode=mode,
    )  # fmt: skip
    if outcome.ok:
        alerts.finish(entry, "delivered", error=outcome.error)
        return "delivered"
    if outcome.permanent or attempt >= settings.alert_max_attempts:
        alerts.finish(entry, "failed", error=f"{outcome.error} (after {attempt} attempt(s))")
        return "failed"
    retry_at = now() + timedelta(seconds=backoff(settings, attempt))
    alerts.finish(entry, "pending", error=outcome.error, retry_at=retry_at)
    return "retry"


def send(
    rule: AlertRule,
    delivery: str,
    mode: str,
    matches: list[dict[str, Any]],
    settings: Settings,
    clock: Callable[[], float] = time.time,
) -> notify.Outcome:
    """Send one message of ``rule`` (``matches``: :func:`notify.describe_match` values)
    through its channel."""
    return CHANNELS[rule.channel].send(rule, delivery, mode, matches, settings, clock)


def send_test(alerts: AlertStore, settings: Settings, rule: AlertRule) -> notify.Outcome:
    """Send ``rule`` a message about a made-up match now, and log it (attempt 0)."""
    outcome = send_sample(settings, rule)
    log_test(alerts, rule, outcome)
    return outcome


def send_sample(settings: Settings, rule: AlertRule) -> notify.Outcome:
    """Send ``rule`` a message about a made-up match now (IO only: no store is touched, so
    the embedded admin runs it outside its lock)."""
    sample = {
        "id": "000000000000000000000000", "work_id": "000000000000000000000000",
        "work_title": "fptrack test alert", "site": "example", "url": "https://example.com/",
        "score": 1.0, "containment": 1.0, "methods": [], "first_seen": now().isoformat(),
        "admin_url": "",
    }  # fmt: skip
    return send(rule, "test", "test", [sample], settings)


def log_test(alerts: AlertStore, rule: AlertRule, outcome: notify.Outcome) -> None:
    """Write a test message's outcome to the delivery log (attempt 0)."""
    alerts.log(
        outbox_id=None, rule_id=rule.id, rule=rule.name, channel=rule.channel,
        target=rule.where(), attempt=0, ok=outcome.ok, status=outcome.status,
        error=outcome.error, matches=0, mode="test",
    )  # fmt: skip


def refusal(settings: Settings, rule: AlertRule) -> str:
    """Why ``rule`` may not be saved (:meth:`matcher.alerts.channels.Channel.refusal`: a
    webhook whose host is internal), or ""."""
    return CHANNELS[rule.channel].refusal(settings, rule)
