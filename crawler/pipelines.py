"""The item pipeline: every extracted page into the store, and a task for each new text.

:class:`IngestPipeline` hands each :class:`~crawler.items.PageItem` to an *ingest*: any
object with ``.page(item)`` returning something with a ``state`` (``new``, ``changed`` or
``unchanged``), such as :class:`matcher.worker.ingest.Ingest`.

- In-process runs (tests, the embedded scan) put their ingest in the ``FPTRACK_INGEST``
  setting; the pipeline uses it as is and never closes it.
- Otherwise (production) :meth:`IngestPipeline.open_spider` builds one from the
  :class:`matcher.settings.Settings` that the crawl's entry point read and put in the
  ``FPTRACK_SETTINGS`` setting (:mod:`crawler.run`): a :class:`matcher.store.Store` on
  ``mongo_uri`` / ``mongo_db``, and an enqueue that sends the Celery tasks by name through
  an app of :func:`matcher.worker.celery_app.make_app` (the worker code is never imported), the
  pages stored within :data:`SEND_LINGER` of each other as one ``fptrack.process_pages``
  (:class:`CelerySender`), and the evidence archive ``FPTRACK_ARCHIVE`` names
  (:meth:`matcher.store.Store.evidence_archive`). :meth:`IngestPipeline.close_spider` sends
  the tasks still waiting (the ingest's ``flush``, any ingest's) and closes the MongoDB
  client.

A :class:`matcher.pages.PageAlias` (another URL of a page already stored) goes to the
ingest's ``alias`` when it has one (``fptrack/aliases/recorded``).

The crawl's budget is pages: with ``FPTRACK_MAX_PAGES`` (the site's ``max_pages``) above 0
the crawl closes (``closespider_itemcount``, a budget stop) once that many distinct pages
are stored (``fptrack/stored_pages``); aliases, dead links and link lists never count.

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
With ``FPTRACK_INGEST_LANES`` above 0 (default 4) and an ingest that says it is
``thread_safe`` (:class:`matcher.worker.ingest.Ingest` on a pymongo store: the production ingest,
not the embedded scan's mongomock one), the store calls run in that many threads, in order
per page (:mod:`crawler.ingest_lanes`), the pages waiting in a lane stored in one batch (the
ingest's ``pages``), and the crawl goes on meanwhile. An ingest that is not ``thread_safe``
but has ``pages`` (the embedded scan's) stores in the reactor thread, in batches of the
pages that waited up to :data:`crawler.ingest_lanes.LINGER` (at most
:data:`~crawler.ingest_lanes.BATCH`, and never more than the page budget has left:
:class:`crawler.ingest_lanes.ReactorBatches`); with ``FPTRACK_INGEST_LANES`` 0, in the
reactor thread, one page at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from typing import Any, Protocol

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem
from scrapy.utils.defer import maybe_deferred_to_future

from crawler.ingest_lanes import IngestLanes, ReactorBatches
from crawler.items import PageItem
from crawler.reactor import deferred_from_future
from crawler.settings import INGEST_SETTING, SETTINGS_SETTING, ByReference
from matcher.errors import MatcherError, Retryable
from matcher.pages import GonePage, PageAlias, UnchangedPage, fetched_url

logger = logging.getLogger(__name__)

PROCESS_PAGE_TASK = "fptrack.process_page"
PROCESS_PAGES_TASK = "fptrack.process_pages"


class PageIngest(Protocol):
    """What the pipeline needs: store one page, say whether its text is new."""

    def page(self, page: PageItem) -> Any: ...


class IngestUnavailable(RuntimeError):
    """The production ingest cannot be built (missing module or bad settings)."""


_MARKS: tuple[tuple[type, str, str, str], ...] = (
    (PageAlias, "alias", "fptrack/aliases/recorded", "alias"),
    (UnchangedPage, "unchanged", "", "304"),
    (GonePage, "gone", "fptrack/gone", "removal"),
)
"""Items that mark a stored page rather than store one: the ingest's method, the stat a
true answer counts, and what the warning says was not recorded."""


def _mark_of(item: Any) -> tuple[type, str, str, str] | None:
    """``item``'s entry of :data:`_MARKS`; None for a page to store."""
    return next((mark for mark in _MARKS if isinstance(item, mark[0])), None)


class IngestPipeline:
    """Stores each page through an ingest (see the module docstring)."""

    def __init__(
        self,
        stats: Any,
        ingest: PageIngest | None = None,
        settings: Any = None,
        max_pages: int = 0,
        crawler: Crawler | None = None,
        lanes: int = 0,
    ) -> None:
        self.stats = stats
        self.ingest = ingest
        self.settings = settings
        self.max_pages = max_pages
        self.crawler = crawler
        self._owned_store: Any = None
        self._stored = 0
        self._pages: set[str] = set()  # ids of the pages stored by this crawl
        self.lane_count = lanes
        self._lanes: IngestLanes | None = None
        self._batches: ReactorBatches | None = None

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
        max_pages = crawler.settings.getint("FPTRACK_MAX_PAGES", 0)
        lanes = crawler.settings.getint("FPTRACK_INGEST_LANES", 0)
        return cls(crawler.stats, ingest, settings, max_pages, crawler, lanes)

    def open_spider(self) -> None:
        """Build the production ingest unless one was given."""
        if self.ingest is None:
            if self.settings is None:
                raise IngestUnavailable(
                    f"neither {INGEST_SETTING} nor {SETTINGS_SETTING} is set: nothing to store"
                    " pages in"
                )
            self.ingest, self._owned_store = production_ingest(self.stats, self.settings)
        if self.lane_count > 0 and getattr(self.ingest, "thread_safe", False):
            self._lanes = IngestLanes(self.lane_count, self._store_many)
        elif self.lane_count > 0 and callable(getattr(self.ingest, "pages", None)):
            self._batches = ReactorBatches(self._store_counted, full=self._budget_reached)

    def _budget_reached(self, waiting: int) -> bool:
        """Whether ``waiting`` more pages would spend the rest of the page budget."""
        return self.max_pages > 0 and self._stored + waiting >= self.max_pages

    def close_spider(self) -> None:
        """Stop the lanes (their calls are done: Scrapy closes the pipelines after the last
        item); send the dashboard tallies gathered and close the MongoDB client the pipeline
        opened (never a given ingest's)."""
        if self._lanes is not None:
            self._lanes.close()
            self._lanes = None
        if self._batches is not None:
            self._batches.flush()
            self._batches = None
        flush = getattr(self.ingest, "flush", None)
        if callable(flush):
            flush()
        if self._owned_store is not None:
            self._owned_store.tallies.flush()
            self._owned_store.client.close()
            self._owned_store = None
            self.ingest = None

    def process_item(
        self, item: PageItem | GonePage | UnchangedPage | PageAlias
    ) -> PageItem | GonePage | UnchangedPage | PageAlias | Coroutine[Any, Any, Any]:
        """Store one page (or that a stored one is gone, or unchanged, or has another URL);
        a store outage or a refused page drops it, counted. With lanes, the store call runs
        on the page's lane and the item comes back when it is done (a coroutine)."""
        if self.ingest is None:  # pragma: no cover - open_spider always runs first
            raise RuntimeError("IngestPipeline.process_item before open_spider")
        if self._lanes is not None:
            # a download's parts on one lane, in order: its first part after the others
            return self._answered(item, self._lanes.submit(fetched_url(item.url), item))
        if self._batches is not None:
            return self._answered(item, self._batches.submit(item))
        return self._account(item, *self._store(item))

    async def _answered(self, item: Any, future: Future[Any]) -> Any:
        """``item`` accounted once its store call (on a lane, or in a batch) is done."""
        answer, error = await maybe_deferred_to_future(deferred_from_future(future))
        return self._account(item, answer, error)

    def _store(self, item: Any) -> tuple[Any, MatcherError | None]:
        """The ingest's call for ``item`` (in any thread): its answer, or the store's error."""
        assert self.ingest is not None
        mark = _mark_of(item)
        method = self.ingest.page if mark is None else getattr(self.ingest, mark[1], None)
        try:
            return (method(item) if method is not None else None), None
        except MatcherError as exc:
            return None, exc

    def _store_many(self, items: Sequence[Any]) -> list[tuple[Any, MatcherError | None]]:
        """:meth:`_store` of each item, in order (in a lane's thread): each run of pages
        between two marks stored in one batch by the ingest's ``pages`` when it has one; a
        batch the backend refuses is stored again page by page, to refuse only its page."""
        out: list[tuple[Any, MatcherError | None]] = []
        run: list[Any] = []
        for item in items:
            if _mark_of(item) is None:
                run.append(item)
                continue
            out += self._store_pages(run)
            run = []
            out.append(self._store(item))
        return out + self._store_pages(run)

    def _store_counted(self, items: Sequence[Any]) -> list[tuple[Any, MatcherError | None]]:
        """:meth:`_store_many` in the reactor thread, each page stored counted at once (so
        the budget closes the crawl before another page comes, as one page at a time)."""
        out = self._store_many(items)
        for item, (answer, error) in zip(items, out, strict=True):
            if error is None and _mark_of(item) is None:
                self._count_page(getattr(answer, "page_id", None) or item.url)
        return out

    def _store_pages(self, pages: list[Any]) -> list[tuple[Any, MatcherError | None]]:
        assert self.ingest is not None
        batch = getattr(self.ingest, "pages", None)
        if len(pages) < 2 or batch is None:
            return [self._store(page) for page in pages]
        try:
            return [(answer, None) for answer in batch(pages)]
        except Retryable as exc:
            return [(None, exc) for _ in pages]
        except MatcherError:
            return [self._store(page) for page in pages]

    def _account(self, item: Any, answer: Any, error: MatcherError | None) -> Any:
        """Count the store call's outcome (in the reactor thread); the item, or DropItem."""
        mark = _mark_of(item)
        if mark is not None:
            _, _, counted, lost = mark
            if isinstance(error, Retryable):
                self.stats.inc_value("fptrack/ingest_errors")
                url = getattr(item, "alias", None) or item.url
                logger.warning("store unavailable, %s not recorded: %s: %s", lost, url, error)
            elif error is not None:
                raise error
            elif answer and counted:
                self.stats.inc_value(counted)
            return item
        if isinstance(error, Retryable):
            self.stats.inc_value("fptrack/ingest_errors")
            logger.warning("store unavailable, page dropped: %s: %s", item.url, error)
            raise DropItem(f"store unavailable: {error}") from error
        if error is not None:
            self.stats.inc_value("fptrack/ingest_rejected")
            logger.warning("page refused by the backend: %s: %s", item.url, error)
            raise DropItem(f"page refused: {error}") from error
        state = getattr(answer, "state", None) or "unknown"
        self.stats.inc_value(f"fptrack/ingested/{state}")
        self._count_page(getattr(answer, "page_id", None) or item.url)
        return item

    def _count_page(self, page_id: str) -> None:
        """One more distinct page stored; at ``max_pages`` the crawl closes (a budget stop)."""
        if page_id in self._pages:
            return
        self._pages.add(page_id)
        self._stored += 1
        self.stats.inc_value("fptrack/stored_pages")
        if self.max_pages > 0 and self._stored == self.max_pages and self.crawler is not None:
            from scrapy.utils.defer import deferred_from_coro

            engine = self.crawler.engine
            if engine is not None:
                deferred_from_coro(engine.close_spider_async(reason="closespider_itemcount"))


def production_ingest(stats: Any, settings: Any) -> tuple[PageIngest, Any]:
    """The ingest of a production crawl on ``settings`` (:class:`matcher.settings.Settings`)
    and its store, whose tallies to send and client to close after it."""
    from matcher.store import Store

    store = Store.connect(settings.mongo_uri, settings.mongo_db)
    archive = store.evidence_archive(settings.archive)
    return celery_ingest(store, stats, settings, archive), store


def celery_ingest(store: Any, stats: Any, settings: Any, archive: Any = None) -> Any:
    """An :class:`matcher.worker.ingest.Ingest` on ``store`` sending each page's task through
    :func:`celery_enqueue`, the store gathering its dashboard tallies
    (``settings.tally_seconds``, :meth:`matcher.store.tallies.Sender.gather`)."""
    from matcher.worker.ingest import Ingest

    if settings.tally_seconds:
        store.tallies.gather(settings.tally_seconds)
    stamp = archive is not None and bool(settings.tsa_url)
    return Ingest(store, celery_enqueue(stats, settings), archive=archive, stamp=stamp)


SEND_BATCH = 32
"""At most this many pages' tasks are sent as one ``fptrack.process_pages``."""
SEND_LINGER = 0.25
"""Seconds a page's task waits for others to be sent with: a crawl stores a few pages at a
time, and the worker matches a batch's pages together (one read of them and their
neighbours, one write of their processed marks; :func:`matcher.worker.jobs.process_pages`)."""


class CelerySender:
    """The enqueue of :func:`celery_ingest`: the pages' tasks sent by name, those waiting
    together (up to :data:`SEND_BATCH` that came within :data:`SEND_LINGER` of the first) as
    one ``fptrack.process_pages``, a page alone as ``fptrack.process_page``, from a thread
    of its own (:class:`crawler.ingest_lanes.IngestLanes`, one lane). A send that fails is
    logged and counted (``fptrack/enqueue_errors``, a page each); its pages stay pending
    and beat's sweep sends them again (:func:`matcher.worker.jobs.requeue_pending`), as for a
    crawler killed while their tasks waited here."""

    def __init__(
        self, app: Any, stats: Any, batch: int = SEND_BATCH, linger: float = SEND_LINGER
    ) -> None:
        self._app = app
        self._stats = stats
        self._lane = IngestLanes(1, self._send, batch, linger)

    def __call__(self, page_id: str) -> None:
        self._lane.submit("", page_id)

    def flush(self) -> None:
        """Send the tasks waiting now."""
        self._lane.flush()

    def _send(self, page_ids: Sequence[str]) -> list[None]:
        name, args = (
            (PROCESS_PAGE_TASK, [page_ids[0]])
            if len(page_ids) == 1
            else (PROCESS_PAGES_TASK, [list(page_ids)])
        )
        try:
            self._app.send_task(name, args=args)
        except Exception as exc:  # the broker's errors (kombu, redis) have no common base
            self._stats.inc_value("fptrack/enqueue_errors", len(page_ids))
            logger.warning("could not enqueue %s for %d page(s): %s", name, len(page_ids), exc)
        return [None] * len(page_ids)


def celery_enqueue(stats: Any, settings: Any) -> CelerySender:
    """A :class:`CelerySender` on the app of ``settings``."""
    try:
        from matcher.worker.celery_app import make_app
    except ImportError as exc:
        raise IngestUnavailable(
            f"cannot send {PROCESS_PAGE_TASK} tasks:"
            f" matcher.worker.celery_app is not importable ({exc})"
        ) from exc
    return CelerySender(make_app(settings), stats)
