"""Helpers of the crawler suite: a recording stand-in for ``matcher.worker.ingest.Ingest``."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Any

from matcher.pages import CrawledPage


@dataclass(frozen=True)
class Recorded:
    """What :meth:`RecordingIngest.page` returns: the state an ``Ingest`` would report."""

    page_id: str
    state: str
    enqueued: bool = True


@dataclass
class RecordingIngest:
    """A stand-in for ``matcher.worker.ingest.Ingest``: records every page handed to it."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    fail_urls: dict[str, Exception] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    batches: list[list[str]] = field(default_factory=list)

    def page(self, page: CrawledPage) -> Recorded:
        fields = dataclasses.asdict(page)
        if fields["url"] in self.fail_urls:
            raise self.fail_urls[fields["url"]]
        with self.lock:
            self.calls.append(fields)
            return Recorded(page_id=str(len(self.calls)), state="new")

    def pages(self, pages: list[CrawledPage]) -> list[Recorded]:
        """Pages stored as one batch (recorded in :attr:`batches`): the first page that
        fails fails the batch, as one bulk write would."""
        with self.lock:
            self.batches.append([page.url for page in pages])
        for page in pages:
            if page.url in self.fail_urls:
                raise self.fail_urls[page.url]
        return [self.page(page) for page in pages]

    def by_url(self) -> dict[str, dict[str, Any]]:
        """The recorded pages keyed by URL (each URL must have been ingested once)."""
        urls = [c["url"] for c in self.calls]
        assert len(urls) == len(set(urls)), f"a page was ingested twice: {urls}"
        return {c["url"]: c for c in self.calls}


def parsed(callback_output: Any) -> list[Any]:
    """Everything an (async) spider callback yields, driven on the shared reactor (the
    spider's reads settle there)."""
    from scrapy.utils.defer import deferred_from_coro

    from crawler import reactor

    if not hasattr(callback_output, "__aiter__"):
        return list(callback_output)

    async def collect() -> list[Any]:
        return [out async for out in callback_output]

    return reactor.run_in_reactor(lambda: deferred_from_coro(collect()), timeout=60)
