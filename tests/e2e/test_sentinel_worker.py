"""Celery's broker and redbeat on Redis Sentinel (``FPTRACK_REDIS_URL`` and
``FPTRACK_BROKER_URL`` ``redis+sentinel://``): a real ``fptrack worker`` process turns pages
into matches before and after the primary is killed (SIGKILL) and the sentinels promote its
replica; the sending app, a real ``fptrack beat`` (its redbeat lock), the schedules and
``fptrack check`` go on against the new primary. A worker whose task is running when the
primary dies (its message held, acknowledged late) rides the failover out too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from celery import Celery
from pymongo.database import Database
from redbeat.schedulers import ensure_conf

from matcher.index.redis_clients import connect_server
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.settings import Settings
from matcher.worker.celery_app import make_app
from matcher.worker.ingest import Ingest
from matcher.worker.schedules import DAILY_MATCH, Schedules
from tests.servers.local_sentinel import LocalSentinel
from tests.support.cli import fptrack
from tests.support.e2e import CHROME, ROOT, sample
from tests.support.waits import eventually

SUPPORT = Path(__file__).resolve().parents[1] / "support"  # the worker scripts


@contextmanager
def service(env: dict[str, str], *argv: str, log: Path | None = None) -> Iterator[subprocess.Popen]:
    """``fptrack ARGV`` (a worker, beat) running with ``env`` (its output in ``log``); ARGV
    starting with a script runs that script instead of ``fptrack``."""
    command = list(argv) if argv[0].endswith(".py") else ["-m", "admin.cli", *argv]
    out = log.open("wb") if log else subprocess.DEVNULL
    process = subprocess.Popen(
        [sys.executable, *command, "--loglevel", "WARNING"],
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdout=out,
        stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        if log:
            out.close()  # type: ignore[union-attr]


@dataclass
class OnSentinel:
    """Two works registered, and pages sent to the workers, on a Sentinel group."""

    env: dict[str, str]
    settings: Settings
    app: Celery
    engine: Engine
    works: dict[str, str]

    def copy(self, url: str, name: str) -> str:
        """Store a page copying the work ``name`` and send its task; its id."""
        ingest = Ingest(
            self.engine.store,
            lambda page_id: self.app.send_task("fptrack.process_page", [page_id]),
        )
        page = CrawledPage(url=url, site="pirate", title="", text=CHROME.format(sample(name)))
        return ingest.page(page).page_id

    def matched(self, page_id: str) -> set[str]:
        return {
            str(m["work_id"]) for m in self.engine.store.matches.matches_for("page_id", page_id)
        }


@pytest.fixture
def on_sentinel(redis_sentinel: LocalSentinel, mongo_db: Database) -> OnSentinel:
    env = {
        "FPTRACK_REDIS_URL": redis_sentinel.url(0),
        "FPTRACK_BROKER_URL": redis_sentinel.url(1),
        "FPTRACK_REDIS_PREFIX": "fptrack-test",
        "FPTRACK_MONGO_DB": mongo_db.name,
    }
    settings = Settings.from_env({**os.environ, **env})
    app = make_app(settings)
    assert app.conf.broker_url.startswith("sentinel://127.0.0.1:")
    engine = Engine.open(settings, mongo_client=mongo_db.client)
    works = {
        n: engine.add_work(sample(n), title=n, source=n)
        for n in ("lighthouse.txt", "river-town.txt")
    }
    return OnSentinel(env, settings, app, engine, works)


def test_a_worker_and_beat_s_schedules_go_on_after_a_failover(
    redis_sentinel: LocalSentinel, on_sentinel: OnSentinel
) -> None:
    env, settings, app = on_sentinel.env, on_sentinel.settings, on_sentinel.app
    works, matched = on_sentinel.works, on_sentinel.matched
    Schedules(app).ensure_daily(settings)
    redis = connect_server(settings.redis_target)
    beat_lock = ensure_conf(app).lock_key
    with (
        service(env, "worker", "--concurrency", "1") as worker,
        service(env, "beat") as beat,
    ):
        first = on_sentinel.copy("http://pirate/1", "lighthouse.txt")
        eventually(lambda: matched(first) == {works["lighthouse.txt"]}, 90, "the first match")
        eventually(lambda: redis.pttl(beat_lock) > 0, 90, "beat to take redbeat's lock")
        redis_sentinel.replicate()

        old = redis_sentinel.kill_primary()
        new = redis_sentinel.wait_for_failover(old)
        second = on_sentinel.copy("http://pirate/2", "river-town.txt")  # the same app sends it
        eventually(lambda: matched(second) == {works["river-town.txt"]}, 90, "the second match")
        assert DAILY_MATCH in {e["name"] for e in Schedules(app).entries()}
        low = [redis.pttl(beat_lock)]  # beat extends its lock at every tick: on the new primary

        def extended() -> bool:
            low.append(min(low[-1], redis.pttl(beat_lock)))
            return low[-1] > 0 and redis.pttl(beat_lock) > low[-1] + 1000

        eventually(extended, 30, "beat to extend redbeat's lock on the new primary")

        ran = fptrack("check", "--json", env=env)
        checks = {c["name"]: c for c in json.loads(ran.out)["checks"]}
        for name in ("redis", "broker", "workers", "beat", "indexes", "schedules"):
            assert checks[name]["ok"], checks[name]
        assert worker.poll() is None and beat.poll() is None
    assert redis_sentinel.node(new).dbsize() > 0


def test_a_worker_running_a_task_rides_out_a_failover(
    redis_sentinel: LocalSentinel, on_sentinel: OnSentinel, tmp_path: Path
) -> None:
    """The primary dies while one of the worker's two pool processes runs a task (its message
    held, acknowledged late) and the worker waits on the queue for a second one: kombu 5.7
    closed the lost connection with ``AttributeError: 'NoneType' object has no attribute
    'hostname'``, Celery called it unrecoverable and the worker stopped. Now the task ends,
    its match is recorded, and the worker takes the next page from the new primary."""
    works, matched = on_sentinel.works, on_sentinel.matched
    starts, log = tmp_path / "starts", tmp_path / "worker.log"
    slow = [str(SUPPORT / "slow_worker.py"), str(starts), "6", "worker", "--concurrency", "2"]
    with service(on_sentinel.env, *slow, log=log) as worker:
        first = on_sentinel.copy("http://pirate/1", "lighthouse.txt")
        eventually(lambda: starts.exists() and bool(starts.read_text()), 90, "the task to start")
        redis_sentinel.replicate()
        old = redis_sentinel.kill_primary()  # the task sleeps 6 s: it is running
        redis_sentinel.wait_for_failover(old)
        eventually(lambda: matched(first) == {works["lighthouse.txt"]}, 90, "the held task's match")
        second = on_sentinel.copy("http://pirate/2", "river-town.txt")
        eventually(lambda: matched(second) == {works["river-town.txt"]}, 90, "the next match")
        assert worker.poll() is None, log.read_text(errors="replace")[-3000:]
    assert "Unrecoverable error" not in log.read_text(errors="replace")
