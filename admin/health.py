"""Health: the start check of services, and ``fptrack check``.

:func:`require_stores` is what ``fptrack worker``, ``beat`` and ``admin serve`` run first:
MongoDB, Redis and the broker must answer (within ``wait`` seconds, retried), else the
command exits 1 with one line naming the server (:mod:`admin.outage`).

:func:`checks` is ``fptrack check``: MongoDB, Redis, the broker, the workers, beat, the
indexes and the schedules, each healthy or not with a line saying why; the command exits 0
only when every one is healthy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pymongo.errors
import redis
from kombu.exceptions import OperationalError

from admin import outage
from admin.context import Context, redis_client
from admin.errors import CommandError
from admin.human import duration, size
from matcher.errors import MatcherError
from matcher.store import now

RETRY_EVERY_S = 1.0
WORKER_PING_S = 1.0


@dataclass(frozen=True)
class Check:
    """One line of ``fptrack check``."""

    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def _down(service: str, uri: str, probe: Callable[[], Any]) -> str | None:
    """``None`` when ``probe`` succeeds, else the outage line of ``service``."""
    try:
        probe()
    except CommandError as exc:  # the client's own probe found the server down
        return str(exc)
    except (pymongo.errors.PyMongoError, redis.RedisError, OSError) as exc:
        return outage.line(service, uri, exc)
    return None


def store_problems(ctx: Context) -> list[str]:
    """The outage line of each of MongoDB, Redis and the broker that does not answer."""
    settings = ctx.settings
    problems = [
        _down("MongoDB", settings.mongo_uri, lambda: ctx.mongo_client.admin.command("ping")),
        _down("Redis", settings.redis_url, ctx.redis_client.ping),
    ]
    broker = ctx.app.conf.broker_url
    if broker != settings.redis_url:
        client = redis_client(broker, "FPTRACK_BROKER_URL")
        problems.append(_down("the Celery broker", broker, client.ping))
    return [p for p in problems if p]


def require_stores(ctx: Context, wait: float) -> None:
    """Return once MongoDB, Redis and the broker answer; after ``wait`` seconds, fail.

    Raises :class:`CommandError` with the first outage line (exit status 1).
    """
    deadline = time.monotonic() + max(0.0, wait)
    while True:
        problems = store_problems(ctx)
        if not problems:
            return
        if time.monotonic() >= deadline:
            waited = f" (waited {duration(wait)})" if wait > 0 else ""
            raise CommandError(problems[0] + waited)
        time.sleep(RETRY_EVERY_S)


# fptrack check -----------------------------------------------------------------------


def check_mongodb(ctx: Context) -> Check:
    settings = ctx.settings
    problem = _down("MongoDB", settings.mongo_uri, lambda: ctx.mongo_client.admin.command("ping"))
    if problem:
        return Check("mongodb", False, problem)
    db = ctx.mongo_client[settings.mongo_db]
    version = ctx.mongo_client.server_info().get("version", "?")
    counts = ", ".join(
        f"{db[name].estimated_document_count()} {name}" for name in ("works", "pages", "matches")
    )
    detail = f"{outage.redact(settings.mongo_uri)} (server {version}), database {db.name}: {counts}"
    return Check("mongodb", True, detail)


def check_redis(ctx: Context) -> Check:
    url = ctx.settings.redis_url
    problem = _down("Redis", url, ctx.redis_client.ping)
    if problem:
        return Check("redis", False, problem)
    info = ctx.redis_client.info("server") | ctx.redis_client.info("memory")
    detail = (
        f"{outage.redact(url)} (Redis {info.get('redis_version', '?')}), "
        f"{size(int(info.get('used_memory', 0)))} used"
    )
    return Check("redis", True, detail)


def check_broker(ctx: Context) -> Check:
    from matcher.celery_app import CRAWL_QUEUE, PAGE_QUEUE

    url = ctx.app.conf.broker_url
    client = redis_client(url, "FPTRACK_BROKER_URL")
    problem = _down("the Celery broker", url, client.ping)
    if problem:
        return Check("broker", False, problem)
    queued = ", ".join(f"{client.llen(q)} in {q}" for q in (PAGE_QUEUE, CRAWL_QUEUE))
    return Check("broker", True, f"{outage.redact(url)}: {queued}, {client.hlen('unacked')} taken")


def check_workers(ctx: Context) -> Check:
    try:
        replies = ctx.app.control.ping(timeout=WORKER_PING_S)
    except (OperationalError, redis.RedisError, OSError) as exc:
        return Check("workers", False, f"cannot ask the workers: {outage.cause(exc)}")
    names = sorted(name for reply in replies for name in reply)
    if not names:
        return Check(
            "workers",
            False,
            f"none answered within {duration(WORKER_PING_S)}: start fptrack worker",
        )
    return Check("workers", True, f"{len(names)} answered: {', '.join(names)}")


def check_beat(ctx: Context) -> Check:
    from redbeat.schedulers import ensure_conf

    lock = ensure_conf(ctx.app).lock_key
    try:
        ttl = ctx.redis_client.pttl(lock)
    except redis.RedisError as exc:
        return Check("beat", False, outage.line("Redis", ctx.settings.redis_url, exc))
    if ttl < 0:
        return Check("beat", False, "not running (nobody holds redbeat's lock): start fptrack beat")
    return Check("beat", True, f"running (holds redbeat's lock, {duration(ttl / 1000)} left)")


def check_indexes(ctx: Context) -> Check:
    """Every tag group of the indexes holds its marker (:mod:`matcher.integrity`), or is
    being rebuilt; every owner the store says is indexed is in its Redis index, and only
    those; both sides' postings indexes hold the parameters of the settings (an index built
    by an earlier version, or with another ``FPTRACK_WINDOW_BUCKET_BITS``, needs a
    rebuild)."""
    from matcher.keys import TAG_GROUPS
    from matcher.schedules import HEAL_SECONDS

    engine = ctx.engine
    try:
        snap = engine.integrity.snapshot()
        rebuilding = engine.integrity.state.rebuilding()
        stored = engine.integrity.state.indexable()
        indexed = {"work": engine.works.simhash.entries(), "page": engine.pages.simhash.entries()}
        engine.works.windows.records()
        engine.pages.windows.records()
    except (MatcherError, ValueError) as exc:
        return Check("indexes", False, f"{exc}: run fptrack index rebuild")
    if rebuilding is not None:
        groups = len(rebuilding.get("groups") or ())
        since = rebuilding.get("since")
        took = f" for {duration((now() - since).total_seconds())}" if since else ""
        return Check(
            "indexes", False, f"rebuilding {groups} of {TAG_GROUPS} tag groups from the store"
            f"{took} (by {rebuilding['holder']}); matching waits for it",
        )  # fmt: skip
    if not snap.whole:
        return Check(
            "indexes", False, f"{len(snap.lost)} of {TAG_GROUPS} tag groups lost (Redis lost"
            f" their keys): the heal job rebuilds them within {HEAL_SECONDS} s, or run"
            " fptrack index rebuild --if-incomplete",
        )  # fmt: skip
    detail = "; ".join(
        f"{kind}s: {stored[kind]} stored, {indexed[kind]} indexed" for kind in ("work", "page")
    )
    if stored != indexed:
        return Check(
            "indexes", False, detail + " (if it persists, the heal job rebuilds the index)"
        )
    return Check("indexes", True, detail)


def check_schedules(ctx: Context) -> Check:
    """The fixed jobs and one crawl entry per scheduled site are saved in redbeat."""
    from matcher.schedules import (
        CRAWL_PREFIX,
        DAILY_DIGEST,
        DAILY_MATCH,
        DAILY_PRUNE,
        DAILY_REPORT,
        DELIVER_ALERTS,
        HEAL_INDEXES,
    )

    try:
        sites = ctx.ops.list_sites()
        names = {e["name"] for e in ctx.schedules.entries()}
    except MatcherError as exc:
        return Check("schedules", False, str(exc))
    daily = {DAILY_MATCH, DAILY_REPORT, DAILY_PRUNE, DAILY_DIGEST, DELIVER_ALERTS, HEAL_INDEXES}
    wanted = daily | {CRAWL_PREFIX + s.name for s in sites if s.schedule != "never"}
    missing = sorted(wanted - names)
    if missing:
        fix = "start fptrack beat (it saves the daily jobs)" if daily & set(missing) else ""
        fix = fix or "save the site again (fptrack sites add ... --name NAME)"
        return Check("schedules", False, f"missing {', '.join(missing)}: {fix}")
    crawls = len([n for n in names if n.startswith(CRAWL_PREFIX)])
    return Check("schedules", True, f"daily jobs and {crawls} site crawl(s) saved")


CHECKS: tuple[Callable[[Context], Check], ...] = (
    check_mongodb,
    check_redis,
    check_broker,
    check_workers,
    check_beat,
    check_indexes,
    check_schedules,
)


NEEDS: dict[Callable[[Context], Check], tuple[str, ...]] = {
    check_workers: ("broker",),
    check_beat: ("redis",),
    check_indexes: ("mongodb", "redis"),
    check_schedules: ("mongodb", "redis"),
}
"""The checks that need others to have passed."""


def checks(ctx: Context) -> list[Check]:
    """Every check; those that need a server that is down say so instead of running."""
    out: list[Check] = []
    for run in CHECKS:
        down = [c.name for c in out if c.name in NEEDS.get(run, ()) and not c.ok]
        if down:
            name = run.__name__.removeprefix("check_")
            out.append(Check(name, False, f"not checked: {' and '.join(down)} down"))
            continue
        out.append(run(ctx))
    return out
