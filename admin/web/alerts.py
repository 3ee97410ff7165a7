"""Alerts: the rules that tell of new matches (per work, per site or all; at once or as a
daily digest; by signed webhook or email), and the log of every delivery attempt.

Admins only: a rule holds its webhook's secret.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for

from admin.web import deps
from admin.web.security import requires
from matcher.alerts.channels import CHANNELS
from matcher.alerts.rules import MODES, SCOPES, AlertRule, AlertRuleError

bp = Blueprint("alerts", __name__, url_prefix="/alerts")
FORM_FIELDS = ("name", "scope", "target", "mode", "channel", "url", "secret", "emails")


def _rule(rule_id: str) -> AlertRule:
    rule = deps.alerts().rule(rule_id)
    if rule is None:
        abort(404, "no such alert rule")
    return rule


@bp.get("/")
@requires("admin")
def index() -> Any:
    alerts, settings = deps.alerts(), deps.settings()
    return render_template(
        "alerts.html",
        rules=alerts.rules(),
        log=alerts.recent_log(),
        counts=alerts.outbox_counts(),
        settings=settings,
        email_ready=settings.smtp is not None,
    )


@bp.route("/new", methods=["GET", "POST"])
@requires("admin")
def new() -> Any:
    choices = {"scopes": SCOPES, "modes": MODES, "channels": tuple(CHANNELS)}
    if request.method == "GET":
        return render_template("alert_form.html", form={}, error="", **choices)
    form = {name: request.form.get(name, "") for name in FORM_FIELDS}
    try:
        rule = AlertRule.from_dict(form)
    except AlertRuleError as exc:
        return render_template("alert_form.html", form=form, error=str(exc), **choices), 400
    alerts = deps.alerts()
    with deps.outside_lock():  # resolving the webhook's host is outbound IO
        refused = alerts.refusal(rule)
    if refused:
        return render_template("alert_form.html", form=form, error=refused, **choices), 400
    rule = alerts.save(rule)
    note = f"alert rule {rule.name} saved"
    if warning := alerts.warning(rule):
        note += f"; {warning}: its messages will fail"
    flash(note)
    return redirect(url_for("alerts.index"))


@bp.post("/<rule_id>/enabled")
@requires("admin")
def enabled(rule_id: str) -> Any:
    rule = _rule(rule_id)
    deps.alerts().set_enabled(rule, not rule.enabled)
    flash(f"alert rule {rule.name} {'disabled' if rule.enabled else 'enabled'}")
    return redirect(url_for("alerts.index"))


@bp.post("/<rule_id>/remove")
@requires("admin")
def remove(rule_id: str) -> Any:
    rule = _rule(rule_id)
    deps.alerts().remove(rule)
    flash(f"alert rule {rule.name} removed (its unsent messages too)")
    return redirect(url_for("alerts.index"))


@bp.post("/<rule_id>/test")
@requires("admin")
def test(rule_id: str) -> Any:
    rule = _rule(rule_id)
    alerts = deps.alerts()
    with deps.outside_lock():  # no other request waits on this one's receiver
        outcome = alerts.send_test(rule)
    alerts.log_test(rule, outcome)
    if outcome.ok:
        flash(f"test message to {rule.name} delivered")
    else:
        flash(f"test message to {rule.name} failed: {outcome.error}", "error")
    return redirect(url_for("alerts.index"))
