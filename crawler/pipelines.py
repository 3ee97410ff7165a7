"""The item pipeline: every extracted page into the store, and a task for each new text.

:class:`IngestPipeline` hands each :class:`~crawler.items.PageItem` to an *ingest*: any
object with ``.page(item)`` returning something with a ``state`` (``new``, ``changed`` or
``unchanged``), such as :class:`matcher.ingest.Ingest`.

- In-process runs (tests, the embedded scan) put their ingest in the ``FPTRACK_INGEST``
  setting; the pipeline uses it as is and never closes it.
- Otherwise (production) :meth:`IngestPipeline.open_spider` builds one from the
  :class:`matcher.settings.Settings` that the crawl's entry point read and put in the
  ``FPTRACK_SETTINGS`` setting (:mod:`crawler.run`): a :class:`matcher.store.Store` on
  ``mongo_uri`` / ``mongo_db``, and an enqueue that sends the Celery task
  ``fptrack.process_page`` by name through an app of :func:`matcher.celery_app.make_app`
  (the worker code is never imported), and the evidence archive ``FPTRACK_ARCHIVE`` names
  (:meth:`matcher.store.Store.evidence_archive`). :meth:`IngestPipeline.close_spider` closes the
  MongoDB client.

A :class:`matcher.pages.GonePage` (a URL that answered 404 or 410) goes to the ingest's
``gone`` when it has one: ``fptrack/gone`` counts the stored pages so found removed. A
:class:`matcher.pages.UnchangedPage` (a stored page that answered 304 to an incremental
crawl's conditional request) goes to its ``unchanged`` when it has one (the page's fetch time
moves on; nothing is matched again).

Stats: ``fptrack/ingested/<state>`` per page; ``fptrack/ingest_errors`` when the store is
unavailable (:class:`matcher.errors.Retryable`: the page is dropped and crawled again next
run); ``fptrack/ingest_rejected`` when the backend refuses the page
(another :class:`matcher.errors.MatcherError`, e.g. a text too long); and
``fptrack/enqueue_errors`` when a task could not be sent (the page stays stored as
unprocessed and ``Ingest.requeue_pending`` sends it again). None of these stops the crawl.
The ingest runs in the reactor thread, one page at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from crawler.items import PageItem
from crawler.settings import INGEST_SETTING, SETTINGS_SETTING, ByReference
from matcher.errors import MatcherError, Retryable
from matcher.pages import GonePage, UnchangedPage

logger = logging.getLogger(__name__)

PROCESS_PAGE_TASK = "fptrack.process_page"


class PageIngest(Protocol):
    """What the pipeline needs: store one page, say whether its text is new."""

    def page(self, page: PageItem) -> Any: ...


class IngestUnavailable(RuntimeError):
    """The production ingest cannot be built (missing module or bad settings)."""


class IngestPipeline:
    """Stores each page through an ingest (see the module docstring)."""

    def __init__(self, stats: Any, ingest: PageIngest | None = None, settings: Any = None) -> None:
        self.stats = stats
        self.ingest = ingest
        self.settings = settings
        self._owned_client: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IngestPipeline:
        """The pipeline, with the in-process ingest or the deployment's settings, read once
        from the crawl's settings."""
        ingest = crawler.settings.get(INGEST_SETTING)
        if isinstance(ingest, ByReference):
            ingest = ingest.value
        if ingest is not None and not callable(getattr(ingest, "page", None)):
            raise TypeError(f"{INGEST_SETTING} must have a .page(...) method, got {ingest!r}")
        settings = crawler.settings.get(SETTINGS_SETTING)
        if isinstance(settings, ByReference):
            settings = settings.value
        return cls(crawler.stats, ingest, settings)

    def open_spider(self) -> None:
        """Build the production ingest unless one was given."""
        if self.ingest is None:
            if self.settings is None:
                raise IngestUnavailable(
                    f"neither {INGEST_SETTING} nor {SETTINGS_SETTING} is set: nothing to store"
                    " pages in"
                )
            self.ingest, self._owned_client = production_ingest(self.stats, self.settings)

    def close_spider(self) -> None:
        """Close the MongoDB client the pipeline opened (never a given ingest's)."""
        if self._owned_client is not None:
            self._owned_client.close()
            self._owned_client = None
            self.ingest = None

    def process_item(
        self, item: PageItem | GonePage | UnchangedPage
    ) -> PageItem | GonePage | UnchangedPage:
        """Store one page (or that a stored one is gone, or unchanged); a store outage or a
        refused page drops it, counted."""
        if self.ingest is None:  # pragma: no cover - open_spider always runs first
            raise RuntimeError("IngestPipeline.process_item before open_spider")
        if isinstance(item, UnchangedPage):
            unchanged = getattr(self.ingest, "unchanged", None)
            try:
                if unchanged is not None:
                    unchanged(item)
            except Retryable as exc:
                self.stats.inc_value("fptrack/ingest_errors")
                logger.warning("store unavailable, 304 not recorded: %s: %s", item.url, exc)
            return item
        if isinstance(item, GonePage):
            gone = getattr(self.ingest, "gone", None)
            try:
                if gone is not None and gone(item):
                    self.stats.inc_value("fptrack/gone")
            except Retryable as exc:
                self.stats.inc_value("fptrack/ingest_errors")
                logger.warning("store unavailable, removal not recorded: %s: %s", item.url, exc)
            return item
        try:
            result = self.ingest.page(item)
        except Retryable as exc:
            self.stats.inc_value("fptrack/ingest_errors")
            logger.warning("store unavailable, page dropped: %s: %s", item.url, exc)
            raise DropItem(f"store unavailable: {exc}") from exc
        except MatcherError as exc:
            self.stats.inc_value("fptrack/ingest_rejected")
            logger.warning("page refused by the backend: %s: %s", item.url, exc)
            raise DropItem(f"page refused: {exc}") from exc
        state = getattr(result, "state", None) or "unknown"
        self.stats.inc_value(f"fptrack/ingested/{state}")
        return item


def production_ingest(stats: Any, settings: Any) -> tuple[PageIngest, Any]:
    """The ingest of a production crawl on ``settings`` (:class:`matcher.settings.Settings`)
    and the MongoDB client to close after it."""
    from matcher.ingest import Ingest
    from matcher.store import Store

    enqueue = celery_enqueue(stats, settings)
    store = Store.connect(settings.mongo_uri, settings.mongo_db)
    archive = store.evidence_archive(settings.archive)
    return Ingest(store, enqueue, archive=archive), store.client


def celery_enqueue(stats: Any, settings: Any) -> Callable[[str], None]:
    """An enqueue sending ``fptrack.process_page`` by name; failures are logged and counted."""
    try:
        from matcher.celery_app import make_app
    except ImportError as exc:
        raise IngestUnavailable(
            f"cannot send {PROCESS_PAGE_TASK} tasks: matcher.celery_app is not importable ({exc})"
        ) from exc
    app = make_app(settings)

    def enqueue(page_id: str) -> None:
        try:
            app.send_task(PROCESS_PAGE_TASK, args=[page_id])
        except Exception as exc:  # the broker's errors (kombu, redis) have no common base
            stats.inc_value("fptrack/enqueue_errors")
            logger.warning("could not enqueue %s for page %s: %s", PROCESS_PAGE_TASK, page_id, exc)

    return enqueue
