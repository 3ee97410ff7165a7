"""The embedded one-shot scan: the whole pipeline in one process, with no server.

``fptrack scan --works DIR --site URL ... --json OUT.json`` registers every work under DIR,
crawls each site (links within its host), matches every page and writes the contract's JSON
(see ``docs/design.md``). The store is mongomock (in memory); the indexes are on the Redis
server of ``FPTRACK_REDIS_URL`` when that is set (under a key prefix of their own, deleted
afterwards), else on fakeredis; Celery tasks run eagerly, in process; Scrapy runs in process.
The same code paths as the deployed system run: the crawler's item pipeline stores each page
and enqueues ``process_page``, which matches it and writes its match records. The pages
are stored in batches of those waiting (:class:`crawler.ingest_lanes.ReactorBatches`), and
a batch goes as one ``process_pages``, as a crawl's do in a deployment
(:func:`matcher.worker.jobs.process_pages`: one read of their pages, one write of their processed
marks).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from admin import scan_defaults
from admin.reading import WorkFile, iter_work_files
from matcher.errors import MatcherError, Retryable
from matcher.evidence.archive import Archive
from matcher.index.redis_clients import Patience, connect
from matcher.matching.engine import Engine
from matcher.pages import fetched_url, part_url
from matcher.settings import RedisTarget, Settings
from matcher.sites import crawl_runs
from matcher.sites.site_config import SiteConfig
from matcher.store.client import MEMORY_URI, client_of
from matcher.store.common import MAX_LIST
from matcher.worker.ingest import Ingest

T = TypeVar("T")
DEFAULT_MAX_PAGES = scan_defaults.MAX_PAGES
DEFAULT_MAX_DEPTH = scan_defaults.MAX_DEPTH
DEFAULT_OUTAGE_WAIT = scan_defaults.OUTAGE_WAIT
"""Seconds the scan waits, after its crawl, for a Redis that stopped answering: the pages
that met the outage are matched once it is back."""


@dataclass
class ScanResult:
    """What the scan found, in the contract's terms, plus the problems it met."""

    works: int = 0
    pages: int = 0
    matches: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """What could not be done: works not read, sites not crawled, pages not matched (the
    scan exits 1)."""
    warnings: list[str] = field(default_factory=list)
    """What was met and overcome: an outage of Redis whose pages were matched once it was
    over (the scan still exits 0)."""
    crawl_stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    duplicates: list[dict[str, str]] = field(default_factory=list)
    """Works with the same text as an earlier one, or nearly (``near``):
    ``{"work", "same_text_as", "near"}`` (sources). A twin's copies are recorded under the
    earlier work, whose matches name it (``twins``); a near twin is indexed, an edition
    like any other (a copy goes to the edition that explains it best, ties named):
    reported here as information."""
    not_crawled: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per site URL, its pages not crawled (or not readable) by reason
    (:func:`matcher.sites.crawl_runs.not_crawled`: robots, too_large, not_html, depth, budget,
    deadline, http_404...); a site with none is left out."""
    not_crawled_urls: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """Per site URL, the same reasons with the pages named (:func:`matcher.sites.crawl_runs.
    not_crawled_urls`): ``urls``, the first ``FPTRACK_NAMED_PER_REASON`` (20) with their
    ``url`` and ``why``, and ``more``, the count of the others."""

    refused: str = ""
    """Why nothing was crawled, when nothing was: no work could be registered (the
    works' errors say why), so no page could be matched."""

    site_urls: dict[str, str] = field(default_factory=dict)
    """Per site name (as its matches name it: ``scan1-127.0.0.1-8080``), the URL scanned."""

    crawl: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per site URL, where its requests went (:func:`crawl_economy`): ``requests`` made,
    distinct ``pages`` stored, ``aliases_fetched`` (responses that were a stored page under
    another URL), ``dead_fetched`` (404/410 answers) and ``skipped`` requests by reason
    (``alias``, ``dead_pattern``), ``rules_learnt``, and ``assets``: what was fetched with
    the pages to read them as a browser shows them (:func:`matcher.sites.crawl_runs.assets`:
    stylesheets, fonts and content images fetched, cached and refused by reason, and the
    OCR outcomes of the images; empty when nothing was)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "works": self.works,
            "pages": self.pages,
            "matches": self.matches,
            "errors": self.errors,
            "warnings": self.warnings,
            "duplicates": self.duplicates,
            "not_crawled": self.not_crawled,
            "not_crawled_urls": self.not_crawled_urls,
            "crawl": self.crawl,
        }


def crawl_economy(stats: dict[str, Any]) -> dict[str, Any]:
    """Where a crawl's requests went, from its stats (see :attr:`ScanResult.crawl`)."""
    prefix = "fptrack/skipped/"
    return {
        "requests": int(stats.get("downloader/request_count", 0)),
        "pages": int(stats.get("fptrack/stored_pages", 0)),
        "aliases_fetched": int(stats.get("fptrack/aliases/fetched", 0)),
        "dead_fetched": sum(int(stats.get(f"fptrack/http_status/{c}", 0)) for c in (404, 410)),
        "skipped": {k[len(prefix) :]: int(v) for k, v in stats.items() if k.startswith(prefix)},
        "rules_learnt": int(stats.get("fptrack/rules/learnt", 0)),
        "assets": crawl_runs.assets(stats),
    }


DEFAULT_DEADLINE = scan_defaults.DEADLINE


def site_config(
    url: str,
    index: int,
    max_pages: int,
    deadline: int = DEFAULT_DEADLINE,
    render: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> SiteConfig:
    """A one-off site configuration for a scanned URL (links within its host; its pages
    rendered in Chromium with ``render``)."""
    parts = urlsplit(url)
    host = (parts.hostname or "site").replace(":", "-")
    name = f"scan{index}-{host}" + (f"-{parts.port}" if parts.port else "")
    return SiteConfig(
        name=name[:64],
        start_urls=(url,),
        max_pages=max_pages,
        max_depth=max_depth,
        deadline=deadline,
        schedule="never",
        render=render,
    )


@contextlib.contextmanager
def serve_directory(folder: Path) -> Iterator[str]:
    """Serve ``folder`` over HTTP on 127.0.0.1 (a free port) while the block runs."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


OUTBOUND_FIELDS = (
    "query_deadline",
    "query_max_bytes",
    "query_allow_private",
    "alert_timeout",
    "alert_allow_private",
    "outbound_allow_private",
)
"""The settings a scan takes from the environment: the outbound policy of its admin's
Query by URL, webhook tests and any other request outside the crawl (``--serve``;
:mod:`matcher.outbound`); everything else is the embedded default."""


def scan_settings(environment: Settings | None = None) -> Settings:
    """The settings of one scan: the defaults, under a Redis key prefix of its own, with
    the :data:`OUTBOUND_FIELDS` of ``environment`` (the settings read from ``FPTRACK_*`` at
    the entry point)."""
    kept = {name: getattr(environment, name) for name in OUTBOUND_FIELDS} if environment else {}
    prefix = f"fptrack-scan-{uuid.uuid4().hex[:12]}"
    return Settings(mongo_uri=MEMORY_URI, redis_prefix=prefix, **kept)


def scan_mongo_client() -> Any:
    """The scan's MongoDB: a new in-memory one, the backend of ``memory://``
    (:func:`matcher.store.client.client_of`, :mod:`matcher.store.memory`)."""
    return client_of(MEMORY_URI)


SCAN_PATIENCE = Patience(connect_timeout=5.0, retries=0)
"""No retry in the client: the scan waits for Redis itself, saying so (``on_wait``), and
matches again the pages that met the outage."""


def scan_engine(settings: Settings, redis_url: str | None) -> Engine:
    """An engine on mongomock and on the given Redis server (else fakeredis)."""
    if redis_url:
        client = connect(RedisTarget.parse(redis_url), SCAN_PATIENCE)
    else:
        import fakeredis

        client = fakeredis.FakeRedis()
    return Engine.open(settings, mongo_client=scan_mongo_client(), redis_client=client)


def run_scan(
    works: Iterable[WorkFile] | Path,
    site_urls: list[str],
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    deadline: int = DEFAULT_DEADLINE,
    redis_url: str | None = None,
    settings: Settings | None = None,
    on_work: Callable[[WorkFile], None] = lambda w: None,
    on_page: Callable[[str], None] = lambda page_id: None,
    crawl_overrides: dict[str, Any] | None = None,
    index_pages: bool = False,
    archive: Archive | None = None,
    render: bool = False,
    outage_wait: float = DEFAULT_OUTAGE_WAIT,
    on_wait: Callable[[str], None] = lambda message: None,
    on_error: Callable[[str], None] = lambda message: None,
) -> tuple[ScanResult, Engine]:
    """Register the works, crawl the sites, match every page; returns the result and engine.

    The engine (with its in-memory store) is returned so the caller can render reports or
    serve the admin over it; its Redis keys are the caller's to drop
    (``matcher.index.maintenance.drop_indexes``). The pages are added to the pages' index only
    with ``index_pages`` (an admin served over the result registers works later, and those
    are matched against the pages crawled). With an ``archive`` the pages' HTTP exchanges
    are kept there (:mod:`matcher.evidence.archive`) and the matches point at them. With ``render``
    every page is opened in headless Chromium (:mod:`crawler.render`; ``FPTRACK_CHROMIUM``
    in ``crawl_overrides`` names it). ``on_work`` hears each work file as it is read,
    ``on_page`` each page's id once it is matched.

    Every work is read and registered before any page is fetched: ``on_error`` hears each
    work that cannot be (its error, naming its file, also in the result's ``errors``),
    and when none can, nothing is crawled (the result's ``refused`` says so).

    Pages that met a Redis outage (their task gave up) are matched again after the crawl,
    waiting for Redis with backoff for up to ``outage_wait`` seconds (``on_wait`` hears
    each wait); so is the works' index load. What still cannot be matched is reported in
    ``errors``; the outage, when every page it met was matched, in ``warnings``.
    """
    from crawler.run import crawl_in_process
    from matcher.index.maintenance import load_side
    from matcher.worker.celery_app import make_app

    settings = settings or scan_settings()
    engine = scan_engine(settings, redis_url)
    engine.store.tallies.gather(None)  # sent once the pages are matched
    result = ScanResult()
    # Read one at a time: memory stays flat in the number of works.
    files = iter_work_files([works]) if isinstance(works, Path) else works
    # Every work is registered before the crawl: their index entries go in one bulk load,
    # and the pages' (for works registered later, in the served admin) after the crawl.
    engine.registry.index_now = False

    def failed(error: str) -> None:
        result.errors.append(error)
        on_error(error)

    for work in files:
        on_work(work)
        if work.error:
            failed(work.error)
            continue
        try:
            engine.add_work(work.text, title=Path(work.name).stem, source=work.name, key=work.name)
        except MatcherError as exc:
            failed(f"{work.shown}: {exc}")
            continue
        result.works += 1
    if not result.works:
        result.refused = "no work could be registered, so nothing was crawled"
        return result, engine
    _until_back(lambda: load_side(engine, "work", fill_cache=True), outage_wait, on_wait)
    result.duplicates = [
        {
            "work": twin.get("source", ""),
            "same_text_as": first.get("source", ""),
            "near": bool(twin.get("near_twin")),
        }
        for twin, first in engine.store.twins.twin_pairs()
    ]
    engine.registry.index_now = True
    engine.index_pages = False

    app = make_app(settings)  # the scan's own app: its tasks run eagerly, on this engine
    app.conf.task_always_eager = True
    app.fptrack.use(engine)
    process_page = app.tasks["fptrack.process_page"]
    process_pages = app.tasks["fptrack.process_pages"]

    def enqueue(page_id: str) -> None:
        process_page.delay(page_id)
        on_page(page_id)

    sites = [
        site_config(url, i, max_pages, deadline, render, max_depth)
        for i, url in enumerate(site_urls, 1)
    ]

    def send_many(page_ids: list[str]) -> None:
        process_pages.delay(page_ids)
        for page_id in page_ids:
            on_page(page_id)

    ingest = Ingest(engine.store, enqueue, archive=archive, send_many=send_many)
    overrides = {"FPTRACK_INGEST": ingest, **(crawl_overrides or {})}
    result.crawl_stats = crawl_in_process(sites, overrides)
    result.warnings += _match_pending(engine, outage_wait, on_wait)
    if index_pages:
        _until_back(lambda: load_side(engine, "page"), outage_wait, on_wait)
        engine.index_pages = True
    for site, url in zip(sites, site_urls, strict=True):
        result.site_urls[site.name] = url
        stats = result.crawl_stats.get(site.name, {})
        for problem in crawl_runs.problems(stats):
            result.errors.append(f"site {url} could not be crawled: {problem}")
        skipped = crawl_runs.not_crawled(stats)
        if skipped:
            result.not_crawled[url] = skipped
            result.not_crawled_urls[url] = crawl_runs.not_crawled_urls(stats)
        result.crawl[url] = crawl_economy(stats)
    for failure in engine.store.failure_log.recent(limit=MAX_LIST):
        result.errors.append(f"{failure['task']}({failure['ref']}): {failure['error']}")
    engine.store.tallies.send_each()
    result.pages = engine.store.count("pages")
    result.matches = contract_matches(engine)
    return result, engine


def _match_pending(engine: Engine, wait: float, on_wait: Callable[[str], None]) -> list[str]:
    """Match every page still pending because its task met an outage (its failure record
    goes once it is matched), waiting up to ``wait`` seconds in all for the servers; the
    warning that says so, if a page was. A failure record of a page matched meanwhile (by
    a later task) goes too."""
    from matcher.worker.jobs import process_page
    from matcher.worker.tasks import PROCESS_PAGE

    store = engine.store
    records = store.failure_log.recent(limit=MAX_LIST)
    failed = {f["ref"]: f["error"] for f in records if f["task"] == PROCESS_PAGE}
    deadline = time.monotonic() + wait
    pending = list(engine.store.page_marks.pending_pages())
    matched = []
    for page_id in pending:
        try:
            _until_back(lambda p=page_id: process_page(engine, p), deadline, on_wait, at=True)
        except MatcherError:
            continue  # its failure record says why
        store.failure_log.clear_failure(PROCESS_PAGE, page_id)
        matched.append(page_id)
    for page_id in sorted(set(failed) - set(pending)):  # matched after its task gave up
        if _stored(engine, page_id):
            store.failure_log.clear_failure(PROCESS_PAGE, page_id)
            matched.append(page_id)
    if not matched:
        return []
    causes = sorted({failed[p] for p in matched if p in failed})
    cause = f" ({' '.join(causes[0].split())[:200]})" if causes else ""
    return [
        f"{len(matched)} page(s) met an outage of the servers during the crawl{cause} and "
        "were matched once it was over"
    ]


def _stored(engine: Engine, page_id: str) -> bool:
    """Whether ``page_id`` names a stored page."""
    try:
        return engine.store.pages.get_page(page_id, {"_id": 1}) is not None
    except MatcherError:  # not a page id
        return False


def _until_back(
    run: Callable[[], T],
    wait: float,
    on_wait: Callable[[str], None],
    at: bool = False,
) -> T:
    """``run()``, again with backoff while it meets an outage, until ``wait`` seconds have
    passed (``at``: until the monotonic time ``wait``); then the outage is raised."""
    deadline = wait if at else time.monotonic() + wait
    delay = 0.5
    while True:
        try:
            return run()
        except Retryable as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            on_wait(f"waiting for the servers ({exc}); up to {left:.0f} s more")
            time.sleep(min(delay, left))
            delay = min(delay * 2, 10.0)


def contract_matches(engine: Engine) -> list[dict[str, Any]]:
    """Every active match in the contract's form, by page URL then work; ``twins`` names the
    works with the very text of the matched work (recorded under it; a near twin is an
    edition, indexed, named in ``siblings`` when it explains the page too);
    ``siblings`` the other editions of the matched work that explain the page too, the best
    first, and ``tied`` those of them that explain it as well (:mod:`matcher.matching.editions`);
    ``aliases`` the other URLs the page was reached under (one page, one entry). A download
    stored in parts (:func:`matcher.pages.part_url`) is one entry per work under its own URL,
    its record's (:mod:`matcher.matching.download_records`: the best-scored part's scores, the
    share of the work all parts hold, evidence spans in the whole download's text), with
    ``parts``, the pages of the parts that copy the work."""
    store = engine.store
    matches = list(store.matches.active_matches())
    pages = engine.store.pages.pages_by_url({m["url"] for m in matches}, {"aliases": 1})
    works = store.works.work_sources()
    twins: dict[Any, list[str]] = {}
    for twin, first in store.twins.twin_pairs():
        if not twin.get("near_twin"):
            twins.setdefault(first["_id"], []).append(twin.get("source", ""))
    best: dict[tuple[str, str], dict[str, Any]] = {}
    parts: dict[tuple[str, str], list[str]] = {}
    for m in matches:
        methods = list(m.get("methods", []))
        siblings = m.get("siblings") or []
        entry = {
            "url": fetched_url(m["url"]),
            "aliases": list(pages.get(m["url"], {}).get("aliases") or []),
            "work": works.get(m["work_id"], m.get("work_source", "")),
            "twins": twins.get(m["work_id"], []),
            "siblings": [works.get(e["work_id"], e.get("work_source", "")) for e in siblings],
            "tied": [
                works.get(e["work_id"], e.get("work_source", "")) for e in siblings if e["tie"]
            ],
            "score": round(float(m["score"]), 4),
            "containment": round(float(m["containment"]), 4),
            "methods": methods,
            "scores": {k: _plain(v) for k, v in m.get("scores", {}).items()},
            "evidence": [
                {"work_span": e["work_span"], "page_span": e["page_span"], "text": e["text"]}
                for e in m.get("evidence", [])
            ],
        }
        key = (entry["url"], entry["work"])
        held = [part_url(m["url"], n) for n in m.get("parts") or ()]
        parts.setdefault(key, []).extend(held or [m["url"]])
        if key not in best or entry["score"] > best[key]["score"]:
            best[key] = entry
    for key, urls in parts.items():
        if urls != [key[0]]:  # a download's parts
            best[key]["parts"] = sorted(urls, key=lambda u: (len(u), u))
    return sorted(best.values(), key=lambda m: (m["url"], m["work"]))


def _plain(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value
