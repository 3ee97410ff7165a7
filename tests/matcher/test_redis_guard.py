"""Every Redis command the backend sends is sent inside the guard.

The guard (:func:`matcher.errors.redis_errors`) turns an outage into a retryable error
(:class:`matcher.errors.IndexUnavailable`), which the tasks retry with backoff; a Redis
error raised outside it would fail a task for good on its first attempt (as
``ClusterDownError`` did while a page lock was released). This test records the call site
of every command sent to the real server and to the real cluster (the first frame outside
redis-py) while the backend's paths run: registration, matching both ways, split chapters,
removal, re-indexing, losses and rebuilds, the heal and crawl-resumption jobs, the API's
rate limit. It lists the sites, and fails naming each one that sent a command unguarded.
An outage of the index's server, or of the whole cluster, is an IndexUnavailable that writes
nothing.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import ClusterPipeline, RedisCluster

from admin.web import rate_limit
from matcher.errors import IndexUnavailable, guarded
from matcher.index.maintenance import rebuild_indexes
from matcher.keys import Keys
from matcher.matching.engine import Engine
from matcher.worker import jobs
from tests.matcher.conftest import crawl, novel, page_of, sample

INDEX_BACKENDS = ("server", "cluster")
ROOT = Path(__file__).resolve().parents[2]
AUDITED = ("matcher", "admin/web/rate_limit.py")
"""The backend (the tasks' code) and the API's rate limit. The crawler handles the errors
of its frontier itself (a crawl process that loses Redis ends, and its lease resumes it);
the admin's health checks catch every Redis error to report it."""
REDIS_DIR = str(Path(redis.__file__).parent)
HERE = str(Path(__file__))


def call_site() -> str | None:
    """``path:function`` of the first frame outside redis-py and this file, if it is in
    an audited module (a library's own command, such as kombu's or redbeat's, is not)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith((REDIS_DIR, HERE)):
        frame = frame.f_back
    if frame is None:
        return None
    try:
        path = Path(frame.f_code.co_filename).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    if not path.startswith(AUDITED):
        return None
    return f"{path}:{frame.f_code.co_qualname}"


@pytest.fixture
def sites(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[bool]]]:
    """Call site -> whether each command it sent was guarded."""
    found: dict[str, list[bool]] = defaultdict(list)

    def recording(method: Callable) -> Callable:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            site = call_site()
            if site is not None:
                found[site].append(guarded())
            return method(*args, **kwargs)

        return wrapper

    for cls, name in (
        (redis.Redis, "execute_command"),
        (redis.client.Pipeline, "execute"),
        (RedisCluster, "execute_command"),
        (ClusterPipeline, "execute"),
    ):
        monkeypatch.setattr(cls, name, recording(getattr(cls, name)))
    yield found


def backend_paths(engine: Engine, frontier_client: redis.Redis) -> None:
    """Every path of the backend that reaches Redis, once."""
    ids = [engine.add_work(sample(n), title=n) for n in ("lighthouse.txt", "river-town.txt")]
    whole, chapters = novel(4, 1200, seed=3)
    ids.append(engine.add_work(whole, title="novel"))
    crawl(engine, "http://p/1", page_of(sample("lighthouse.txt")))
    half = len(chapters[1]) // 2
    crawl(engine, "http://p/c1", chapters[1][:half], next_url="http://p/c2")
    crawl(engine, "http://p/c2", chapters[1][half:], prev_url="http://p/c1")
    engine.match_text(sample("river-town.txt")[:600])
    engine.match_work_against_pages(ids[0])
    engine.index_work(ids[1])
    for key in list(engine.redis.scan_iter(f"{engine.settings.redis_prefix}:*")):
        engine.redis.delete(key)  # the index lost: rebuilt on the next page
    crawl(engine, "http://p/2", page_of(sample("river-town.txt")))
    jobs.heal_indexes(engine, lambda _: None, lambda _: None)
    rebuild_indexes(engine)
    engine.remove_work(ids[1])
    jobs.resume_crawls(frontier_client, Keys(engine.settings.redis_prefix), set(), print)
    rate_limit.spend(engine.redis, engine.keys, "alice", 10)


def test_every_redis_command_of_the_backend_is_sent_inside_the_guard(
    engine: Engine, redis_client: redis.Redis, sites: dict[str, list[bool]]
) -> None:
    backend_paths(engine, redis_client)
    unguarded = sorted(site for site, guards in sites.items() if not all(guards))
    listing = "\n".join(f"  {site}: {len(g)} command(s)" for site, g in sorted(sites.items()))
    assert not unguarded, f"sent outside redis_errors: {unguarded}\nevery site:\n{listing}"
    # The paths reached the sites that matter (the audit saw what it is about).
    for expected in (
        "matcher/matching/page_locks.py:locked",
        "matcher/matching/page_locks.py:_release",
        "matcher/index/redis_io.py:pipelined",  # the markers (Integrity._mark)
        "matcher/index/redis_io.py:mget",
        "matcher/worker/jobs.py:resume_crawls",
        "admin/web/rate_limit.py:spend",
    ):
        assert any(site.startswith(expected) for site in sites), (expected, listing)


def test_the_audit_sees_an_unguarded_command(engine: Engine, sites: dict[str, list[bool]]) -> None:
    exec(  # a command sent from an audited module's code, outside the guard
        compile("engine.redis.ping()", str(ROOT / "matcher" / "matching" / "engine.py"), "exec"),
        {"engine": engine},
    )
    assert sites == {"matcher/matching/engine.py:<module>": [False]}


def test_redis_outage_raises_and_writes_nothing(engine: Engine, works, dead_index_client) -> None:
    broken = Engine(engine.settings, engine.store, dead_index_client)
    with pytest.raises(IndexUnavailable, match="unavailable while"):
        crawl(broken, "http://x/1", page_of(sample("lighthouse.txt")))
    # The crawler stored the page; its task wrote nothing and left it pending for a retry.
    assert [p["pending"] for p in engine.store.db.pages.find()] == [True]
    assert engine.store.db.matches.count_documents({}) == 0
    assert engine.store.db.pages.count_documents({"fingerprints": {"$exists": True}}) == 0
    # Refetched unchanged, it is not enqueued twice; the task's retry matches it.
    assert crawl(engine, "http://x/1", page_of(sample("lighthouse.txt"))) == []
    [page] = engine.store.db.pages.find()
    engine.process_stored_page(str(page["_id"]))
    assert (
        engine.store.matches.matches_for("page_id", str(page["_id"]))
        and len(engine.store.matches.matches_for("page_id", str(page["_id"]))) == 1
    )
    assert [p["pending"] for p in engine.store.db.pages.find()] == [False]
