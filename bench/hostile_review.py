"""The hostile benchmark's cases of people's work (the issue "Trust: review work never
lost"): a review must survive its work's removal and registration again, and a scan must
refuse works it cannot use before it fetches a page.

- ``review-reregister``: a deployment of its own on one machine (``redis-server`` and
  SecantusDB in memory on free ports of 127.0.0.1), driven with the ``fptrack`` console
  command in subprocesses as the README's quick start runs it: ``works add samples/works``,
  ``sites add`` and ``crawl --inline`` of the sample site (served here), a reviewer confirms
  the copy of ``chef-diary`` (with a note, as the admin's review form does), then ``works
  remove chef-diary`` and ``works add samples/works``. Figures: the confirmed matches before
  and after (``confirmed``), the wall time and peak memory of the remove and of the
  registration again, and whether ``fptrack check`` counts what ``matches list`` lists. It
  holds when the same record is confirmed after, with its note and reviewer.
- ``empty-work-scan``: ``fptrack scan`` of a works folder holding one empty file, against a
  site served here that records every request. Figures: the pages fetched (``fetched``, 0)
  and the wall time; it holds when the scan exits 1 with one error line naming the file.

Each run returns the row fields of :func:`bench.hostile_bench.measure_extra`: ``ok``,
``exit``, ``wall_s``, ``scan_rss_mb``, ``tree_rss_mb``, ``reason``, and its figure.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bench.proc_memory import PeakMemory
from tests.servers.net import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[1]
WORKS = ROOT / "samples" / "works"
SITE = ROOT / "samples" / "site"
REVIEWED = "chef-diary"
NOTE = "第一章整章照抄"
START_TIMEOUT_S = 60.0


def fptrack(
    env: Mapping[str, str], *args: str, cwd: Path = ROOT
) -> tuple[int, str, str, float, PeakMemory]:
    """``fptrack ARGS`` in a process of its own (the console script's entry point): exit
    status, stdout, stderr, wall time and its peak memory."""
    command = [sys.executable, "-c", "import sys; from admin.cli import main; sys.exit(main())"]
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*command, *args], cwd=cwd, env=dict(env), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    with PeakMemory(proc.pid) as peak:
        out, err = proc.communicate()
    return proc.returncode, out, err, time.perf_counter() - started, peak


@contextlib.contextmanager
def one_machine(logs: Path) -> Iterator[dict[str, str]]:
    """``redis-server`` (nothing on disk) and SecantusDB (in memory) on free ports of
    127.0.0.1, started here and stopped after; yields the ``FPTRACK_*`` environment that
    names them."""
    from bench.pipeline_support import Child

    redis_port = free_port()
    redis_server = subprocess.Popen(
        [shutil.which("redis-server") or "/usr/bin/redis-server", "--port", str(redis_port),
         "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    mongo = None
    try:
        if not wait_for_port("127.0.0.1", redis_port, START_TIMEOUT_S, process=redis_server):
            raise SystemExit(f"redis-server did not listen within {START_TIMEOUT_S:g} s")
        mongo = Child("mongodb", ["mongo-server"], logs / "mongodb.log")
        url = f"redis://127.0.0.1:{redis_port}/0"
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "FPTRACK_MONGO_URI": mongo.wait_ready(START_TIMEOUT_S),
            "FPTRACK_MONGO_DB": "fptrack_hostile_review",
            "FPTRACK_REDIS_URL": url,
            "FPTRACK_BROKER_URL": f"redis://127.0.0.1:{redis_port}/1",
        }
        env.pop("FPTRACK_INDEX_REDIS_URL", None)
        yield env
    finally:
        if mongo is not None:
            mongo.stop()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(redis_server.pid, signal.SIGTERM)
        redis_server.wait(30)


def _confirm(env: Mapping[str, str], match_id: str) -> None:
    """A reviewer confirms the match ``match_id`` with a note (what the admin's review form
    and the API's ``PUT /matches/{id}/status`` do: the store's ``set_status``)."""
    from matcher.store import Store

    store = Store.connect(env["FPTRACK_MONGO_URI"], env["FPTRACK_MONGO_DB"])
    try:
        if not store.matches.set_status(match_id, "confirmed", NOTE, "alice"):
            raise SystemExit(f"hostile_review: no match {match_id} to confirm")
    finally:
        store.close()


def _listed(env: Mapping[str, str], *args: str) -> list[dict[str, Any]]:
    status, out, err, _, _ = fptrack(env, "matches", "list", "--json", "--limit", "1000", *args)
    if status != 0:
        raise SystemExit(f"hostile_review: fptrack matches list failed: {err.strip()}")
    return json.loads(out)


def _checked(env: Mapping[str, str]) -> int | None:
    """The active matches ``fptrack check mongodb`` counts (None: it said none)."""
    _, out, _, _, _ = fptrack(env, "check", "mongodb")
    found = re.search(r", (\d+) active matches", out)
    return int(found.group(1)) if found else None


def review_reregister(args: Any, tmp: Path) -> dict[str, Any]:
    """Case ``review-reregister`` (see the module docstring)."""
    from admin.scan import serve_directory

    works = tmp / "works"
    shutil.copytree(WORKS, works)
    with one_machine(tmp) as env, serve_directory(SITE) as base:
        steps = [
            ("works", "add", str(works)),
            ("sites", "add", base, "--name", "sample", "--schedule", "never"),
            ("crawl", "sample", "--inline"),
        ]
        for step in steps:
            status, _, err, _, _ = fptrack(env, *step, cwd=tmp)
            if status != 0:
                raise SystemExit(f"hostile_review: fptrack {' '.join(step)}: {err.strip()}")
        [copy] = [m for m in _listed(env) if m["work"] == REVIEWED]
        _confirm(env, copy["id"])
        before = _listed(env, "--status", "confirmed")
        removed = fptrack(env, "works", "remove", REVIEWED, cwd=tmp)
        again = fptrack(env, "works", "add", str(works), cwd=tmp)
        after = _listed(env, "--status", "confirmed")
        active, counted = len(_listed(env)), _checked(env)
    kept = [
        m for m in after if (m["id"], m["note"], m["reviewed_by"]) == (copy["id"], NOTE, "alice")
    ]
    reason = (
        f"confirmed {len(before)} before, {len(after)} after "
        f"({'the same record, note and reviewer' if kept else 'review LOST'}); "
        f"check {counted} active = matches list {active}"
    )
    return {
        "ok": len(before) == len(after) == len(kept) == 1 and counted == active
        and removed[0] == 0 and again[0] == 0,
        "exit": again[0],
        "wall_s": removed[3] + again[3],
        "scan_rss_mb": max(removed[4].own, again[4].own),
        "tree_rss_mb": max(removed[4].own, removed[4].tree, again[4].own, again[4].tree),
        "confirmed": {"before": len(before), "after": len(after)},
        "reason": reason,
        "stderr": again[2].strip().splitlines()[-3:],
    }  # fmt: skip


def empty_work_scan(args: Any, tmp: Path) -> dict[str, Any]:
    """Case ``empty-work-scan`` (see the module docstring)."""
    from bench.measured_scan import run_scan
    from tests.servers.fixture_site import FixtureSite, page

    folder = tmp / "works"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "empty.txt").write_bytes(b"")
    out = tmp / "empty-work.json"
    with FixtureSite({"/": page("<html><body><p>一页正文</p></body></html>")}) as site:
        run = run_scan(site.url("/"), out, folder, args.max_pages, args.deadline)
        fetched = site.requested()
    errors = [line for line in run["log"].splitlines() if ": error: " in line]
    named = len(errors) == 1 and f"{folder}/empty.txt" in errors[0]
    run["fetched"] = len(fetched)
    run["reason"] = errors[0] if errors else "no error line"
    run["ok"] = run["exit"] == 1 and not fetched and named and "Traceback" not in run["log"]
    return run
