"""A crawl run crawled by several processes: its outcome and stats from theirs (pure).

A run of a site's crawl (one frontier, from its start URLs until its queue is drained) may
be crawled by several processes, each recording its part in the run's ``crawls`` record
under ``processes.<token>`` (:meth:`matcher.store.crawls.CrawlRuns.record_crawl_process`):
``slot``, ``host``, ``pid``, ``started_at``, ``finished_at``, ``outcome``, ``ended_run``,
``error`` and Scrapy's ``stats``. :func:`summary` gives the run's own fields from them.

A process's outcome: ``running``; ``finished`` (it stopped normally: it ended the run, or
saw it ended, or ran out of time and left the frontier to the next crawl, as its stats'
``finish_reason`` says); ``failed`` (an error, in ``error``); ``lost`` (killed, or its lease
expired: another process put its requests back in the queue, or beat's ``resume_crawls``
found it gone, and then its ``finished_at`` is when that was seen). A killed process leaves
no stats, so the run's ``fptrack/pages`` is counted from the store when the store gives it
(every page of the site stored or fetched again since the run started), and the processes'
own sum is kept as ``fptrack/pages_reported``.

>>> processes = {
...     "a": {"outcome": "finished", "ended_run": True, "finished_at": 2,
...           "stats": {"fptrack/pages": 3, "finish_reason": "finished"}},
...     "b": {"outcome": "lost", "stats": {}},
... }
>>> s = summary(processes, stored_pages=5)
>>> s["outcome"], s["stats"]["fptrack/pages"], s["crawlers"], s["lost"]
('finished', 5, 2, 1)
>>> s["stats"]["fptrack/pages_reported"]
3
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

FRONTIER = "fptrack/frontier/"
RUN_GONE = FRONTIER + "run_gone"
"""1 when a process found its run over though it did not end it: another process did, or
Redis lost the frontier (emptied, or restarted without its data)."""
LEASE_LOST = "lease_lost"
"""A crawl process's ``finish_reason`` when it could not renew its slot's lease: Redis was
unreachable longer than a lease, or came back without the frontier."""
FRONTIER_LOST = "the frontier was lost (Redis emptied before the run ended): crawled anew"
"""The one-line reason of a run interrupted because Redis lost its frontier."""
SUMMED_FRONTIER_STATS = frozenset({FRONTIER + "reclaimed", FRONTIER + "requeued"})
RENDER_UNAVAILABLE = "fptrack/render_unavailable"
PAGES = "fptrack/pages"
START_FAILED = "fptrack/start_failed"
START_ERROR = "fptrack/start_error"
"""A crawl's start URLs that gave no page (a count), and why (one line, the first three)."""
NOT_CRAWLED = "fptrack/not_crawled/"
ROBOTS_UNREAD = "fptrack/robots_unread"
ROBOTS_PROBLEM = "fptrack/robots_problem"
"""Hosts whose robots.txt could not be read, crawled as if it allowed everything (a count),
and the last one's line (:mod:`crawler.robots`)."""
IN_FLIGHT_WAITED = "fptrack/in_flight/waited"
IN_FLIGHT_MAX = "fptrack/in_flight/max_bytes"
"""Downloads that waited for the crawl's bytes in flight to fall, and the most bytes of
response bodies it held at once (:mod:`crawler.in_flight`)."""
STOP_REASONS = {
    "closespider_timeout": "deadline",
    "closespider_pagecount": "budget",
    "closespider_itemcount": "budget",
    "shutdown": "stopped",
}
LARGEST = frozenset({"memusage/max", "memusage/startup", "elapsed_time_seconds", IN_FLIGHT_MAX})


def summary(
    processes: dict[str, dict[str, Any]], stored_pages: int | None = None
) -> dict[str, Any]:
    """The run's ``outcome``, ``finished_at``, ``error``, merged ``stats`` and counts;
    ``stored_pages``, when given, is its ``fptrack/pages`` (see the module docstring).

    The outcome is ``running`` while a process runs; else ``failed`` if one failed;
    else ``finished`` if a process ended the run (its frontier drained, or ``max_pages``
    reached); else ``interrupted``: every process stopped or was lost before the frontier
    drained, which the next crawl of the site resumes.
    """
    parts = list(processes.values())
    outcomes = [p.get("outcome") for p in parts]
    if "running" in outcomes:
        outcome = "running"
    elif "failed" in outcomes:
        outcome = "failed"
    elif any(p.get("ended_run") for p in parts):
        outcome = "finished"
    else:
        outcome = "interrupted"
    ends = [p["finished_at"] for p in parts if p.get("finished_at") is not None]
    errors = [p["error"] for p in parts if p.get("error")]
    stats = merge_stats([p.get("stats") or {} for p in parts])
    if stored_pages is not None:
        stats[PAGES + "_reported"] = stats.get(PAGES, 0)
        stats[PAGES] = stored_pages
    return {
        "outcome": outcome,
        "finished_at": max(ends) if ends and outcome != "running" else None,
        "error": "; ".join(errors),
        "stats": stats,
        "crawlers": len(parts),
        "lost": outcomes.count("lost"),
    }


def merge_stats(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Several processes' Scrapy stats as one: counts added up, times spanned.

    Counts are summed (pages, responses, errors...); ``start_time`` is the earliest,
    ``finish_time`` the latest, ``memusage/*``, ``elapsed_time_seconds`` and the bytes in
    flight the largest; ``finish_reason`` lists the distinct reasons; the pages named not
    crawled are joined (:func:`merge_named`). A process's own frontier facts (slot,
    token...) are left out, but requests ``reclaimed`` and ``requeued`` are summed.

    >>> merge_stats([{"fptrack/pages": 2, "start_time": "2026-01-02", "finish_reason": "a"},
    ...              {"fptrack/pages": 5, "start_time": "2026-01-01", "finish_reason": "b"}])
    {'fptrack/pages': 7, 'start_time': '2026-01-01', 'finish_reason': 'a,b'}
    """
    out: dict[str, Any] = {}
    reasons: list[str] = []
    for part in stats:
        for key, value in part.items():
            if key.startswith(FRONTIER) and key not in SUMMED_FRONTIER_STATS:
                continue
            if key == NOT_CRAWLED_URLS:
                continue
            if key == "finish_reason":
                reasons.append(str(value))
            elif key == "start_time":
                out[key] = min(out.get(key, value), value)
            elif key == "finish_time" or key in LARGEST:
                out[key] = max(out.get(key, value), value)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = out.get(key, 0) + value
            else:
                out.setdefault(key, value)
    if reasons:
        out["finish_reason"] = ",".join(dict.fromkeys(reasons))
    named = merge_named([part.get(NOT_CRAWLED_URLS) for part in stats])
    if named:
        out[NOT_CRAWLED_URLS] = named
    return out


def state_lost(stats: dict[str, Any]) -> bool:
    """Whether the run's state in Redis went away under the process (its lease lost, or its
    run over though it did not end it): the crawl was cut short, not failed by its site.

    >>> state_lost({RUN_GONE: 1}), state_lost({"finish_reason": "lease_lost"})
    (True, True)
    >>> state_lost({RUN_GONE: 0, "finish_reason": "finished"})
    False
    """
    return bool(stats.get(RUN_GONE)) or stats.get("finish_reason") == LEASE_LOST


def stop_reason(finish_reason: str) -> str:
    """Why requests still queued when a crawl closed were not fetched ("" when it drained):
    ``deadline`` (the site's ``deadline``), ``budget`` (its ``max_pages``), ``stopped``
    (a timeout or a signal).

    >>> stop_reason("closespider_timeout"), stop_reason("finished")
    ('deadline', '')
    """
    return STOP_REASONS.get(finish_reason, "")


NOT_CRAWLED_STATS = {
    "robots": "robotstxt/forbidden",
    "too_large": "fptrack/too_large",
    "not_html": "fptrack/non_html",
    "undecodable": "fptrack/undecodable",
    "download_refused": "fptrack/download_refused",
    "other_port": "fptrack/other_port",
    "budget": "fptrack/requests_capped",
    "links_capped": "fptrack/links_capped",
    "pending_capped": "fptrack/pending_capped",
}
"""Reasons a page was not crawled (or not read), counted under an existing stat."""


def not_crawled(stats: dict[str, Any]) -> dict[str, int]:
    """The pages a crawl did not crawl, or fetched and could not read, by reason, from its
    stats: ``robots`` (robots.txt forbids them), ``too_large`` (over ``DOWNLOAD_MAXSIZE``),
    ``not_html`` (another content type), ``undecodable``, ``download_refused`` (an archive
    past a bound of :mod:`crawler.downloads`: a zip bomb ...), ``other_port`` (links to another
    port of the site's host), ``depth`` (links beyond ``max_depth``), ``budget``
    (``max_pages`` reached, or the ``max_requests`` bound), ``links_capped`` (links after a
    page's first ``FPTRACK_MAX_LINKS_PER_PAGE``), ``pending_capped`` (new links while
    ``FPTRACK_MAX_PENDING`` requests were queued), ``deadline`` (queued, waiting for a
    download or being downloaded or read when the site's ``deadline`` came),
    ``stopped`` (queued when the crawl was stopped), ``http_<status>`` (answered an HTTP
    error) and ``error_<name>`` (no answer: timeouts, refused connections...).
    Reasons with no page are left out.

    >>> not_crawled({"robotstxt/forbidden": 1, "fptrack/http_status/404": 2,
    ...              "fptrack/http_status/200": 5, "fptrack/not_crawled/depth": 3})
    {'depth': 3, 'http_404': 2, 'robots': 1}
    """
    out: dict[str, int] = {}
    for reason, key in NOT_CRAWLED_STATS.items():
        out[reason] = out.get(reason, 0) + _count(stats.get(key))
    for key, value in stats.items():
        if key.startswith(NOT_CRAWLED):
            reason = key.removeprefix(NOT_CRAWLED)
            out[reason] = out.get(reason, 0) + _count(value)
        elif key.startswith("fptrack/http_status/"):
            code = key.rsplit("/", 1)[-1]
            if code.isdigit() and int(code) >= 400:
                out[f"http_{code}"] = _count(value)
        elif key.startswith("fptrack/errors/"):
            out["error_" + key.rsplit("/", 1)[-1]] = _count(value)
    return {reason: n for reason, n in sorted(out.items()) if n > 0}


ASSETS = "fptrack/assets/"


def assets(stats: dict[str, Any]) -> dict[str, Any]:
    """What a crawl fetched with its pages to read them as a browser shows them
    (:mod:`crawler.asset_fetch`), from its stats: ``pages`` read with assets, and per kind
    (``stylesheet``, ``font``, ``image``) its ``fetched``, ``cached`` and ``inline`` counts
    and ``refused`` by reason, and ``ocr`` outcomes; empty when nothing was.

    >>> assets({"fptrack/assets/pages": 2, "fptrack/assets/stylesheet/fetched": 1,
    ...         "fptrack/assets/stylesheet/cached": 1,
    ...         "fptrack/assets/image/refused/http_404": 1, "fptrack/assets/ocr/read": 3})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'pages': 2, 'stylesheet': {'fetched': 1, 'cached': 1},
     'image': {'refused': {'http_404': 1}}, 'ocr': {'read': 3}}
    """
    out: dict[str, Any] = {}
    for key, value in stats.items():
        if not key.startswith(ASSETS):
            continue
        parts = key.removeprefix(ASSETS).split("/")
        if parts == ["pages"]:
            out["pages"] = _count(value)
        elif len(parts) == 2:
            out.setdefault(parts[0], {})[parts[1]] = _count(value)
        elif len(parts) == 3 and parts[1] == "refused":
            out.setdefault(parts[0], {}).setdefault("refused", {})[parts[2]] = _count(value)
    return out


NOT_CRAWLED_URLS = "fptrack/not_crawled_urls"
"""Stat: the pages not crawled, named: a list of ``{"reason", "url", "why"}`` (the reasons
of :func:`not_crawled`), the first :data:`NAMED_PER_REASON` of each reason
(:class:`NamedPages`)."""
NAMED_PER_REASON = 20
"""Pages named per reason and per site (``FPTRACK_NAMED_PER_REASON``); the others are
counted (:func:`not_crawled_urls`)."""
MAX_URL_CHARS = 2083
MAX_WHY_CHARS = 300


class NamedPages:
    """The first ``per_reason`` pages not crawled of each reason, with their URL and why,
    as the crawl meets them (:data:`NOT_CRAWLED_URLS`).

    >>> named = NamedPages(per_reason=1)
    >>> named.add("robots", "http://h/a", "robots.txt  forbids it")
    True
    >>> named.add("robots", "http://h/b", "robots.txt forbids it")
    False
    >>> named.entries
    [{'reason': 'robots', 'url': 'http://h/a', 'why': 'robots.txt forbids it'}]
    """

    def __init__(self, per_reason: int = NAMED_PER_REASON) -> None:
        self.per_reason = per_reason
        self.entries: list[dict[str, str]] = []
        self._counts: dict[str, int] = {}

    def wants(self, reason: str) -> bool:
        """Whether a page of ``reason`` would still be named (its why may then be worked out)."""
        return self._counts.get(reason, 0) < self.per_reason

    def add(self, reason: str, url: str, why: str) -> bool:
        """Name a page not crawled, unless ``per_reason`` of its reason are; whether it was."""
        if not self.wants(reason):
            return False
        self._counts[reason] = self._counts.get(reason, 0) + 1
        self.entries.append(
            {
                "reason": reason,
                "url": url[:MAX_URL_CHARS],
                "why": " ".join(why.split())[:MAX_WHY_CHARS],
            }
        )
        return True


def named_entries(value: Any) -> list[dict[str, str]]:
    """The well-formed entries of a :data:`NOT_CRAWLED_URLS` stat (as stored: anything else
    is left out)."""
    if not isinstance(value, list):
        return []
    return [
        {"reason": e["reason"], "url": e["url"], "why": e.get("why") or ""}
        for e in value
        if isinstance(e, dict)
        and isinstance(e.get("reason"), str)
        and isinstance(e.get("url"), str)
        and isinstance(e.get("why", ""), str)
    ]


def merge_named(parts: list[Any]) -> list[dict[str, str]]:
    """Several processes' :data:`NOT_CRAWLED_URLS` as one: each page once, per reason no more
    than one process named."""
    limit: dict[str, int] = {}
    for part in parts:
        counts: dict[str, int] = {}
        for entry in named_entries(part):
            counts[entry["reason"]] = counts.get(entry["reason"], 0) + 1
        for reason, n in counts.items():
            limit[reason] = max(limit.get(reason, 0), n)
    out: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    taken: dict[str, int] = {}
    for part in parts:
        for entry in named_entries(part):
            key = (entry["reason"], entry["url"])
            if key in seen or taken.get(entry["reason"], 0) >= limit[entry["reason"]]:
                continue
            seen.add(key)
            taken[entry["reason"]] = taken.get(entry["reason"], 0) + 1
            out.append(entry)
    return out


def not_crawled_urls(stats: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every reason of :func:`not_crawled` with the pages named for it: ``urls`` (``url``
    and ``why``, the first :data:`NAMED_PER_REASON` met) and ``more``, the count of the
    others. Requests still queued when the crawl closed (``deadline``, ``budget``,
    ``stopped``) and links beyond ``max_depth`` past the first are counted only.

    >>> stats = {"robotstxt/forbidden": 2, NOT_CRAWLED_URLS: [
    ...     {"reason": "robots", "url": "http://h/a", "why": "robots.txt forbids it"}]}
    >>> not_crawled_urls(stats)
    {'robots': {'urls': [{'url': 'http://h/a', 'why': 'robots.txt forbids it'}], 'more': 1}}
    """
    named = named_entries(stats.get(NOT_CRAWLED_URLS))
    out: dict[str, dict[str, Any]] = {}
    for reason, count in not_crawled(stats).items():
        urls = [{"url": e["url"], "why": e["why"]} for e in named if e["reason"] == reason]
        out[reason] = {"urls": urls, "more": max(count - len(urls), 0)}
    return out


def named_lines(named: dict[str, dict[str, Any]]) -> list[str]:
    """The pages of :func:`not_crawled_urls`, one line each, and one line per reason for
    the others (as the CLI prints them).

    >>> named_lines({"robots": {"urls": [{"url": "http://h/a", "why": "forbidden"}], "more": 3}})
    ['robots: http://h/a (forbidden)', 'robots: 3 more']
    """
    lines = []
    for reason, found in named.items():
        for page in found["urls"]:
            why = f" ({page['why']})" if page["why"] else ""
            lines.append(f"{reason}: {page['url']}{why}")
        if found["more"]:
            lines.append(f"{reason}: {found['more']:,} more")
    return lines


NEEDS_BROWSER_HINT = (
    "{n} page(s) build their text by script and need a browser: install Chromium "
    "(apt-get install chromium, or set FPTRACK_CHROMIUM; scrapy-playwright comes with "
    "fptrack)"
)
"""The one line said when pages built by script could not be rendered (:mod:`crawler.render`)."""


def hints(stats: dict[str, Any]) -> list[str]:
    """What to do about a crawl's pages not crawled, one line each (as the CLI prints them):
    pages built by script with no browser to render them.

    >>> hints({"fptrack/not_crawled/needs_browser": 2})[0][:47]
    '2 page(s) build their text by script and need a'
    >>> hints({"fptrack/not_crawled/depth": 2})
    []
    """
    n = _count(stats.get(NOT_CRAWLED + "needs_browser"))
    return [NEEDS_BROWSER_HINT.format(n=n)] if n else []


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def outline(run: dict[str, Any] | None, matched: int | None = None) -> dict[str, Any] | None:
    """A crawl run in a few facts, as ``fptrack sites list`` and the admin show a site's
    last crawl: ``run_id``, ``kind``, ``started_at``, ``finished_at``, ``outcome``, ``pages``,
    ``matches`` (``matched``, when counted), ``errors`` (requests that failed: HTTP errors
    and no answers), ``error`` (why the run failed, or was interrupted: one line) and
    ``not_crawled`` (by reason, :func:`not_crawled`) and ``not_crawled_urls`` (the pages
    named, :func:`not_crawled_urls`). None for no run.

    >>> o = outline({"run_id": "r", "outcome": "failed", "error": "start URL x: answered 404",
    ...              "stats": {"fptrack/http_status/404": 1}})
    >>> o["outcome"], o["pages"], o["errors"], o["not_crawled"]
    ('failed', 0, 1, {'http_404': 1})
    """
    if run is None:
        return None
    stats = run.get("stats") or {}
    skipped = not_crawled(stats)
    return {
        "run_id": run.get("run_id"),
        "kind": run.get("kind") or "full",
        "started_at": run.get("started_at"),
        "finished_at": run.get("finished_at"),
        "outcome": run.get("outcome") or "running",
        "pages": _count(stats.get(PAGES)),
        "matches": matched,
        "errors": sum(n for why, n in skipped.items() if why.startswith(("http_", "error_"))),
        "error": " ".join(str(run.get("error") or "").split()),
        "not_crawled": skipped,
        "not_crawled_urls": not_crawled_urls(stats),
    }


def start_problem(stats: dict[str, Any]) -> str:
    """Why the crawl's start URLs gave no page ("" when they did): the crawl failed.

    >>> start_problem({"fptrack/start_failed": 1,
    ...                "fptrack/start_error": "start URL http://h/x: answered 404 Not Found"})
    'start URL http://h/x: answered 404 Not Found'
    """
    if not stats.get(START_FAILED):
        return ""
    return str(stats.get(START_ERROR) or f"{stats[START_FAILED]} start URL(s) gave no page")


def problems(stats: dict[str, Any]) -> list[str]:
    """What kept a crawl from its pages, from its stats (empty when nothing did): a site
    whose pages should be rendered in Chromium and cannot be (:mod:`crawler.render`), start
    URLs that gave no page (:func:`start_problem`), no response at all, robots.txt
    forbidding the whole crawl, a robots.txt that could not be read (its host crawled as if
    it allowed everything), requests that timed out, responses over the size limit, the
    crawl's deadline.

    >>> problems({"response_received_count": 1, "robotstxt/forbidden": 1})
    ['robots.txt forbids fptrack to crawl it (1 request(s) not made)']
    >>> problems({"response_received_count": 9, "fptrack/pages": 8, "robotstxt/forbidden": 2})
    []
    >>> problems({"fptrack/render_unavailable": "no Chromium at /x"})
    ['its pages cannot be rendered: no Chromium at /x']
    >>> problems({"response_received_count": 2, "fptrack/robots_unread": 1,
    ...           "fptrack/robots_problem": "http://h/robots.txt not read (TimeoutError)"})
    ['http://h/robots.txt not read (TimeoutError)']
    """
    unrendered = stats.get(RENDER_UNAVAILABLE)
    if unrendered:  # nothing was requested: the crawl's only problem
        return [f"its pages cannot be rendered: {unrendered}"]
    out = []
    start = start_problem(stats)
    if start:
        out.append(start)
    if not stats.get("response_received_count", 0) and not start:
        errors = sorted(
            k.rsplit("/", 1)[-1] for k in stats if k.startswith("downloader/exception_type_count/")
        )
        out.append("no response: " + (", ".join(errors) or "nothing answered"))
    forbidden = int(stats.get("robotstxt/forbidden", 0))
    if forbidden and not stats.get("fptrack/pages", 0) and not start:
        out.append(f"robots.txt forbids fptrack to crawl it ({forbidden} request(s) not made)")
    unread = _count(stats.get(ROBOTS_UNREAD))
    if unread:
        line = str(stats.get(ROBOTS_PROBLEM) or "robots.txt not read")
        more = f"{unread} robots.txt not read, crawled as if they allowed everything; last: "
        out.append(line if unread == 1 else more + line)
    timeouts = sum(
        v
        for k, v in stats.items()
        if k.startswith("fptrack/errors/") and ("timeout" in k.lower() or "timedout" in k.lower())
    )
    if timeouts:
        out.append(f"{timeouts} request(s) timed out")
    too_large = int(stats.get("fptrack/too_large", 0))
    if too_large:
        out.append(f"{too_large} response(s) over the size limit (DOWNLOAD_MAXSIZE) not read")
    if "closespider_timeout" in str(stats.get("finish_reason", "")):
        out.append("the crawl reached its deadline: pages not reached were not crawled")
    return out


def open_failures(
    failed: list[dict[str, Any]],
    sites: dict[str, datetime | None],
    finished: dict[str, datetime],
) -> list[dict[str, Any]]:
    """The failed runs of ``failed`` (newest first) still to be seen to, as ``fptrack
    check`` reports them: nobody acknowledged the failure (``acknowledged_at``), its site is
    still watched (in ``sites``: each site's name and when it was first saved; a run that
    ended before that was a removed site's of the same name), and no run of its site ended
    ``finished`` after it (``finished``: per site, the end of its latest finished run).

    >>> from datetime import UTC, datetime
    >>> t = [datetime(2026, 1, 1, h, tzinfo=UTC) for h in range(5)]
    >>> runs = [{"run_id": "a", "site": "s", "started_at": t[1], "finished_at": t[2]},
    ...         {"run_id": "b", "site": "gone", "started_at": t[1], "finished_at": t[2]},
    ...         {"run_id": "c", "site": "s", "started_at": t[0], "finished_at": t[0],
    ...          "acknowledged_at": t[1]}]
    >>> [r["run_id"] for r in open_failures(runs, {"s": t[0]}, {})]
    ['a']
    >>> open_failures(runs, {"s": t[0]}, {"s": t[3]})  # crawled again since, and finished
    []
    >>> open_failures(runs, {"s": t[3]}, {})  # removed and added again since it ran
    []
    """
    out = []
    for run in failed:
        site = run.get("site")
        if site not in sites or run.get("acknowledged_at") is not None:
            continue
        saved, ended = sites[site], run.get("finished_at")
        if saved is not None and ended is not None and ended < saved:
            continue
        later = finished.get(site)
        if later is not None and ended is not None and later > ended:
            continue
        out.append(run)
    return out
