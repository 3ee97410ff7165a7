"""Beat schedules kept in Redis (redbeat), editable while beat runs.

Each site has one entry, ``crawl:<site>``, running ``fptrack.crawl_site`` (the full crawl), and,
when its ``recrawl`` is not ``never``, a second one, ``recrawl:<site>``, running
``fptrack.recrawl_site`` (the incremental crawl, which never runs while a full crawl of the
site holds a crawler slot); three daily jobs run
at ``FPTRACK_DAILY_AT`` (default 03:00 UTC): ``daily:match-new-works`` (works registered
since the last run against all pages, the Daguan daily task) and, an hour later,
``daily:report``, and an hour after that ``daily:prune-archive`` (archived exchanges that
no page or match refers to any more, :func:`matcher.worker.jobs.prune_archive`); ``daily:digest``
at ``FPTRACK_DIGEST_AT`` (default 08:00 UTC) sends the alert digests; every
``FPTRACK_CRAWL_LEASE`` seconds ``crawls:resume`` restarts the crawls that every crawler
process left unfinished, after closing the runs whose processes died
(:func:`matcher.worker.jobs.close_lost_crawls`, :func:`matcher.worker.jobs.resume_crawls`); every
minute
``alerts:deliver`` sends the alerts due (retries, :mod:`matcher.worker.alert_delivery`); every half
``FPTRACK_PENDING_AFTER`` (at most a minute) ``pages:requeue-pending`` sends ``process_page``
again for the pages whose task was lost (:func:`matcher.worker.jobs.requeue_pending`), its message
expiring after that interval; and every :data:`HEAL_SECONDS` seconds ``index:heal``
rebuilds what Redis lost of the indexes (:func:`matcher.worker.jobs.heal_indexes`); with a TSA
(``FPTRACK_TSA_URL``), every ``FPTRACK_TSA_EVERY`` seconds ``evidence:stamp`` puts the archive
files queued since under a trusted timestamp (:mod:`matcher.evidence.stamping`); and every
``FPTRACK_TAKEDOWN_RECHECK_EVERY`` seconds ``takedowns:recheck`` rechecks the URLs of takedown
notices whose recheck is due (:mod:`matcher.evidence.takedowns`); every ``FPTRACK_DISCOVER_EVERY``
seconds (a week; 0: never) ``sites:discover`` looks for the pirate sites the watched ones
lead to (:mod:`matcher.sites.discovery`); with a search engine (``FPTRACK_SEARCH_URL``), every
``FPTRACK_SEARCH_EVERY`` seconds (0, the default: never) ``sites:search`` looks for them
through it (:mod:`matcher.sites.search`); every ``FPTRACK_HOSTING_EVERY`` seconds (a week; 0:
never) ``sites:hosting`` looks up who hosts the sites with matches through RDAP
(:mod:`matcher.sites.hosting`).
redbeat reads its entries from Redis on every tick, so an entry saved
here (from the CLI or the admin) takes effect without restarting beat. A new entry counts as
last run when it is saved (Celery's ``ScheduleEntry``), so it first runs at its next time.
:meth:`Schedules.save_all` saves every entry from the store's sites; beat calls it at start
and again when Redis came back without them (:meth:`Schedules.lost`, :mod:`matcher.worker.beat`).

Site schedules (:attr:`matcher.sites.site_config.SiteConfig.schedule`): ``daily`` runs once a day
at a
minute of the day derived from the site's name (stable, so sites spread over the day),
``daily@HH:MM`` at that UTC time, ``hourly`` at a minute derived from the name,
``every N s|m|h`` at that interval, ``cron M H DOM MON DOW`` as given, ``never`` not at all.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import xxhash
from celery import Celery
from celery.schedules import crontab, schedule
from redbeat import RedBeatSchedulerEntry
from redbeat.schedulers import ensure_conf, get_redis

from matcher.errors import redis_errors
from matcher.settings import Settings
from matcher.sites.site_config import INTERVAL_UNITS, SiteConfig, SiteConfigError
from matcher.worker.alert_delivery import SWEEP_SECONDS

CRAWL_PREFIX = "crawl:"
RECRAWL_PREFIX = "recrawl:"
DAILY_MATCH = "daily:match-new-works"
DAILY_REPORT = "daily:report"
DAILY_PRUNE = "daily:prune-archive"
RESUME_CRAWLS = "crawls:resume"
DAILY_DIGEST = "daily:digest"
DELIVER_ALERTS = "alerts:deliver"
HEAL_INDEXES = "index:heal"
STAMP_EVIDENCE = "evidence:stamp"
RECHECK_TAKEDOWNS = "takedowns:recheck"
DISCOVER_SITES = "sites:discover"
SEARCH_SITES = "sites:search"
HOSTING_SITES = "sites:hosting"
HEAL_SECONDS = 30
"""How often the heal job looks for lost index groups (:func:`matcher.worker.jobs.heal_indexes`)."""
REQUEUE_PENDING = "pages:requeue-pending"
RECRAWL_EXPIRES = 300


def parse_schedule(spec: str, name: str = "") -> schedule | crontab | None:
    """The Celery schedule of a site's ``schedule`` field (``None`` for ``never``).

    >>> parse_schedule("every 30 m")
    <freq: 30.00 minutes>
    >>> parse_schedule("daily@02:30")
    <crontab: 30 2 * * * (m/h/dM/MY/d)>
    """
    minute_of_day = xxhash.xxh64_intdigest(name.encode()) % 1440
    if spec == "never":
        return None
    if spec == "daily":
        return crontab(minute=minute_of_day % 60, hour=minute_of_day // 60)
    if spec.startswith("daily@"):
        hour, minute = spec[6:].split(":")
        return crontab(minute=int(minute), hour=int(hour))
    if spec == "hourly":
        return crontab(minute=minute_of_day % 60)
    if spec.startswith("every "):
        amount = spec[6:].strip()
        digits = amount.rstrip("abcdefghijklmnopqrstuvwxyz ")
        unit = amount[len(digits) :].strip()
        if unit not in INTERVAL_UNITS or int(digits) < 1:
            raise SiteConfigError(f"bad interval {spec!r}")
        return schedule(timedelta(seconds=int(digits) * INTERVAL_UNITS[unit]))
    if spec.startswith("cron "):
        minute, hour, dom, month, dow = spec[5:].split()
        try:
            return crontab(minute, hour, dow, dom, month)
        except (ValueError, IndexError, OverflowError) as exc:
            raise SiteConfigError(f"bad cron schedule {spec!r}: {exc}") from None
    raise SiteConfigError(f"unknown schedule {spec!r}")


def requeue_interval(pending_after: int) -> int:
    """Seconds between two sweeps for pages whose task was lost: half ``pending_after``,
    at least 1, at most 60.

    >>> requeue_interval(120), requeue_interval(4), requeue_interval(3600)
    (60, 2, 60)
    """
    return max(1, min(60, pending_after // 2))


def recrawl_expiry(sched: schedule | crontab) -> float:
    """Seconds after which an incremental crawl's task, not yet started, is dropped: its
    interval (the next one is due by then), or :data:`RECRAWL_EXPIRES` for a crontab.

    A full crawl holding the crawl workers therefore leaves no pile of incremental crawls
    behind it.

    >>> recrawl_expiry(parse_schedule("every 2m"))
    120.0
    """
    if isinstance(sched, crontab):
        return float(RECRAWL_EXPIRES)
    return max(sched.run_every.total_seconds(), 10.0)


class Schedules:
    """The beat entries of one Celery app configured for redbeat."""

    def __init__(self, app: Celery) -> None:
        self.app = app

    def _every(self, name: str, task: str, seconds: float) -> None:
        """Entry ``name`` running ``task`` every ``seconds``, each run expiring when the next
        is due; none (an earlier one deleted) when ``seconds`` is 0."""
        if not seconds:
            self._delete(name)
            return
        every = schedule(timedelta(seconds=seconds))
        self._entry(name, task, every, options={"expires": float(seconds)})

    def _entry(
        self,
        name: str,
        task: str,
        sched: Any,
        args: list | None = None,
        options: dict | None = None,
    ) -> None:
        with redis_errors("saving a schedule"):
            RedBeatSchedulerEntry(
                name, task, sched, args=args or [], options=options or {}, app=self.app
            ).save()

    def _delete(self, name: str) -> bool:
        key = self.app.conf.redbeat_key_prefix + name
        with redis_errors("removing a schedule"):
            try:
                RedBeatSchedulerEntry.from_key(key, app=self.app).delete()
            except KeyError:
                return False
        return True

    def sync_site(self, site: SiteConfig) -> bool:
        """Save (or remove, for ``never``) the full crawl entry of a site and its incremental
        crawl entry; True if the full crawl's is saved."""
        recrawl = parse_schedule(site.recrawl, site.name)
        if recrawl is None:
            self._delete(RECRAWL_PREFIX + site.name)
        else:
            options = {"expires": recrawl_expiry(recrawl)}
            self._entry(
                RECRAWL_PREFIX + site.name, "fptrack.recrawl_site", recrawl, [site.name], options
            )
        sched = parse_schedule(site.schedule, site.name)
        if sched is None:
            self._delete(CRAWL_PREFIX + site.name)
            return False
        self._entry(CRAWL_PREFIX + site.name, "fptrack.crawl_site", sched, [site.name])
        return True

    def remove_site(self, name: str) -> bool:
        self._delete(RECRAWL_PREFIX + name)
        return self._delete(CRAWL_PREFIX + name)

    def ensure_daily(self, settings: Settings) -> None:
        """Save the fixed jobs: the daily ones at ``settings.daily_at`` (UTC), an hour later
        and two hours later, the resumption of abandoned crawls every
        ``settings.crawl_lease`` s, the alert digests at ``settings.digest_at``, the
        alerts' delivery sweep every minute, the sweep for lost page tasks every
        :func:`requeue_interval` s, and the stamping of the evidence every
        ``settings.tsa_every`` s when a TSA is set (removed when none is), and the takedowns'
        rechecks every ``settings.takedown_recheck_every`` s, and the sites' hosting lookups
        every ``settings.hosting_every`` s (removed when 0)."""
        hour, minute = (int(x) for x in settings.daily_at.split(":"))
        self._entry(DAILY_MATCH, "fptrack.match_new_works", crontab(minute=minute, hour=hour))
        report = crontab(minute=minute, hour=(hour + 1) % 24)
        self._entry(DAILY_REPORT, "fptrack.daily_report", report)
        prune_at = crontab(minute=minute, hour=(hour + 2) % 24)
        self._entry(DAILY_PRUNE, "fptrack.prune_archive", prune_at)
        resume = schedule(timedelta(seconds=settings.crawl_lease))
        self._entry(RESUME_CRAWLS, "fptrack.resume_crawls", resume)
        hour, minute = (int(x) for x in settings.digest_at.split(":"))
        self._entry(DAILY_DIGEST, "fptrack.send_digests", crontab(minute=minute, hour=hour))
        sweep = schedule(timedelta(seconds=SWEEP_SECONDS))
        self._entry(DELIVER_ALERTS, "fptrack.deliver_alerts", sweep)
        every = requeue_interval(settings.pending_after)
        requeue = schedule(timedelta(seconds=every))
        options = {"expires": float(every)}
        self._entry(REQUEUE_PENDING, "fptrack.requeue_pending", requeue, options=options)
        heal = schedule(timedelta(seconds=HEAL_SECONDS))
        self._entry(HEAL_INDEXES, "fptrack.heal_indexes", heal, options={"expires": HEAL_SECONDS})
        every = settings.takedown_recheck_every
        recheck = schedule(timedelta(seconds=every))
        options = {"expires": float(every)}
        self._entry(RECHECK_TAKEDOWNS, "fptrack.recheck_takedowns", recheck, options=options)
        self._every(DISCOVER_SITES, "fptrack.discover_sites", settings.discover_every)
        search_every = settings.search_every if settings.search_url else 0
        self._every(SEARCH_SITES, "fptrack.search_sites", search_every)
        self._every(HOSTING_SITES, "fptrack.look_up_hosting", settings.hosting_every)
        if settings.tsa_url:
            stamp = schedule(timedelta(seconds=settings.tsa_every))
            options = {"expires": float(settings.tsa_every)}
            self._entry(STAMP_EVIDENCE, "fptrack.stamp_evidence", stamp, options=options)
        else:
            self._delete(STAMP_EVIDENCE)

    def save_all(self, settings: Settings, sites: Iterable[SiteConfig]) -> int:
        """Save the fixed jobs and the entries of ``sites`` (the store's); returns how many
        sites have a crawl scheduled."""
        self.ensure_daily(settings)
        return sum(self.sync_site(site) for site in sites)

    def lost(self) -> bool:
        """Whether the fixed jobs' entries are gone from Redis: a server that restarted
        without its data (or was flushed) since they were saved."""
        ensure_conf(self.app)  # redbeat's settings, which name the keys
        key = RedBeatSchedulerEntry.generate_key(self.app, DAILY_MATCH)
        with redis_errors("reading the schedules"):
            return not get_redis(self.app).exists(key)

    def entries(self) -> list[dict[str, Any]]:
        """Every entry: name, task, args, schedule and next due time."""
        conf = ensure_conf(self.app)  # redbeat's settings (set on the app on first use)
        out = []
        with redis_errors("listing schedules"):
            keys = get_redis(self.app).zrange(conf.schedule_key, 0, -1)
            for key in keys:
                key = key.decode() if isinstance(key, bytes) else key
                try:
                    entry = RedBeatSchedulerEntry.from_key(key, app=self.app)
                except KeyError:
                    continue
                out.append(
                    {
                        "name": entry.name,
                        "task": entry.task,
                        "args": list(entry.args or ()),
                        "schedule": str(entry.schedule),
                        "due_at": _next_run(entry),
                    }
                )
        return sorted(out, key=lambda e: e["name"])


def _next_run(entry: RedBeatSchedulerEntry) -> str | None:
    """When the entry runs next (ISO, UTC): now plus Celery's remaining time for it.

    (redbeat's ``due_at`` adds that remaining time to the last run instead of to now, which
    puts the next run too early by the time elapsed since the last one.)
    """
    if entry.last_run_at is None:
        return entry.due_at.isoformat() if entry.due_at else None
    remaining = entry.schedule.remaining_estimate(entry.last_run_at)
    return (datetime.now(UTC) + max(remaining, timedelta(0))).isoformat()
