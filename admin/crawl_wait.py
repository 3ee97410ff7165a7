"""``fptrack crawl NAME --wait``: follow an enqueued crawl to its outcome.

The crawl task records its run in ``crawls`` with its own id in the run's ``tasks``
(:meth:`matcher.store.crawls.CrawlRuns.crawl_of_task`); this polls that record every
``--poll`` seconds (:data:`DEFAULT_POLL`, 2 s) and shows the run's pages as the store counts
them (:meth:`matcher.store.crawls.CrawlRuns.crawl_progress`: stored, pending) and the
site's matches (:func:`matches_line`: those first found since the run started, and all the
site has: a crawl that finds again the copies found before finds nothing new, which is no
failure), on a tqdm line when stderr is a terminal, else one plain line whenever they change;
the pages fetched come from the run's stats once it ends. It ends with one line (the pages,
those not crawled and why, the matches) and the outcome's exit status (:data:`EXIT`): 0
``finished``, 1 ``failed`` (with its reason), 3 ``interrupted`` or
``lost``, 4 when ``--timeout`` seconds passed first (:data:`DEFAULT_TIMEOUT`: 0, no limit),
the crawl still running or not yet started (no worker took it); before that line, the pages
not crawled, named (:func:`matcher.sites.crawl_runs.named_lines`: the first
``FPTRACK_NAMED_PER_REASON`` of each reason, with the URL and why). Ctrl-C stops the
waiting only: the crawl goes on.

A store that stops answering meanwhile (:func:`matcher.errors.transient`: MongoDB or Redis
restarting, MongoDB answering with internal errors) is waited out, as the services do: one
line when it stops answering (``SITE: waiting for MongoDB at URI (cause); the crawl goes
on``) and one when it answers again, the crawl followed on from there.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from admin.human import crawl_error
from matcher.errors import transient
from matcher.sites.crawl_runs import named_lines, not_crawled, not_crawled_urls

if TYPE_CHECKING:
    from matcher.store import Store

DEFAULT_POLL = 2.0
"""Seconds between two looks at the crawl's record."""
DEFAULT_TIMEOUT = 0.0
"""Seconds to wait at most (0: as long as the crawl runs)."""
EXIT = {"finished": 0, "failed": 1, "interrupted": 3, "lost": 3}
TIMED_OUT = 4


def wait_for_crawl(
    store: Store,
    site: str,
    task_id: str,
    *,
    poll: float = DEFAULT_POLL,
    timeout: float = DEFAULT_TIMEOUT,
    out: TextIO | None = None,
    clock: Callable[[], float] = time.monotonic,
    servers: Mapping[str, str] | None = None,
) -> int:
    """Follow the run of the task ``task_id`` of ``site`` until it ends; its exit status
    (see the module docstring). ``servers``: the URL of ``MongoDB`` and ``Redis``, named
    while they do not answer."""
    out = out or sys.stderr
    deadline = clock() + timeout if timeout > 0 else None
    from tqdm import tqdm

    bar = tqdm(desc=f"crawl of {site}", unit=" page", disable=not out.isatty(), file=out)
    shown: tuple[Any, ...] = ()
    run: dict[str, Any] | None = None
    outage = _Outage(site, servers or {}, out, clock)
    try:
        while True:
            try:
                run = store.crawls.crawl_of_task(site, task_id)
                progress = store.crawls.crawl_progress(run) if run is not None else {}
                matches = matches_line(store, site, progress["matched"]) if run is not None else ""
            except Exception as exc:
                if not transient(exc):
                    raise
                outage.down(exc)
            else:
                outage.up()
                if run is not None:
                    line = _progress_line(run, progress, matches)
                    if bar.disable:
                        if (line,) != shown:
                            print(f"{site}: {line}", file=out, flush=True)
                            shown = (line,)
                    else:
                        bar.n = progress["stored"]
                        bar.set_postfix_str(line, refresh=True)
                    if run.get("outcome") not in (None, "running"):
                        break
            if deadline is not None and clock() >= deadline:
                bar.close()
                if outage.since is not None:
                    state = f"{outage.server} does not answer"
                elif run is not None:
                    state = "the crawl is still running"
                else:
                    state = "the crawl is not started (is a worker up?)"
                print(f"{site}: waited {timeout:g} s: {state}", file=out)
                return TIMED_OUT
            time.sleep(poll)
    finally:
        bar.close()
    return _outcome(store, site, run, out)


def matches_line(store: Store, site: str, new: int) -> str:
    """The site's matches for people: ``new`` (first found by this run) and all its active
    ones, with those awaiting review: ``0 new, 9 on the site in all (3 awaiting review)``."""
    total = store.matches.count(site=site, active_only=True)
    waiting = store.matches.count(site=site, status="new", active_only=True)
    line = f"{new} new, {total} on the site in all"
    return line + (f" ({waiting} awaiting review)" if waiting else "")


class _Outage:
    """The lines of a store that stops answering while the crawl is followed, and answers
    again (as :class:`admin.health.Watch` says them for the services)."""

    def __init__(
        self, site: str, servers: Mapping[str, str], out: TextIO, clock: Callable[[], float]
    ) -> None:
        self.site = site
        self.servers = servers
        self.out = out
        self.clock = clock
        self.since: float | None = None
        self.server = ""

    def down(self, error: BaseException) -> None:
        if self.since is not None:
            return
        from admin import outage

        name = "Redis" if _redis_error(error) else "MongoDB"
        url = self.servers.get(name)
        self.server = f"{name} at {outage.redact(url)}" if url else name
        self.since = self.clock()
        print(
            f"{self.site}: waiting for {self.server} ({outage.cause(error)}); the crawl goes on",
            file=self.out,
            flush=True,
        )

    def up(self) -> None:
        if self.since is None:
            return
        from admin.human import duration

        waited = duration(round(self.clock() - self.since))
        print(f"{self.site}: {self.server} answers again (after {waited})", file=self.out)
        self.since = None


def _redis_error(error: BaseException) -> bool:
    """Whether ``error`` comes from Redis rather than MongoDB."""
    import redis

    from matcher.errors import IndexUnavailable

    return isinstance(error, IndexUnavailable | redis.RedisError)


def _progress_line(run: dict[str, Any], progress: dict[str, int], matches: str) -> str:
    stats = run.get("stats") or {}
    fetched = stats.get("downloader/response_count")
    parts = [f"{progress['stored']} stored"]
    if progress["pending"]:
        parts.append(f"{progress['pending']} pending")
    if fetched is not None:
        parts.insert(0, f"{fetched} fetched")
    return f"{run.get('outcome') or 'running'}, " + ", ".join(parts) + f"; matches: {matches}"


def _outcome(store: Store, site: str, run: dict[str, Any] | None, out: TextIO) -> int:
    """The ended run's pages not crawled, named, then its one line; its exit status."""
    assert run is not None
    outcome = str(run.get("outcome"))
    stats = run.get("stats") or {}
    skipped = not_crawled(stats)
    progress = store.crawls.crawl_progress(run)
    line = f"{site}: crawl {outcome}: {stats.get('fptrack/pages', 0)} page(s)"
    if skipped:
        line += ", not crawled: " + ", ".join(f"{n} {why}" for why, n in skipped.items())
    line += f"; matches: {matches_line(store, site, progress['matched'])}"
    if progress["pending"]:
        line += f", {progress['pending']} page(s) still to be matched"
    if run.get("error"):
        line += f"; {crawl_error(' '.join(str(run['error']).split()))}"
    for named in named_lines(not_crawled_urls(stats)):
        print(f"  {named}", file=out)
    print(line, file=out)
    return EXIT.get(outcome, 1)
