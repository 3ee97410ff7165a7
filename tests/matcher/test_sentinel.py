"""Redis Sentinel: the ``redis+sentinel://`` URL read once and translated for every client
(redis-py, kombu, redbeat), and the indexes riding out a real failover: a primary, its
replica and 3 sentinels (``redis-server --sentinel``), the primary killed with SIGKILL in the
middle of the work. The frontiers: ``tests/crawler/test_sentinel_frontier.py``; the broker
and a worker: ``tests/e2e/test_sentinel_worker.py``."""

from __future__ import annotations

import kombu
import pytest
from pymongo.database import Database

from matcher.errors import IndexUnavailable, SettingsError, redis_errors
from matcher.index.redis_clients import COMMAND, connect
from matcher.matching.engine import Engine
from matcher.settings import RedisTarget, Settings
from matcher.worker.celery_app import celery_config
from tests.matcher.conftest import crawl, matched, page_of, sample
from tests.servers.local_sentinel import LocalSentinel
from tests.servers.net import free_port

PREFIX = "fptrack-test"
URL = "redis+sentinel://:p%40ss@10.0.0.1,10.0.0.2:26380/fptrack/2"


def test_one_sentinel_url_becomes_each_client_s_own() -> None:
    settings = Settings.from_env({"FPTRACK_REDIS_URL": URL})
    assert settings.redis_target == settings.broker_target == settings.index_redis
    target = settings.redis_target
    assert (target.kind, target.nodes, target.service, target.database, target.password) == (
        "sentinel",
        (("10.0.0.1", 26379), ("10.0.0.2", 26380)),
        "fptrack",
        2,
        "p@ss",
    )
    config = celery_config(settings)
    broker = kombu.Connection(
        config["broker_url"], transport_options=config["broker_transport_options"]
    )
    assert (
        broker.transport_cls == "sentinel" and broker.transport_options["master_name"] == "fptrack"
    )
    assert broker.alt == [
        "sentinel://:p%40ss@10.0.0.1:26379/2",
        "sentinel://:p%40ss@10.0.0.2:26380/2",
    ]
    assert (broker.password, broker.virtual_host) == ("p@ss", "2")
    assert config["redbeat_redis_url"] == "redis-sentinel://10.0.0.1:26379/2"
    options = config["redbeat_redis_options"]
    assert (options["sentinels"], options["service_name"], options["db"], options["password"]) == (
        [("10.0.0.1", 26379), ("10.0.0.2", 26380)],
        "fptrack",
        2,
        "p@ss",
    )
    plain = celery_config(Settings(redis_url="redis://cache:6379/0"))
    assert plain["broker_url"] == plain["redbeat_redis_url"] == "redis://cache:6379/0"


@pytest.mark.parametrize(
    "url",
    [
        "redis+sentinel://10.0.0.1:26379",  # no service
        "redis+sentinel://10.0.0.1:26379/fptrack/zero",
        "redis+sentinel://10.0.0.1:26379/fptrack/0/extra",
        "redis+sentinel://10.0.0.1:port/fptrack",
        "redis+sentinel://10.0.0.1/fptrack?db=1",
        "sentinel://:secret@10.0.0.1:26379",  # kombu's form, not fptrack's
    ],
)
def test_a_malformed_sentinel_url_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"FPTRACK_REDIS_URL": url})
    assert "redis+sentinel://" in str(refused.value) and "secret" not in str(refused.value)


def test_the_indexes_ride_out_a_failover(redis_sentinel: LocalSentinel, mongo_db: Database) -> None:
    # The first sentinel listed is down: it is skipped, not waited for.
    url = redis_sentinel.url(dead_first=free_port())
    settings = Settings(redis_prefix=PREFIX, mongo_db=mongo_db.name, index_redis_url=url)
    engine = Engine.open(settings, mongo_client=mongo_db.client)  # its client from the URL
    names = ["lighthouse.txt", "river-town.txt", "tea-history.txt"]
    works = {n: engine.add_work(sample(n), title=n, source=n) for n in names}
    first = crawl(engine, "http://x/1", page_of(sample("lighthouse.txt")))
    assert matched(first) == {works["lighthouse.txt"]}
    redis_sentinel.replicate()

    old = redis_sentinel.kill_primary()
    # At once: the client waits for the sentinels to promote the replica, then goes on.
    second = crawl(engine, "http://x/2", page_of(sample("river-town.txt")))
    assert matched(second) == {works["river-town.txt"]}
    late = engine.add_work(sample("star-voyage.txt"), title="late", source="late")
    third = crawl(
        engine, "http://x/3", page_of(sample("star-voyage.txt"), sample("tea-history.txt"))
    )
    assert matched(third) == {late, works["tea-history.txt"]}
    assert matched(engine.match_text(sample("lighthouse.txt"))) == {works["lighthouse.txt"]}
    new = redis_sentinel.primary()
    assert new != old and redis_sentinel.node(new).dbsize() > 0
    assert not engine.problems


def test_sentinels_that_do_not_answer_are_an_outage_to_retry() -> None:
    dead = connect(RedisTarget.parse(f"redis+sentinel://127.0.0.1:{free_port()}/fptrack"), COMMAND)
    no_primary = pytest.raises(IndexUnavailable, match="No master found for 'fptrack'")
    with no_primary, redis_errors("reading"):
        dead.ping()
