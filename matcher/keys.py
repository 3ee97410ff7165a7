"""Redis key names and layout of the matcher, and the owner ids its indexes pack into records.

Every key starts with the settings' ``redis_prefix``. The indexes of one kind of owner live
under ``{prefix}:works`` and ``{prefix}:pages``; each holds a simhash index (``:sh``) and a
postings index (``:win``), named by :class:`IndexKeys`. The crawl frontiers of the sites
(:class:`CrawlKeys`, on the standalone Redis of the broker) are named here too.

Hash tags (layout 2; layout 1 had none and lived on one server). On a Redis Cluster a
Lua script, an ``MGET``, an ``MSET`` and a ``MULTI`` may only touch keys of one hash slot,
and the slot of a key is CRC16 of its hash tag (the text between its first ``{`` and the
next ``}``) modulo 16384. Every key of an index therefore carries the tag of one of
:data:`TAG_GROUPS` groups, and each group has its own copies of the index's metadata:

====================================  =======================================
Owner ids are uint32. A page's is its ``seq``. A work is indexed by segments
(:mod:`fingerprint.segments`), and a segment's owner id is ``work seq << SEGMENT_BITS |
segment index``: the top bits name the work, so counting the distinct works that hold a
key needs no lookup.

>>> owner = segment_owner(5, 3)
>>> owner, owner_work(owner), owner_segment(owner)
(20483, 5, 3)
>>> IndexKeys("fptrack:works:sh").params(0)
'fptrack:works:sh:{000d}:params'
"""

from __future__ import annotations

from binascii import crc_hqx
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import numpy as np

from fingerprint.hashing import fmix64

LAYOUT_VERSION = 2
"""Layout 2: every index key carries a group's hash tag (layout 1: no tags)."""
INDEX_FORMAT = 3
"""What the indexes hold for an owner: bumped whenever their records, keys or parameters
change. A tag group's marker names it (:meth:`Keys.marker`), so that the markers of another
format are not this code's: after an upgrade every group reads as lost, and the first
process to need the indexes (a worker, the heal job) rebuilds them from the store, with no
command (:mod:`matcher.index.integrity`). 3: 6-byte postings, one anchored-window dna in
two, the work segments' simhash tables keyed by fewer bits (2026-12-08); before, no format
in the marker's name."""
TAG_GROUPS = 32
HASH_SLOTS = 16384
SMALL_BATCH = 16
TAG_CHARS = 6
"""A tag is ``{`` + four hex digits + ``}``."""
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


def key_slot(key: bytes) -> int:
    """The Redis Cluster hash slot of ``key``: CRC16 (XMODEM) of its hash tag, mod 16384."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return crc_hqx(key, 0) % HASH_SLOTS


@cache
def group_tags(groups: int = TAG_GROUPS) -> tuple[str, ...]:
    """The hash tag of each group: the first four hex digits whose slot lies in the group's
    ``1 / groups`` of the slot range (so group ``g`` sits near slot ``g * 16384 / groups``)."""
    tags = []
    for g in range(groups):
        low, high = g * HASH_SLOTS // groups, (g + 1) * HASH_SLOTS // groups
        tag = next(f"{n:04x}" for n in range(1 << 16) if low <= key_slot(b"%04x" % n) < high)
        tags.append("{" + tag + "}")
    return tuple(tags)


def group_slot(group: int) -> int:
    """The Redis Cluster hash slot of every key of tag group ``group``."""
    return key_slot(group_tags()[group].encode())


@cache
def _tag_bytes() -> np.ndarray:
    """The tags as a (groups, 6) uint8 array, for building names with numpy."""
    joined = "".join(group_tags()).encode()
    return np.frombuffer(joined, dtype=np.uint8).reshape(TAG_GROUPS, TAG_CHARS)


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def hex_names(
    head: str, groups: np.ndarray, tail: str, fields: list[tuple[np.ndarray, int]]
) -> list[bytes]:
    """``head + tag(group) + tail`` and the fields in fixed-width hex joined by ``:``.

    Built with numpy, one row per name (a query batch names thousands of buckets).

    >>> hex_names("i:", np.array([0]), ":b:", [(np.array([1]), 1), (np.array([0xBEEF]), 4)])
    [b'i:{000d}:b:1:beef']
    """
    head_b, tail_b = head.encode(), tail.encode()
    if len(groups) <= SMALL_BATCH:  # a single query's few names: bytes formatting is faster
        tags = [t.encode() for t in group_tags()]
        columns = [np.asarray(v).tolist() for v, _ in fields]
        return [
            head_b
            + tags[g]
            + tail_b
            + b":".join(b"%0*x" % (d, row[i]) for row, (_, d) in zip(columns, fields, strict=True))
            for i, g in enumerate(np.asarray(groups).tolist())
        ]
    width = len(head_b) + TAG_CHARS + len(tail_b) + sum(d for _, d in fields) + len(fields) - 1
    chars = np.empty((len(groups), width), dtype=np.uint8)
    at = len(head_b)
    chars[:, :at] = np.frombuffer(head_b, dtype=np.uint8)
    chars[:, at : at + TAG_CHARS] = _tag_bytes()[np.asarray(groups, dtype=np.int64)]
    at += TAG_CHARS
    chars[:, at : at + len(tail_b)] = np.frombuffer(tail_b, dtype=np.uint8)
    at += len(tail_b)
    for i, (values, digits) in enumerate(fields):
        if i:
            chars[:, at] = ord(":")
            at += 1
        values = np.asarray(values).astype(np.uint64)
        for d in range(digits):
            chars[:, at + d] = _HEX[(values >> np.uint64(4 * (digits - 1 - d))) & np.uint64(15)]
        at += digits
    return chars.view(f"S{width}").ravel().tolist()


def glob_escape(text: str) -> str:
    """``text`` with the glob characters of Redis MATCH patterns escaped."""
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


@dataclass(frozen=True)
class IndexKeys:
    """The keys of one index (``base``: ``{prefix}:works:sh`` ...), per tag group."""

    base: str

    def tagged(self, group: int) -> str:
        """The head every key of ``group`` starts with."""
        return f"{self.base}:{group_tags()[group]}"

    def params(self, group: int) -> str:
        return f"{self.tagged(group)}:params"

    def records(self, group: int) -> str:
        return f"{self.tagged(group)}:records"

    def version(self, group: int) -> str:
        return f"{self.tagged(group)}:ver"

    def split(self, group: int) -> str:
        return f"{self.tagged(group)}:split"

    def buckets(self, groups: np.ndarray, fields: list[tuple[np.ndarray, int]]) -> list[bytes]:
        """Bucket names: ``{base}:{tag}:b:`` and the fields in fixed-width hex."""
        return hex_names(f"{self.base}:", groups, ":b:", fields)

    @property
    def bucket_head_chars(self) -> int:
        """Length of ``{base}:{tag}:b:``, the same for every group."""
        return len(self.base) + 1 + TAG_CHARS + 3

    @property
    def everything(self) -> str:
        """A SCAN pattern of every key of the index."""
        return f"{glob_escape(self.base)}:*"

    @property
    def bucket_pattern(self) -> str:
        """A SCAN pattern of every bucket of the index."""
        return f"{glob_escape(self.base)}:*:b:*"

    @property
    def legacy_params(self) -> str:
        """The parameters key of layout 1 (no tags): present means a rebuild is due."""
        return f"{self.base}:params"


def simhash_keys(prefix: str) -> IndexKeys:
    """The keys of the simhash index under ``prefix`` (:mod:`matcher.index.simhash_index`)."""
    return IndexKeys(f"{prefix}:sh")


def window_keys(prefix: str) -> IndexKeys:
    """The keys of the postings index under ``prefix`` (:mod:`matcher.index.window_index`)."""
    return IndexKeys(f"{prefix}:win")


def segment_group(owner: int) -> int:
    """The tag group of a segment's verification data: spread by a hash of the owner id."""
    return int(fmix64(np.array([owner], dtype=np.uint64))[0] % np.uint64(TAG_GROUPS))


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

    def simhash(self, side: str) -> IndexKeys:
        """The simhash index of one side (``self.works`` or ``self.pages``)."""
        return simhash_keys(side)

    def windows(self, side: str) -> IndexKeys:
        """The postings index of one side."""
        return window_keys(side)

    def segment(self, owner: int) -> str:
        """A work segment's verification data (:func:`matcher.matching.prepared.segment_blob`)."""
        return f"{self.prefix}:works:anchors:{group_tags()[segment_group(owner)]}:{owner}"

    @property
    def segment_pattern(self) -> str:
        """A SCAN pattern of every segment's verification data."""
        return f"{self.prefix}:works:anchors:*"

    @property
    def everything(self) -> str:
        """A SCAN pattern of every key under the prefix."""
        return f"{self.prefix}:*"

    def marker(self, group: int) -> str:
        """Tag group ``group``'s marker: a token written when the group's part of every
        index was built or rebuilt, in the group's own hash slot, so it is lost with them
        (:mod:`matcher.index.integrity`)."""
        return f"{self.prefix}:index:{group_tags()[group]}:f{INDEX_FORMAT}:marker"

    def group_heads(self, group: int, kinds: Iterable[str] = ("work", "page")) -> list[str]:
        """What every index key of tag group ``group`` starts with, for the sides ``kinds``
        (``work``: with the segments' verification data), and the group's markers, of this
        format or another."""
        tag = group_tags()[group]
        heads = []
        for kind in kinds:
            side = self.works if kind == "work" else self.pages
            heads += [
                self.simhash(side).tagged(group) + ":",
                self.windows(side).tagged(group) + ":",
            ]
            if kind == "work":
                heads.append(f"{self.prefix}:works:anchors:{tag}:")
        return [*heads, f"{self.prefix}:index:{tag}:"]

    @property
    def index_pattern(self) -> str:
        """A SCAN pattern of the keys of every index (and of nothing else under the prefix)."""
        return f"{glob_escape(self.prefix)}:*{{????}}*"

    def page_lock(self, seq: int) -> str:
        """Held while a page (and the split chapter it belongs to) is matched and written."""
        return f"{self.prefix}:lock:page:{seq}"

    def api_rate(self, who: str, window: int) -> str:
        """API requests of one user in one rate window (:mod:`admin.web.rate_limit`)."""
        return f"{self.prefix}:api-rate:{who}:{window}"

    @property
    def redbeat(self) -> str:
        """Prefix of the beat schedule entries (redbeat's ``redbeat_key_prefix``)."""
        return f"{self.prefix}:redbeat:"

    def crawl(self, site: str) -> CrawlKeys:
        """The keys of one site's crawl frontier (:mod:`crawler.frontier`)."""
        return CrawlKeys(f"{self.prefix}:crawl:{site}", f"{self.prefix}:lock:crawl:{site}")

    def starting(self, service: str, host: str, pid: int) -> str:
        """Set by a service (``worker``, ``beat``) as it starts, until it is up or its grace
        ends (``fptrack check`` says ``starting`` meanwhile)."""
        return f"{self.prefix}:starting:{service}:{host}:{pid}"

    def starting_pattern(self, service: str) -> str:
        """A SCAN pattern of the :meth:`starting` keys of ``service``."""
        return f"{glob_escape(self.prefix)}:starting:{glob_escape(service)}:*"

    @property
    def crawl_frontiers(self) -> str:
        """A set of the sites whose crawl frontier holds an unfinished run."""
        return f"{self.prefix}:crawl-runs"

    @property
    def task_events(self) -> str:
        """A hash of task events counted by the workers, ``<event>|<task name>`` -> count
        (``retry``, ``failure``), for the admin's ``/metrics`` (:mod:`admin.metrics`)."""
        return f"{self.prefix}:metrics:tasks"

    @property
    def kept_failures(self) -> str:
        """A list of failure records MongoDB could not take, JSON, oldest first, until it
        can (:mod:`matcher.worker.kept_failures`)."""
        return f"{self.prefix}:failures:kept"


CELERY_PRIORITY_SEP = "\x06\x16"
"""kombu's Redis transport: a queue's messages of priority ``p`` > 0 wait in the list
``<queue>\\x06\\x16<p>`` (its ``sep``), those of priority 0 in ``<queue>``."""
CELERY_PRIORITY_STEPS = (0, 3, 6, 9)
"""kombu's default ``priority_steps``."""
CELERY_UNACKED = "unacked"
"""kombu's hash of the messages delivered to workers and not yet acknowledged."""


def celery_queue_keys(queue: str) -> list[str]:
    """The broker's lists holding the messages of Celery queue ``queue`` (kombu's Redis
    transport, no ``global_keyprefix``): one per priority step.

    >>> celery_queue_keys("fptrack")[:2]
    ['fptrack', 'fptrack\\x06\\x163']
    """
    return [queue if p == 0 else f"{queue}{CELERY_PRIORITY_SEP}{p}" for p in CELERY_PRIORITY_STEPS]


@dataclass(frozen=True)
class CrawlKeys:
    """The keys of one site's crawl frontier, shared by every crawler process of the site.

    >>> keys = Keys("fptrack").crawl("pirate")
    >>> keys.queue, keys.seen, keys.run
    ('fptrack:crawl:pirate:queue', 'fptrack:crawl:pirate:seen', 'fptrack:crawl:pirate:run')
    >>> keys.inflight(1), keys.slot_lock(1)
    ('fptrack:crawl:pirate:inflight:1', 'fptrack:lock:crawl:pirate:1')
    >>> keys.recrawl_lock
    'fptrack:lock:crawl:pirate:recrawl'
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

    @property
    def recrawl_lock(self) -> str:
        """The lease of the site's incremental crawl (a redis-py ``Lock``): one at a time."""
        return f"{self.lock_base}:recrawl"
