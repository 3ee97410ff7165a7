"""A site's crawl frontier in Redis, shared by every crawler process of the site.

Several crawler processes, on any machines, crawl one site together: they take requests
from one queue and check every new link against one dupefilter, both in the standalone
Redis of ``FPTRACK_REDIS_URL`` under the keys :class:`matcher.keys.CrawlKeys` names. The
frontier is scrapy-redis' (:class:`crawler.scheduler.FrontierScheduler` extends its
``Scheduler``): its priority queue (a sorted set of serialized requests; callbacks by
name, ``meta`` kept, so the spider's own depth and its next/previous page links at the
same depth survive), its request fingerprints and dupefilter. What fptrack adds makes it
safe against a crash:

- **Leases.** A process crawls a site only while it holds one of the site's ``crawlers``
  slots, a redis-py :class:`~redis.lock.Lock` that expires after ``lease_seconds``
  (``FPTRACK_CRAWL_LEASE``, default 120 s) and is renewed every third of that by a thread
  (:class:`crawler.lease.CrawlLease`). A process that takes a slot finds the run under way and joins
  it (its start requests are dupes by then), or starts a new run.
- **In-flight requests.** Taking a request from the queue moves it, in one Lua script, to
  the process's in-flight set; it leaves that set only once Scrapy is done with it: its
  callback's requests are in the queue and its item went through the pipelines. A new
  link is added to the dupefilter and the queue in one script too. So a process killed at
  any instant (SIGKILL, a lost machine) loses nothing: when its lease has expired, another
  process of the run (checking with every renewal) or the next one to take its slot puts
  its in-flight requests back in the queue, and they are fetched again. A request that was
  being downloaded when its process died is thus fetched twice; no other is.
- **Run lifetime.** A process whose queue is empty waits while other processes still hold
  requests in flight (they may find more links). When the queue and every in-flight set
  are empty the run is over: the process that sees it first deletes the queue, the
  dupefilter and the run (one script), so the next crawl of the site starts again from the
  start URLs and fetches every page again. A crawl stopped early (timeout, SIGTERM,
  ``--max-pages`` excepted) puts its in-flight requests back and keeps the frontier: the
  next crawl of the site resumes it. Reaching ``max_pages`` (which applies to each
  process) ends the run for every process.

Requests are stored as JSON (:data:`REQUEST_CODEC`), never pickled: whoever can write to
Redis must not be able to run code in the crawlers. This module holds the codec and
:class:`Frontier`, the frontier's Redis operations (each one atomic);
:mod:`crawler.lease` the leases, :mod:`crawler.scheduler` the Scrapy scheduler.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import redis

from matcher.keys import CrawlKeys
from matcher.sites.site_config import MAX_CRAWLERS

STAT = "fptrack/frontier/"
RUN_OVER = -1

# KEYS: run, seen, queue. ARGV: run id, fingerprint, score, data, "1" to filter dupes.
_PUSH = """
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return -1 end
if ARGV[5] == '1' and redis.call('SADD', KEYS[2], ARGV[2]) == 0 then return 0 end
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
return 1
"""
# KEYS: run, queue, in-flight set. ARGV: run id. The request with the lowest score.
_POP = """
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return -1 end
local popped = redis.call('ZPOPMIN', KEYS[2])
if #popped == 0 then return false end
redis.call('ZADD', KEYS[3], popped[2], popped[1])
return popped[1]
"""
# KEYS: queue, in-flight set. Moves every in-flight request back, keeping its priority.
_REQUEUE = """
local n = redis.call('ZCARD', KEYS[2])
if n > 0 then
  redis.call('ZUNIONSTORE', KEYS[1], 2, KEYS[1], KEYS[2], 'AGGREGATE', 'MIN')
  redis.call('DEL', KEYS[2])
end
return n
"""
# KEYS: run, frontiers set. ARGV: new run id, start time, slot, token, site.
_JOIN = """
redis.call('HSETNX', KEYS[1], 'id', ARGV[1])
redis.call('HSETNX', KEYS[1], 'started_at', ARGV[2])
redis.call('HSET', KEYS[1], 'slot:' .. ARGV[3], ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
return redis.call('HMGET', KEYS[1], 'id', 'started_at')
"""
# KEYS: run, queue, seen, frontiers set, in-flight sets... ARGV: run id, site, "1" to end
# the run even if requests are left. 1: the run is over now; 0: requests are left;
# -1: the run was over already.
_FINISH = """
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return -1 end
if ARGV[3] ~= '1' then
  for i = 5, #KEYS do
    if redis.call('ZCARD', KEYS[i]) > 0 then return 0 end
  end
  if redis.call('ZCARD', KEYS[2]) > 0 then return 0 end
end
for i = 5, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('SREM', KEYS[4], ARGV[2])
return 1
"""


class RequestCodec:
    """Scrapy's request dicts (``Request.to_dict``) as JSON; bytes and bytes keys tagged.

    >>> codec = RequestCodec()
    >>> codec.loads(codec.dumps({"body": b"\\x00", "headers": {b"Accept": [b"*/*"]}}))
    {'body': b'\\x00', 'headers': {b'Accept': [b'*/*']}}
    """

    def dumps(self, obj: Any) -> bytes:
        """JSON bytes of ``obj`` (dicts, lists, str, bytes, numbers, booleans, None)."""
        return json.dumps(_tag(obj), ensure_ascii=False, separators=(",", ":")).encode()

    def loads(self, data: bytes | str) -> Any:
        """The object :meth:`dumps` encoded."""
        return _untag(json.loads(data))


def _tag(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return {"$b": base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in obj):
            return {k: _tag(v) for k, v in obj.items()}
        return {"$d": [[_tag(k), _tag(v)] for k, v in obj.items()]}
    if isinstance(obj, list | tuple):
        return [_tag(v) for v in obj]
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    raise TypeError(f"a request holds a {type(obj).__name__}, which the frontier cannot store")


def _untag(obj: Any) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"$b"}:
            return base64.b64decode(obj["$b"])
        if set(obj) == {"$d"}:
            return {_untag(k): _untag(v) for k, v in obj["$d"]}
        return {k: _untag(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_untag(v) for v in obj]
    return obj


REQUEST_CODEC = RequestCodec()


class Frontier:
    """One site's frontier: the Redis operations on its keys, each one atomic."""

    def __init__(self, client: redis.Redis, keys: CrawlKeys, frontiers_key: str, site: str):
        self.client = client
        self.keys = keys
        self.frontiers_key = frontiers_key
        self.site = site
        self._push = client.register_script(_PUSH)
        self._pop = client.register_script(_POP)
        self._requeue = client.register_script(_REQUEUE)
        self._join = client.register_script(_JOIN)
        self._finish = client.register_script(_FINISH)

    def join(self, slot: int, token: str) -> tuple[str, str, bool]:
        """Join the site's run, or start one: ``(run id, started at, resumed)``."""
        new_id = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{token[:8]}"
        started = datetime.now(UTC).isoformat()
        run_id, started_at = self._join(
            keys=[self.keys.run, self.frontiers_key],
            args=[new_id, started, slot, token, self.site],
        )
        run_id = run_id.decode()
        return run_id, started_at.decode(), run_id != new_id

    def push(self, run_id: str, fingerprint: str, score: float, data: bytes, dupes: bool) -> int:
        """Queue a request: 1; 0 when ``dupes`` filters it (seen in this run); -1 run over."""
        return int(
            self._push(
                keys=[self.keys.run, self.keys.seen, self.keys.queue],
                args=[run_id, fingerprint, score, data, "1" if dupes else "0"],
            )
        )

    def pop(self, run_id: str, slot: int) -> bytes | int | None:
        """The next request, moved to ``slot``'s in-flight set; None: empty; -1: run over."""
        out = self._pop(
            keys=[self.keys.run, self.keys.queue, self.keys.inflight(slot)], args=[run_id]
        )
        return out if out is None or isinstance(out, bytes) else int(out)

    def ack(self, slot: int, data: list[bytes]) -> None:
        """``slot`` is done with these requests."""
        if data:
            self.client.zrem(self.keys.inflight(slot), *data)

    def requeue(self, slot: int) -> int:
        """Put ``slot``'s in-flight requests back in the queue; how many there were."""
        return int(self._requeue(keys=[self.keys.queue, self.keys.inflight(slot)]))

    def finish(self, run_id: str, force: bool = False) -> int:
        """End the run if nothing is queued or in flight (or ``force``): see ``_FINISH``."""
        keys = [self.keys.run, self.keys.queue, self.keys.seen, self.frontiers_key]
        keys += [self.keys.inflight(slot) for slot in range(MAX_CRAWLERS)]
        return int(self._finish(keys=keys, args=[run_id, self.site, "1" if force else "0"]))

    def queued(self) -> int:
        """Requests waiting in the queue."""
        return int(self.client.zcard(self.keys.queue))

    def run_id(self) -> str | None:
        """The id of the run under way, if any."""
        value = self.client.hget(self.keys.run, "id")
        return value.decode() if value else None

    def leave(self, slot: int, token: str) -> None:
        """Forget that ``token`` holds ``slot`` (it stopped)."""
        if self.client.hget(self.keys.run, f"slot:{slot}") == token.encode():
            self.client.hdel(self.keys.run, f"slot:{slot}")

    def abandoned(self, own_slot: int) -> list[tuple[int, str]]:
        """Slots a process joined the run in or left requests in flight, lease expired."""
        pipe = self.client.pipeline(transaction=False)
        slots = [s for s in range(MAX_CRAWLERS) if s != own_slot]
        for slot in slots:
            pipe.exists(self.keys.slot_lock(slot))
            pipe.zcard(self.keys.inflight(slot))
            pipe.hget(self.keys.run, f"slot:{slot}")
        replies = pipe.execute()
        out = []
        for i, slot in enumerate(slots):
            locked, inflight, token = replies[3 * i : 3 * i + 3]
            if not locked and (inflight or token):
                out.append((slot, token.decode() if token else ""))
        return out
