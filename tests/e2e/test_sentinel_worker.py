"""Celery's broker and redbeat on Redis Sentinel (``FPTRACK_REDIS_URL`` and
``FPTRACK_BROKER_URL`` ``redis+sentinel://``): a real ``fptrack worker`` process turns pages
into matches before and after the primary is killed (SIGKILL) and the sentinels promote its
replica; the sending app, a real ``fptrack beat`` (its redbeat lock), the schedules and
``fptrack check`` go on against the new primary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from pymongo.database import Database
from redbeat.schedulers import ensure_conf

from bench.local_sentinel import LocalSentinel
from matcher.celery_app import make_app
from matcher.engine import Engine
from matcher.ingest import Ingest
from matcher.pages import CrawledPage
from matcher.redis_clients import connect_server
from matcher.schedules import DAILY_MATCH, Schedules
from matcher.settings import Settings
from tests.admin.cli_support import fptrack
from tests.support.e2e import CHROME, ROOT, sample
from tests.support.waits import eventually


@contextmanager
def service(env: dict[str, str], *argv: str) -> Iterator[subprocess.Popen]:
    """``fptrack ARGV`` (a worker, beat) running with ``env``."""
    process = subprocess.Popen(
        [sys.executable, "-m", "admin.cli", *argv, "--loglevel", "WARNING"],
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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


def test_a_worker_and_beat_s_schedules_go_on_after_a_failover(
    redis_sentinel: LocalSentinel, mongo_db: Database
) -> None:
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
    ingest = Ingest(engine.store, lambda page_id: app.send_task("fptrack.process_page", [page_id]))

    def copy(url: str, name: str) -> str:
        page = CrawledPage(url=url, site="pirate", title="", text=CHROME.format(sample(name)))
        return ingest.page(page).page_id

    def matched(page_id: str) -> set[str]:
        return {str(m["work_id"]) for m in engine.store.matches_for("page_id", page_id)}

    Schedules(app).ensure_daily(settings)
    redis = connect_server(settings.redis_target)
    beat_lock = ensure_conf(app).lock_key
    with (
        service(env, "worker", "--concurrency", "1") as worker,
        service(env, "beat") as beat,
    ):
        first = copy("http://pirate/1", "lighthouse.txt")
        eventually(lambda: matched(first) == {works["lighthouse.txt"]}, 90, "the first match")
        eventually(lambda: redis.pttl(beat_lock) > 0, 90, "beat to take redbeat's lock")
        redis_sentinel.replicate()

        old = redis_sentinel.kill_primary()
        new = redis_sentinel.wait_for_failover(old)
        second = copy("http://pirate/2", "river-town.txt")  # sent through the same app
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
