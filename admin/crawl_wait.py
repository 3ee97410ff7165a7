"""``fptrack crawl NAME --wait``: follow an enqueued crawl to its outcome.

The crawl task records its run in ``crawls`` with its own id in the run's ``tasks``
(:meth:`matcher.store.operations.Operations.crawl_of_task`); this polls that record every
``--poll`` seconds (:data:`DEFAULT_POLL`, 2 s) and shows the run's pages as the store counts
them (:meth:`matcher.store.operations.Operations.crawl_progress`: stored, matched, pending), on a
tqdm line when stderr is a terminal, else one plain line whenever they change; the pages
fetched come from the run's stats once it ends. It ends with one line and the outcome's exit
status (:data:`EXIT`): 0 ``finished``, 1 ``failed`` (with its reason), 3 ``interrupted`` or
``lost``, 4 when ``--timeout`` seconds passed first (:data:`DEFAULT_TIMEOUT`: 0, no limit),
the crawl still running or not yet started (no worker took it); before that line, the pages
not crawled, named (:func:`matcher.crawl_runs.named_lines`: the first
``FPTRACK_NAMED_PER_REASON`` of each reason, with the URL and why). Ctrl-C stops the
waiting only: the crawl goes on.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from matcher.crawl_runs import named_lines, not_crawled, not_crawled_urls

if TYPE_CHECKING:
    from matcher.store.operations import Operations

DEFAULT_POLL = 2.0
"""Seconds between two looks at the crawl's record."""
DEFAULT_TIMEOUT = 0.0
"""Seconds to wait at most (0: as long as the crawl runs)."""
EXIT = {"finished": 0, "failed": 1, "interrupted": 3, "lost": 3}
TIMED_OUT = 4


def wait_for_crawl(
    ops: Operations,
    site: str,
    task_id: str,
    *,
    poll: float = DEFAULT_POLL,
    timeout: float = DEFAULT_TIMEOUT,
    out: TextIO | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Follow the run of the task ``task_id`` of ``site`` until it ends; its exit status
    (see the module docstring)."""
    out = out or sys.stderr
    deadline = clock() + timeout if timeout > 0 else None
    from tqdm import tqdm

    bar = tqdm(desc=f"crawl of {site}", unit=" page", disable=not out.isatty(), file=out)
    shown: tuple[Any, ...] = ()
    run: dict[str, Any] | None = None
    try:
        while True:
            run = ops.crawl_of_task(site, task_id)
            if run is not None:
                progress = ops.crawl_progress(run)
                line = _progress_line(run, progress)
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
                state = "still running" if run is not None else "not started (is a worker up?)"
                print(f"{site}: waited {timeout:g} s: the crawl is {state}", file=out)
                return TIMED_OUT
            time.sleep(poll)
    finally:
        bar.close()
    return _outcome(site, run, out)


def _progress_line(run: dict[str, Any], progress: dict[str, int]) -> str:
    stats = run.get("stats") or {}
    fetched = stats.get("downloader/response_count")
    parts = [f"{progress['stored']} stored", f"{progress['matched']} matched"]
    if progress["pending"]:
        parts.append(f"{progress['pending']} pending")
    if fetched is not None:
        parts.insert(0, f"{fetched} fetched")
    return f"{run.get('outcome') or 'running'}, " + ", ".join(parts)


def _outcome(site: str, run: dict[str, Any] | None, out: TextIO) -> int:
    """The ended run's pages not crawled, named, then its one line; its exit status."""
    assert run is not None
    outcome = str(run.get("outcome"))
    stats = run.get("stats") or {}
    skipped = not_crawled(stats)
    line = f"{site}: crawl {outcome}: {stats.get('fptrack/pages', 0)} page(s)"
    if skipped:
        line += ", not crawled: " + ", ".join(f"{n} {why}" for why, n in skipped.items())
    if run.get("error"):
        line += f"; {' '.join(str(run['error']).split())}"
    for named in named_lines(not_crawled_urls(stats)):
        print(f"  {named}", file=out)
    print(line, file=out)
    return EXIT.get(outcome, 1)
