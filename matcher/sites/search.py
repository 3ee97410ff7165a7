"""Pirate sites found through a search engine: distinctive sentences of the registered works
asked of a self-hosted metasearch engine, the hosts of its answers made discovery leads.

Monitoring services find most pirate sites by searching the web for passages of each new
chapter. fptrack asks SearXNG, the standard self-hosted metasearch engine, through its JSON
API (``/search`` with ``q`` and ``format=json``, sent as a form in a POST, which SearXNG
takes as it takes a GET, so that the sentences stay out of URLs and logs; the instance must
list ``json`` among its ``search.formats``, else it answers 403):

1. **Queries** (:mod:`matcher.sites.query_choice`): sentences of each new chapter that a
   search engine can find and that no other registered work holds: long enough to be
   distinctive, short enough to be one phrase, said once, mostly Han characters, ranked by
   the document frequency of their fingerprints' postings keys in the works' index (shared
   text and boilerplate never asked), spread over the chapter. Each is asked as an exact
   phrase (in double quotes).
2. **Answers** (:class:`SearchEngine`): one request per query under the outbound policy
   (:mod:`matcher.outbound`: one deadline, a size cap; the instance is a host the operator
   named, so it may be internal), at most ``results`` result URLs kept (http and https
   only). A rate limit (429), another status, an answer that is not SearXNG's JSON, or no
   answer in time is a :class:`SearchError` with one line.
3. **Leads** (:func:`search_leads`): each result's host that is not watched becomes a lead
   of kind ``search`` (:class:`matcher.sites.discovery.Lead`: the query as its source, the
   result's title as its words), sampled and ranked as the hosts the watched sites lead to
   are (:mod:`matcher.sites.discovery`).

:func:`run_search` does the three for the chapters of the works not searched for yet (the
segments of :mod:`fingerprint.segments`: chapters where the text has headings; for a work
registered again with more chapters, the new ones alone), round-robin over the works newest
first, within a budget of queries a day (UTC) that every run shares
(:meth:`matcher.store.discovery.Discovery.take_search_query`). A chapter is marked searched
once all its queries were answered; a failure of the search engine ends the run (a
rate-limited engine is not asked again at once), what was found so far sampled and kept.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

from fingerprint.segments import HEADING
from matcher.errors import IndexUnavailable, OneLineError
from matcher.outbound import OutboundError, Policy, fetching, request
from matcher.sites.discovery import (
    Candidate,
    Crawler,
    Lead,
    candidate_doc,
    host_of,
    sampled_candidates,
)
from matcher.sites.query_choice import Frequency, chapter_queries, sentences

RESULTS = 10
"""Result URLs kept per query (SearXNG's first page holds about 10)."""
SEARCH_SITE = "search"
"""The :attr:`~matcher.sites.discovery.Lead.site` of a lead a search gave."""
READ_SEGMENTS = 8
"""Segments of a work read from the store at a time (their sentences counted together)."""


class SearchError(OneLineError):
    """A search that failed; ``detail`` says why, in one line."""


@dataclass(frozen=True)
class Result:
    """One answer of the search engine: where, its title, and the snippet it showed."""

    url: str
    title: str = ""
    snippet: str = ""


def parse_results(body: bytes, limit: int = RESULTS) -> list[Result]:
    """The result URLs of a SearXNG JSON answer (``{"results": [{"url": ..., "title": ...,
    "content": ...}, ...]}``): http and https ones only, each once, at most ``limit``;
    :class:`SearchError` for anything else.

    >>> parse_results(b'{"results": [{"url": "http://a.example/1", "title": "t"}]}')
    [Result(url='http://a.example/1', title='t', snippet='')]
    """
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SearchError(f"the answer is not SearXNG's JSON: {exc}") from None
    items = data.get("results") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise SearchError("the answer is not SearXNG's JSON: no list of results")
    out: dict[str, Result] = {}
    for item in items:
        if len(out) >= limit:
            break
        url = item.get("url") if isinstance(item, dict) else None
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            continue
        out.setdefault(url, Result(url, _text(item.get("title")), _text(item.get("content"))))
    return list(out.values())


def _text(value: Any, limit: int = 200) -> str:
    return " ".join(value.split())[:limit] if isinstance(value, str) else ""


class SearchEngine:
    """A SearXNG instance at ``url`` (``FPTRACK_SEARCH_URL``), asked under ``policy`` (the
    instance's host and port its own: an operator may run it on an internal address)."""

    def __init__(self, url: str, policy: Policy, results: int = RESULTS) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SearchError(f"the search engine's URL must be http(s)://HOST[:PORT]: {url!r}")
        self.base = url.rstrip("/")
        self.policy = policy.owning(url)
        self.results = results

    @classmethod
    def from_settings(cls, settings: Any) -> SearchEngine:
        """The instance of ``FPTRACK_SEARCH_URL``, asked under the policy of fptrack's own
        fetches (:func:`matcher.outbound.fetching`), ``FPTRACK_SEARCH_RESULTS`` results kept."""
        return cls(settings.search_url, fetching(settings), settings.search_results)

    def search(self, sentence: str) -> list[Result]:
        """The results of ``sentence`` asked as an exact phrase; :class:`SearchError`."""
        form = urlencode({"q": f'"{sentence}"', "format": "json"}).encode("ascii")
        url = f"{self.base}/search"
        headers = {
            "Accept": "application/json",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        try:
            answer = request("POST", url, self.policy, body=form, headers=headers)
        except OutboundError as exc:
            reason = exc.detail.removeprefix(f"{url}: ")
            raise SearchError(f"the search engine at {self.base}: {reason}") from None
        if answer.status == 429:
            raise SearchError(
                f"the search engine at {self.base} is rate-limiting (429 Too Many Requests)"
            )
        if answer.status == 403:
            raise SearchError(
                f"the search engine at {self.base} refused the JSON format (403 Forbidden): "
                "list json in search.formats of its settings.yml"
            )
        if answer.status != 200:
            raise SearchError(
                f"the search engine at {self.base} answered {answer.status} {answer.reason}"
            )
        try:
            return parse_results(answer.body, self.results)
        except SearchError as exc:
            raise SearchError(f"the search engine at {self.base}: {exc.detail}") from None


def search_leads(found: Mapping[str, Iterable[Result]], watched: set[str]) -> list[Lead]:
    """The leads of the results ``found`` for each query (step 3 of the module docstring):
    every result whose host is not ``watched``, of kind ``search``, the query its source
    and its title its words."""
    leads = []
    for query, results in found.items():
        for result in results:
            host = host_of(result.url)
            if host and host not in watched:
                leads.append(
                    Lead(host, result.url, "search", SEARCH_SITE, query, result.title[:100])
                )
    return leads


@dataclass(frozen=True)
class Chapter:
    """New text of a work to search for: one of its chapters (:func:`chapters_of`; a piece
    of :mod:`fingerprint.segments` in a work without headings), from ``start`` to ``end`` in
    the work's text (the part searched before left out), its ``title`` (the heading) and
    ``text``."""

    start: int
    end: int
    title: str
    text: str


def chapters_of(text: str, start: int, title: str = "") -> list[Chapter]:
    """The chapters of ``text``, at ``start`` in its work's text: cut at its chapter
    headings (:data:`fingerprint.segments.HEADING`), each from its heading to the next, the
    text before the first heading one of its own (under ``title``); a segment holds several
    chapters when the work is short (kept whole) or its chapters are (merged).

    >>> [(c.start, c.title) for c in chapters_of("序\\n第1章 起\\n甲\\n第2章 承\\n乙", 100)]
    [(100, ''), (102, '第1章 起'), (110, '第2章 承')]
    """
    heads = [(m.start(), m.group(0).strip()) for m in HEADING.finditer(text)]
    if not heads or heads[0][0] > 0:
        heads.insert(0, (0, title))
    bounds = [at for at, _ in heads[1:]] + [len(text)]
    return [
        Chapter(start + at, start + end, head, text[at:end])
        for (at, head), end in zip(heads, bounds, strict=True)
    ]


class _NewChapters:
    """The chapters of ``work`` (as :meth:`matcher.store.works.Works.works_to_search` gives
    it) after its ``searched_to``, in order, read :data:`READ_SEGMENTS` segments at a time;
    the sentences of the segments read together counted together (a line said in each of
    them is no query)."""

    def __init__(self, store: Any, work: dict[str, Any]) -> None:
        self.store, self.work = store, work
        self.offset = int(work.get("searched_to") or 0)
        self.queue: list[Chapter] = []
        self.said: Counter[str] = Counter()
        self.ended = False
        self._editions: int | None = None
        self.done = False
        """The work was marked searched whole."""

    def next(self) -> Chapter | None:
        """The next chapter, or None when none is left."""
        if not self.queue and not self.ended:
            read = self.store.works.segments_after(self.work["_id"], self.offset, READ_SEGMENTS)
            self.ended = len(read) < READ_SEGMENTS
            self.said = Counter()
            for segment in read:
                start, end = int(segment["start"]), int(segment["end"])
                skip = max(0, self.offset - start)
                text = segment["text"][skip : end - start]
                self.queue += chapters_of(text, start + skip, segment.get("title", ""))
                self.said.update(sentences(text))
            if read:
                self.offset = int(read[-1]["end"])
        return self.queue.pop(0) if self.queue else None

    def editions(self) -> int:
        """How many works may hold the work's sentences without sharing them: the work and
        its near twins (editions of its text, indexed too)."""
        if self._editions is None:
            twins = self.store.twins.twins(self.work["_id"])
            self._editions = 1 + sum(bool(t.get("near_twin")) for t in twins)
        return self._editions


def _ask(
    sentences: list[str],
    engine: SearchEngine,
    store: Any,
    day: str,
    budget: int,
    found: dict[str, list[Result]],
    run: SearchRun,
) -> bool:
    """Ask the search engine for each of ``sentences``, each within the day's ``budget``,
    into ``found`` and ``run``; whether all were answered (else the budget is spent or the
    search engine failed, said in ``run``)."""
    for sentence in sentences:
        if not store.discovery.take_search_query(day, budget):
            run.budget_spent = True
            return False
        try:
            found[sentence] = engine.search(sentence)
        except SearchError as exc:
            run.error = exc.detail
            return False
        run.queries += 1
        run.results += len(found[sentence])
    return True


@dataclass
class SearchRun:
    """What one :func:`run_search` did."""

    works: int = 0
    """Works whose every new chapter was searched for (no longer to search)."""
    chapters: int = 0
    """Chapters searched for (each of its queries answered; one without a usable sentence
    counts, with no query)."""
    queries: int = 0
    results: int = 0
    budget_spent: bool = False
    """The day's budget ran out before every work was searched for."""
    error: str = ""
    """The search engine's failure that ended the run ("" for none)."""
    index: str = ""
    """Why sentences were chosen by their text alone, not by the works' index ("" when
    every chapter's were chosen by the index)."""
    candidates: list[Candidate] = field(default_factory=list)


NO_INDEX = "no works' index given: sentences chosen by their text alone"


def run_search(
    store: Any,
    match_text: Callable[[str], list[dict[str, Any]]],
    crawl: Crawler,
    engine: SearchEngine,
    *,
    budget: int,
    queries_per_chapter: int,
    sample_pages: int,
    at: datetime,
    works: int = 100,
    frequency: Frequency | None = None,
) -> SearchRun:
    """Search for the new chapters of the works to search for (at most ``works``, newest
    first), ``queries_per_chapter`` sentences each, chosen with ``frequency`` (the works'
    index, :mod:`matcher.sites.query_choice`; by the text alone without it, or when it
    cannot be read: :attr:`SearchRun.index` says so), within ``budget`` queries on ``at``'s
    day; sample the hosts the results lead to, match their pages with ``match_text``, keep
    the candidates (:meth:`matcher.store.discovery.Discovery.save_candidates`; those refused
    by the outbound policy are not) and return what was done.

    Order: round-robin over the works, newest first: each round takes the next chapter of
    each work in turn (its chapters in order), so a novel of a thousand new chapters takes
    one chapter's queries a round, as every other new work does, and never the whole day's
    budget. A chapter is marked searched (:meth:`matcher.store.works.Works.mark_searched`)
    once all its queries were answered."""
    run = SearchRun(index="" if frequency is not None else NO_INDEX)
    found: dict[str, list[Result]] = {}
    day = at.strftime("%Y-%m-%d")
    reading = [_NewChapters(store, work) for work in store.works.works_to_search(works)]
    while reading and not (run.budget_spent or run.error):
        for work in list(reading):
            chapter = work.next()
            if chapter is None:  # every chapter read: the work is done (if not marked so)
                reading.remove(work)
                if not work.done:
                    work.done = store.works.mark_searched(work.work, at, work.offset, 0)
                    run.works += work.done
                continue
            try:
                chosen = chapter_queries(
                    chapter.text, queries_per_chapter, said=work.said, frequency=frequency,
                    own=work.editions() if frequency else 1,
                )  # fmt: skip
            except IndexUnavailable as exc:
                frequency = None
                run.index = " ".join(f"{exc}: sentences chosen by their text alone".split())
                chosen = chapter_queries(chapter.text, queries_per_chapter, said=work.said)
            if not _ask(chosen, engine, store, day, budget, found, run):
                break
            run.chapters += 1
            work.done = store.works.mark_searched(work.work, at, chapter.end, len(chosen))
            run.works += work.done
    watched = {host_of(u) for site in store.sites.list_sites() for u in site.start_urls}
    leads = search_leads(found, watched)
    run.candidates = sampled_candidates(
        leads, crawl, match_text, sample_pages, store.discovery.dismissed_hosts()
    )
    store.discovery.save_candidates([candidate_doc(c) for c in run.candidates if not c.refused], at)
    return run
