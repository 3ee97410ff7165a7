"""One page, one record: canonical URLs, learnt cache-buster rules and dead link patterns.

Pirate sites repeat themselves (``docs/design.md``, field realities): one page is linked as
``/``, ``/index.html`` and ``/index.html?t=1732``, and a dead link sits on every chapter.
This module holds what a crawl of one site knows about that, as plain values the spider
keeps and the store saves with the site (:meth:`matcher.store.sites.Sites.site_rules`).

- :func:`normalise`: the URL a page is keyed by before any rule: w3lib's canonical form
  (sorted query, no fragment), the tracking parameters dropped
  (:func:`crawler.extract.untracked`), and a default document (:data:`DEFAULT_DOCUMENTS`)
  dropped from the end of the path, its directory keeping its trailing slash
  (``/book/12/index.html`` -> ``/book/12/``, ``/index.php?id=3`` -> ``/?id=3``; the root is
  ``/``).
- :func:`pattern_of`: a URL's path without its default document, every run of digits
  written ``*`` (``/book/12/345_2.html`` -> ``/book/*/*_*.html``): the unit rules are
  learnt for. A link with a query whose path was already requested under another query is
  asked for later (lower priority): pages first, the queries that may be cache-busters
  after them, by which time a rule may drop them; but the first ``threshold`` such links
  of each pattern are asked for at once, so that the sightings a rule needs come early.
- :class:`DustRules`: parameters that do not change the content, learnt per path pattern
  from the crawl itself, after "Do not crawl in the DUST: different URLs with similar text"
  (Bar-Yossef, Keidar and Schonfeld, WWW 2007): when two fetches of the same path whose
  queries differ in exactly one parameter (present in one only, or with another value) give
  the same body digest, that is one instance of support for dropping the parameter on that
  path's pattern; a different digest is a violation. After ``threshold`` instances
  (``FPTRACK_DUST_THRESHOLD``, 3; one when the site already has a rule dropping that
  parameter on another pattern) and no violation the rule holds: the parameter is dropped
  from the pattern's links before they are queued (:meth:`DustRules.apply`). A parameter
  that ever changed the content (``?page=2``) is never learnt; rules an operator adds are
  applied as learnt ones. :meth:`DustRules.alias_of` finds the page an already fetched
  response duplicates (same path, same digest): the response is then an alias, not a page.
- :class:`DeadPatterns`: path patterns (query ignored) answering 404 or 410 several times
  in a row (``FPTRACK_DEAD_THRESHOLD``, 3; any other answer resets the run). A pattern with
  a run under the threshold is asked for later (lower priority, one step per miss), at the
  threshold it is skipped. A pattern found dead by an earlier crawl is still asked once per
  crawl (a probe): an answer resets it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

from crawler.extract import untracked

DEFAULT_DOCUMENTS = frozenset({"index.html", "index.htm", "index.php", "default.html"})
"""Last path segments that name a directory's default document (dropped by :func:`normalise`)."""
DUST_THRESHOLD = 3
"""Instances of the same body under another value of one parameter that make a rule."""
DEAD_THRESHOLD = 3
"""404/410 answers in a row that make a path pattern dead."""
MAX_OBSERVED_PER_PATH = 8
"""Fetches of one path remembered to compare queries (the first ones)."""
MAX_PATHS = 200_000
"""Paths remembered in one crawl (beyond: no new path is learnt from)."""
GONE = frozenset({404, 410})
_DIGITS = re.compile(r"\d+")


def normalise(url: str) -> str:
    """The URL a page is known by before learnt rules (see the module docstring).

    >>> normalise("http://Site.test/index.html#top")
    'http://site.test/'
    >>> normalise("http://site.test/book/12/index.php?b=2&a=1&utm_source=x")
    'http://site.test/book/12/?a=1&b=2'
    """
    url = canonicalize_url(untracked(url), keep_fragments=False)
    parts = urlsplit(url)
    head, _, last = parts.path.rpartition("/")
    if last.lower() in DEFAULT_DOCUMENTS:
        url = urlunsplit(parts._replace(path=head + "/"))
    return url


def pattern_of(url: str) -> str:
    """The path pattern of ``url``: its path without a default document, digits
    generalised.

    >>> pattern_of("http://site.test/book/12/345_2.html?t=9")
    '/book/*/*_*.html'
    >>> pattern_of("http://site.test/book/12/index.html?t=9")
    '/book/*/'
    """
    head, _, last = (urlsplit(url).path or "/").rpartition("/")
    path = head + "/" if last.lower() in DEFAULT_DOCUMENTS else head + "/" + last
    return _DIGITS.sub("*", path)


def drop_params(url: str, names: set[str] | frozenset[str]) -> str:
    """``url`` without the query parameters ``names`` (others kept as written, in order).

    >>> drop_params("http://site.test/2.html?t=93&x=%E4%B8%80", {"t"})
    'http://site.test/2.html?x=%E4%B8%80'
    """
    parts = urlsplit(url)
    if not parts.query or not names:
        return url
    pairs = parts.query.split("&")
    kept = [p for p in pairs if unquote_plus(p.partition("=")[0]) not in names]
    if len(kept) == len(pairs):
        return url
    return urlunsplit(parts._replace(query="&".join(kept)))


class QueuedRequestMiddleware:
    """Drops a queued request that what the crawl learnt since it was queued makes useless
    (the spider's ``skip_queued``): its path pattern died (``fptrack/skipped/dead_pattern``),
    or a rule learnt since drops one of its parameters and the page is already requested
    without it, or the page was fetched under a URL the rule reduces to this request's
    (``fptrack/skipped/alias``). ``IgnoreRequest`` names the reason; the spider counts it.
    Start URLs always go."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Any) -> QueuedRequestMiddleware:
        return cls(crawler)

    def process_request(self, request: Any, spider: Any = None) -> None:
        from scrapy.exceptions import IgnoreRequest

        from crawler.meta import START

        spider = spider or self.crawler.spider
        skip = getattr(spider, "skip_queued", None)
        if skip is None or request.meta.get(START):
            return None
        reason = skip(request)
        if reason:
            raise IgnoreRequest(f"{reason}: {request.url}")
        return None


@dataclass
class Rule:
    """Drop ``param`` from links on ``pattern``; learnt from ``support`` instances (0: added
    by an operator)."""

    pattern: str
    param: str
    support: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "param": self.param, "support": self.support}


@dataclass
class _Fetch:
    query: dict[str, str]
    digest: int
    url: str  # the canonical URL the fetch was stored or known under


@dataclass
class DustRules:
    """A site's parameter rules, and what this crawl observed towards new ones."""

    threshold: int = DUST_THRESHOLD
    rules: dict[str, set[str]] = field(default_factory=dict)  # pattern -> params dropped
    support: dict[tuple[str, str], int] = field(default_factory=dict)
    violated: set[tuple[str, str]] = field(default_factory=set)
    learnt: list[Rule] = field(default_factory=list)  # the rules this crawl learnt
    _fetches: dict[str, list[_Fetch]] = field(default_factory=dict)

    @classmethod
    def from_stored(
        cls,
        rules: list[dict[str, Any]],
        threshold: int,
        rejected: list[dict[str, Any]] = (),  # type: ignore[assignment]
    ) -> DustRules:
        """The rules kept with the site; those an operator ``rejected`` are never learnt."""
        out = cls(threshold=threshold)
        for rule in rules:
            out.rules.setdefault(str(rule["pattern"]), set()).add(str(rule["param"]))
        out.violated.update((str(r["pattern"]), str(r["param"])) for r in rejected)
        return out

    def apply(self, url: str) -> str:
        """``url`` without the parameters its pattern's rules drop."""
        names = self.rules.get(pattern_of(url))
        return drop_params(url, names) if names else url

    def alias_of(self, url: str, digest: int) -> str | None:
        """The canonical URL of an earlier fetch of ``url``'s path with the same digest
        (under another query, or under a URL that normalises to ``url`` now that a rule was
        learnt): the response is then an alias, not a page."""
        path = url.split("?", 1)[0]
        for fetch in self._fetches.get(path, ()):
            if fetch.digest == digest:
                return fetch.url
        return None

    def fetched_on(self, pattern: str) -> list[str]:
        """The distinct URLs the pages fetched on ``pattern`` are known under."""
        urls = (f.url for fs in self._fetches.values() for f in fs if pattern_of(f.url) == pattern)
        return list(dict.fromkeys(urls))

    def observe(self, url: str, digest: int, known_as: str) -> list[Rule]:
        """Record a fetch of ``url`` (normalised) whose body has ``digest``, stored or
        known under ``known_as``; returns the rules it completes."""
        path, _, query = url.partition("?")
        pairs = dict(parse_qsl(query, keep_blank_values=True))
        fetches = self._fetches.get(path)
        if fetches is None:
            if len(self._fetches) >= MAX_PATHS:
                return []
            fetches = self._fetches[path] = []
        pattern = pattern_of(url)
        made: list[Rule] = []
        for earlier in fetches:
            differing = {
                k
                for k in pairs.keys() | earlier.query.keys()
                if pairs.get(k) != earlier.query.get(k)
            }
            if len(differing) != 1:
                continue
            key = (pattern, differing.pop())
            if earlier.digest != digest:
                self.violated.add(key)
                continue
            if key in self.violated or key[1] in self.rules.get(pattern, ()):
                continue
            self.support[key] = self.support.get(key, 0) + 1
            elsewhere = any(key[1] in params for params in self.rules.values())
            if self.support[key] >= (1 if elsewhere else self.threshold):
                self.rules.setdefault(pattern, set()).add(key[1])
                rule = Rule(pattern, key[1], self.support[key])
                self.learnt.append(rule)
                made.append(rule)
        if len(fetches) < MAX_OBSERVED_PER_PATH:
            fetches.append(_Fetch(pairs, digest, known_as))
        return made


@dataclass
class DeadPatterns:
    """Path patterns answering 404/410 in a row (see the module docstring)."""

    threshold: int = DEAD_THRESHOLD
    misses: dict[str, int] = field(default_factory=dict)  # pattern -> 404/410 in a row
    _probed: set[str] = field(default_factory=set)
    _dead_before: set[str] = field(default_factory=set)

    @classmethod
    def from_stored(cls, dead: list[dict[str, Any]], threshold: int) -> DeadPatterns:
        out = cls(threshold=threshold)
        for entry in dead:
            misses = int(entry.get("misses", 0))
            out.misses[str(entry["pattern"])] = misses
            if misses >= threshold:
                out._dead_before.add(str(entry["pattern"]))
        return out

    def answered(self, url: str, status: int) -> None:
        """Record the answer of a request for ``url``."""
        pattern = pattern_of(url)
        if status in GONE:
            self.misses[pattern] = self.misses.get(pattern, 0) + 1
        elif pattern in self.misses:
            del self.misses[pattern]
        if pattern in self._probed:  # the probe answered: dead (again) or alive
            self._dead_before.discard(pattern)

    def dead(self, url: str) -> bool:
        """Whether a request already queued for ``url`` is to be dropped: its pattern died
        in this crawl (a pattern dead before the crawl is probed first)."""
        pattern = pattern_of(url)
        return self.misses.get(pattern, 0) >= self.threshold and pattern not in self._dead_before

    def verdict(self, url: str) -> tuple[bool, int]:
        """``(skip, priority)`` for a request for ``url``: skipped when its pattern is dead
        (but once per crawl when it was dead before the crawl), else asked for later the
        more misses its pattern has in a row."""
        pattern = pattern_of(url)
        misses = self.misses.get(pattern, 0)
        if misses < self.threshold:
            return False, -misses
        if pattern in self._dead_before and pattern not in self._probed:
            self._probed.add(pattern)
            return False, -misses
        return True, 0

    def to_list(self) -> list[dict[str, Any]]:
        return [{"pattern": p, "misses": n} for p, n in sorted(self.misses.items()) if n > 0]
