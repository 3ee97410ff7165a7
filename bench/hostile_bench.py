"""Peak memory and wall time of ``fptrack scan`` on every case of the hostile site.

Issue 15. The hostile site (:mod:`tests.servers.hostile_site`, copying ``samples/works``) is served
on 127.0.0.1 by this process; for each case a site whose start page links only that case is
scanned by ``fptrack scan --works samples/works --site URL`` (the console command, in a
subprocess, as the README runs it; ``--max-pages 200``, ``--deadline 120``, which the
bench's own ``--max-pages`` and ``--deadline`` change), ``--runs`` times, and once more on
the whole site (case ``all``; the link flood, pages made on request, is served only in its
own case ``link-flood``: elsewhere it would take the page budget). Per run: the wall time,
the peak RSS of the scan process (its ``VmHWM``, read every 20 ms: ``ru_maxrss`` would count
the pages it shared with this process when forked), and the peak RSS of the scan's process
tree (the scan and its reader processes, ``VmRSS`` summed every 20 ms). Each run's JSON is
checked: a copy case must be matched with its work, any other case must match nothing.

Peers, same run: for each copy case whose page is one static body (decompressed when
gzipped), the page's extraction by
trafilatura alone (``trafilatura.extract`` with its defaults, the library fptrack uses for
main text) beside fptrack's :func:`crawler.reading.read_page`, each in a fresh subprocess with
a ``--peer-timeout`` (120 s) limit: wall time and peak RSS, and the ratio trafilatura /
fptrack.

Then case ``bad-works``: the bad-works corpus (:mod:`tests.sites.hostile_works`) scanned against
the sample site (``--no-works`` skips it). Medians over the runs, with [min-max]. Target:
every scan's tree under 1 GiB. ``--json OUT`` writes ``cases`` (per case: ``outcome``,
``ok``, ``wall_s``, ``deadline_s``, ``scan_rss_mb``, ``tree_rss_mb``, and for copies ``peer``),
``max_tree_rss_mb``, ``target_rss_mb`` and ``all_ok``. Defaults: 3 runs, every case.
``--quick``: 1 run, no peers, the cases ``nul``, ``links``, ``gzip-bomb``,
``huge-streamed`` and ``all`` and the bad works (``--cases`` picks others).

Then the cases of issue 23 (:data:`EXTRA`), each a fresh scan or a fresh admin per run, each
run checking its outcome (``ok``): three scans, ``start-404`` (``--site http://HOST/nosuch/``:
exit 1, the reason in ``errors``), ``robots-page`` (robots.txt forbids one page: counted under
``not_crawled`` ``robots``, never asked for) and ``near-twins`` (a page copying one of three
works a line apart: matched once, the other two named as a tie in ``tied``, no ``twins``,
``near`` in ``duplicates``); and the admin of ``fptrack scan --serve`` driven over HTTP
(:mod:`bench.hostile_admin`): ``slow-query`` and ``slow-webhook`` (a server sending its
headers one byte every ``--drip`` seconds, 2; ``FPTRACK_QUERY_DEADLINE`` and
``FPTRACK_ALERT_TIMEOUT`` set to ``--outbound-deadline``, 5 s, instead of their 20 s and 10 s:
given up within 10 % of it, while another browser's ``GET /login`` and ``GET /matches/`` are
answered within 1 s), ``webhook-loopback`` and ``webhook-link-local`` (a webhook rule to
127.0.0.1 or 169.254.169.254: refused with the reason, nothing sent) and the takedown
template bombs ``bomb-*`` (refused when saved, with the reason; the render child's own peak);
and the outbound and evidence cases (:mod:`bench.hostile_outbound`): ``discover-internal``
(a watched pirate page announcing an internal new address: no request reaches it, no
candidate stored), ``webhook-zone`` and ``webhook-escaped-host`` (an IPv6 zone or a
percent-escaped host in a webhook: 400 with a reason, never 500), ``evidence-stranger-ca``
(a bundle re-stamped by a stranger TSA with its CA inside: exit 3, "no trusted timestamp")
and ``evidence-no-tsa`` (a scan's WARC verified with no TSA and no MongoDB: exit 3).
Their rows carry ``reason`` (what the user is shown), ``exit`` (a command's exit status, or
the HTTP status of the admin's answer), and for the slow cases ``others_s`` (the slower of
the other browser's two requests), for the bombs ``child_mb``, for ``discover-internal``
``requests_internal``, ``candidates_stored`` and ``control_requests`` (the same run with
``FPTRACK_OUTBOUND_ALLOW_PRIVATE=true``: the host is reached, the case is live).
The cases of people's work
(:mod:`bench.hostile_review`): ``review-reregister`` (a work whose match was confirmed
removed and registered again on a one-machine deployment: ``confirmed``, the confirmed
matches before and after each run) and ``empty-work-scan`` (a scan whose only work is empty,
refused before its crawl: ``fetched``, the pages it fetched).
The takedown-notice cases (:mod:`bench.hostile_notices`, the admin of ``fptrack scan
--serve`` over a site with one confirmed and one unreviewed match): ``notice-placeholders``
(sent with the template's placeholders left: refused with the reason, 409, nothing
recorded) and ``notice-unreviewed`` (the confirmed URL only by default; both when the
unreviewed ones are chosen, a choice recorded): ``named`` (URLs matched, confirmed, named by
default and by choice).
Then the cases of ``fptrack admin serve`` itself (gunicorn, over a Redis and a SecantusDB of
each run's own, :mod:`bench.hostile_service`): ``login-10mb`` and ``form-parallel-190mb``
(anonymous bodies of 10 MB and 3 x 190 MB: 413, and ``rise_mb``, the largest rise of one
admin process's resident memory, at most 50 MB), ``slow-clients-40`` (another user's
``/login`` within 1 s while 40 clients send headers or bodies a byte every ``--drip``
seconds), ``store-down-page`` and ``metrics-store-down`` (SecantusDB stopped: pages 503 with
one line and no driver text; ``/metrics`` 200 with the store said down).
 The process cases
(:mod:`bench.hostile_processes`): ``worker-unrecoverable`` (a worker an error stops, under
the restart loop: its exit status, ``restarted_s``), ``store-disk-full`` (SecantusDB's disk
filled and freed: check's line, ``failed_for_good``, ``kept``, ``written``, ``heal_s``,
``matched_s``; root only, it mounts a tmpfs) and ``scan-redis-restart`` (the scan's exit
status, ``warnings``).
Then the cases of issue 37 about ``fptrack check`` (:mod:`bench.hostile_check`), each on
servers of its own: ``check-redis-sigstop``, ``check-mongo-sigstop``,
``check-broker-sigstop``, ``check-index-sigstop`` and ``schedules-redis-sigstop`` (one
server stopped with SIGSTOP: the command's wall time, target under 3 s, and the line naming
that server) and ``check-catching-up`` (pages a crawl stored while no worker ran: the
``catching-up`` count shown, ``count``, and the worker catching up).
 The crawl cases of the trust issue
(:mod:`bench.hostile_crawl`): ``link-flood-60`` and ``link-flood-150``, the link flood scanned
with those deadlines whatever ``--deadline`` says (its tree must stay under 1 GiB at both),
and ``refused-named`` (a zip bomb, 5,001 members, ZIPs nested 3 deep, a bad CRC-32 and a page
robots.txt forbids, each named in the scan's ``not_crawled_urls`` with its URL and reason).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench import (
    hostile_admin,
    hostile_check,
    hostile_crawl,
    hostile_notices,
    hostile_outbound,
    hostile_processes,
    hostile_review,
    hostile_service,
)
from bench.measured_scan import ROOT, TARGET_RSS_MB, WORKS, run_scan
from tests.servers.hostile_site import (
    ALLOWED_PAGE,
    COPY,
    COPY_PAGE,
    LINKS,
    ROBOTS_PAGE,
    Case,
    HostileSite,
    build,
    copy_site,
    editions,
    robots_page_site,
)
from tests.sites import hostile_works

QUICK_CASES = ("nul", "links", "gzip-bomb", "huge-streamed", "all")
WORKS_CASE = "bad-works"
PAGE_READER = """
import pickle, sys, time
from crawler.reading import ReadJob, read_page
body, url = pickle.load(sys.stdin.buffer)
started = time.perf_counter()
read_page(ReadJob(body, "text/html", url))
took = time.perf_counter() - started
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
print(took, int(hwm) / 1024)
"""
PEER_READER = """
import pickle, sys, time
import trafilatura
body, url = pickle.load(sys.stdin.buffer)
started = time.perf_counter()
trafilatura.extract(body, url=url)
took = time.perf_counter() - started
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
print(took, int(hwm) / 1024)
"""


def judge(case: Case | None, site: HostileSite, base: str, out: Path) -> bool:
    """Whether a scan's JSON holds exactly what the case (None: the whole site) calls for."""
    try:
        data = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    from crawler.spiders.site import canonical

    found = {(canonical(m["url"]), m["work"]) for m in data.get("matches", [])}
    cases = site.cases if case is None else [case]
    wanted = {(canonical(base + c.page_path), c.work) for c in cases if c.outcome == COPY}
    return wanted <= found and all(url in {u for u, _ in wanted} for url, _ in found)


def run_peer(script: str, body: bytes, url: str, timeout: float) -> dict[str, Any]:
    """Extraction of one page in a fresh subprocess: seconds and peak RSS, or a timeout."""
    import pickle

    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=pickle.dumps((body, url)),
            capture_output=True,
            timeout=timeout,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return {"seconds": None, "rss_mb": None, "timed_out": True}
    took, rss = done.stdout.decode().split()
    return {"seconds": float(took), "rss_mb": float(rss), "timed_out": False}


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from tests.servers.fixture_site import FixtureSite

    site = build(_sample_works())
    by_name = {c.name: c for c in site.cases}
    names = args.cases or [c.name for c in site.cases] + ["all", *EXTRA]
    unknown = [n for n in names if n != "all" and n not in by_name and n not in EXTRA]
    if unknown:
        raise SystemExit(f"hostile_bench: error: unknown case(s): {', '.join(unknown)}")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if name in EXTRA:
                results[name] = measure_extra(name, args, Path(tmp))
                continue
            case = by_name.get(name)
            pages = dict(site.pages)
            if case is not None:  # "/" links this case alone: the pages' home links too
                pages["/"] = (
                    200,
                    {"Content-Type": "text/html; charset=utf-8"},
                    f'<html><body><a href="{case.path}">{name}</a></body></html>'.encode(),
                )
            runs = []
            # the link flood only in its own case: elsewhere it would take the page budget
            generated = site.generated if case is not None else {}
            with FixtureSite(pages, site.redirects, generated=generated) as server:
                for n in range(args.runs):
                    out = Path(tmp) / f"{name}-{n}.json"
                    run = run_scan(server.url("/"), out, WORKS, args.max_pages, args.deadline)
                    run["ok"] = judge(case, site, server.url(""), out)
                    runs.append(run)
                base = server.url("")
            row: dict[str, Any] = {
                "outcome": "copies and counted cases" if case is None else case.outcome,
                "trick": "every case at once" if case is None else case.trick,
                "ok": all(r["ok"] for r in runs),
                "exit": sorted({r["exit"] for r in runs}),
                "wall_s": summary([r["wall_s"] for r in runs]),
                "deadline_s": args.deadline,
                "scan_rss_mb": summary([r["scan_rss_mb"] for r in runs]),
                "tree_rss_mb": summary([r["tree_rss_mb"] for r in runs]),
            }
            failed = [r for r in runs if not r["ok"]]
            if failed:
                row["stderr"] = failed[0]["stderr"]
            _, headers, body = site.pages.get(case.path, (0, {}, b"")) if case else (0, {}, b"")
            if args.peers and case and case.outcome == COPY and isinstance(body, bytes):
                if headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)  # as the crawler's middleware hands it over
                url = base + case.path
                ours = run_peer(PAGE_READER, body, url, args.peer_timeout)
                peer = run_peer(PEER_READER, body, url, args.peer_timeout)
                ratio = None
                if ours["seconds"] and peer["seconds"]:
                    ratio = peer["seconds"] / ours["seconds"]
                row["peer"] = {"fptrack": ours, "trafilatura": peer, "time_ratio": ratio}
            results[name] = row
        if args.works_corpus:
            results[WORKS_CASE] = works_corpus(args.runs, Path(tmp))
    worst = max(r["tree_rss_mb"]["max"] for r in results.values())
    return {
        "benchmark": "hostile_bench",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "runs": args.runs,
        "cases": results,
        "max_tree_rss_mb": worst,
        "target_rss_mb": TARGET_RSS_MB,
        "all_ok": all(r["ok"] for r in results.values()),
    }


def works_corpus(runs: int, tmp: Path) -> dict[str, Any]:
    """The scan of the bad-works corpus (:mod:`tests.sites.hostile_works`) against the sample site:
    every error case named, every work registered."""
    folder = tmp / "bad-works"
    cases = hostile_works.build(folder)
    try:
        measured = []
        for n in range(runs):
            out = tmp / f"works-{n}.json"
            run = run_scan(str(ROOT / "samples" / "site"), out, folder)
            data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
            errors = len([c for c in cases if c.outcome == hostile_works.ERROR])
            run["ok"] = len(data.get("errors", ())) == errors and data.get("works") == len(
                [c for c in cases if c.outcome == hostile_works.WORK]
            )
            measured.append(run)
    finally:
        hostile_works.remove(folder)
    return {
        "outcome": "works registered, the others named",
        "trick": "the bad-works corpus",
        "ok": all(r["ok"] for r in measured),
        "exit": sorted({r["exit"] for r in measured}),
        "wall_s": summary([r["wall_s"] for r in measured]),
        "scan_rss_mb": summary([r["scan_rss_mb"] for r in measured]),
        "tree_rss_mb": summary([r["tree_rss_mb"] for r in measured]),
    }


def _scanned(out: Path) -> dict[str, Any]:
    try:
        return json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _sample_works() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(WORKS.glob("*.txt"))}


def start_404(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """``fptrack scan --site http://HOST/nosuch/`` where only ``/`` and a copy are served:
    the crawl fails, exit 1, the 404 named in ``errors``."""
    from tests.servers.fixture_site import FixtureSite

    works = _sample_works()
    out = tmp / "start-404.json"
    with FixtureSite(copy_site(works[min(works)])) as server:
        url = server.url("/nosuch/")
        run = run_scan(url, out, WORKS, args.max_pages, args.deadline)
    data = _scanned(out)
    errors = data.get("errors", [])
    wanted = f"start URL {url}: answered 404 Not Found"
    run["reason"] = next((e for e in errors if wanted in e), "; ".join(errors))
    run["ok"] = run["exit"] == 1 and data.get("pages") == 0 and any(wanted in e for e in errors)
    return run


def robots_page(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """A site whose robots.txt forbids one page beside another: the page is never asked for,
    counted under ``not_crawled`` ``robots`` (and said on stderr), the other matched."""
    from tests.servers.fixture_site import FixtureSite

    works = _sample_works()
    forbidden, allowed = sorted(works)[:2]
    out = tmp / "robots-page.json"
    with FixtureSite(robots_page_site(works[forbidden], works[allowed])) as server:
        base = server.url("/")
        run = run_scan(base, out, WORKS, args.max_pages, args.deadline)
        asked = server.requested()
    data = _scanned(out)
    found = {(urlsplit(m["url"]).path, m["work"]) for m in data.get("matches", [])}
    counted = data.get("not_crawled", {})
    run["reason"] = f"not_crawled {json.dumps(counted.get(base, {}))}"
    run["ok"] = (
        run["exit"] == 0 and data.get("errors") == [] and counted == {base: {"robots": 1}}
        and ROBOTS_PAGE not in asked and found == {(ALLOWED_PAGE, allowed)}
        and f"{base}: not crawled: 1 robots" in run["log"]
    )  # fmt: skip
    return run


def near_twins(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Three works a line apart (:func:`tests.servers.hostile_site.editions`) and a page copying the
    text they share: one match, under one of them, naming the other two as a tie
    (``tied``; near twins are indexed as editions), no ``twins``; both ``near`` twins of the
    first in ``duplicates``."""
    from tests.servers.fixture_site import FixtureSite

    text = (WORKS / "lighthouse.txt").read_text(encoding="utf-8")
    folder = tmp / "near-twins"
    folder.mkdir(parents=True, exist_ok=True)
    names = ["a-lighthouse.txt", "b-lighthouse-end.txt", "c-lighthouse-first-edition.txt"]
    for name, body in zip(names, editions(text), strict=True):
        (folder / name).write_text(body, encoding="utf-8")
    out = tmp / "near-twins.json"
    with FixtureSite(copy_site(text)) as server:
        run = run_scan(server.url("/"), out, folder, args.max_pages, args.deadline)
    data = _scanned(out)
    matches = data.get("matches", [])
    near = sorted((d["work"], d["same_text_as"], d["near"]) for d in data.get("duplicates", []))
    said = [f"{urlsplit(m['url']).path}: {m['work']}, tied {', '.join(m['tied'])}" for m in matches]
    said.append(f"near duplicates of {names[0]}: {', '.join(w for w, _, n in near if n)}")
    run["reason"] = "; ".join(said)
    run["ok"] = (
        run["exit"] == 0 and data.get("errors") == [] and data.get("works") == 3
        and near == [(names[1], names[0], True), (names[2], names[0], True)]
        and len(matches) == 1 and all(urlsplit(m["url"]).path == COPY_PAGE for m in matches)
        and all(
            m["work"] in names and m["twins"] == []
            and sorted(m["tied"]) == sorted(set(names) - {m["work"]}) for m in matches
        )
    )  # fmt: skip
    return run


@dataclass(frozen=True)
class Extra:
    """A case of issue 23 beside the hostile site's: its trick (``{drip}`` and
    ``{deadline}`` filled in from the options), the outcome it must have, one run of it."""

    trick: str
    outcome: str
    run: Callable[[argparse.Namespace, Path], dict[str, Any]]


def _slow(case: str) -> Callable[[argparse.Namespace, Path], dict[str, Any]]:
    return lambda args, tmp: hostile_admin.slow(case, args.outbound_deadline, args.drip)


GAVE_UP = "given up at the deadline; other users answered"
EXTRA: dict[str, Extra] = {
    "start-404": Extra(
        "fptrack scan --site http://HOST/nosuch/ (the start URL answers 404)",
        "crawl failed: exit 1, reason in errors",
        start_404,
    ),
    "robots-page": Extra(
        f"robots.txt forbids one page (Disallow: {ROBOTS_PAGE})",
        "not_crawled robots: 1",
        robots_page,
    ),
    "near-twins": Extra(
        "3 works a line apart (完 appended, 第一版 prepended), a page copying one",
        "matched once, the others a named tie, near duplicates",
        near_twins,
    ),
    "slow-query": Extra(
        "Query by URL, headers one byte every {drip:g} s (FPTRACK_QUERY_DEADLINE={deadline:g})",
        GAVE_UP,
        _slow("slow-query"),
    ),
    "slow-webhook": Extra(
        "webhook test, status and headers one byte every {drip:g} s "
        "(FPTRACK_ALERT_TIMEOUT={deadline:g})",
        GAVE_UP,
        _slow("slow-webhook"),
    ),
    **{
        name: Extra(
            f"webhook rule to http://{address}/",
            "refused when saved, nothing sent",
            lambda args, tmp, name=name: hostile_admin.internal_webhook(name),
        )
        for name, address in hostile_admin.INTERNAL.items()
    },
    "discover-internal": Extra(
        "a watched pirate page announces 新地址 http://127.0.0.3:PORT (and links /x there)",
        "no request reaches it, no candidate stored",
        lambda args, tmp: hostile_outbound.discover_internal(),
    ),
    **{
        name: Extra(
            f"webhook rule to {url.format(port='PORT')}",
            "400 with a one-line reason, never 500, nothing sent",
            lambda args, tmp, name=name: hostile_outbound.odd_webhook(name),
        )
        for name, url in hostile_outbound.WEBHOOKS.items()
    },
    "evidence-stranger-ca": Extra(
        f"a bundle of {hostile_outbound.STRANGER_PAGES} files re-stamped by a stranger TSA,"
        " its CA inside; fptrack evidence verify",
        'exit 3 "no trusted timestamp" (1 with the real CA)',
        lambda args, tmp: hostile_outbound.evidence_stranger_ca(),
    ),
    "evidence-no-tsa": Extra(
        "fptrack evidence verify scan.warc.gz, no TSA, no MongoDB",
        'digests checked, exit 3 "no trusted timestamp"',
        lambda args, tmp: hostile_outbound.evidence_no_tsa(),
    ),
    "worker-unrecoverable": Extra(
        "the broker answers a running worker's queue read with an error (WRONGTYPE), under "
        "supervisord (deploy/local/supervisord.conf's policy)",
        "exit status 1 (a unit restarts it), answering again",
        hostile_processes.worker_unrecoverable,
    ),
    "store-disk-full": Extra(
        f"SecantusDB's {hostile_processes.DISK_MB} MB disk filled until WiredTiger panics, "
        "tasks sent, space freed",
        "named by check, no task failed for good, failure records kept and written, healed",
        hostile_processes.store_disk_full,
    ),
    "scan-redis-restart": Extra(
        f"fptrack scan of a {hostile_processes.SCAN_PAGES}-page site, its Redis restarted "
        "empty mid-crawl",
        "exit 0, the outage a warning, every page matched",
        hostile_processes.scan_redis_restart,
    ),
    **{
        f"link-flood-{seconds}": Extra(
            f"the link flood (pages of {LINKS:,} new links), --deadline {seconds} whatever the "
            "bench's",
            "tree under 1 GiB, nothing matched, links over the cap counted",
            hostile_crawl.flood(seconds),
        )
        for seconds in hostile_crawl.FLOOD_DEADLINES
    },
    "refused-named": Extra(
        "a zip bomb (1 GiB in 1 MB), 5,001 members, ZIPs nested 3 deep, a bad CRC-32, a page "
        "robots.txt forbids",
        "each named with its URL and reason in not_crawled_urls, exit 0",
        hostile_crawl.refused_named,
    ),
    **{
        name: Extra(
            f"takedown template: {bomb.trick}",
            "refused when saved, with the reason",
            lambda args, tmp, name=name: hostile_admin.template_bomb(name),
        )
        for name, bomb in hostile_admin.BOMBS.items()
    },
    "review-reregister": Extra(
        "works remove + works add of a work whose match was confirmed (a one-machine "
        "deployment: SecantusDB, redis-server, the sample site crawled)",
        "the same record confirmed after, note and reviewer kept",
        hostile_review.review_reregister,
    ),
    "empty-work-scan": Extra(
        "fptrack scan --works DIR whose only work is an empty file",
        "refused before the crawl: exit 1, the file named, 0 pages fetched",
        hostile_review.empty_work_scan,
    ),
    "notice-placeholders": Extra(
        "takedown notice sent (API, send form) with the template's placeholders left",
        "refused with the reason (409), nothing recorded",
        lambda args, tmp: hostile_notices.placeholders(tmp),
    ),
    "notice-unreviewed": Extra(
        "takedown notice of a site with 1 confirmed and 1 unreviewed match",
        "confirmed URL only by default; both by explicit choice, recorded",
        lambda args, tmp: hostile_notices.unreviewed(tmp),
    ),
    "login-10mb": Extra(
        "fptrack admin serve: anonymous URL-encoded POST /login of 10 MB",
        "413 at once, no admin process grows over 50 MB",
        lambda args, tmp: hostile_service.login_10mb(tmp),
    ),
    "form-parallel-190mb": Extra(
        "fptrack admin serve: 3 anonymous chunked POST /works/upload of 190 MB at once",
        "413 each, no admin process grows over 50 MB",
        lambda args, tmp: hostile_service.form_parallel_190mb(tmp),
    ),
    "slow-clients-40": Extra(
        "fptrack admin serve: 40 clients sending headers or bodies a byte every {drip:g} s",
        "another user's /login within 1 s",
        lambda args, tmp: hostile_service.slow_clients_40(tmp, args.drip),
    ),
    "store-down-page": Extra(
        "fptrack admin serve: SecantusDB stopped, a logged-in user's pages and form",
        "503, Retry-After, one line, no driver text",
        lambda args, tmp: hostile_service.store_down_page(tmp),
    ),
    "metrics-store-down": Extra(
        "fptrack admin serve: SecantusDB stopped, Prometheus scrapes with its token",
        'metrics 200, source_up{source="mongodb"} 0',
        lambda args, tmp: hostile_service.metrics_store_down(tmp),
    ),
    **{
        name: Extra(hostile_check.TRICKS[name], hostile_check.OUTCOMES[name], run)
        for name, run in hostile_check.RUNS.items()
    },
}


def measure_extra(name: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """The runs of one case of :data:`EXTRA`, summed up as a row."""
    extra = EXTRA[name]
    runs = []
    for n in range(args.runs):
        folder = tmp / f"{name}-{n}"
        folder.mkdir(parents=True, exist_ok=True)
        runs.append(extra.run(args, folder))
    row: dict[str, Any] = {
        "outcome": extra.outcome,
        "trick": extra.trick.format(drip=args.drip, deadline=args.outbound_deadline),
        "ok": all(r["ok"] for r in runs),
        "exit": sorted({r["exit"] if "exit" in r else r["status"] for r in runs}),
        "wall_s": summary([r["wall_s"] for r in runs]),
        "scan_rss_mb": summary([r["scan_rss_mb"] for r in runs]),
        "tree_rss_mb": summary([r["tree_rss_mb"] for r in runs]),
        "reason": runs[0]["reason"],
    }
    if "exit" in runs[0]:
        row["deadline_s"] = runs[0].get("deadline_s", args.deadline)
    if "others_s" in runs[0]:
        row["deadline_s"] = args.outbound_deadline
        row["others_s"] = summary([r["others_s"] for r in runs])
    if "named" in runs[0]:
        row["named"] = runs[0]["named"]
    if "count" in runs[0]:  # a count the command showed (check-catching-up)
        row["count"] = [r["count"] for r in runs]
    child = [r["child_mb"] for r in runs if r.get("child_mb") is not None]
    if child:
        row["child_mb"] = summary(child)
    for key in ("requests_internal", "candidates_stored", "control_requests"):
        if key in runs[0]:
            row[key] = max(r[key] for r in runs)  # the worst run's
    if "confirmed" in runs[0]:
        row["confirmed"] = [r["confirmed"] for r in runs]
    if "fetched" in runs[0]:
        row["fetched"] = summary([r["fetched"] for r in runs])
    if "rise_mb" in runs[0]:
        row["rise_mb"] = summary([r["rise_mb"] for r in runs])
    for key in hostile_processes.FIGURES:
        values = [r[key] for r in runs if r.get(key) is not None]
        if values:
            row[key] = summary(values)
    for key in hostile_processes.VERDICTS:
        if key in runs[0]:
            row[key] = [r[key] for r in runs]
    failed = [r for r in runs if not r["ok"]]
    if failed:
        row["reason"] = failed[0]["reason"]
        if "stderr" in failed[0]:
            row["stderr"] = failed[0]["stderr"]
    return row


def report(result: dict[str, Any]) -> str:
    lines = [
        f"hostile input: fptrack scan (or the admin) per case, medians of {result['runs']} "
        "run(s) [min-max]",
        f"{'case':<22}{'ok':<4}{'wall s':>18}{'scan MB':>18}{'tree MB':>18}  peer, or reason",
    ]

    def cell(s: dict[str, float], fmt: str) -> str:
        return f"{s['median']:{fmt}} [{s['min']:{fmt}}-{s['max']:{fmt}}]"

    for name, row in result["cases"].items():
        peer = row.get("peer")
        note = row.get("reason", "")
        if "others_s" in row:
            note = f"others {cell(row['others_s'], '.3f')} s; {note}"
        if "child_mb" in row:
            note = f"child {cell(row['child_mb'], '.0f')} MB; {note}"
        if "requests_internal" in row:
            note = (
                f"internal requests {row['requests_internal']}, candidates stored "
                f"{row['candidates_stored']} (allowed: {row['control_requests']} requests);"
                f" {note}"
            )
        if "fetched" in row:
            note = f"pages fetched {cell(row['fetched'], '.0f')}; {note}"
        if "named" in row:
            named = ", ".join(f"{k} {v}" for k, v in row["named"].items())
            note = f"URLs: {named}; {note}"
        if "rise_mb" in row:
            note = f"rise {cell(row['rise_mb'], '.0f')} MB; {note}"
        figures = [
            f"{key} {cell(row[key], '.1f' if key.endswith('_s') else '.0f')}"
            for key in hostile_processes.FIGURES
            if key in row
        ]
        if figures:
            note = f"{', '.join(figures)}; {note}"
        if peer:
            theirs = peer["trafilatura"]
            ours = peer["fptrack"]
            their_s = "timeout" if theirs["timed_out"] else f"{theirs['seconds']:.2f} s"
            note = f"read {ours['seconds']:.2f} s vs trafilatura {their_s}"
            if peer["time_ratio"]:
                note += f" (x{peer['time_ratio']:.2f})"
        wall = cell(row["wall_s"], ".2f" if row["wall_s"]["max"] < 1 else ".1f")
        lines.append(
            f"{name:<22}{'yes' if row['ok'] else 'NO':<4}{wall:>18}"
            f"{cell(row['scan_rss_mb'], '.0f'):>18}{cell(row['tree_rss_mb'], '.0f'):>18}  {note}"
        )
    lines.append(
        f"largest scan tree: {result['max_tree_rss_mb']:.0f} MB "
        f"(target < {result['target_rss_mb']} MB); every case holds: {result['all_ok']}"
    )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.hostile_bench",
        description="Peak RSS and wall time of fptrack scan (and of the admin, for the "
        "outbound and template cases) on each hostile case.",
    )
    p.add_argument("--runs", type=int, default=None, help="runs per case (default 3; quick 1)")
    p.add_argument(
        "--cases", type=lambda s: s.split(","), default=None,
        help="comma-separated case names, 'all' for the whole site, and the cases of issue "
        f"23: {','.join(EXTRA)} (default: every case, all and those; quick: "
        f"{','.join(QUICK_CASES)})",
    )  # fmt: skip
    p.add_argument(
        "--peer-timeout", type=float, default=120.0, help="seconds (default %(default)s)"
    )
    p.add_argument("--no-peers", dest="peers", action="store_false", help="skip the peers")
    p.add_argument(
        "--no-works",
        dest="works_corpus",
        action="store_false",
        help="skip the scan of the bad-works corpus",
    )
    p.add_argument(
        "--max-pages", type=int, default=200, help="the scans' --max-pages (default %(default)s)"
    )
    p.add_argument(
        "--deadline", type=int, default=120, help="the scans' --deadline (default %(default)s)"
    )
    p.add_argument(
        "--outbound-deadline",
        type=float,
        default=5.0,
        help="FPTRACK_QUERY_DEADLINE and FPTRACK_ALERT_TIMEOUT of the admin in the slow "
        "cases, seconds (default %(default)s; fptrack's defaults: 20 and 10)",
    )
    p.add_argument(
        "--drip",
        type=float,
        default=2.0,
        help="seconds between two bytes of the slow servers (default %(default)s)",
    )
    p.add_argument("--quick", action="store_true", help="1 run, 5 cases, no peers")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="default: none")
    args = p.parse_args(argv)
    if args.quick:
        args.runs = args.runs or 1
        args.cases = args.cases or list(QUICK_CASES)
        args.peers = False
    args.runs = args.runs or 3
    if args.runs < 1:
        p.error("--runs must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    result = measure(args)
    print(report(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
