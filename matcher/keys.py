"""Redis key names of the matcher, and the owner ids its indexes pack into their records.

Every key starts with the settings' ``redis_prefix``. The indexes of one kind of owner live
under ``{prefix}:works`` and ``{prefix}:pages`` (their own modules name the keys below
those); this module names the rest, the crawl frontiers of the sites included
(:class:`CrawlKeys`).

Owner ids are uint32. A page's is its ``seq``. A work is indexed by segments
(:mod:`fingerprint.segments`), and a segment's owner id is ``work seq << SEGMENT_BITS |
segment index``: the top bits name the work, so counting the distinct works that hold a
key needs no lookup.

>>> owner = segment_owner(5, 3)
>>> owner, owner_work(owner), owner_segment(owner)
(20483, 5, 3)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEGMENT_BITS = 12
MAX_SEGMENTS = 1 << SEGMENT_BITS
MAX_WORK_SEQ = (1 << (32 - SEGMENT_BITS)) - 1


def segment_owner(work_seq: int, index: int) -> int:
    """The works index's owner id of segment ``index`` of work ``work_seq``."""
    if not 0 < work_seq <= MAX_WORK_SEQ or not 0 <= index < MAX_SEGMENTS:
        raise ValueError(
            f"work {work_seq} segment {index} does not fit an owner id"
            f" (works 1..{MAX_WORK_SEQ}, segments 0..{MAX_SEGMENTS - 1})"
        )
    return work_seq << SEGMENT_BITS | index


def owner_work(owner: int | np.ndarray) -> int | np.ndarray:
    """The work seq of a segment owner id (works on arrays too)."""
    if isinstance(owner, np.ndarray):
        return owner >> np.uint32(SEGMENT_BITS)
    return int(owner) >> SEGMENT_BITS


def owner_segment(owner: int) -> int:
    """The segment index of a segment owner id."""
    return int(owner) & (MAX_SEGMENTS - 1)


@dataclass(frozen=True)
class Keys:
    """The key names under one prefix."""

    prefix: str

    @property
    def works(self) -> str:
        """Prefix of the works' simhash and postings indexes."""
        return f"{self.prefix}:works"

    @property
    def pages(self) -> str:
        """Prefix of the pages' simhash and postings indexes."""
        return f"{self.prefix}:pages"

    def segment(self, owner: int) -> str:
        """A work segment's verification data (:func:`matcher.prepared.segment_blob`)."""
        return f"{self.prefix}:works:anchors:{owner}"

    @property
    def segment_pattern(self) -> str:
        """A SCAN pattern of every segment's verification data."""
        return f"{self.prefix}:works:anchors:*"

    @property
    def everything(self) -> str:
        """A SCAN pattern of every key under the prefix."""
        return f"{self.prefix}:*"

    def page_lock(self, seq: int) -> str:
        """Held while a page (and the split chapter it belongs to) is matched and written."""
        return f"{self.prefix}:lock:page:{seq}"

    @property
    def redbeat(self) -> str:
        """Prefix of the beat schedule entries (redbeat's ``redbeat_key_prefix``)."""
        return f"{self.prefix}:redbeat:"

    def crawl(self, site: str) -> CrawlKeys:
        """The keys of one site's crawl frontier (:mod:`crawler.frontier`)."""
        return CrawlKeys(f"{self.prefix}:crawl:{site}", f"{self.prefix}:lock:crawl:{site}")

    @property
    def crawl_frontiers(self) -> str:
        """A set of the sites whose crawl frontier holds an unfinished run."""
        return f"{self.prefix}:crawl-runs"


@dataclass(frozen=True)
class CrawlKeys:
    """The keys of one site's crawl frontier, shared by every crawler process of the site.

    >>> keys = Keys("fptrack").crawl("pirate")
    >>> keys.queue, keys.seen, keys.run
    ('fptrack:crawl:pirate:queue', 'fptrack:crawl:pirate:seen', 'fptrack:crawl:pirate:run')
    >>> keys.inflight(1), keys.slot_lock(1)
    ('fptrack:crawl:pirate:inflight:1', 'fptrack:lock:crawl:pirate:1')
    """

    base: str
    lock_base: str

    @property
    def queue(self) -> str:
        """Requests waiting to be fetched (a sorted set, scrapy-redis' priority queue)."""
        return f"{self.base}:queue"

    @property
    def seen(self) -> str:
        """Fingerprints of every request scheduled in this run (scrapy-redis' dupefilter)."""
        return f"{self.base}:seen"

    @property
    def run(self) -> str:
        """The current run: its id, start time, and which process holds each slot."""
        return f"{self.base}:run"

    def inflight(self, slot: int) -> str:
        """Requests the process in ``slot`` took from the queue and has not finished."""
        return f"{self.base}:inflight:{slot}"

    def slot_lock(self, slot: int) -> str:
        """The lease of crawler slot ``slot`` (a redis-py ``Lock``), held by one process."""
        return f"{self.lock_base}:{slot}"
