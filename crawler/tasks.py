"""The Celery tasks that run the crawler's own fetching in a worker: takedown rechecks and
site discovery (from the watched sites, or through a search engine), which read pages with
the crawler's decoding and extraction.

They live here, not in :mod:`matcher.worker.tasks`, so that the backend never imports the
crawler; the app names this module among its task modules
(:data:`matcher.worker.celery_app.TASK_MODULES`), as Celery's ``include`` does.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from crawler.one_page import fetcher
from crawler.sample_crawl import sampler
from matcher.evidence import takedowns
from matcher.sites import discovery, search
from matcher.store import now
from matcher.worker.tasks import FptrackTask


@shared_task(bind=True, base=FptrackTask, name="fptrack.recheck_takedowns")
def recheck_takedowns(self: FptrackTask) -> dict[str, Any]:
    """Recheck the URLs of the takedown notices whose recheck is due
    (:func:`matcher.evidence.takedowns.recheck_due`)."""
    engine = self.runtime.engine()
    fetch = fetcher(self.runtime.settings)
    done = takedowns.recheck_due(engine.store, fetch, engine.still_copies, now())
    return {"checked": done.checked, "outcomes": done.outcomes}


@shared_task(bind=True, base=FptrackTask, name="fptrack.discover_sites")
def discover_sites(self: FptrackTask) -> dict[str, Any]:
    """Find the pirate sites the watched ones lead to, sampled and ranked
    (:func:`matcher.sites.discovery.run_discovery`)."""
    settings = self.runtime.settings
    engine = self.runtime.engine()
    found = discovery.run_discovery(
        engine.store, engine, sampler(settings), harvest=settings.discover_harvest,
        sample_pages=settings.discover_sample, at=now(),
    )  # fmt: skip
    refused = sum(bool(c.refused) for c in found)
    return {"candidates": len(found) - refused, "pirate": sum(c.pirate for c in found),
            "refused": refused}  # fmt: skip


@shared_task(bind=True, base=FptrackTask, name="fptrack.search_sites")
def search_sites(self: FptrackTask) -> dict[str, Any]:
    """Find pirate sites through the search engine of ``FPTRACK_SEARCH_URL``
    (:func:`matcher.sites.search.run_search`). A failure of the search engine ends the run
    and is returned, not retried: the works not answered wait for the next run."""
    settings = self.runtime.settings
    if not settings.search_url:
        return {"error": "no search engine (FPTRACK_SEARCH_URL)"}
    engine = self.runtime.engine()
    run = search.run_search(
        engine.store, engine.match_text, sampler(settings),
        search.SearchEngine.from_settings(settings),
        budget=settings.search_daily_queries,
        queries_per_chapter=settings.search_queries_per_chapter,
        sample_pages=settings.discover_sample, at=now(), frequency=engine.work_frequency,
    )  # fmt: skip
    refused = sum(bool(c.refused) for c in run.candidates)
    return {"works": run.works, "chapters": run.chapters, "queries": run.queries,
            "error": run.error, "index": run.index,
            "candidates": len(run.candidates) - refused,
            "pirate": sum(c.pirate for c in run.candidates)}  # fmt: skip
