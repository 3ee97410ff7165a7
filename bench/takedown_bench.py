"""Takedowns followed to the end, measured against the truth the sites were told.

Issue 26, part 2. ``--sites`` (5) local pirate sites (:class:`tests.servers.takedown_site.
ChangingSite`, each on a loopback address of its own: 127.0.0.2, 127.0.0.3 ...) each serve
``--pages`` (60) chapters copying ``--works`` (20) registered works (texts of the corpus,
or synthetic ones with ``--quick``). Each site is told a policy, the truth: what share of
its pages it takes down and after how many days (404, 410, or the text replaced by another
one), and how many of those it puts back later. Every match is confirmed (a notice names
only those) and every site gets a notice (marked sent,
:func:`admin.report.takedown_send.send_notice`); then time runs on: before each recheck time
(the notices' 1, 3, 7 and 14 days) the sites apply their policy, and the due rechecks run
for real (:func:`matcher.evidence.takedowns.recheck_due`: each URL fetched over HTTP, the works
verified on the page). The engine is the embedded scan's (mongomock, fakeredis).

Figures: per site, the removal rate measured against the truth (pages down on day 14 of
those noticed), the median days to removal measured against the truth's day rounded up to
the recheck that could first see it, and the share of cases whose final state is the
truth's (removed, up, reopened); the time per recheck (fetch, extraction, verification)
beside the peer, a plain ``urllib`` GET of the same page (the least a recheck costs), as a
ratio. ``--json OUT`` writes them all.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import statistics
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from admin.context import Context
from admin.report.selection import Selection
from admin.report.takedown import DETAILS_STATE_KEY
from admin.report.takedown_send import send_notice
from admin.scan import scan_engine, scan_settings
from crawler.one_page import fetcher, page_text
from matcher.evidence.takedowns import figures, recheck_due
from matcher.pages import CrawledPage
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from matcher.worker.ingest import Ingest
from tests.servers.takedown_site import ChangingSite, chapter_html

DAYS = (1.0, 3.0, 7.0, 14.0)
POLICIES = (
    # (share taken down, day, how, share of those put back on day 5)
    (0.9, 0.5, "404", 0.0),
    (0.7, 2.0, "410", 0.2),
    (0.5, 5.0, "replace", 0.0),
    (0.3, 10.0, "404", 0.5),
    (0.0, 0.0, "404", 0.0),
)
"""The sites' truths, in turn: a site that complies at once, one in two days (and puts a
fifth back), one that replaces the text, a slow one that puts half back, one that ignores
the notice."""
RESTORE_DAY = 5.0


@dataclass
class Truth:
    """What one page's site does to it: down on ``down_day`` (None: never), how, and back on
    ``back_day`` (None: never)."""

    path: str
    down_day: float | None = None
    how: str = "404"
    back_day: float | None = None

    def state_at(self, day: float) -> str:
        if self.down_day is None or day < self.down_day:
            return "up"
        if self.back_day is not None and day >= self.back_day:
            return "back"
        return "down"

    def final(self) -> str:
        """The case state the rechecks should end in."""
        state = self.state_at(DAYS[-1])
        if state == "down":
            return "removed"
        seen_down = self.down_day is not None and any(
            self.down_day <= d < (self.back_day or math.inf) for d in DAYS
        )
        return "reopened" if state == "back" and seen_down else "up"

    def seen_removed_day(self) -> float | None:
        """The first recheck day that sees the page down (None: none does)."""
        for d in DAYS:
            if self.state_at(d) == "down":
                return d
        return None


@dataclass
class SiteRun:
    site: ChangingSite
    name: str
    texts: dict[str, str]
    truths: list[Truth] = field(default_factory=list)


def synthetic(count: int, seed: int) -> list[str]:
    from tests.sites.eval_corpus import synthetic_texts

    return synthetic_texts(count, seed=seed)


def corpus_texts(count: int) -> list[str]:
    from tests.sites.corpus import load_texts

    texts = [t for t in load_texts(math.inf) if len(t) >= 1500]
    return texts[:count]


def build(args: argparse.Namespace, texts: Sequence[str], ctx: Context) -> list[SiteRun]:
    rng = random.Random(args.seed)
    works = list(texts[: args.works])
    for n, text in enumerate(works):
        ctx.engine.add_work(text, title=f"作品{n}", source=f"w{n}.txt")
    unrelated = list(texts[args.works : args.works + 10]) or ["无关的公告。" * 200]
    runs = []
    queued: list[str] = []
    ingest = Ingest(ctx.engine.store, queued.append)
    for s in range(args.sites):
        site = ChangingSite(host=f"127.0.0.{s + 2}").start()
        name = f"pirate{s}"
        ctx.store.sites.save_site(
            SiteConfig.from_dict({"name": name, "start_urls": [site.url("/")]})
        )
        run = SiteRun(site, name, {})
        share, day, how, back = POLICIES[s % len(POLICIES)]
        for p in range(args.pages):
            path = f"/book/{p}.html"
            text = works[rng.randrange(len(works))]
            url = site.put(path, f"第{p}章", text)
            read = page_text(site.pages[path].body, "text/html; charset=gbk", url)
            ingest.page(CrawledPage(url=url, site=name, title=f"第{p}章", text=read))
            truth = Truth(path, how=how)
            if rng.random() < share:
                truth.down_day = day
                if rng.random() < back:
                    truth.back_day = max(RESTORE_DAY, day + 1)
            run.truths.append(truth)
            run.texts[path] = unrelated[p % len(unrelated)]
        runs.append(run)
    for page_id in queued:
        ctx.engine.process_stored_page(page_id)
    return runs


def apply(run: SiteRun, day: float, originals: dict[str, bytes]) -> None:
    """Make the site serve what its truth says at ``day``."""
    for truth in run.truths:
        state, path = truth.state_at(day), truth.path
        if state in ("up", "back"):
            run.site.pages[path].status = 200
            run.site.pages[path].body = originals[path]
        elif truth.how == "replace":
            run.site.pages[path].status = 200
            run.site.pages[path].body = chapter_html("公告", run.texts[path])
        else:
            run.site.pages[path].status = 404 if truth.how == "404" else 410


def review(ctx: Context) -> None:
    """What a rights holder does before sending notices: the rights holder and contact the
    notices name set, every match confirmed by a reviewer (a notice names only those)."""
    details = {"rights_holder": "星河出版社", "contact": "legal@rights.example"}
    ctx.store.state.set_state(DETAILS_STATE_KEY, details)
    for match_id in ctx.store.matches.match_ids(limit=None, status="new"):
        ctx.store.matches.set_status(match_id, "confirmed", "copy", "bench")


def one_run(args: argparse.Namespace, texts: Sequence[str]) -> dict[str, Any]:
    settings = scan_settings(None)
    ctx = Context(settings=settings, engine=scan_engine(settings, None))
    runs = build(args, texts, ctx)
    try:
        originals = {(r.name, p): page.body for r in runs for p, page in r.site.pages.items()}
        sent_at = datetime.now().astimezone()
        review(ctx)
        for run in runs:
            send_notice(
                ctx.store, settings, Selection.parse({}, site=run.name), email=False, by="bench",
                at=sent_at,
            )  # fmt: skip
        rechecks, seconds = 0, 0.0
        for day in DAYS:
            for run in runs:
                apply(run, day, {p: originals[(run.name, p)] for p in run.site.pages})
            at = sent_at + timedelta(days=day, minutes=1)
            started = time.perf_counter()
            done = recheck_due(ctx.engine.store, _fetch, ctx.engine.still_copies, at, limit=10**6)
            seconds += time.perf_counter() - started
            rechecks += done.checked
        for run in runs:  # every page up again, for the peer's GETs
            apply(run, 0.0, {p: originals[(run.name, p)] for p in run.site.pages})
        urls = [r.site.url(t.path) for r in runs for t in r.truths][:200]
        started = time.perf_counter()
        for url in urls:
            with urllib.request.urlopen(url, timeout=10) as answer:
                answer.read()
        peer_s = (time.perf_counter() - started) / len(urls)
        cases = {c["url"]: c for c in ctx.engine.store.takedowns.cases()}
        found = figures(cases.values(), ctx.engine.store.takedowns.notices(),
                        sent_at + timedelta(days=15), 7)  # fmt: skip
        by_site = {f.name: f for f in found["sites"]}
        sites = []
        right = total = 0
        for run in runs:
            measured = by_site[run.name]
            truth_removed = sum(t.state_at(DAYS[-1]) == "down" for t in run.truths)
            truth_days = [d for t in run.truths if (d := t.seen_removed_day()) is not None]
            for t in run.truths:
                total += 1
                right += cases[run.site.url(t.path)]["state"] == t.final()
            sites.append(
                {
                    "site": run.name,
                    "urls": measured.urls,
                    "removal_rate": measured.removal_rate,
                    "truth_removal_rate": truth_removed / len(run.truths),
                    "median_days": measured.median_days,
                    "truth_median_days": statistics.median(truth_days) if truth_days else None,
                    "reopened": measured.reopened,
                    "still_up_after_7_days": len(measured.escalate),
                }
            )
        return {
            "sites": sites,
            "state_accuracy": right / total,
            "rechecks": rechecks,
            "recheck_ms": seconds * 1000 / max(rechecks, 1),
            "peer_get_ms": peer_s * 1000,
        }
    finally:
        for run in runs:
            run.site.stop()


_fetch = fetcher(Settings())
"""A recheck's fetch as a deployment's (the noticed pages' own hosts reached)."""


def report(result: dict[str, Any]) -> str:
    lines = [
        f"takedowns: {result['rechecks']} rechecks of {sum(s['urls'] for s in result['sites'])}"
        f" URLs on {len(result['sites'])} sites (days {', '.join(f'{d:g}' for d in DAYS)})",
        "  site      URLs  removal rate (truth)   median days (truth)  reopened  up after 7 d",
    ]
    for s in result["sites"]:
        rate = "-" if s["removal_rate"] is None else f"{s['removal_rate']:.2f}"
        median = "-" if s["median_days"] is None else f"{s['median_days']:.1f}"
        truth = "-" if s["truth_median_days"] is None else f"{s['truth_median_days']:.1f}"
        lines.append(
            f"  {s['site']:<9} {s['urls']:>4}  {rate:>6} ({s['truth_removal_rate']:.2f})"
            f"        {median:>5} ({truth:>4})        {s['reopened']:>4}"
            f"  {s['still_up_after_7_days']:>6}"
        )
    lines.append(f"  final states as the truth: {result['state_accuracy']:.3f}")
    ratio = result["recheck_ms"] / result["peer_get_ms"]
    lines.append(
        f"  a recheck (fetch, extract, verify) {result['recheck_ms']:.2f} ms; peer: urllib GET"
        f" {result['peer_get_ms']:.2f} ms; ratio {ratio:.1f}x"
    )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.takedown_bench", description=__doc__)
    parser.add_argument("--sites", type=int, default=5, help="sites (default 5)")
    parser.add_argument(
        "--pages", type=int, default=None, help="pages a site (default 60; --quick 8)"
    )
    parser.add_argument("--works", type=int, default=None, help="works (default 20; --quick 4)")
    parser.add_argument("--seed", type=int, default=0, help="default 0")
    parser.add_argument("--quick", action="store_true", help="synthetic texts, small sizes")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    args.pages = args.pages or (8 if args.quick else 60)
    args.works = args.works or (4 if args.quick else 20)
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    count = args.works + 10
    texts = synthetic(count, args.seed) if args.quick else corpus_texts(count)
    result = one_run(args, texts)
    print(report(result))
    result["machine"] = {"python": platform.python_version(), "platform": platform.platform()}
    result["args"] = {k: v for k, v in vars(args).items() if k != "json"}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
