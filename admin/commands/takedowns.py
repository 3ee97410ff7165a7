"""``fptrack takedowns``: notices sent and followed to the end (send, recheck, list, contact)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from admin.commands.common import actions, command, json_option, site_service
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    takedowns = actions(
        parser,
        "Takedown notices followed to the end: a notice sent starts rechecks of every URL it "
        "names (FPTRACK_TAKEDOWN_RECHECKS days after it, default 1,3,7,14; beat runs the due "
        "ones every FPTRACK_TAKEDOWN_RECHECK_EVERY s, default 600), each recording removed "
        "(404/410, or the page no longer copies the work, verified), still up, or changed; "
        "a copy back after removal reopens its case.",
    )
    p = command(
        takedowns,
        "send",
        run_send,
        "send a site's notice (or mark it sent) and schedule its rechecks",
        "Send the takedown notice of a site's matches that a person confirmed (confirmed "
        "and takedown_sent; unreviewed new ones only with --include-unreviewed, a choice "
        "the notice keeps) by email to the site's contact (--email; FPTRACK_SMTP_URL), or "
        "mark it sent by other means (default). Refused while the notice still has the "
        "template's placeholders (set the rights holder and contact in the admin's takedown "
        "template). Its matches become takedown_sent and every URL it names is rechecked.",
    )
    p.add_argument("site", metavar="SITE", help="the site, by name")
    p.add_argument("--since", help="matches first seen since (YYYY-MM-DD; default: all)")
    p.add_argument(
        "--include-unreviewed",
        action="store_true",
        help="name the unreviewed (new) matches too, without review; the notice records "
        "this choice (default: confirmed matches only)",
    )
    p.add_argument(
        "--email",
        action="store_true",
        help="email it to the site's contact (default: mark it sent)",
    )
    command(
        takedowns,
        "recheck",
        run_recheck,
        "run the rechecks that are due now",
        "Recheck now every URL whose recheck is due (what beat's takedowns:recheck does). "
        "A URL's own host may be internal (the crawl found the page there); a redirect to "
        "another host that is internal is refused (the recheck is unreachable) unless "
        "FPTRACK_OUTBOUND_ALLOW_PRIVATE=true (default false).",
    )
    p = command(
        takedowns,
        "list",
        run_list,
        "figures per site and provider, and the URLs to escalate",
        "Per site and per hosting provider: notices sent, URLs named and rechecked, removed, "
        "the removal rate and the median days to removal, and the URLs still up (or up "
        "again) --days after their notice (default FPTRACK_TAKEDOWN_ESCALATE_DAYS, 7).",
    )
    p.add_argument("--days", type=float, help="escalate after this many days (default: 7)")
    json_option(p)
    p = command(
        takedowns,
        "contact",
        run_contact,
        "set a site's notice address or hosting provider",
        "Set the address a site's notices are emailed to, and its hosting provider (guessed "
        "from its address when a first notice is sent, unless set here).",
    )
    p.add_argument("site", metavar="SITE", help="the site, by name")
    p.add_argument("--email", help="the site's contact address for notices (default: unchanged)")
    p.add_argument(
        "--provider", help="the site's hosting provider (default: unchanged, else guessed)"
    )


def run_send(args: argparse.Namespace, ctx: Context) -> int:
    from admin.filters import FilterError
    from admin.report.selection import Selection
    from admin.report.takedown_send import NoticeError, SendError
    from admin.services.takedowns import TakedownService

    chosen = {"since": args.since or "", "unreviewed": "1" if args.include_unreviewed else ""}
    try:
        selection = Selection.parse(chosen, site=args.site, notice=True)
    except FilterError as exc:
        raise CommandError(str(exc), 2) from None
    try:
        sent = TakedownService(ctx).send(selection, email=args.email, by="cli")
    except (SendError, NoticeError) as exc:
        raise CommandError(str(exc)) from None
    print(f"notice {sent.notice_id} {sent.line()}")
    return 0


def run_recheck(args: argparse.Namespace, ctx: Context) -> int:
    from admin.services.takedowns import TakedownService

    done = TakedownService(ctx).recheck()
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(done.outcomes.items())) or "none due"
    print(f"{done.checked} URL(s) rechecked: {outcomes}")
    return 0


def run_list(args: argparse.Namespace, ctx: Context) -> int:
    from admin.services.takedowns import TakedownService

    days = args.days if args.days is not None else ctx.settings.takedown_escalate_days
    found = TakedownService(ctx).figures(days)
    if args.json:
        out = {scope: [f.as_dict() for f in rows] for scope, rows in found.items()}
        print(json.dumps(out, ensure_ascii=False, indent=2, default=str))
        return 0
    for scope, rows in found.items():
        print(f"{scope}: notices, URLs, rechecked, removed, removal rate, median days, still up")
        for f in rows:
            rate = "-" if f.removal_rate is None else f"{f.removal_rate:.0%}"
            median = "-" if f.median_days is None else f"{f.median_days:.1f}"
            print(
                f"  {f.name}\t{f.notices}\t{f.urls}\t{f.rechecked}\t{f.removed}\t{rate}\t{median}"
                f"\t{len(f.escalate)}"
            )
    late = [e for f in found["sites"] for e in f.escalate]
    print(f"to escalate ({len(late)}: still up {days:g} days after their notice)")
    for e in late:
        print(f"  {e['site']}\t{e['state']}\t{e['sent_at']:%Y-%m-%d}\t{e['url']}")
    return 0


def run_contact(args: argparse.Namespace, ctx: Context) -> int:
    from admin.services.takedowns import TakedownService

    fields = {}
    if args.email is not None:
        if args.email and "@" not in args.email:
            raise CommandError(f"not an email address: {args.email!r}", 2)
        fields["contact"] = args.email
    if args.provider is not None:
        fields.update(provider=args.provider, provider_from="edited")
    if not fields:
        raise CommandError("give --email or --provider", 2)
    if site_service(ctx).get(args.site) is None:
        raise CommandError(f"no site {args.site}")
    takedowns = TakedownService(ctx)
    takedowns.set_contact(args.site, **fields)
    kept = takedowns.contact(args.site)
    print(f"{args.site}: contact {kept['contact'] or '-'}, provider {kept['provider'] or '-'}")
    return 0
