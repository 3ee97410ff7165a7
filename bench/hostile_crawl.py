"""The hostile benchmark's crawl cases: a link flood's memory at two deadlines, and the pages
a scan refuses, named.

- ``link-flood-60`` and ``link-flood-150``: the link flood of :mod:`tests.servers.hostile_site`
  (pages made on request, each linking 200,000 new ones, about 6 MB) scanned by
  ``fptrack scan`` with ``--deadline`` 60 and 150 whatever the bench's own ``--deadline``:
  the longer the crawl, the more pages it reads and queues, and its process tree (the scan
  and its reader processes) must stay under 1 GiB at either (``ok`` says so, with nothing
  matched and the links after each page's first 5,000 counted).
- ``refused-named``: a site (:func:`tests.sites.refused_site.refused_site`) offering a
  zip bomb (1 GiB of zeros in about 1 MB), a ZIP of 5,001 members, ZIPs nested three deep,
  a ZIP whose member fails its CRC-32, and a page its robots.txt forbids, beside a page
  copying a work: each refused one is named in the scan's JSON (``not_crawled_urls``) with
  its URL and its reason, the forbidden page is never asked for, and the copy is matched.

Each run is one ``fptrack scan`` subprocess (:func:`bench.measured_scan.run_scan`: wall time,
peak RSS of the scan and of its tree) against ``samples/works``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.servers.fixture_site import FixtureSite, page
from tests.servers.hostile_site import FLOOD_PREFIX, LINKS, link_flood
from tests.sites.refused_site import COPY_PAGE, FORBIDDEN_PAGE, REFUSED, refused_site

FLOOD_DEADLINES = (60, 150)
"""The deadlines the link flood is scanned with (``link-flood-60``, ``link-flood-150``)."""


def refused_named(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """One scan of :func:`refused_site`: ``ok`` when every refused page is named with its
    URL and reason, the forbidden page never asked for, the copy matched, and nothing is an
    error (exit 0)."""
    from bench.measured_scan import WORKS, run_scan

    work = sorted(WORKS.glob("*.txt"))[0]
    out = tmp / "refused-named.json"
    with FixtureSite(refused_site(work.read_text(encoding="utf-8"))) as server:
        base = server.url("/")
        run = run_scan(base, out, WORKS, args.max_pages, args.deadline)
        asked = server.requested()
    data = _read(out)
    named = data.get("not_crawled_urls", {}).get(base, {})
    said = {p["url"]: (reason, p["why"]) for reason, found in named.items() for p in found["urls"]}
    missing = [
        path
        for path, (reason, words) in REFUSED.items()
        if said.get(server.url(path), ("", ""))[0] != reason
        or words not in said.get(server.url(path), ("", ""))[1]
    ]
    matched = {(m["url"], m["work"]) for m in data.get("matches", [])}
    run["reason"] = "; ".join(
        f"{path} {said[server.url(path)][0]}: {said[server.url(path)][1]}"
        for path in REFUSED
        if server.url(path) in said
    ) + (f"; NOT NAMED: {', '.join(missing)}" if missing else "")
    run["ok"] = (
        run["exit"] == 0 and data.get("errors") == [] and not missing
        and FORBIDDEN_PAGE not in asked
        and matched == {(server.url(COPY_PAGE), work.name)}
    )  # fmt: skip
    return run


def flood(deadline: int) -> Callable[[argparse.Namespace, Path], dict[str, Any]]:
    """The run of ``link-flood-<deadline>``: one scan of the link flood with that
    ``--deadline``; ``ok`` when its tree stayed under the target, nothing matched and the
    links over the cap were counted."""

    def run_flood(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
        from bench.measured_scan import TARGET_RSS_MB, WORKS, run_scan

        out = tmp / f"link-flood-{deadline}.json"
        start = page(f'<html><body><a href="{FLOOD_PREFIX}0">flood</a></body></html>')
        robots = (200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n")
        generated = {FLOOD_PREFIX: link_flood()}
        with FixtureSite({"/": start, "/robots.txt": robots}, generated=generated) as server:
            base = server.url("/")
            run = run_scan(base, out, WORKS, args.max_pages, deadline)
        data = _read(out)
        skipped = data.get("not_crawled", {}).get(base, {})
        run["deadline_s"] = deadline
        run["reason"] = (
            f"tree {run['tree_rss_mb']:.0f} MB (target < {TARGET_RSS_MB}); not_crawled "
            f"{json.dumps(skipped)}"
        )
        run["ok"] = (
            run["tree_rss_mb"] < TARGET_RSS_MB and bool(data) and data.get("matches") == []
            and skipped.get("links_capped", 0) >= LINKS - 5_000
        )  # fmt: skip
        return run

    return run_flood


def _read(out: Path) -> dict[str, Any]:
    try:
        return json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
