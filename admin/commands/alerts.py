"""``fptrack alerts``: the alert rules from the command line (add, list, remove, test)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from admin.commands.common import actions, command, dump_json, json_option
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context
    from admin.services.alerts import AlertService
    from matcher.alerts.rules import AlertRule


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from matcher.settings import Settings

    group = actions(
        parser,
        "Rules that tell of new matches, per work, per site or all, at once or in a daily "
        "digest, by signed webhook or email (docs/admin.md, Alerts).",
    )
    p = command(
        group,
        "add",
        run_add,
        "add a rule",
        "Add an alert rule. A webhook rule prints its secret (the key of its signatures).",
    )
    p.add_argument("name", help="the rule's name")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "--work", metavar="WORK_ID", help="only this work's matches (default: every match)"
    )
    scope.add_argument("--site", help="only this site's matches (default: every match)")
    p.add_argument(
        "--mode",
        choices=("immediate", "daily"),
        default="immediate",
        help="one message per new match, or one digest a day at FPTRACK_DIGEST_AT "
        f"(default: immediate; digests at {Settings().digest_at} UTC)",
    )
    channel = p.add_mutually_exclusive_group(required=True)
    channel.add_argument(
        "--webhook", metavar="URL", help="POST to this http(s) URL (no default: this or --email)"
    )
    channel.add_argument(
        "--email",
        action="append",
        metavar="ADDRESS",
        help="mail this address (repeatable; no default: this or --webhook)",
    )
    p.add_argument("--secret", help="the webhook's secret (default: a random one)")
    p = command(
        group,
        "list",
        run_list,
        "list rules",
        "List the alert rules: id, name, scope, mode, channel and where it sends (never a secret).",
    )
    json_option(p)
    p = command(
        group,
        "remove",
        run_remove,
        "remove a rule",
        "Remove an alert rule; its unsent messages are dropped.",
    )
    p.add_argument("id", help="the rule's id (see fptrack alerts list)")
    p = command(
        group,
        "test",
        run_test,
        "send a rule a test message",
        "Send an alert rule a message about a made-up match now; exit status 1 if it fails.",
    )
    p.add_argument("id", help="the rule's id (see fptrack alerts list)")


def _service(ctx: Context) -> AlertService:
    from admin.services.alerts import AlertService

    return AlertService(ctx)


def _rule(alerts: AlertService, rule_id: str) -> AlertRule:
    from matcher.store.common import StoreError

    try:
        rule = alerts.rule(rule_id)
    except StoreError as exc:
        raise CommandError(str(exc), 2) from exc
    if rule is None:
        raise CommandError(f"no alert rule {rule_id} (see fptrack alerts list)")
    return rule


def run_add(args: argparse.Namespace, ctx: Context) -> int:
    from matcher.alerts.rules import AlertRule, AlertRuleError

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
    alerts = _service(ctx)
    refused = alerts.refusal(rule)
    if refused:
        raise CommandError(refused, 2)
    rule = alerts.save(rule)
    print(f"added alert rule {rule.id}: {rule.describe()}")
    if rule.channel == "webhook" and not args.secret:
        print(f"its webhook secret: {rule.secret}")
    if warning := alerts.warning(rule):
        print(f"warning: {warning}; its messages will fail", file=sys.stderr)
    return 0


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    rules = _service(ctx).rules()
    if args.json:
        dump_json([{"id": r.id, **r.to_document(), "secret": None} for r in rules])
        return 0
    for r in rules:
        state = "" if r.enabled else "\tdisabled"
        print(f"{r.id}\t{r.name}\t{r.describe()}{state}")
    print(f"{len(rules)} rule(s)", file=sys.stderr)
    return 0


def run_remove(args: argparse.Namespace, ctx: Context) -> int:
    alerts = _service(ctx)
    rule = _rule(alerts, args.id)
    alerts.remove(rule)
    print(f"removed alert rule {rule.id} ({rule.name})")
    return 0


def run_test(args: argparse.Namespace, ctx: Context) -> int:
    alerts = _service(ctx)
    rule = _rule(alerts, args.id)
    outcome = alerts.send_test(rule)
    alerts.log_test(rule, outcome)
    if not outcome.ok:
        raise CommandError(f"test message to {rule.name} failed: {outcome.error}")
    print(f"test message to {rule.name} delivered")
    return 0
