"""One crawler process on a site's shared Redis frontier (a helper of the frontier tests).

Run as ``python -m tests.support.frontier_crawler --site-json JSON --redis-url URL
--prefix P --lease SECONDS --items-key KEY --stats PATH``: crawls the site with the
production spider and scheduler (:func:`crawler.run.crawl_in_process` with
:class:`crawler.frontier.RedisFrontiers`), stores each page's URL in the Redis list
``KEY`` (a stand-in for the store: written before the page's request is acknowledged, and
kept if the process is killed), prints one JSON line with its lease when the crawl starts,
and writes its stats as JSON to PATH at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import redis

from crawler import reactor
from crawler.lease import CrawlLease, RedisFrontiers
from crawler.run import crawl_in_process
from matcher.pages import CrawledPage
from matcher.sites.site_config import SiteConfig
from tests.support.crawl import Recorded


class RedisListIngest:
    """Appends each page's URL to a Redis list."""

    def __init__(self, client: redis.Redis, key: str) -> None:
        self.client, self.key = client, key

    def page(self, page: CrawledPage) -> Recorded:
        self.client.rpush(self.key, page.url)
        return Recorded(page_id=page.url, state="new")


def announce(site: SiteConfig, lease: CrawlLease) -> None:
    """Tell the test which slot and run this process has, before crawling."""
    line = {"site": site.name, "slot": lease.slot, "run_id": lease.run_id, "token": lease.token}
    print(json.dumps(line), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("--site-json", "--redis-url", "--prefix", "--items-key", "--stats"):
        parser.add_argument(name, required=True)
    parser.add_argument("--lease", type=float, required=True)
    args = parser.parse_args(argv)
    reactor.install()
    client = redis.Redis.from_url(args.redis_url)
    site = SiteConfig.from_dict(json.loads(args.site_json))
    overrides: dict[str, Any] = {
        "FPTRACK_INGEST": RedisListIngest(client, args.items_key),
        "AUTOTHROTTLE_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 10,
        "LOG_LEVEL": "WARNING",
    }
    frontiers = RedisFrontiers(client, args.prefix, args.lease)
    stats = crawl_in_process([site], overrides, frontiers=frontiers, on_lease=announce)
    Path(args.stats).write_text(json.dumps(stats[site.name]), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
