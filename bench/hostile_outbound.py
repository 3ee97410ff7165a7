"""The hostile benchmark's outbound and evidence cases: addresses inside the network that a
pirate page or a form hands fptrack, and evidence whose timestamp cannot be trusted.

- ``discover-internal``: a watched pirate site (on 127.0.0.1, as the operator chose) copies
  a work and announces ``本站新地址 http://127.0.0.3:PORT`` (and links ``/x`` there, which
  redirects to ``/``), where a second site copies it too. ``fptrack sites discover`` runs
  in a process of its own over the embedded (in-memory) store, with the defaults: the
  figures are the requests that reached the internal host (0: not its robots.txt, ``/`` or
  ``/x``) and the candidates stored (0); the reason is the command's ``refused`` line. The
  same run again with ``FPTRACK_OUTBOUND_ALLOW_PRIVATE=true`` is the control (the host is
  reached and kept: the case is live), its requests in ``control_requests``.
- ``webhook-zone``, ``webhook-escaped-host``: a webhook rule to
  ``http://[fe80::1%25lo]:PORT/ok`` or ``http://127.0.0.2%2f:PORT/ok`` saved through the
  admin's form (the admin of ``fptrack scan --serve``, :func:`bench.hostile_admin.
  served_admin`): answered 400 with a one-line reason, never 500, nothing heard on PORT.
- ``evidence-stranger-ca``: six pages archived and stamped by a real TSA
  (:mod:`tests.servers.local_tsa`), bundled as the admin's reports bundle them
  (:func:`admin.report.evidence.evidence_zip`), then re-stamped by a stranger TSA over the
  same lists with the stranger's CA as the bundle's ``tsa-ca.pem``: ``fptrack evidence
  verify`` (the console command, no ``FPTRACK_TSA_CA``) must not say "6 of 6": exit 3,
  "no trusted timestamp"; with the real TSA's CA, exit 1; with ``--trust-bundle-ca``,
  exit 0 and the note saying whose CA was trusted.
- ``evidence-no-tsa``: ``fptrack scan --warc`` of a copy, then ``fptrack evidence verify
  scan.warc.gz`` with no TSA and ``FPTRACK_MONGO_URI`` a closed port: exit 3, "no trusted
  timestamp", no server asked.

Each run returns ``ok``, ``exit`` (the command's status) or ``status`` (the admin's HTTP
status), ``wall_s`` and the memory of the process measured (``scan_rss_mb`` its peak,
``tree_rss_mb`` its tree's), and ``reason`` (the line a user reads).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from bench.hostile_admin import served_admin, shown, timed
from bench.proc_memory import PeakMemory
from tests.servers.fixture_site import FixtureSite
from tests.servers.hostile_site import copy_site
from tests.servers.net import free_port
from tests.servers.slow_server import slow_server

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "samples" / "works" / "lighthouse.txt"
INTERNAL_HOST = "127.0.0.3"
DISCOVER = """
import json, sys, uuid
from admin.cli import main
from admin.context import Context
from admin.scan import scan_engine
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
watched, work = sys.argv[1], sys.argv[2]
settings = Settings.from_env(redis_prefix="fptrack-bench-" + uuid.uuid4().hex[:12])
engine = scan_engine(settings, None)
engine.add_work(open(work, encoding="utf-8").read(), title="灯塔", source="lighthouse.txt")
engine.store.sites.save_site(SiteConfig.from_dict({"name": "watched", "start_urls": [watched]}))
status = main(["sites", "discover", "--sample", "5"], Context(settings=settings, engine=engine))
stored = [c["_id"] for c in engine.store.discovery.candidates()]
print(json.dumps({"status": status, "stored": stored}))
"""
WEBHOOKS = {
    "webhook-zone": "http://[fe80::1%25lo]:{port}/ok",
    "webhook-escaped-host": "http://127.0.0.2%2f:{port}/ok",
}
STRANGER_PAGES = 6
NO_TIMESTAMP_EXIT = 3
"""``fptrack evidence verify``'s exit status for "no trusted timestamp"
(:data:`admin.commands.evidence.NO_TRUSTED_TIMESTAMP`)."""


def command(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """``fptrack ARGV`` in a process of its own (``FPTRACK_*`` from ``env`` only): exit
    status, output, wall time and peak memory."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("FPTRACK_")}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *argv], cwd=ROOT, env={**base, **env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    with PeakMemory(proc.pid) as peak:
        out, err = proc.communicate(timeout=600)
    return {
        "exit": proc.returncode, "out": out, "err": err,
        "wall_s": time.perf_counter() - started,
        "scan_rss_mb": peak.own, "tree_rss_mb": max(peak.own, peak.tree),
    }  # fmt: skip


def fptrack(*args: str, env: dict[str, str]) -> dict[str, Any]:
    return command(["-m", "admin.cli", *args], env)


def _lines(text: str, *starts: str) -> str:
    """The lines of ``text`` starting with one of ``starts`` (leading spaces aside), joined
    by " | "."""
    lines = (line.strip() for line in text.splitlines())
    return " | ".join(line for line in lines if line.startswith(starts))


# --- discover-internal -----------------------------------------------------------------------
def watched_pages(text: str, internal: str) -> dict[str, Any]:
    """The watched pirate site: its home copies ``text`` and announces ``internal`` as its
    new address (in its text, and as a link to ``/x`` there)."""
    body = "".join(f"<p>{line}</p>" for line in text.splitlines() if line.strip())
    home = (
        "<html><head><title>盗版小说网</title></head><body>"
        f"<p>本站新地址：{internal} 请收藏</p><a href='{internal}/x'>新地址</a>"
        f"<div id='content'>{body}</div></body></html>"
    )
    return {"/": (200, {"Content-Type": "text/html; charset=utf-8"}, home.encode())}


def discover_once(watched: str, allow: bool) -> dict[str, Any]:
    env = {"FPTRACK_OUTBOUND_ALLOW_PRIVATE": "true" if allow else "false"}
    ran = command(["-c", DISCOVER, watched, str(WORK)], env)
    last = ran["out"].strip().splitlines()[-1] if ran["out"].strip() else "{}"
    try:
        ran.update(json.loads(last))
    except ValueError:
        ran.update(status=None, stored=None)
    return ran


def discover_internal() -> dict[str, Any]:
    """One run of ``discover-internal`` (see the module docstring)."""
    text = WORK.read_text(encoding="utf-8")
    inside = FixtureSite(copy_site(text), {"/x": (302, "/")}, host=INTERNAL_HOST)
    with inside:
        internal = inside.url("").rstrip("/")
        with FixtureSite(watched_pages(text, internal)) as watched:
            ran = discover_once(watched.url("/"), allow=False)
            reached = list(inside.requested())
            control = discover_once(watched.url("/"), allow=True)
            control_reached = len(inside.requested()) - len(reached)
    host = internal.removeprefix("http://")
    reason = _lines(ran["out"], "-     refused", "0 candidate") or ran["err"].strip()[-300:]
    ok = (
        ran["exit"] == 0 and ran["status"] == 0 and reached == [] and ran["stored"] == []
        and f"refused {host}" in reason
        and control["status"] == 0 and control_reached > 0 and control["stored"] == [host]
    )  # fmt: skip
    return {
        "ok": ok, "exit": ran["exit"], "wall_s": ran["wall_s"],
        "scan_rss_mb": ran["scan_rss_mb"], "tree_rss_mb": ran["tree_rss_mb"],
        "reason": reason, "requests_internal": len(reached),
        "candidates_stored": len(ran["stored"] or []) if ran["stored"] is not None else -1,
        "control_requests": control_reached,
    }  # fmt: skip


# --- webhook-zone, webhook-escaped-host ------------------------------------------------------
def odd_webhook(case: str) -> dict[str, Any]:
    """One run of ``webhook-zone`` or ``webhook-escaped-host``: the rule saved through the
    admin's form, with the defaults; PORT listens, and must hear nothing."""
    with served_admin({}) as admin, slow_server() as listener:
        url = WEBHOOKS[case].format(port=listener.port)
        browser = admin.browser()
        rule = {"name": "odd", "scope": "all", "mode": "immediate", "channel": "webhook",
                "url": url, "secret": "s3cret"}  # fmt: skip
        took, (status, page) = timed(lambda: browser.request("alerts/new", rule))
        _, listing = browser.request("alerts/")
        memory = {"scan_rss_mb": admin.memory.own,
                  "tree_rss_mb": max(admin.memory.own, admin.memory.tree)}  # fmt: skip
        heard = listener.paths
    reason = shown(page, "form-error")
    ok = status == 400 and bool(reason) and "\n" not in reason and not heard
    ok = ok and "/test" not in listing
    return {"ok": ok, "wall_s": took, "status": status, "reason": f"{status}: {reason}", **memory}


# --- evidence-stranger-ca --------------------------------------------------------------------
def stamped_bundle(tmp: Path, pages: int) -> tuple[bytes, Any, Any]:
    """``pages`` pages copying a work, archived, stamped by a real TSA two files a token,
    and bundled as the admin's reports do: ``(the bundle, its authority, a stranger)``."""
    from datetime import UTC, datetime, timedelta

    from admin.report.evidence import evidence_zip
    from admin.report.selection import Selection
    from admin.scan import scan_engine
    from matcher.evidence.archive import DirectoryArchive, Exchange
    from matcher.evidence.stamping import stamp_waiting
    from matcher.pages import CrawledPage
    from matcher.settings import Settings
    from matcher.worker.ingest import Ingest
    from tests.servers.local_tsa import TsaServer, make_authority

    authority = make_authority(tmp / "tsa")
    stranger = make_authority(tmp / "stranger", "a stranger TSA")
    engine = scan_engine(Settings(redis_prefix=f"fptrack-bench-{time.time_ns()}"), None)
    text = WORK.read_text(encoding="utf-8")
    engine.add_work(text, title="灯塔", source="lighthouse.txt")
    archive = DirectoryArchive(tmp / "archive")
    queued: list[str] = []
    ingest = Ingest(engine.store, queued.append, archive=archive, stamp=True)
    when = datetime(2026, 12, 1, tzinfo=UTC)
    for n in range(pages):
        url = f"http://pirate.example/book/{n}.html"
        html = f"<html><body><p>第{n}页</p><p>{text}</p></body></html>".encode()
        exchange = Exchange(url, 200, (("Content-Type", "text/html"),), html,
                            when + timedelta(minutes=n), reason="OK")  # fmt: skip
        ingest.page(CrawledPage(url=url, site="pirate", title="", text=text, exchange=exchange))
    for page_id in queued:
        engine.process_stored_page(page_id)
    with TsaServer(authority) as tsa:
        done = stamp_waiting(engine.store, tsa.tsa_url, 2)
    if done.error or done.stamped != pages:
        raise RuntimeError(f"hostile_bench: the evidence was not stamped: {done}")
    selection = Selection.parse({"since": "2000-01-01", "status": "new"})
    bundle = evidence_zip(engine.store, archive, selection,
                          ca_pem=authority.ca.read_bytes())  # fmt: skip
    return bundle, authority, stranger


def restamped(bundle: bytes, stranger: Any) -> bytes:
    """``bundle`` with every token replaced by the stranger TSA's over the same list, and
    the stranger's CA as its ``tsa-ca.pem``."""
    from matcher.evidence import timestamps
    from tests.servers.local_tsa import TsaServer

    source = zipfile.ZipFile(io.BytesIO(bundle))
    manifest = json.loads(source.read("manifest.json"))
    batches = {(e["timestamp"]["list"], e["timestamp"]["token"]) for e in manifest}
    with TsaServer(stranger) as tsa:
        tokens = {t: timestamps.ask(tsa.tsa_url, source.read(ls)).der for ls, t in batches}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename in tokens:
                data = tokens[info.filename]
            elif info.filename == "tsa-ca.pem":
                data = stranger.ca.read_bytes()
            target.writestr(info, data)
    return out.getvalue()


def evidence_stranger_ca() -> dict[str, Any]:
    """One run of ``evidence-stranger-ca`` (see the module docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        bundle, authority, stranger = stamped_bundle(tmp, STRANGER_PAGES)
        path = tmp / "restamped.zip"
        path.write_bytes(restamped(bundle, stranger))
        alone = fptrack("evidence", "verify", str(path), env={})
        real = fptrack("evidence", "verify", str(path), env={"FPTRACK_TSA_CA": str(authority.ca)})
        trusting = fptrack("evidence", "verify", str(path), "--trust-bundle-ca", env={})
    pages = STRANGER_PAGES
    verdict = _lines(alone["out"], f"0 of {pages}", "no trusted timestamp:")
    reason = f"exit {alone['exit']}: {verdict}; with the TSA's CA: exit {real['exit']}"
    reason += f"; --trust-bundle-ca: exit {trusting['exit']}, with a note"
    ok = (
        alone["exit"] == NO_TIMESTAMP_EXIT and f"0 of {pages} file(s) verified" in alone["out"]
        and f"no trusted timestamp: {pages} file(s) intact" in alone["out"]
        and real["exit"] == 1 and f"0 of {pages} file(s) verified" in real["out"]
        and trusting["exit"] == 0 and trusting["out"].count("by CN=a stranger TSA") == pages
        and "note: the tokens are checked against the CA" in trusting["out"]
    )  # fmt: skip
    return {"ok": ok, "exit": alone["exit"], "wall_s": alone["wall_s"], "reason": reason,
            "scan_rss_mb": alone["scan_rss_mb"], "tree_rss_mb": alone["tree_rss_mb"]}  # fmt: skip


# --- evidence-no-tsa -------------------------------------------------------------------------
def evidence_no_tsa() -> dict[str, Any]:
    """One run of ``evidence-no-tsa``: a scan's own archive verified with no TSA and no
    MongoDB (the one named is a closed port)."""
    text = WORK.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as folder, FixtureSite(copy_site(text)) as site:
        tmp = Path(folder)
        warc = tmp / "scan.warc.gz"
        scan = fptrack(
            "scan", "--works", str(WORK.parent), "--site", site.url("/"),
            "--json", str(tmp / "scan.json"), "--warc", str(warc), env={},
        )  # fmt: skip
        if scan["exit"] != 0 or not warc.exists():
            return {"ok": False, "exit": scan["exit"], "wall_s": scan["wall_s"],
                    "scan_rss_mb": scan["scan_rss_mb"], "tree_rss_mb": scan["tree_rss_mb"],
                    "reason": f"the scan failed: {scan['err'].strip()[-300:]}"}  # fmt: skip
        nowhere = {"FPTRACK_MONGO_URI": f"mongodb://127.0.0.1:{free_port()}"}
        ran = fptrack("evidence", "verify", str(warc), env=nowhere)
    said = _lines(ran["out"], "INTACT", "FAIL") + ran["err"].strip()
    reason = f"exit {ran['exit']}: " + said.replace(str(warc), "scan.warc.gz")
    ok = (
        ran["exit"] == NO_TIMESTAMP_EXIT and "INTACT " in ran["out"]
        and "no trusted timestamp: no Time-Stamp Authority is set up here" in ran["out"]
        and "MongoDB" not in ran["out"] + ran["err"]
    )  # fmt: skip
    return {"ok": ok, "exit": ran["exit"], "wall_s": ran["wall_s"], "reason": reason,
            "scan_rss_mb": ran["scan_rss_mb"], "tree_rss_mb": ran["tree_rss_mb"]}  # fmt: skip
