"""A crawl's queue of requests in memory, each request packed into bytes while it waits.

A request waiting in Scrapy's memory queue costs about 2 kB: the :class:`scrapy.Request`
object, its ``Referer`` header as a ``Headers`` dictionary, the entry Scrapy's request
fingerprinter caches for it, and Scrapy's live-reference tracking. A crawl holds up to
``FPTRACK_MAX_PENDING`` (100,000) of them: about 200 MB, the largest part of a crawl's
memory on a site whose every page brings thousands of new links (measured on the link
flood of :mod:`tests.servers.hostile_site`). :class:`PackedLifoQueue` (``SCHEDULER_MEMORY_QUEUE``)
keeps each one as the pickle of Scrapy's own ``Request.to_dict``, about 300 bytes, and makes
the request again when it is taken (``request_from_dict``, the disk queues' way): about
90 µs a request, and a waiting request costs about 500 bytes with its entry in the
duplicates filter (2.2 kB in Scrapy's queue): 100,000 of them about 50 MB. Last in, first out, as
Scrapy's ``LifoMemoryQueue``. A request that cannot be packed (a callback that is no method
of the spider, meta that does not pickle) waits as it is.
"""

from __future__ import annotations

import pickle
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.utils.request import request_from_dict


class PackedLifoQueue:
    """Scrapy's memory queue protocol (``push``, ``pop``, ``peek``, ``close``, ``len``) over
    packed requests (see the module docstring)."""

    def __init__(self, crawler: Crawler, key: str = "") -> None:
        self.spider = crawler.spider
        self.key = key
        self._items: list[bytes | Request] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler, key: str = "", *args: Any, **kwargs: Any) -> Any:
        return cls(crawler, key)

    def push(self, request: Request) -> None:
        """Keep ``request``, packed when it can be."""
        try:
            packed: bytes | Request = pickle.dumps(
                request.to_dict(spider=self.spider), protocol=pickle.HIGHEST_PROTOCOL
            )
        except (ValueError, TypeError, AttributeError, pickle.PicklingError):
            packed = request
        self._items.append(packed)

    def pop(self) -> Request | None:
        """The request pushed last (None when there is none)."""
        return self._unpacked(self._items.pop()) if self._items else None

    def peek(self) -> Request | None:
        """What :meth:`pop` would return, left in the queue."""
        return self._unpacked(self._items[-1]) if self._items else None

    def close(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def _unpacked(self, item: bytes | Request) -> Request:
        if isinstance(item, Request):
            return item
        return request_from_dict(pickle.loads(item), spider=self.spider)
