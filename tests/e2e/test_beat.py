"""A real beat process (redbeat) picks up schedules created and removed while it runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import redis

from matcher.sites.site_config import SiteConfig
from matcher.worker.celery_app import CRAWL_QUEUE
from matcher.worker.schedules import Schedules
from tests.support.e2e import ROOT, app
from tests.support.waits import eventually


def test_schedule_changes_reach_the_running_beat(broker: redis.Redis) -> None:
    schedules = Schedules(app)
    index = redis.Redis.from_url(app.conf.redbeat_redis_url)
    for key in index.scan_iter(app.conf.redbeat_key_prefix + "*"):
        index.delete(key)
    beat = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "matcher.worker.celery",
            "beat",
            "-S",
            "redbeat.RedBeatScheduler",
            "--loglevel=WARNING",
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(3)  # beat is up and idle: nothing is scheduled yet
        assert broker.llen(CRAWL_QUEUE) == 0
        site = SiteConfig(
            name="pirate",
            start_urls=("http://127.0.0.1:9/",),
            schedule="every 1 s",
            recrawl="every 1 s",
        )
        assert schedules.sync_site(site)
        eventually(lambda: broker.llen(CRAWL_QUEUE) >= 4, 30, "beat to send crawls of the site")
        messages = broker.lrange(CRAWL_QUEUE, 0, -1)
        assert any(b"fptrack.crawl_site" in m and b"pirate" in m for m in messages)
        assert any(b"fptrack.recrawl_site" in m and b"pirate" in m for m in messages)

        assert (
            schedules.sync_site(
                SiteConfig(name="pirate", start_urls=site.start_urls, schedule="never")
            )
            is False
        )
        time.sleep(2)
        sent = broker.llen(CRAWL_QUEUE)
        time.sleep(8)  # longer than beat's loop interval (5 s)
        assert broker.llen(CRAWL_QUEUE) == sent
    finally:
        beat.terminate()
        beat.wait(20)
        for key in index.scan_iter(app.conf.redbeat_key_prefix + "*"):
            index.delete(key)
