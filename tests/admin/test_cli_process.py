"""The ``fptrack`` command in fresh processes, on the test servers (nothing shared with the
test process but the servers): what a new deployment runs first."""

from __future__ import annotations

import json

import redis
from pymongo.database import Database

from tests.admin.cli_support import fptrack


def test_schedules_in_a_fresh_process(mongo_db: Database, redis_client: redis.Redis) -> None:
    """redbeat's settings are made on first use, not only by a running beat."""
    added = fptrack(
        "sites", "add", "http://127.0.0.1:9/", "--name", "pirate", "--schedule", "hourly"
    )
    assert added.status == 0, added.err
    listed = fptrack("schedules", "--json")
    assert listed.status == 0, listed.err
    [entry] = json.loads(listed.out)
    assert (entry["name"], entry["task"], entry["args"]) == (
        "crawl:pirate",
        "fptrack.crawl_site",
        ["pirate"],
    )


def test_index_rebuild_on_empty_stores(mongo_db: Database, redis_client: redis.Redis) -> None:
    """A new deployment's first command (compose's ``init``): nothing to index is no error."""
    ran = fptrack("index", "rebuild")
    assert ran.status == 0, ran.err
    assert "rebuilt: 0 work(s), 0 page(s)" in ran.out
