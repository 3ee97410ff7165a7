"""``fptrack takedowns``: notices sent to their recipients and followed to the end (send,
export-delisting, recheck, list, contact)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from admin.commands.common import actions, command, json_option, site_service
from admin.errors import CommandError
from matcher.evidence.recipients import EMAILED, RECIPIENTS

if TYPE_CHECKING:
    from admin.context import Context
    from admin.report.selection import Selection


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
        "send a site's notice to its operator, host or registrar, and schedule its rechecks",
        "Send the takedown notice of a site's matches that a person confirmed (confirmed "
        "and takedown_sent; unreviewed new ones only with --include-unreviewed, a choice "
        "the notice keeps) to its recipient (--to): the site's operator (its contact), its "
        "hosting provider's abuse desk or its registrar's. A notice to a host or registrar "
        "names every site with the same abuse address (a section per site) and leaves out "
        "the URLs already removed. By email (--email; FPTRACK_SMTP_URL), or marked sent by "
        "other means (default). Refused while the notice still has the template's "
        "placeholders (set the rights holder and contact in the admin's takedown "
        "template). Its matches become takedown_sent and every URL it names is rechecked.",
    )
    p.add_argument("site", metavar="SITE", help="the site, by name")
    p.add_argument(
        "--to",
        choices=EMAILED,
        default="operator",
        help="the recipient: operator, host or registrar (default: operator); a host's or "
        "registrar's address is the one set (fptrack takedowns contact SITE --to "
        "host=ADDR) or looked up",
    )
    selection_options(p)
    p.add_argument(
        "--email",
        action="store_true",
        help="email it to the recipient's address (default: mark it sent)",
    )
    p = command(
        takedowns,
        "export-delisting",
        run_export_delisting,
        "export the URLs for the search engines' bulk delisting forms (CSV), and follow them",
        "Write the confirmed matches' URLs (of every site, or --site) as CSV for the search "
        "engines' bulk delisting forms: url, site, work_title, rights_holder (the work's "
        "owner, else the template's rights holder), work_reference (the work's source when "
        "a web address or an ISBN), first_seen, match_id, evidence_link (with "
        "FPTRACK_ADMIN_URL). The export is kept as a notice to the search engines: its "
        "matches become takedown_sent and every URL is rechecked; URLs already removed are "
        "left out. At most 1,000 matches: narrow with --site and --since.",
    )
    p.add_argument("--site", help="one site, by name (default: every site)")
    selection_options(p)
    p.add_argument("--out", help="write the CSV to this file (default: standard output)")
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
        "figures per site, provider and recipient, and the URLs to escalate",
        "Per site, per hosting provider and per recipient (operator, host, registrar, "
        "search): notices sent, URLs named and rechecked, removed, the removal rate and the "
        "median days to removal (per recipient, a removal counts for the recipient of the "
        "URL's latest notice), and the URLs still up (or up again) --days after their "
        "latest notice (default FPTRACK_TAKEDOWN_ESCALATE_DAYS, 7), each with the next "
        "recipient to tell (operator, then host, registrar, search).",
    )
    p.add_argument("--days", type=float, help="escalate after this many days (default: 7)")
    json_option(p)
    p = command(
        takedowns,
        "contact",
        run_contact,
        "set a site's notice addresses or hosting provider",
        "Set the address a site's notices are emailed to, its host's and registrar's abuse "
        "addresses (an address set here is never replaced by a lookup; empty: the lookup's "
        "again), and its hosting provider (guessed from its address when a first notice is "
        "sent, unless set here). Shows each recipient's address and where it came from.",
    )
    p.add_argument("site", metavar="SITE", help="the site, by name")
    p.add_argument("--email", help="the site's contact address for notices (default: unchanged)")
    p.add_argument(
        "--to",
        action="append",
        metavar="KIND=EMAIL",
        default=[],
        help="a recipient's address: operator=, host= or registrar= an email, or nothing to "
        "unset it (repeat for several; default: unchanged)",
    )
    p.add_argument(
        "--provider", help="the site's hosting provider (default: unchanged, else guessed)"
    )


def selection_options(p: argparse.ArgumentParser) -> None:
    """``--since`` and ``--include-unreviewed``: which matches a notice or an export names
    (read by :func:`_selection`)."""
    p.add_argument("--since", help="matches first seen since (YYYY-MM-DD; default: all)")
    p.add_argument(
        "--include-unreviewed",
        action="store_true",
        help="name the unreviewed (new) matches too, without review; the notice records "
        "this choice (default: confirmed matches only)",
    )


def _selection(args: argparse.Namespace) -> Selection:
    """The matches a notice or an export names: ``--site``, ``--since`` and
    ``--include-unreviewed``; a bad one is a usage error."""
    from admin.filters import FilterError
    from admin.report.selection import Selection

    chosen = {"since": args.since or "", "unreviewed": "1" if args.include_unreviewed else ""}
    try:
        return Selection.parse(chosen, site=args.site, notice=True)
    except FilterError as exc:
        raise CommandError(str(exc), 2) from None


def run_send(args: argparse.Namespace, ctx: Context) -> int:
    from admin.report.takedown_send import NoticeError, SendError
    from admin.services.takedowns import TakedownService

    selection = _selection(args)
    try:
        sent = TakedownService(ctx).send(selection, email=args.email, by="cli", recipient=args.to)
    except (SendError, NoticeError) as exc:
        raise CommandError(str(exc)) from None
    print(f"notice {sent.notice_id} {sent.line()}")
    return 0


def run_export_delisting(args: argparse.Namespace, ctx: Context) -> int:
    from admin.report.takedown_send import NoticeError, SendError
    from admin.services.takedowns import TakedownService

    selection = _selection(args)
    out = Path(args.out) if args.out else None
    if out is not None and not out.parent.is_dir():
        raise CommandError(f"--out {args.out}: no such directory", 2)
    try:
        done = TakedownService(ctx).export_delisting(selection, by="cli")
    except (SendError, NoticeError) as exc:
        raise CommandError(str(exc)) from None
    said = f"notice {done.sent.notice_id} {done.sent.line()}"
    if out is None:
        sys.stdout.write(done.csv)
        print(said, file=sys.stderr)
        return 0
    try:
        out.write_text(done.csv, encoding="utf-8-sig")
    except OSError as exc:
        raise CommandError(
            f"--out {args.out}: {exc.strerror}; the export was kept as notice "
            f"{done.sent.notice_id}: export again to another file"
        ) from None
    print(f"{said}; {done.rows} row(s) written to {args.out}")
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
        if scope == "recipients":
            rows = sorted(rows, key=lambda f: RECIPIENTS.index(f.name))
        for f in rows:
            rate = "-" if f.removal_rate is None else f"{f.removal_rate:.0%}"
            median = "-" if f.median_days is None else f"{f.median_days:.1f}"
            print(
                f"  {f.name}\t{f.notices}\t{f.urls}\t{f.rechecked}\t{f.removed}\t{rate}\t{median}"
                f"\t{len(f.escalate)}"
            )
    late = [e for f in found["sites"] for e in f.escalate]
    print(f"to escalate ({len(late)}: still up {days:g} days after their latest notice)")
    for e in late:
        told = "+".join(e["recipients"])
        then = f"next: {e['next_recipient']}" if e["next_recipient"] else "every recipient told"
        print(
            f"  {e['site']}\t{e['state']}\t{e['sent_at']:%Y-%m-%d}\t{e['url']}\ttold {told}; {then}"
        )
    return 0


def run_contact(args: argparse.Namespace, ctx: Context) -> int:
    from admin.services.takedowns import TakedownService

    fields = {}
    given = [("operator", args.email)] if args.email is not None else []
    for value in args.to:
        kind, equals, email = value.partition("=")
        if not equals or kind not in EMAILED:
            raise CommandError(
                f"--to {value}: give KIND=EMAIL, KIND one of {', '.join(EMAILED)}", 2
            )
        given.append((kind, email.strip()))
    for kind, email in given:
        if email and ("@" not in email or len(email) > 200):
            raise CommandError(f"not an email address: {email!r}", 2)
        fields["contact" if kind == "operator" else f"{kind}_email"] = email
    if args.provider is not None:
        fields.update(provider=args.provider, provider_from="edited")
    if not fields:
        raise CommandError("give --email, --to KIND=EMAIL or --provider", 2)
    if site_service(ctx).get(args.site) is None:
        raise CommandError(f"no site {args.site}")
    takedowns = TakedownService(ctx)
    takedowns.set_contact(args.site, **fields)
    kept = takedowns.contact(args.site)
    print(f"{args.site}: contact {kept['contact'] or '-'}, provider {kept['provider'] or '-'}")
    found = takedowns.addresses().get(args.site, {})
    for kind in EMAILED:
        to = found.get(kind)
        if to is None or not to.email:
            print(f"  {kind}: -")
            continue
        name = f" ({to.name})" if to.name else ""
        print(f"  {kind}: {to.email}{name}, {to.source}")
    return 0
