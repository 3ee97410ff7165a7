"""A dead worker's tasks come back within the visibility timeout, a live worker's never do, and
beat sends again the page tasks the broker lost; real worker and beat processes on the test
broker, configured by the settings (``FPTRACK_VISIBILITY_TIMEOUT``, ``FPTRACK_PENDING_AFTER``)
as a deployment is.

- A worker's whole process tree killed with SIGKILL mid-page: a second worker matches the
  page once the timeout has passed (it was two hours when the timeout had to exceed the
  crawls).
- A page task that runs four times longer than the timeout on a live worker runs once: the
  worker's heartbeat (:mod:`matcher.worker.heartbeat`) keeps its message from the other worker.
- A page whose message was lost (the broker's queue deleted) is matched after beat's sweep
  (``pages:requeue-pending``) sends its task again; a page waiting behind a backlog is not
  sent twice (the sweep waits its turn in the same queue and expires).
- Two ``fptrack worker`` processes on one host answer under names of their own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.worker.ingest import Ingest
from tests.e2e.test_worker import enqueue, worker_processes
from tests.e2e.test_worker_kills import LOCK_SECONDS, WORKS, register_and_ingest, stop
from tests.support.e2e import CHROME, ROOT, app, sample
from tests.support.waits import eventually

SUPPORT = Path(__file__).resolve().parents[1] / "support"  # the worker scripts
TIMEOUT = 3
"""The visibility timeout of these tests' workers (seconds)."""
SETTINGS = {
    "FPTRACK_VISIBILITY_TIMEOUT": str(TIMEOUT),
    "FPTRACK_PAGE_LOCK_SECONDS": str(LOCK_SECONDS),
    "FPTRACK_PENDING_AFTER": "2",
}
CLI = [sys.executable, "-m", "admin.cli"]


@contextmanager
def processes(*argvs: list[str]) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes with the tests' settings, each in a session of its own; SIGTERM, then
    SIGKILL, to each one's whole tree at the end."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **SETTINGS}
    started = [
        subprocess.Popen(
            argv,
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for argv in argvs
    ]
    try:
        yield started
    finally:
        for process in started:
            stop(process, signal.SIGTERM)


def worker(*extra: str) -> list[str]:
    return [*CLI, "worker", "--queues", "fptrack", "--concurrency", "1", "--loglevel", "WARNING",
            *extra]  # fmt: skip


def slow_worker(log: Path, seconds: float) -> list[str]:
    return [sys.executable, str(SUPPORT / "slow_worker.py"), str(log), str(seconds)]


def pending(engine: Engine) -> list[str]:
    return list(engine.store.page_marks.pending_pages())


def matched(engine: Engine) -> set[tuple[str, str]]:
    works = {w["_id"]: w["source"] for w in engine.store.db.works.find({}, {"source": 1})}
    return {(m["url"], works[m["work_id"]]) for m in engine.store.db.matches.find()}


@pytest.mark.parametrize("point", ["start", "match"])
def test_a_killed_worker_s_task_comes_back_after_the_visibility_timeout(
    point: str, engine: Engine, broker: redis.Redis, tmp_path: Path
) -> None:
    register_and_ingest(engine, enqueue)
    marker = tmp_path / "stopped"
    doomed_worker = [sys.executable, str(SUPPORT / "doomed_worker.py"), str(marker), point, "solo"]
    with processes(doomed_worker) as [doomed]:
        eventually(marker.exists, 60, f"the worker to stop at {point}")
        os.killpg(doomed.pid, signal.SIGKILL)  # the worker and everything it started
        doomed.wait(10)
    assert broker.llen("fptrack") == 0 and broker.hlen("unacked") == 1
    killed = time.monotonic()
    with processes(worker()):
        eventually(lambda: not pending(engine), 60, "the page's task to come back")
        print(f"matched {time.monotonic() - killed:.1f} s after the kill (timeout {TIMEOUT} s)")
        eventually(lambda: broker.hlen("unacked") == 0, 10, "the task's acknowledgement")
    assert broker.llen("fptrack") == 0
    assert matched(engine) == {("http://pirate/two", w) for w in WORKS[1:]}


def test_a_task_longer_than_the_visibility_timeout_runs_once(
    engine: Engine, broker: redis.Redis, tmp_path: Path
) -> None:
    register_and_ingest(engine, enqueue)
    log = tmp_path / "starts"
    with processes(slow_worker(log, 4 * TIMEOUT), slow_worker(log, 4 * TIMEOUT)):
        eventually(log.exists, 60, "a worker to start the page")
        eventually(lambda: not pending(engine), 60, "the page to be matched")
        time.sleep(TIMEOUT + 2)  # past a timeout and a look for abandoned messages
    assert len(log.read_text(encoding="utf-8").splitlines()) == 1  # never given to the other
    assert broker.llen("fptrack") == 0 and broker.hlen("unacked") == 0
    assert matched(engine) == {("http://pirate/two", w) for w in WORKS[1:]}


def test_a_worker_shutting_down_keeps_its_running_task(
    engine: Engine, broker: redis.Redis, tmp_path: Path
) -> None:
    """SIGTERM (a warm shutdown, as systemd and compose stop a worker) while a task four
    timeouts long runs: the worker finishes it, beating until the end, and the other worker
    never gets it."""
    register_and_ingest(engine, enqueue)
    log = tmp_path / "starts"
    with processes(slow_worker(log, 4 * TIMEOUT)) as [first]:
        eventually(log.exists, 60, "the first worker to start the page")
        with processes(slow_worker(log, 0)):
            os.killpg(first.pid, signal.SIGTERM)
            eventually(lambda: not pending(engine), 60, "the page to be matched")
            first.wait(60)
            time.sleep(TIMEOUT + 2)  # past a timeout and a look for abandoned messages
    assert [line.split()[0] for line in log.read_text(encoding="utf-8").splitlines()] == [
        str(first.pid)
    ]
    assert broker.llen("fptrack") == 0 and broker.hlen("unacked") == 0
    assert matched(engine) == {("http://pirate/two", w) for w in WORKS[1:]}


def copy(engine: Engine, url: str, work: str) -> str:
    page = CrawledPage(url=url, site="pirate", title="", text=CHROME.format(sample(work)))
    return Ingest(engine.store, enqueue).page(page).page_id


def test_beat_sends_again_a_page_task_the_broker_lost(
    engine: Engine, broker: redis.Redis, redis_client: redis.Redis
) -> None:
    engine.add_work(sample("lighthouse.txt"), title="lighthouse", source="lighthouse.txt")
    copy(engine, "http://pirate/lost", "lighthouse.txt")
    assert broker.llen("fptrack") == 1
    broker.delete("fptrack")  # lost, as with a broker restarted empty
    with processes(worker(), [*CLI, "beat", "--loglevel", "WARNING"]):
        eventually(lambda: not pending(engine), 90, "beat's sweep and the page's task")
    assert matched(engine) == {("http://pirate/lost", "lighthouse.txt")}


def test_a_page_waiting_behind_a_backlog_is_not_sent_twice(
    engine: Engine, broker: redis.Redis, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """The first page's task takes four sweeps' time; the second waits behind it, pending
    longer than ``FPTRACK_PENDING_AFTER``, and the sweeps wait behind it."""
    engine.add_work(sample("lighthouse.txt"), title="lighthouse", source="lighthouse.txt")
    engine.add_work(sample("star-voyage.txt"), title="star", source="star-voyage.txt")
    copy(engine, "http://pirate/slow", "lighthouse.txt")
    copy(engine, "http://pirate/waiting", "star-voyage.txt")
    log = tmp_path / "starts"
    with processes([*CLI, "beat", "--loglevel", "WARNING"]):
        eventually(lambda: broker.llen("fptrack") >= 3, 60, "sweeps queued behind the pages")
        with processes(slow_worker(log, 8)):
            eventually(lambda: not pending(engine), 90, "both pages to be matched")
            time.sleep(3)  # the sweeps sent meanwhile have run (or expired)
            eventually(lambda: broker.llen("fptrack") == 0, 30, "the queue to drain")
    starts = [line.split()[1] for line in log.read_text(encoding="utf-8").splitlines()]
    assert sorted(starts) == sorted(set(starts)) and len(starts) == 2
    assert matched(engine) == {
        ("http://pirate/slow", "lighthouse.txt"),
        ("http://pirate/waiting", "star-voyage.txt"),
    }


def test_workers_on_one_host_answer_under_names_of_their_own(
    engine: Engine, broker: redis.Redis
) -> None:
    names: set[str] = set()

    def both() -> bool:
        names.update(name for reply in app.control.ping(timeout=1.0) for name in reply)
        return len(names) >= 2

    with worker_processes(2):
        eventually(both, 60, "two workers to answer")
    assert len(names) == 2 and all(n.startswith("fptrack-") for n in names)
