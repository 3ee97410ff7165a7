"""``fptrack check`` names the server that failed, and reads each thing where it lives: beat's
lock in the Redis of ``FPTRACK_REDIS_URL`` even when the indexes are on a Redis Cluster
(it used to read it through the index client, and always failed "beat" on a cluster); a
subset of checks runs with the ones it needs; the workers' ping ends once every worker bound
to Celery's broadcast exchange answered. With any one server hung (stopped with SIGSTOP: it
accepts connections and never answers), ``check`` and ``schedules`` answer in seconds and
name only that server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from pymongo.database import Database

from admin.context import Context
from admin.health import BROKER, INDEX_REDIS, MONGODB, REDIS, ping_workers
from matcher.index.redis_clients import SOCKET_TIMEOUT_S
from tests.admin.test_cli_process import check_lines
from tests.servers.local_cluster import LocalCluster
from tests.servers.net import free_port
from tests.servers.outage import mongo_uri, own_mongodb, own_redis, redis_url
from tests.support.cli import DEAD_REDIS, ROOT, Ran, fptrack
from tests.support.waits import eventually


def test_beat_on_standalone_redis_is_found_with_the_indexes_on_a_cluster(
    mongo_db: Database, redis_client: redis.Redis, redis_cluster: LocalCluster
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FPTRACK_INDEX_REDIS_URL": redis_cluster.url}
    beat = subprocess.Popen(
        [sys.executable, "-m", "admin.cli", "beat", "--loglevel", "WARNING"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        eventually(lambda: fptrack("check", "beat", env=env).status == 0, 60, "beat's lock")
        ran = fptrack("check", "beat", "schedules", env=env)
        lines = check_lines(ran.out)
        assert list(lines) == ["mongodb", "redis", "beat", "schedules"]  # with what they need
        assert ran.status == 0, ran.out
        assert f"indexes at {redis_cluster.url}" in lines["redis"]
    finally:
        os.killpg(beat.pid, signal.SIGTERM)
        beat.wait(30)


def test_an_index_cluster_that_does_not_answer_is_named(
    mongo_db: Database, redis_client: redis.Redis
) -> None:
    cluster = f"redis+cluster://127.0.0.1:{free_port()}"
    ran = fptrack("check", "redis", "beat", env={"FPTRACK_INDEX_REDIS_URL": cluster})
    lines = check_lines(ran.out)
    assert lines["redis"].startswith("FAIL")
    assert f"the index Redis unreachable at {cluster}" in lines["redis"]
    assert "FPTRACK_INDEX_REDIS_URL" in lines["redis"]
    assert os.environ["FPTRACK_REDIS_URL"] not in ran.out  # the standalone is not blamed


def test_a_standalone_redis_that_does_not_answer_is_named(
    mongo_db: Database, redis_client: redis.Redis
) -> None:
    index = os.environ["FPTRACK_REDIS_URL"]  # the indexes on a server that answers
    env = {"FPTRACK_REDIS_URL": DEAD_REDIS, "FPTRACK_INDEX_REDIS_URL": index}
    ran = fptrack("check", env=env)
    lines = check_lines(ran.out)
    assert lines["redis"].startswith("FAIL")
    assert f"Redis unreachable at {DEAD_REDIS} (connection refused)" in lines["redis"]
    assert lines["beat"].endswith("not checked: Redis down")
    assert lines["broker"].startswith("ok")  # FPTRACK_BROKER_URL is another database
    assert index not in ran.out


HUNG: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # the workers' ping goes through the broker, which answers: checked
    REDIS: ("FPTRACK_REDIS_URL", "redis", ("beat", "indexes", "schedules")),
    INDEX_REDIS: ("FPTRACK_INDEX_REDIS_URL", "redis", ("indexes",)),
    BROKER: ("FPTRACK_BROKER_URL", "broker", ("workers",)),
    MONGODB: ("FPTRACK_MONGO_URI", "mongodb", ("indexes", "schedules", "crawls")),
}
"""Each server stopped in turn: the variable pointed at it (the others at the test
servers, which answer), the check that names it, and the checks that read it."""
ANSWERED_WITHIN_S = SOCKET_TIMEOUT_S
"""A bound on ``fptrack check``'s whole process (start-up included, on a loaded machine):
below one command's socket timeout, so a probe that waited for a client's own timeout fails
the test (each ``check`` took 43 to 82 s, and ``schedules`` 42 s, before the probes were
bounded). ``bench/hostile_check.py`` measures it against the target, 3 s."""


@pytest.mark.parametrize("role", list(HUNG))
def test_a_hung_server_is_named_in_seconds(
    role: str, mongo_db: Database, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """One server stopped with SIGSTOP (it accepts connections and never answers): ``check``
    answers in seconds, names that server alone (``no answer in time``), says ``not
    checked`` for the checks that read it only, and checks the rest (beat's Redis is read
    though the index Redis hangs); ``schedules`` is bounded too."""
    variable, named, reading = HUNG[role]
    server = own_mongodb(tmp_path / "db") if role == MONGODB else own_redis(tmp_path, False)
    server.start()
    url = mongo_uri(server) if role == MONGODB else redis_url(server)
    if role == BROKER:
        url = url.replace("/0", "/1")
    try:
        os.kill(server.process.pid, signal.SIGSTOP)
        took, ran = timed("check", env={variable: url})
        # redbeat's Redis: ``schedules`` reads it alone
        schedules = timed("schedules", env={variable: url}) if role == REDIS else None
    finally:
        server.process.kill()  # SIGKILL ends a stopped process too; its data is the test's
        server.process.wait(30)
    lines = check_lines(ran.out)
    assert ran.status == 1 and took < ANSWERED_WITHIN_S, (took, ran.out, ran.err)
    assert "Traceback" not in ran.err
    said = f"{role} unreachable at {url} (no answer in time)"
    assert lines[named].startswith("FAIL") and said in lines[named], lines[named]
    for name, line in lines.items():
        if name in reading:
            assert line.endswith(f"not checked: {role} down"), line
        elif name != named:  # checked, in time
            assert "not checked" not in line and "no answer" not in line, line
            assert url not in line, line
    if schedules is not None:
        took, listed = schedules
        assert listed.status == 1 and took < ANSWERED_WITHIN_S, (took, listed.err)
        assert listed.one_line_error() and said in listed.err, listed.err


def timed(*args: str, env: dict[str, str]) -> tuple[float, Ran]:
    """``fptrack ARGS`` in a process of its own: its wall time and what it did."""
    started = time.monotonic()
    ran = fptrack(*args, env=env)
    return time.monotonic() - started, ran


def test_workers_of_this_host_only(mongo_db: Database, redis_client: redis.Redis) -> None:
    ran = fptrack("check", "workers", "--this-host")
    assert ran.status == 1
    assert list(check_lines(ran.out)) == ["broker", "workers"]
    assert " on " in check_lines(ran.out)["workers"] and "start fptrack worker" in ran.out
    unknown = fptrack("check", "bogus")
    assert unknown.status == 2 and "no check named bogus" in unknown.err


PING_GUARD_S = 60.0
"""A hang guard for a ping that ends once the worker answered: a tenth of that ping's own
timeout (:data:`LONG_PING_S`), so a ping that waited its timeout fails the test."""
LONG_PING_S = 600.0


def test_the_worker_ping_ends_once_every_bound_worker_answered(
    mongo_db: Database, redis_client: redis.Redis, monkeypatch
) -> None:
    """A ping waits for as many replies as workers are bound to Celery's broadcast exchange
    (its ``limit``), not for its whole timeout (an unlimited ping always takes the timeout).
    A worker killed with SIGKILL leaves its binding: the ping then asks for one reply more
    than can come, waits out the timeout, asks once more for the longer
    :data:`~admin.health.WORKER_PING_AGAIN_S` (a bound worker may be busy) and names none."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "admin.cli", "worker", "--concurrency", "1", "--loglevel",
         "WARNING"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    app = Context().app  # the FPTRACK_* of the test servers
    pings: list[tuple[Any, int]] = []
    ping = app.control.ping

    def recorded(*args: Any, **kwargs: Any) -> Any:
        replies = ping(*args, **kwargs)
        pings.append((kwargs.get("limit"), len(replies)))
        return replies

    monkeypatch.setattr(app.control, "ping", recorded)
    name = f"fptrack-{worker.pid}@"
    try:
        eventually(lambda: fptrack("check", "workers").status == 0, 90, "the worker's answer")
        done: dict[str, list[str]] = {}
        pinging = threading.Thread(
            target=lambda: done.update(answered=ping_workers(app, timeout=LONG_PING_S)),
            daemon=True,
        )
        pinging.start()
        eventually(lambda: "answered" in done, PING_GUARD_S, "the ping to end on the answer")
        assert pings == [(1, 1)]  # one bound, one reply: the limit ended it
        assert [n.startswith(name) for n in done["answered"]] == [True]
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(30)
    broker = redis.Redis.from_url(os.environ["FPTRACK_BROKER_URL"])
    table = f"_kombu.binding.{app.control.mailbox.exchange.name}"
    [left] = [m for m in broker.smembers(table) if name.encode() in m]  # the killed one's
    try:
        pings.clear()
        assert ping_workers(app, timeout=1.0) == []
        assert pings == [(1, 0), (1, 0)]  # one reply asked for, twice; none came
        ran = fptrack("check", "workers")
        assert ran.status == 1 and "none answered within 1 s" in check_lines(ran.out)["workers"]
    finally:
        broker.srem(table, left)
        broker.close()
        app.close()
