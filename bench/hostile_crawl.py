"""The hostile benchmark's crawl cases: a link flood's memory at two deadlines, and the pages
a scan refuses, named.

- ``link-flood-60`` and ``link-flood-150``: the link flood of :mod:`bench.hostile_site`
  (pages made on request, each linking 200,000 new ones, about 6 MB) scanned by
  ``fptrack scan`` with ``--deadline`` 60 and 150 whatever the bench's own ``--deadline``:
  the longer the crawl, the more pages it reads and queues, and its process tree (the scan
  and its reader processes) must stay under 1 GiB at either (``ok`` says so, with nothing
  matched and the links after each page's first 5,000 counted).
- ``refused-named``: a site (:func:`refused_site`) offering a zip bomb (1 GiB of zeros in
  about 1 MB), a ZIP of 5,001 members, ZIPs nested three deep, a ZIP whose member fails
  its CRC-32, and a page its robots.txt forbids, beside a page copying a work: each refused
  one is named in the scan's JSON (``not_crawled_urls``) with its URL and its reason, the
  forbidden page is never asked for, and the copy is matched.

Each run is one ``fptrack scan`` subprocess (:func:`bench.measured_scan.run_scan`: wall time,
peak RSS of the scan and of its tree) against ``samples/works``.
"""

from __future__ import annotations

import argparse
import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.fixture_site import FixtureSite, Resource, page
from bench.hostile_site import FLOOD_PREFIX, LINKS, link_flood

FLOOD_DEADLINES = (60, 150)
"""The deadlines the link flood is scanned with (``link-flood-60``, ``link-flood-150``)."""
BOMB_BYTES = 1 << 30
COPY_PAGE = "/copy.html"
FORBIDDEN_PAGE = "/ev/secret.html"
REFUSED = {
    "/down/bomb.zip": ("download_refused", "a zip bomb"),
    "/down/members.zip": ("download_refused", "more than 5,000 members"),
    "/down/nested.zip": ("download_refused", "nested more than 2 deep"),
    "/down/crc.zip": ("download_refused", "Bad CRC-32"),
    FORBIDDEN_PAGE: ("robots", "robots.txt forbids"),
}
"""Path -> the reason it is not crawled for, and words its why must hold."""


def zip_of(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A ZIP archive of ``files`` (name -> data), made by :mod:`zipfile`."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def zip_bomb(size: int = BOMB_BYTES) -> bytes:
    """A ZIP of one text member of ``size`` zero bytes (deflated: about 1,000 to 1)."""
    out = io.BytesIO()
    block = bytes(1 << 20)
    with (
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("bomb.txt", "w", force_zip64=True) as member,
    ):
        for _ in range(size // len(block)):
            member.write(block)
    return out.getvalue()


def bad_crc_zip(text: str) -> bytes:
    """A ZIP of one stored text member with a byte of its data changed: its CRC-32 fails."""
    name = "1.txt"
    body = bytearray(zip_of({name: text.encode()}, zipfile.ZIP_STORED))
    at = 30 + len(name) + 10  # in the member's data, after its local header
    body[at] ^= 0xFF
    return bytes(body)


def refused_site(text: str, bomb_bytes: int = BOMB_BYTES) -> dict[str, Resource]:
    """The site of ``refused-named``: ``/`` links a copy of ``text`` and every path of
    :data:`REFUSED` (the zip bomb unpacking to ``bomb_bytes``); robots.txt forbids
    :data:`FORBIDDEN_PAGE` (a copy too)."""
    zipped = "application/zip"
    chapter = "".join(f"<p>{line}</p>" for line in text.splitlines() if line.strip())
    links = "".join(f'<a href="{path}">{path}</a> ' for path in [COPY_PAGE, *REFUSED])
    nested = zip_of({"a.zip": zip_of({"b.zip": zip_of({"c.txt": text.encode()})})})
    return {
        "/robots.txt": (
            200,
            {"Content-Type": "text/plain"},
            f"User-agent: *\nDisallow: {FORBIDDEN_PAGE}\n".encode(),
        ),
        "/": page(f"<html><body><h1>全本下载</h1>{links}</body></html>"),
        COPY_PAGE: page(f"<html><body><h1>第一章</h1><div>{chapter}</div></body></html>"),
        FORBIDDEN_PAGE: page(f"<html><body><div>{chapter}</div></body></html>"),
        "/down/bomb.zip": (200, {"Content-Type": zipped}, zip_bomb(bomb_bytes)),
        "/down/members.zip": (
            200,
            {"Content-Type": zipped},
            zip_of({f"{n}.txt": b"x" for n in range(5_001)}),
        ),
        "/down/nested.zip": (200, {"Content-Type": zipped}, nested),
        "/down/crc.zip": (200, {"Content-Type": zipped}, bad_crc_zip(text)),
    }


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
