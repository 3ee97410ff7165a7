"""``fptrack beat`` rides out a real Redis restart: it says so in one line, never exits, and
sends the scheduled tasks again once Redis is back, whether Redis came back with its data
(append-only file) or empty (then beat saves the schedules again from the store).

Redis is a ``redis-server`` of the test's own (the broker and redbeat's server), restarted
by the test; the store is the session's SecantusDB.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis
from pymongo.database import Database

from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from matcher.store import Store
from matcher.worker.celery_app import CRAWL_QUEUE, make_app
from matcher.worker.schedules import Schedules
from tests.servers.outage import Service, own_redis, redis_url
from tests.support.waits import eventually


@pytest.mark.parametrize("keeps_data", [True, False], ids=["with-its-data", "empty"])
def test_beat_sends_again_after_redis_restarted(
    tmp_path: Path, mongo_db: Database, keeps_data: bool
) -> None:
    server = own_redis(tmp_path / "redis", keeps_data)
    server.start()
    url = redis_url(server)
    env = {**os.environ, "FPTRACK_REDIS_URL": url, "FPTRACK_BROKER_URL": url}
    site = SiteConfig(name="pirate", start_urls=("http://127.0.0.1:9/",), schedule="every 1 s")
    Store(mongo_db).sites.save_site(site)
    beat = Service(["beat", "--loglevel", "INFO"], env, tmp_path / "beat.log")
    try:
        client = redis.Redis.from_url(url)
        eventually(lambda: client.llen(CRAWL_QUEUE) >= 2, 30, "beat to send the site's crawls")

        server.stop()
        eventually(lambda: "waiting for Redis at" in beat.output(), 30, "beat to notice")
        assert beat.running, beat.output()
        server.start()

        client = redis.Redis.from_url(url)
        before = client.llen(CRAWL_QUEUE)
        assert (before > 0) is keeps_data
        eventually(lambda: client.llen(CRAWL_QUEUE) >= before + 2, 60, "beat to send again")
        assert beat.running, beat.output()
        messages = client.lrange(CRAWL_QUEUE, before, -1)
        assert all(b"fptrack.crawl_site" in m and b"pirate" in m for m in messages)
        schedules = Schedules(make_app(Settings.from_env(env)))
        assert not schedules.lost()  # the daily jobs are saved, again if Redis lost them
    finally:
        beat.stop()
        server.stop()
    log = beat.output()
    assert f"beat: waiting for Redis at {url} (" in log
    assert f"beat: Redis at {url} answers again" in log
    assert ("saved again from the store" in log) is not keeps_data
    assert "Traceback" not in log, log
