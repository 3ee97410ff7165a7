"""A site's frontier and crawl leases on Redis Sentinel (``FPTRACK_REDIS_URL=redis+sentinel://``):
the primary is killed (SIGKILL) between a stopped crawl and its resumption, while another
crawl's lease is held; the same clients go on against the replica the sentinels promote."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from crawler.lease import RedisFrontiers
from crawler.run import crawl_in_process
from matcher.keys import Keys
from matcher.settings import Settings
from tests.crawler.test_frontier import CHAIN, PREFIX, chain_site, config
from tests.servers.fixture_site import FixtureSite
from tests.servers.local_sentinel import LocalSentinel

LEASE_S = 9


def test_a_crawl_and_a_lease_go_on_on_the_new_primary(
    redis_sentinel: LocalSentinel, test_overrides: dict[str, Any]
) -> None:
    settings = Settings(redis_url=redis_sentinel.url(), redis_prefix=PREFIX, crawl_lease=LEASE_S)
    frontiers = RedisFrontiers.connect(settings)  # the deployment's: as crawler.run builds it
    overrides = {**test_overrides, "CONCURRENT_REQUESTS": 1}
    with FixtureSite(chain_site(delay=0.3)) as site:
        stopped = crawl_in_process([config(site)], overrides, 1.5, frontiers)["chain"]
        assert stopped["finish_reason"] == "shutdown"
        assert 0 < len(site.requested()) < CHAIN
        held = frontiers.lease(config(site, name="other"))
        assert held is not None
        redis_sentinel.replicate()

        old = redis_sentinel.kill_primary()
        site.pages.update(chain_site())
        # At once: the crawl's first commands wait for the sentinels to promote the replica.
        resumed = crawl_in_process([config(site)], overrides, None, frontiers)["chain"]
        new = redis_sentinel.wait_for_failover(old)
        assert resumed["fptrack/frontier/resumed"] == 1
        assert resumed["fptrack/frontier/run_id"] == stopped["fptrack/frontier/run_id"]
        assert resumed["fptrack/frontier/ended_run"] == 1
        assert Counter(site.requested()) == Counter(f"/{n}.html" for n in range(CHAIN))

        # The lease held across the failover is renewed on the new primary.
        lock = held.frontier.keys.slot_lock(held.slot)
        primary = redis_sentinel.node(new)
        low = primary.pttl(lock)
        deadline = time.monotonic() + LEASE_S
        while (ttl := primary.pttl(lock)) <= low + 500 and time.monotonic() < deadline:
            low = min(low, ttl)
            time.sleep(0.1)
        assert ttl > low + 500 and not held.lost_lease.is_set()
        held.release()
    chain = Keys(PREFIX).crawl("chain")
    assert primary.exists(chain.run, chain.seen, chain.queue) == 0  # the run ended there
