"""``fptrack worker`` and ``fptrack admin serve`` ride out a real Redis restart and a real
MongoDB restart (SecantusDB, its data on disk): each names the server in one line when it
stops answering and when it answers again, neither exits, and afterwards the worker runs
tasks and the admin serves, also from an admin worker process started during the outage.
``fptrack crawl NAME --wait`` waits a MongoDB restart out the same way.

Redis (the broker too) and SecantusDB are servers of the test's own, restarted by the test.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pymongo import MongoClient

from matcher.settings import Settings
from matcher.worker.celery_app import make_app
from tests.servers.fixture_site import FixtureSite, page
from tests.servers.net import free_port
from tests.servers.outage import (
    Service,
    answers,
    children,
    mongo_uri,
    own_mongodb,
    own_redis,
    redis_url,
)
from tests.servers.session import Server
from tests.support.cli import fptrack
from tests.support.e2e import sample
from tests.support.waits import eventually


def says(*services: Service, text: str) -> None:
    """Wait until each of ``services`` has written ``text``."""
    for service in services:
        eventually(lambda s=service: text in s.output(), 30, f"{text!r} from {service.log.stem}")


@dataclass
class Stores:
    """A Redis (broker too) and a SecantusDB of the test's own, started, and the services'
    environment naming them."""

    redis: Server
    mongodb: Server
    env: dict[str, str]

    @property
    def url(self) -> str:
        return redis_url(self.redis)

    @property
    def uri(self) -> str:
        return mongo_uri(self.mongodb)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Stores]:
    redis_server = own_redis(tmp_path / "redis", keeps_data=True)
    mongo_server = own_mongodb(tmp_path / "mongodb")
    redis_server.start()
    mongo_server.start()
    url, uri = redis_url(redis_server), mongo_uri(mongo_server)
    env = {
        **os.environ,
        "FPTRACK_REDIS_URL": url,
        "FPTRACK_BROKER_URL": url,
        "FPTRACK_MONGO_URI": uri,
        "FPTRACK_MONGO_DB": "outage",
    }
    try:
        yield Stores(redis_server, mongo_server, env)
    finally:
        redis_server.stop()
        mongo_server.stop()


def test_worker_and_admin_ride_out_redis_and_mongodb_restarts(
    stores: Stores, tmp_path: Path
) -> None:
    redis_server, mongo_server, url, uri = stores.redis, stores.mongodb, stores.url, stores.uri
    env = {**stores.env, "FPTRACK_ADMIN_SECRET": "a-test-secret-of-enough-length"}
    healthz = f"http://127.0.0.1:{free_port()}/healthz"
    bind = healthz.removeprefix("http://").removesuffix("/healthz")
    app = make_app(Settings.from_env(env))
    reports = MongoClient(uri)["outage"].reports
    worker = Service(["worker", "--concurrency", "1"], env, tmp_path / "worker.log")
    serve = ["admin", "serve", "--workers", "1", "--bind", bind]
    admin = Service(serve, env, tmp_path / "admin.log")

    def report(day: str) -> None:
        """The worker runs a task: the day's report is written in the store."""
        app.send_task("fptrack.daily_report", args=[day])
        found = lambda: reports.find_one({"day": day}) is not None  # noqa: E731
        eventually(found, 120, f"the worker to write the report of {day}")

    try:
        eventually(lambda: answers(healthz), 90, "the admin to serve")
        report("2026-01-01")

        for n, (server, name) in enumerate(((redis_server, "Redis"), (mongo_server, "MongoDB"))):
            where = f"{name} at {url if name == 'Redis' else uri}"
            server.stop()
            says(worker, admin, text=f"waiting for {where} (")
            if name == "MongoDB":  # an admin worker started now must wait, not fail to boot
                (booting,) = children(admin.process.pid)
                os.kill(booting, signal.SIGKILL)
            server.start()
            says(worker, admin, text=f"{where} answers again")
            assert worker.running, worker.output()
            assert admin.running, admin.output()
            eventually(lambda: answers(healthz), 60, "the admin to serve again")
            report(f"2026-01-0{n + 2}")
    finally:
        worker.stop()
        admin.stop()
    for service in (worker, admin):
        assert "Traceback" not in service.output(), service.output()


def test_crawl_wait_waits_out_a_mongodb_restart(stores: Stores, tmp_path: Path) -> None:
    """``fptrack crawl NAME --wait``, following a crawl no worker took yet, meets a MongoDB
    restart: it names the server in one line, waits, says when it answers again, and ends
    with the crawl's outcome once a worker ran it (it exited 1 while the crawl went on)."""
    env, mongo_server, uri = stores.env, stores.mongodb, stores.uri
    text = sample("lighthouse.txt")[:600]
    pages = {"/": page(f"<html><body><p>{text}</p></body></html>")}
    waiting = worker = None
    try:
        with FixtureSite(pages) as site:
            added = fptrack("sites", "add", site.url("/"), "--name", "later", env=env)
            assert added.status == 0, added.err
            wait = ["crawl", "later", "--wait", "--poll", "0.2"]
            waiting = Service(wait, env, tmp_path / "wait.log")
            says(waiting, text="crawl of later enqueued")
            mongo_server.stop()
            says(waiting, text=f"later: waiting for MongoDB at {uri} (")
            assert waiting.running
            mongo_server.start()
            says(waiting, text=f"later: MongoDB at {uri} answers again")
            worker = Service(["worker", "--concurrency", "1"], env, tmp_path / "worker.log")
            eventually(lambda: not waiting.running, 180, "the crawl to end")
    finally:
        for service in (waiting, worker):
            if service is not None:
                service.stop()
    assert waiting.process.returncode == 0, waiting.output()
    assert "later: crawl finished: 1 page(s)" in waiting.output()
    assert "Traceback" not in waiting.output()
