"""A watched site's crawl configuration, validated once wherever it comes from.

The same :class:`SiteConfig` is stored in MongoDB (``sites``), edited from the CLI (and the
admin), read by the crawler and turned into a beat schedule. ``from_dict`` refuses unknown
keys and wrong types with a :class:`SiteConfigError`, so a stored or typed configuration
never reaches the crawler half-valid.

>>> site = SiteConfig.from_dict({"name": "demo", "start_urls": ["http://127.0.0.1:8000/"]})
>>> site.allowed_domains, site.max_depth, site.schedule
(('127.0.0.1',), 5, 'daily')
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from matcher.errors import MatcherError

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
DEFAULT_NEXT_PAGE_TEXTS = ("下一页", "下页", "下一頁", "next page", "next")
SCHEDULES = re.compile(
    r"^(daily(@\d{1,2}:\d{2})?|hourly|never|every \d+ ?(s|m|h|seconds|minutes|hours)|"
    r"cron [\d*/,-]+ [\d*/,-]+ [\d*/,-]+ [\d*/,-]+ [\d*/,-]+)$"
)


class SiteConfigError(MatcherError, ValueError):
    """A site configuration has a missing, unknown or invalid field."""


MAX_CRAWLERS = 16
MAX_INT = 2**31 - 1
"""The largest whole number a site field takes."""
MAX_INTERVAL_SECONDS = 366 * 86400
INTERVAL_UNITS = {"s": 1, "seconds": 1, "m": 60, "minutes": 60, "h": 3600, "hours": 3600}
"""Seconds per unit of an ``every N <unit>`` schedule."""


CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
"""What each field of a ``cron M H DOM MON DOW`` schedule takes (Celery's ``crontab``)."""
MONTH_DAYS = {m: 30 if m in (4, 6, 9, 11) else 29 if m == 2 else 31 for m in range(1, 13)}


def _cron_field_ok(field: str, low: int, high: int) -> bool:
    """Whether a cron field (``*``, ``N``, ``N-M``, ``*/S``, ``N-M/S``, comma lists) stays in
    ``low..high`` with steps of at least 1."""
    for part in field.split(","):
        span, _, step = part.partition("/")
        if step and (not step.isdigit() or int(step) < 1 or (span != "*" and "-" not in span)):
            return False  # Celery takes a step after * or a range only
        if span == "*":
            continue
        bounds = span.split("-")  # a range may wrap (22-2), as Celery reads it
        if len(bounds) > 2 or not all(b.isdigit() and low <= int(b) <= high for b in bounds):
            return False
    return True


def _in_range(schedule: str) -> bool:
    """Whether a schedule that has the right form names a real time or a sane interval.

    >>> _in_range("cron 30 2 * * 1-5"), _in_range("cron 99 * * * *"), _in_range("cron */0 * * * *")
    (True, False, False)
    """
    if schedule.startswith("cron "):
        fields = schedule[5:].split()
        if not all(_cron_field_ok(f, *r) for f, r in zip(fields, CRON_RANGES, strict=True)):
            return False
        days, months = fields[2].split(","), fields[3].split(",")
        if all(x.isdigit() for x in days + months):  # no such date: 31 in June
            return any(int(d) <= MONTH_DAYS[int(m)] for d in days for m in months)
        return True
    if schedule.startswith("daily@"):
        hour, minute = schedule[6:].split(":")
        return int(hour) < 24 and int(minute) < 60
    if schedule.startswith("every "):
        amount = schedule[6:].strip()
        digits = amount.rstrip("abcdefghijklmnopqrstuvwxyz ")
        unit = amount[len(digits) :].strip()
        return 1 <= int(digits) * INTERVAL_UNITS[unit] <= MAX_INTERVAL_SECONDS
    return True


@dataclass(frozen=True)
class SiteConfig:
    """How to crawl one watched site.

    ``start_urls`` are where the crawl begins; links are followed only within
    ``allowed_domains`` (default: the hosts of the start URLs), at most ``max_depth`` links
    away, and only when they match one of ``include`` (regular expressions; none means all)
    and none of ``exclude``. ``content_selector`` (CSS, or XPath when it starts with ``/``)
    picks the main text; otherwise it is extracted (trafilatura, with a fallback).
    ``join_next_pages`` records each page's "next page" and "previous page" links
    (``next_page_texts``, and 上一页 ...), so that a chapter split over several pages is
    matched as a whole too (:mod:`matcher.matching.split`); every page is its own record either way.
    ``deadline`` (seconds, 0: none) stops a crawl that has run that long, as Scrapy's
    ``CLOSESPIDER_TIMEOUT`` does: a site answering slowly on purpose cannot hold a crawl
    open (the pages not reached are left to the next crawl, and the crawl says so).
    ``obey_robots`` honours robots.txt. ``crawlers`` (1 to :data:`MAX_CRAWLERS`) is how
    many crawler processes, on any machines, may crawl the site at once, sharing one frontier
    in Redis (:mod:`crawler.frontier`); a scheduled crawl starts that many.
    ``schedule``: ``daily`` (at the hour beat chooses), ``daily@HH:MM`` (UTC), ``hourly``,
    ``every N m|h|s``, ``cron M H DOM MON DOW`` or ``never``. ``recrawl`` (same syntax,
    default ``never``) schedules the site's *incremental* crawl besides the full one: its
    start pages, its sitemaps and RSS/Atom feeds, then only the pages not stored yet, those a
    sitemap or feed says changed since they were fetched, and those linked from new pages
    (``FPTRACK_RECRAWL_DEPTH`` links away); stored pages are asked for with conditional
    requests (:mod:`crawler.incremental`). An ``authorised`` site is licensed to carry the
    works: its matches are recorded as authorised.
    ``render`` opens each page in headless Chromium and reads the DOM its scripts built
    (:mod:`crawler.render`; extra ``render``), for sites that load their text by script.
    """

    name: str
    start_urls: tuple[str, ...]
    allowed_domains: tuple[str, ...] = ()
    max_depth: int = 5
    max_pages: int = 0
    deadline: int = 0
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    content_selector: str = ""
    join_next_pages: bool = True
    next_page_texts: tuple[str, ...] = DEFAULT_NEXT_PAGE_TEXTS
    obey_robots: bool = True
    crawlers: int = 1
    schedule: str = "daily"
    recrawl: str = "never"
    authorised: bool = False
    render: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not NAME.match(self.name):
            raise SiteConfigError(
                f"site name must be 1-64 letters, digits, '.', '_' or '-', got {self.name!r}"
            )
        if not self.start_urls:
            raise SiteConfigError(f"site {self.name}: at least one start URL is needed")
        for url in self.start_urls:
            parts = urlsplit(url) if isinstance(url, str) else None
            if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
                raise SiteConfigError(f"site {self.name}: {url!r} is not an http(s) URL")
        if not self.allowed_domains:
            hosts = dict.fromkeys(urlsplit(u).hostname or "" for u in self.start_urls)
            object.__setattr__(self, "allowed_domains", tuple(hosts))
        if self.max_depth < 0 or self.max_pages < 0 or self.deadline < 0:
            raise SiteConfigError(
                f"site {self.name}: max_depth, max_pages and deadline must be >= 0"
            )
        if not 1 <= self.crawlers <= MAX_CRAWLERS:
            raise SiteConfigError(f"site {self.name}: crawlers must be in 1..{MAX_CRAWLERS}")
        for pattern in (*self.include, *self.exclude):
            try:
                re.compile(pattern)
            except (re.error, OverflowError, RecursionError) as exc:
                raise SiteConfigError(f"site {self.name}: bad pattern {pattern!r}: {exc}") from exc
        for label, spec in (("schedule", self.schedule), ("recrawl", self.recrawl)):
            if not isinstance(spec, str) or not SCHEDULES.match(spec) or not _in_range(spec):
                raise SiteConfigError(
                    f"site {self.name}: {label} {spec!r} is not one of daily, "
                    "daily@HH:MM, hourly, every N m|h|s, cron M H DOM MON DOW, never"
                )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SiteConfig:
        """A configuration from stored or typed fields; unknown keys are an error."""
        if not isinstance(data, dict):
            raise SiteConfigError("a site configuration must be a mapping")
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(known) - {"_id", "created_at", "updated_at"})
        if unknown:
            raise SiteConfigError(f"unknown site fields: {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for name, f in known.items():
            if name not in data:
                continue
            value = data[name]
            default = f.default if f.default is not dataclasses.MISSING else None
            if isinstance(default, tuple) or name == "start_urls":
                if isinstance(value, str) or not isinstance(value, list | tuple):
                    raise SiteConfigError(f"{name} must be a list of strings")
                if not all(isinstance(v, str) for v in value):
                    raise SiteConfigError(f"{name} must be a list of strings")
                value = tuple(value)
            elif isinstance(default, bool):
                if not isinstance(value, bool):
                    raise SiteConfigError(f"{name} must be true or false")
            elif isinstance(default, int):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise SiteConfigError(f"{name} must be an integer")
                if not 0 <= value <= MAX_INT:
                    raise SiteConfigError(f"{name} must be from 0 to {MAX_INT}")
            elif name == "extra":
                if not isinstance(value, dict):
                    raise SiteConfigError("extra must be a mapping")
            elif not isinstance(value, str):
                raise SiteConfigError(f"{name} must be a string")
            values[name] = value
        if "name" not in values or "start_urls" not in values:
            raise SiteConfigError("a site needs a name and start_urls")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain fields (lists, not tuples) for MongoDB and JSON."""
        out = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}
