"""Celery tasks: thin wrappers over :mod:`matcher.worker.jobs` (messages, retries, failure records).

Every task takes ids, never documents, and is idempotent, hence ``acks_late`` on all of
them but the crawls, which acknowledge their message as they start (a dead crawl is taken
over through its frontier's leases: :func:`matcher.worker.jobs.resume_crawls`). Outages
(:class:`matcher.errors.Retryable`, raw Redis or MongoDB connection errors) are retried
with exponential backoff and jitter (``retry_backoff`` 2 s, doubling, at most 600 s,
``FPTRACK_TASK_MAX_RETRIES`` times, default 8); a retry waiting for its countdown keeps its
message under its worker's heartbeat (:mod:`matcher.worker.heartbeat`). A task that fails for
good — retries exhausted, or bad input such as a page whose text cannot be used — leaves a
record in the ``failures`` collection with its error, instead of vanishing; a later success
clears it. A record MongoDB cannot take (it is what is down) is kept in Redis and written
once it answers (:mod:`matcher.worker.kept_failures`). Each retry and each failure for good is also
counted in Redis (``Keys.task_events``), which the admin's ``/metrics`` reads
(:mod:`admin.metrics`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import date, timedelta
from typing import Any

from celery import Task, shared_task

from matcher.errors import TRANSIENT_TYPES, transient
from matcher.evidence import stamping
from matcher.index.redis_clients import connect_server
from matcher.keys import Keys
from matcher.store import Store, now
from matcher.store.alerts import AlertStore
from matcher.worker import alert_delivery as alerts
from matcher.worker import jobs
from matcher.worker.runtime import Runtime

log = logging.getLogger(__name__)

LEASE_LOST_PAUSE = 5
"""Seconds before a crawler process that lost its lease is replaced by another."""


class FptrackTask(Task):
    """Base of every fptrack task: late acks, retries on outages, failure records.

    Every error a task raises is classified (:func:`matcher.errors.transient`): an outage of
    Redis, MongoDB or the broker, on any path, is retried with backoff; anything else fails
    the task at once, with its failure record.
    """

    acks_late = True
    reject_on_worker_lost = True
    autoretry_for = TRANSIENT_TYPES
    retry_backoff = 2
    retry_backoff_max = 600
    retry_jitter = True

    def retry(self, args=None, kwargs=None, exc=None, throw=True, eta=None, countdown=None,
              max_retries=None, **options):  # fmt: skip
        """Celery's retry, for transient errors only: any other error is raised as it is
        (the task fails for good, :meth:`on_failure`)."""
        if exc is not None and not transient(exc):
            raise exc
        return super().retry(args, kwargs, exc, throw, eta, countdown, max_retries, **options)

    @property
    def runtime(self) -> Runtime:
        """The settings and engine of this task's app (``app.fptrack``)."""
        return self.app.fptrack

    failed_as: str | None = None
    """The task whose failure records this one writes (its own name when None): a batch
    task's are its items' own, one per id of its first argument."""

    def _refs(self, args: tuple, kwargs: dict) -> list[str]:
        """What its failure records name: the task's first argument (each id of a batch)."""
        values = [*args, *kwargs.values()]
        if values and isinstance(values[0], list):
            return [str(v) for v in values[0]]
        return [str(values[0]) if values else ""]

    def record_failure(self, ref: str, exc: BaseException) -> None:
        """Log and keep the failure for good of ``ref`` (a record in ``failures``)."""
        name = self.failed_as or self.name
        log.error("task %s(%s) failed for good: %s", name, ref, exc)
        self.write_failure(name, ref, f"{type(exc).__name__}: {exc}", self.request.retries)

    def write_failure(self, name: str, ref: str, error: str, attempts: int) -> None:
        """Write the failure record of task ``name`` on ``ref`` (then the records kept while
        MongoDB could not take them); when MongoDB cannot take it either, keep it in Redis
        until it can (:mod:`matcher.worker.kept_failures`)."""
        failed_at = now()
        try:
            store = self.runtime.engine().store
            store.failure_log.record_failure(name, ref, error, attempts, at=failed_at)
        except Exception as record_exc:  # the store may be what is down
            try:
                self.runtime.kept_failures().keep(name, ref, error, attempts, failed_at)
            except Exception as keep_exc:
                log.error(
                    "could not record the failure of %s(%s) (%s), nor keep it in Redis: %s",
                    name, ref, record_exc, keep_exc,
                )  # fmt: skip
                return
            log.error(
                "could not record the failure of %s(%s) (%s): kept in Redis until MongoDB "
                "takes it", name, ref, record_exc,
            )  # fmt: skip
            return
        self.write_kept_failures(store)

    def write_kept_failures(self, store: Store) -> int:
        """Write the failure records kept while MongoDB could not take them; how many (none
        when it still cannot, or Redis does not answer: the next task tries again)."""
        try:
            return self.runtime.kept_failures().write(store.failure_log.record_failure)
        except Exception as exc:
            log.warning("could not write the failure records kept in Redis: %s", exc)
            return 0

    def _count(self, event: str) -> None:
        """Count a ``retry`` or ``failure`` of this task in Redis (``Keys.task_events``), for
        the admin's ``/metrics``, without waiting for it (:meth:`Runtime.count`)."""
        try:
            self.runtime.count(event, self.name)
        except Exception as exc:  # no client could be made: a bad setting is said at start
            log.warning("could not count a %s of %s: %s", event, self.name, exc)

    def on_retry(self, exc, task_id, args, kwargs, einfo) -> None:
        self._count("retry")

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        self._count("failure")
        for ref in self._unfinished(self._refs(tuple(args), dict(kwargs))):
            self.record_failure(ref, exc)

    def _unfinished(self, refs: list[str]) -> list[str]:
        """Of a batch of pages that failed for good, those still pending: an outage that
        ends a batch (:func:`matcher.worker.jobs.process_pages`) comes after its first pages were
        matched and marked, and no later success would clear their records (it left records
        on pages the embedded scan had matched, reported as errors). All of them when the
        store cannot say."""
        if self.failed_as != PROCESS_PAGE or len(refs) < 2:
            return refs
        try:
            pending = set(self.runtime.engine().store.page_marks.still_pending(refs))
        except Exception:  # the store may be what is down: a record each, kept if need be
            return refs
        return [ref for ref in refs if ref in pending]

    def on_success(self, retval, task_id, args, kwargs) -> None:
        """After retries, clear the failure records of what succeeded (a batch's result
        names the items that failed for good in ``failed``)."""
        if self.request.retries:
            name = self.failed_as or self.name
            failed = set(retval.get("failed") or ()) if isinstance(retval, dict) else set()
            try:
                store = self.runtime.engine().store
                for ref in self._refs(tuple(args), dict(kwargs)):
                    if ref not in failed:
                        store.failure_log.clear_failure(name, ref)
            except Exception as exc:
                log.warning("could not clear the failure record of %s: %s", name, exc)
                return
            self.write_kept_failures(store)  # what met the outage this task rode out


PROCESS_PAGE = "fptrack.process_page"


@shared_task(bind=True, base=FptrackTask, name=PROCESS_PAGE)
def process_page(self: FptrackTask, page_id: str, if_pending: bool = False) -> dict[str, Any]:
    """Fingerprint a stored page, match it against the works, record its matches; alert of
    its new ones. With ``if_pending`` (a task sent again), nothing is done when the page's
    current text was matched already."""
    result = jobs.process_page(self.runtime.engine(), page_id, if_pending=if_pending)
    _alert_new(self, result)
    return result


@shared_task(bind=True, base=FptrackTask, name="fptrack.process_pages", failed_as=PROCESS_PAGE)
def process_pages(self: FptrackTask, page_ids: list[str]) -> dict[str, Any]:
    """``process_page`` of each of a batch of pages (the crawl's ingest sends them so),
    matched together (:func:`matcher.worker.jobs.process_pages`); a page that fails for good gets
    the failure record its own ``process_page`` would have, and the others go on (the
    batch failing for good, each of its pages still pending gets one). Alert of the new
    matches."""
    if isinstance(page_ids, str) or not all(isinstance(p, str) for p in page_ids):
        raise TypeError(f"process_pages takes a list of page ids, got {page_ids!r}")

    def failed(page_id: str, exc: Exception) -> None:
        self._count("failure")
        self.record_failure(page_id, exc)

    result = jobs.process_pages(self.runtime.engine(), page_ids, failed)
    _alert_new(self, result)
    return result


def _alert_new(task: FptrackTask, result: dict[str, Any]) -> None:
    """Send ``deliver_alerts`` when a job made new matches and a rule may want them (with no
    rule, beat's sweep clears their marks; it also covers a lost task)."""
    if result.get("new_matches") and task.runtime.alert_rules_enabled():
        task.app.tasks["fptrack.deliver_alerts"].delay()


@shared_task(bind=True, base=FptrackTask, name="fptrack.index_work")
def index_work(self: FptrackTask, work_id: str) -> dict[str, Any]:
    """Fingerprint and index a stored work, then match it against the pages crawled before."""
    result = jobs.index_work(self.runtime.engine(), work_id)
    self.app.tasks["fptrack.match_work_against_pages"].delay(work_id)
    return result


@shared_task(bind=True, base=FptrackTask, name="fptrack.match_work_against_pages")
def match_work_against_pages(self: FptrackTask, work_id: str) -> dict[str, Any]:
    """Find pages already crawled that copy a work; alert of the new matches."""
    result = jobs.match_work_against_pages(self.runtime.engine(), work_id)
    _alert_new(self, result)
    return result


@shared_task(bind=True, base=FptrackTask, name="fptrack.match_new_works")
def match_new_works(self: FptrackTask) -> dict[str, Any]:
    """Daily: works registered since the last run against all pages; pending pages again."""
    store = self.runtime.engine().store
    tasks = self.app.tasks
    result = jobs.match_new_works(
        store,
        lambda work_id: tasks["fptrack.match_work_against_pages"].delay(work_id),
        lambda page_id: tasks["fptrack.process_page"].delay(page_id, if_pending=True),
    )
    result["since"] = result["since"].isoformat() if result["since"] else None
    return result


@shared_task(bind=True, base=FptrackTask, name="fptrack.requeue_pending")
def requeue_pending(self: FptrackTask) -> dict[str, Any]:
    """Every minute or so: send ``process_page`` again for the pages whose task was lost,
    and write the failure records kept in Redis while MongoDB could not take them.

    Beat sends it on the page queue with an expiry of its interval, so it runs only once
    every message sent before it was delivered (see :func:`matcher.worker.jobs.requeue_pending`).
    """
    process = self.app.tasks["fptrack.process_page"]
    store = self.runtime.engine().store
    result = jobs.requeue_pending(
        store,
        lambda page_id: process.delay(page_id, if_pending=True),
        timedelta(seconds=self.runtime.settings.pending_after),
    )
    self.write_kept_failures(store)  # the sweep of the failure records kept in Redis
    return result


@shared_task(bind=True, base=FptrackTask, name="fptrack.crawl_site", acks_late=False)
def crawl_site(self: FptrackTask, site_name: str, fan_out: bool = True) -> dict[str, Any]:
    """One crawler process of a site's crawl, in a subprocess; pages flow to ``process_page``.

    With ``fan_out`` (a scheduled or requested crawl) it sends this task again, without
    ``fan_out``, for each other crawler process the site wants (``crawlers``). A process that
    lost its lease (Redis unreachable longer than a lease, or back without the frontier), or
    whose run's frontier Redis lost, is replaced by a new one, which resumes the run from its
    frontier or, the frontier lost, crawls the site anew (pages already stored and unchanged
    are not matched again).
    """

    def helper() -> None:
        self.apply_async(args=[site_name], kwargs={"fan_out": False})

    store = self.runtime.engine().store
    try:
        result = jobs.crawl_site(
            self.runtime.settings,
            store,
            site_name,
            fan_out=helper if fan_out else None,
            task_id=self.request.id or "",
        )
    except jobs.CrawlFailed as exc:
        return _crawl_failed(self, site_name, exc)
    if result.get("lease_lost") or result.get("frontier_lost"):  # go on: resume, else anew
        self.apply_async(args=[site_name], kwargs={"fan_out": False}, countdown=LEASE_LOST_PAUSE)
    return result


@shared_task(bind=True, base=FptrackTask, name="fptrack.recrawl_site", acks_late=False)
def recrawl_site(self: FptrackTask, site_name: str) -> dict[str, Any]:
    """A site's incremental crawl, in a subprocess; skipped while a full crawl runs."""
    store = self.runtime.engine().store
    try:
        return jobs.recrawl_site(
            self.runtime.settings, store, site_name, task_id=self.request.id or ""
        )
    except jobs.CrawlFailed as exc:
        return _crawl_failed(self, site_name, exc)


def _crawl_failed(task: FptrackTask, site_name: str, exc: jobs.CrawlFailed) -> dict[str, Any]:
    """An expected end of a crawl (a start URL without a page, nothing fetched, no such
    site...): one line in the worker's log, no traceback; the run's record in ``crawls``
    says ``failed`` with the reason, and a failure record keeps it, as for any task that
    failed for good. The task itself succeeds with ``outcome`` ``failed``."""
    error = " ".join(str(exc).split())
    log.warning("%s(%s) failed: %s", task.name, site_name, error)
    task.write_failure(task.name, site_name, error, 0)
    return {"site": site_name, "outcome": "failed", "error": error}


@shared_task(bind=True, base=FptrackTask, name="fptrack.resume_crawls")
def resume_crawls(self: FptrackTask) -> dict[str, list[str]]:
    """Every lease: close the crawl runs whose processes died (``interrupted``), then restart
    the crawls that every crawler process abandoned; the run ids closed, the sites restarted."""
    settings = self.runtime.settings
    store = self.runtime.engine().store
    keys = Keys(settings.redis_prefix)
    client = connect_server(settings.redis_target)  # the frontiers' server (not a cluster)
    crawl = self.app.tasks["fptrack.crawl_site"]
    try:
        closed = jobs.close_lost_crawls(store, client, keys, lambda site: crawl.delay(site))
        sites = {site.name for site in store.sites.list_sites()}
        resumed = jobs.resume_crawls(client, keys, sites, lambda site: crawl.delay(site))
    finally:
        client.close()
    return {"closed": closed, "resumed": resumed}


@shared_task(bind=True, base=FptrackTask, name="fptrack.heal_indexes")
def heal_indexes(self: FptrackTask) -> dict[str, Any]:
    """Every half minute: rebuild what Redis lost of the indexes, and match again what the
    lost part could have touched (:func:`matcher.worker.jobs.heal_indexes`)."""
    tasks = self.app.tasks
    return jobs.heal_indexes(
        self.runtime.engine(),
        lambda page_id: tasks["fptrack.process_page"].delay(page_id),
        lambda work_id: tasks["fptrack.match_work_against_pages"].delay(work_id),
    )


@shared_task(bind=True, base=FptrackTask, name="fptrack.daily_report")
def daily_report(self: FptrackTask, day: str | None = None) -> dict[str, Any]:
    """Totals of one UTC day (ISO date; default yesterday), stored in ``reports``."""
    report = jobs.daily_report(
        self.runtime.engine().store, date.fromisoformat(day) if day else None
    )
    report["generated_at"] = report["generated_at"].isoformat()
    report.pop("_id", None)
    return report


@shared_task(bind=True, base=FptrackTask, name="fptrack.prune_archive")
def prune_archive(self: FptrackTask) -> dict[str, Any]:
    """Delete superseded archived exchanges that no match refers to."""
    engine = self.runtime.engine()
    return jobs.prune_archive(engine, engine.store.evidence_archive(self.runtime.settings.archive))


@shared_task(bind=True, base=FptrackTask, name="fptrack.look_up_hosting")
def look_up_hosting(self: FptrackTask, limit: int = 500) -> dict[str, Any]:
    """Look up who hosts the sites with matches whose hosting is due, through RDAP
    (:func:`matcher.sites.hosting.due_sites`, :func:`matcher.sites.hosting.look_up_sites`).
    A lookup that fails is kept as such (its errors), not retried: the next run tries again
    a week later."""
    from matcher.sites import hosting

    settings = self.runtime.settings
    store = self.runtime.engine().store
    at = now()
    every = settings.hosting_every
    # due a little before a whole interval, so that a weekly run finds last week's lookups due
    age = timedelta(seconds=every * 0.9) if every else hosting.MAX_AGE
    due = hosting.due_sites(store, at, limit, age)
    done = hosting.look_up_sites(store, hosting.Lookups.from_settings(store, settings), due, at)
    return {
        "sites": len(done),
        "failed": sum(d.failed for d in done),
        "requests": sum(d.requests + d.bootstrap_requests for d in done),
    }


@shared_task(bind=True, base=FptrackTask, name="fptrack.stamp_evidence")
def stamp_evidence(self: FptrackTask) -> dict[str, Any]:
    """Put the queued archive files under TSA tokens
    (:func:`matcher.evidence.stamping.stamp_waiting`;
    a TSA that fails leaves them queued for the next run)."""
    settings = self.runtime.settings
    if not settings.tsa_url:
        return {"stamped": 0, "batches": 0, "waiting": 0, "error": "no TSA (FPTRACK_TSA_URL)"}
    store = self.runtime.engine().store
    return asdict(stamping.stamp_waiting(store, settings.tsa_url, settings.tsa_batch))


@shared_task(bind=True, base=FptrackTask, name="fptrack.deliver_alerts")
def deliver_alerts(self: FptrackTask) -> dict[str, Any]:
    """Hand new matches to the alert rules and send the messages due (webhooks, email).

    When a message waits for a retry, the task sends itself again for that time; beat's
    sweep (every minute) covers anything else.
    """
    result = alerts.deliver_due(AlertStore(self.runtime.engine().store), self.runtime.settings)
    if result["more"]:
        self.apply_async()
    elif result["retry"] and result["next_due"] is not None:
        self.apply_async(countdown=min(result["next_due"], alerts.SWEEP_SECONDS) + 0.1)
    return result


@shared_task(bind=True, base=FptrackTask, name="fptrack.send_digests")
def send_digests(self: FptrackTask) -> dict[str, Any]:
    """Daily: the digest of each daily alert rule."""
    return alerts.send_digests(AlertStore(self.runtime.engine().store), self.runtime.settings)
