"""Alert rules (per work, per site or all; at once or as a daily digest; by signed webhook or
email), their test messages, and the log of every delivery attempt.

Used by the admin's alert pages (:mod:`admin.web.alerts`) and ``fptrack alerts``
(:mod:`admin.commands.alerts`). :meth:`AlertService.refusal` and
:meth:`AlertService.send_test` are outbound IO that touch no store: the embedded admin runs
them outside its lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from matcher.alerts.channels import CHANNELS
from matcher.alerts.rules import AlertRule
from matcher.store.alerts import AlertStore
from matcher.worker import alert_delivery

if TYPE_CHECKING:
    from admin.context import Context
    from matcher.alerts.notify import Outcome


class AlertService:
    """The alert rules, outbox and delivery log of the store of ``ctx``, sent under its
    settings as they are at each call."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.kept = AlertStore(ctx.store)

    def rules(self) -> list[AlertRule]:
        return self.kept.rules()

    def rule(self, rule_id: str) -> AlertRule | None:
        return self.kept.rule(rule_id)

    def recent_log(self) -> list[dict[str, Any]]:
        return self.kept.recent_log()

    def outbox_counts(self) -> dict[str, int]:
        return self.kept.outbox_counts()

    def refusal(self, rule: AlertRule) -> str:
        """Why ``rule`` may not be saved (a webhook whose host is internal), or "";
        resolves the webhook's host (outbound IO)."""
        return alert_delivery.refusal(self.ctx.settings, rule)

    def warning(self, rule: AlertRule) -> str:
        """Why ``rule``'s messages would fail with these settings (no SMTP server for an
        email rule), or ""."""
        return CHANNELS[rule.channel].warning(self.ctx.settings)

    def save(self, rule: AlertRule) -> AlertRule:
        return self.kept.save_rule(rule)

    def set_enabled(self, rule: AlertRule, enabled: bool) -> None:
        self.kept.set_enabled(rule.id, enabled)

    def remove(self, rule: AlertRule) -> None:
        """Remove a rule and its unsent messages."""
        self.kept.remove_rule(rule.id)

    def send_test(self, rule: AlertRule) -> Outcome:
        """Send ``rule`` a message about a made-up match now (outbound IO only)."""
        return alert_delivery.send_sample(self.ctx.settings, rule)

    def log_test(self, rule: AlertRule, outcome: Outcome) -> None:
        """Write a test message's outcome to the delivery log."""
        alert_delivery.log_test(self.kept, rule, outcome)
