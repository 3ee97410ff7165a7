"""Workers killed with SIGKILL in the middle of a page leave the store and the indexes exactly
as an undisturbed run does: nothing lost, nothing written twice.

A page copying two works is matched by ``doomed_worker.py``, a real worker process on the
test broker and the shared MongoDB-wire server, which stops dead at one point of the task
(before writing, after its index entries, after the first of its two match records, after
its processed mark, which stores its fingerprints, before the task is acknowledged). The
test then kills either the prefork child running the task (its parent lives on, the task
is redelivered and matched by a new child) or the whole worker (a second worker takes the
unacknowledged message once its visibility timeout passes).
The resulting MongoDB collections and Redis keys, with ids and times replaced by what they
name, equal those of the same page matched once, undisturbed, in a database and a key prefix
of its own (of the works' index entries, written when the works are registered and packing
the store's ids, only the names, kinds and sizes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from bson import ObjectId
from pymongo.database import Database

from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.settings import Settings
from matcher.worker import tasks
from matcher.worker.ingest import Ingest
from tests.e2e.test_worker import count_successes, enqueue, worker
from tests.support.e2e import CHROME, ROOT, sample
from tests.support.waits import eventually

WORKS = ("lighthouse.txt", "river-town.txt", "tea-history.txt")
TEXT = CHROME.format(sample("river-town.txt") + "\n" + sample("tea-history.txt"))
LOCK_SECONDS = 5
FAST_RESTORE = {"visibility_timeout": 3, "unacked_restore_interval": 1}


def register_and_ingest(engine: Engine, enqueue_page: Any) -> str:
    for name in WORKS:
        engine.add_work(sample(name), title=name, source=name)
    page = CrawledPage(url="http://pirate/two", site="pirate", title="", text=TEXT)
    return Ingest(engine.store, enqueue_page).page(page).page_id


def state(engine: Engine) -> dict[str, Any]:
    """The store's collections and the index keys, ids and times replaced by what they name."""
    db = engine.store.db
    names: dict[ObjectId, str] = {}
    for work in db.works.find({}, {"source": 1}):
        names[work["_id"]] = f"work {work['source']}"
    for page in db.pages.find({}, {"url": 1}):
        names[page["_id"]] = f"page {page['url']}"

    def plain(value: Any) -> Any:
        if isinstance(value, ObjectId):
            return names.get(value, "an id")
        if isinstance(value, datetime):
            return "a time"
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items() if k != "_id"}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    out: dict[str, Any] = {}
    for collection in ("works", "pages", "fingerprints", "matches", "work_segments"):
        out[collection] = sorted((plain(d) for d in db[collection].find()), key=repr)
    client, prefix = engine.redis, engine.settings.redis_prefix
    readers = {
        "string": client.get,
        "hash": client.hgetall,
        "set": lambda k: sorted(client.smembers(k)),
        "zset": lambda k: client.zrange(k, 0, -1, withscores=True),
        "list": lambda k: client.lrange(k, 0, -1),
    }
    for key in client.scan_iter(f"{prefix}:*", count=1000):
        name = key.decode()[len(prefix) :]
        if name.startswith(":index:") and name.endswith(":marker"):
            continue  # a token per tag group's build
        kind = client.type(key).decode()
        value = readers[kind](key)
        if name.startswith(":works:"):  # packs store ids: only its size can be compared
            value = len(value)
        out[f"redis {name}"] = (kind, value)
    return out


def reference(
    redis_client: redis.Redis, mongo_db: Database, match: Callable[[Engine], None]
) -> Iterator[dict[str, Any]]:
    """The state ``match`` leaves, nothing killed, in a database and a key prefix of its own
    (dropped after)."""
    name = f"{mongo_db.name}-ref-{uuid.uuid4().hex[:6]}"
    engine = Engine.open(
        Settings.from_env(redis_prefix=f"fptrack-ref-{uuid.uuid4().hex[:8]}", mongo_db=name),
        mongo_client=mongo_db.client,
        redis_client=redis_client,
    )
    match(engine)
    yield state(engine)
    mongo_db.client.drop_database(name)


@pytest.fixture
def undisturbed(redis_client: redis.Redis, mongo_db: Database) -> Iterator[dict[str, Any]]:
    """The state after the page is matched once, with nothing killed."""

    def once(engine: Engine) -> None:
        page_id = register_and_ingest(engine, lambda page_id: None)
        assert len(engine.process_stored_page(page_id)) == 2

    yield from reference(redis_client, mongo_db, once)


def start_doomed(marker: Path, point: str, pool: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FPTRACK_PAGE_LOCK_SECONDS": str(LOCK_SECONDS),
    }
    return subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "doomed_worker.py"), str(marker), point,
         pool],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip


def stop(process: subprocess.Popen[bytes], sig: int) -> None:
    if process.poll() is None:
        os.killpg(process.pid, sig)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


@pytest.mark.parametrize("point", ["start", "index", "match", "marked"])
def test_a_whole_worker_killed_mid_page(
    point: str,
    engine: Engine,
    broker: redis.Redis,
    undisturbed: dict[str, Any],
    tmp_path: Path,
) -> None:
    page_id = register_and_ingest(engine, enqueue)
    marker = tmp_path / "stopped"
    doomed = start_doomed(marker, point, "solo")
    try:
        eventually(marker.exists, 60, f"the worker to stop at {point}")
        stop(doomed, signal.SIGKILL)
    finally:
        stop(doomed, signal.SIGKILL)
    assert broker.llen("fptrack") == 0 and broker.hlen("unacked") == 1
    with count_successes() as done, worker(FAST_RESTORE):
        eventually(
            lambda: not list(engine.store.page_marks.pending_pages()), 90, "the redelivered task"
        )
        time.sleep(4)  # past the visibility timeout: a second delivery would run now
    assert done["fptrack.process_page"] == 1
    assert broker.llen("fptrack") == 0 and broker.hlen("unacked") == 0
    assert page_id
    assert state(engine) == undisturbed


@pytest.mark.parametrize("point", ["start", "index", "match", "marked"])
def test_a_prefork_child_killed_mid_page(
    point: str,
    engine: Engine,
    broker: redis.Redis,
    undisturbed: dict[str, Any],
    tmp_path: Path,
) -> None:
    register_and_ingest(engine, enqueue)
    marker = tmp_path / "stopped"
    doomed = start_doomed(marker, point, "prefork")
    try:
        eventually(marker.exists, 60, f"the child to stop at {point}")
        child = int(marker.read_text(encoding="utf-8"))
        assert child != doomed.pid
        os.kill(child, signal.SIGKILL)

        def settled() -> bool:
            return (
                not list(engine.store.page_marks.pending_pages())
                and broker.llen("fptrack") == 0
                and broker.hlen("unacked") == 0
            )

        # killed once marked, the page is no longer pending: what says the redelivered task
        # ran is the broker holding nothing, twice over a second (not the instant between
        # the message's fetch and its entry among the unacknowledged ones)
        eventually(lambda: settled() and not time.sleep(1.5) and settled(), 90, "a new child's run")
        assert doomed.poll() is None, "the parent died with its child"
        time.sleep(2)
        assert broker.llen("fptrack") == 0 and broker.hlen("unacked") == 0
    finally:
        stop(doomed, signal.SIGTERM)
    assert state(engine) == undisturbed


def register_and_ingest_two(engine: Engine) -> list[str]:
    """The works, the page of :func:`register_and_ingest` and one more copying a third work."""
    first = register_and_ingest(engine, lambda page_id: None)
    text = CHROME.format(sample("lighthouse.txt"))
    page = CrawledPage(url="http://pirate/one", site="pirate", title="", text=text)
    return [first, Ingest(engine.store, lambda page_id: None).page(page).page_id]


@pytest.fixture
def undisturbed_two(redis_client: redis.Redis, mongo_db: Database) -> Iterator[dict[str, Any]]:
    """The state after the two pages are matched, each by its own task, nothing killed."""

    def each(engine: Engine) -> None:
        for page_id in register_and_ingest_two(engine):
            engine.process_stored_page(page_id)

    yield from reference(redis_client, mongo_db, each)


def test_a_whole_worker_killed_in_the_middle_of_a_batch(
    engine: Engine,
    broker: redis.Redis,
    undisturbed_two: dict[str, Any],
    tmp_path: Path,
) -> None:
    """Killed after the first page of a ``process_pages`` batch was matched, its records
    written and its mark not yet: the batch is delivered again and its pages end as if each
    were matched once, by its own task."""
    ids = register_and_ingest_two(engine)
    tasks.process_pages.delay(ids)
    marker = tmp_path / "stopped"
    doomed = start_doomed(marker, "batch", "solo")
    try:
        eventually(marker.exists, 60, "the worker to stop after the batch's first page")
        assert engine.store.db.matches.count_documents({}) == 2  # the first page's records
        assert engine.store.db.pages.count_documents({"pending": True}) == 2  # no mark yet
        stop(doomed, signal.SIGKILL)
    finally:
        stop(doomed, signal.SIGKILL)
    assert broker.llen("fptrack") == 0 and broker.hlen("unacked") == 1
    with count_successes() as done, worker(FAST_RESTORE):
        eventually(
            lambda: not list(engine.store.page_marks.pending_pages()), 90, "the redelivered batch"
        )
        time.sleep(4)  # past the visibility timeout: a second delivery would run now
    assert done["fptrack.process_pages"] == 1
    assert broker.llen("fptrack") == 0 and broker.hlen("unacked") == 0
    assert state(engine) == undisturbed_two
