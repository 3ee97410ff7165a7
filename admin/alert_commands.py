"""``fptrack alerts``: the alert rules from the command line (add, list, remove, test)."""

from __future__ import annotations

import argparse
import sys

from admin.commands import dump_json
from admin.context import Context
from admin.errors import CommandError
from matcher import alerts
from matcher.alert_rules import AlertRule, AlertRuleError
from matcher.alert_store import AlertStore
from matcher.store import StoreError


def _store(ctx: Context) -> AlertStore:
    return AlertStore(ctx.engine.store)


def _rule(store: AlertStore, rule_id: str) -> AlertRule:
    try:
        rule = store.rule(rule_id)
    except StoreError as exc:
        raise CommandError(str(exc), 2) from exc
    if rule is None:
        raise CommandError(f"no alert rule {rule_id} (see fptrack alerts list)")
    return rule


def cmd_alerts_add(args: argparse.Namespace, ctx: Context) -> int:
    scope, target = "all", ""
    if args.work:
        scope, target = "work", args.work
    elif args.site:
        scope, target = "site", args.site
    data = {"name": args.name, "scope": scope, "target": target, "mode": args.mode}
    if args.email:
        data.update(channel="email", emails=args.email)
    else:
        data.update(channel="webhook", url=args.webhook or "", secret=args.secret or "")
    try:
        rule = AlertRule.from_dict(data)
    except AlertRuleError as exc:
        raise CommandError(str(exc), 2) from exc
    refused = alerts.webhook_refusal(ctx.settings, rule)
    if refused:
        raise CommandError(refused, 2)
    rule = _store(ctx).save_rule(rule)
    print(f"added alert rule {rule.id}: {rule.describe()}")
    if rule.channel == "webhook" and not args.secret:
        print(f"its webhook secret: {rule.secret}")
    if rule.channel == "email" and ctx.settings.smtp is None:
        print("warning: FPTRACK_SMTP_URL is not set; its messages will fail", file=sys.stderr)
    return 0


def cmd_alerts_list(args: argparse.Namespace, ctx: Context) -> int:
    rules = _store(ctx).rules()
    if args.json:
        dump_json([{"id": r.id, **r.to_document(), "secret": None} for r in rules])
        return 0
    for r in rules:
        state = "" if r.enabled else "\tdisabled"
        print(f"{r.id}\t{r.name}\t{r.describe()}{state}")
    print(f"{len(rules)} rule(s)", file=sys.stderr)
    return 0


def cmd_alerts_remove(args: argparse.Namespace, ctx: Context) -> int:
    store = _store(ctx)
    rule = _rule(store, args.id)
    store.remove_rule(rule.id)
    print(f"removed alert rule {rule.id} ({rule.name})")
    return 0


def cmd_alerts_test(args: argparse.Namespace, ctx: Context) -> int:
    store = _store(ctx)
    rule = _rule(store, args.id)
    outcome = alerts.send_test(store, ctx.settings, rule)
    if not outcome.ok:
        raise CommandError(f"test message to {rule.name} failed: {outcome.error}")
    print(f"test message to {rule.name} delivered")
    return 0
