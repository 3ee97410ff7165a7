"""Pirate sites found through a search engine: distinctive sentences of the registered works
asked of a self-hosted metasearch engine, the hosts of its answers made discovery leads.

Monitoring services find most pirate sites by searching the web for passages of each new
chapter. fptrack asks SearXNG, the standard self-hosted metasearch engine, through its JSON
API (``/search`` with ``q`` and ``format=json``, sent as a form in a POST, which SearXNG
takes as it takes a GET, so that the sentences stay out of URLs and logs; the instance must
list ``json`` among its ``search.formats``, else it answers 403):

1. **Queries** (:func:`query_sentences`): sentences of a work's text that a search engine
   can find and that few other texts hold: long enough to be distinctive, short enough to be
   one phrase, not repeated within the work (headings, recurring lines), mostly Han
   characters, spread over the text. Each is asked as an exact phrase (in double quotes).
2. **Answers** (:class:`SearchEngine`): one request per query under the outbound policy
   (:mod:`matcher.outbound`: one deadline, a size cap; the instance is a host the operator
   named, so it may be internal), at most ``results`` result URLs kept (http and https
   only). A rate limit (429), another status, an answer that is not SearXNG's JSON, or no
   answer in time is a :class:`SearchError` with one line.
3. **Leads** (:func:`search_leads`): each result's host that is not watched becomes a lead
   of kind ``search`` (:class:`matcher.sites.discovery.Lead`: the query as its source, the
   result's title as its words), sampled and ranked as the hosts the watched sites lead to
   are (:mod:`matcher.sites.discovery`).

:func:`run_search` does the three for the works never searched for yet, newest first,
within a budget of queries a day (UTC) that every run shares
(:meth:`matcher.store.discovery.Discovery.take_search_query`). A work is marked searched
once all its queries were answered; a failure of the search engine ends the run (a
rate-limited engine is not asked again at once), what was found so far sampled and kept.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

from matcher.outbound import OutboundError, Policy, fetching, request
from matcher.sites.discovery import (
    Candidate,
    Crawler,
    Lead,
    candidate_doc,
    host_of,
    sampled_candidates,
)

RESULTS = 10
"""Result URLs kept per query (SearXNG's first page holds about 10)."""
MIN_CHARS, MAX_CHARS = 14, 40
"""A query sentence's length in Han characters: shorter ones are common phrases, longer
ones are cut by search engines (and a copy edited anywhere in them is missed)."""
MIN_HAN_SHARE = 0.8
"""The least share of a query sentence's characters that are Han characters."""
SEARCH_SITE = "search"
"""The :attr:`~matcher.sites.discovery.Lead.site` of a lead a search gave."""

_ENDS = "。！？!?…"
_SENTENCE = re.compile(rf"[^{_ENDS}\n]+[{_ENDS}]*")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACE = re.compile(r"\s+")


class SearchError(Exception):
    """A search that failed; ``detail`` says why, in one line."""

    def __init__(self, detail: str) -> None:
        detail = " ".join(detail.split())
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class Result:
    """One answer of the search engine: where, its title, and the snippet it showed."""

    url: str
    title: str = ""
    snippet: str = ""


def query_sentences(text: str, count: int) -> list[str]:
    """At most ``count`` sentences of ``text`` to search for (step 1 of the module
    docstring): those of :data:`MIN_CHARS` to :data:`MAX_CHARS` Han characters, at least
    :data:`MIN_HAN_SHARE` of them Han, said once in the text; the longest of each of
    ``count`` equal stretches of the text, in the text's order, without their final
    punctuation (search engines ignore it, and a copy may have lost it).

    >>> said = "雨夜里渡口的灯笼被风吹得左右摇晃船夫把缆绳又紧了一圈。"
    >>> query_sentences("第一章\\n" + "他推开门。" * 3 + said, 2)
    ['雨夜里渡口的灯笼被风吹得左右摇晃船夫把缆绳又紧了一圈']
    """
    if count < 1:
        return []
    found = [_SPACE.sub("", m.group()) for m in _SENTENCE.finditer(text)]
    said = Counter(found)
    usable = []
    for at, sentence in enumerate(found):
        han = len(_HAN.findall(sentence))
        body = sentence.rstrip(_ENDS)
        if said[sentence] == 1 and MIN_CHARS <= han <= MAX_CHARS:
            usable += [(at, han, sentence)] if han >= MIN_HAN_SHARE * len(body) else []
    if not usable:
        return []
    stretch = len(found) / count
    best: dict[int, tuple[int, int, str]] = {}
    for at, han, sentence in usable:
        part = min(int(at / stretch), count - 1)
        if part not in best or han > best[part][1]:
            best[part] = (at, han, sentence)
    return [sentence.rstrip(_ENDS) for _, _, sentence in sorted(best.values())]


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


@dataclass
class SearchRun:
    """What one :func:`run_search` did."""

    works: int = 0
    """Works whose every query was answered (marked searched)."""
    queries: int = 0
    results: int = 0
    budget_spent: bool = False
    """The day's budget ran out before every work was searched for."""
    error: str = ""
    """The search engine's failure that ended the run ("" for none)."""
    candidates: list[Candidate] = field(default_factory=list)


def run_search(
    store: Any,
    match_text: Callable[[str], list[dict[str, Any]]],
    crawl: Crawler,
    engine: SearchEngine,
    *,
    budget: int,
    queries_per_work: int,
    sample_pages: int,
    at: datetime,
    works: int = 100,
) -> SearchRun:
    """Search for the works never searched for yet (at most ``works``, newest first),
    ``queries_per_work`` sentences each within ``budget`` queries on ``at``'s day; sample
    the hosts the results lead to, match their pages with ``match_text``, keep the
    candidates (:meth:`matcher.store.discovery.Discovery.save_candidates`; those refused by
    the outbound policy are not) and return what was done."""
    run = SearchRun()
    found: dict[str, list[Result]] = {}
    day = at.strftime("%Y-%m-%d")
    for work in store.works.works_to_search(works):
        sentences = query_sentences(store.works.work_text(work["_id"]), queries_per_work)
        asked = 0
        for sentence in sentences:
            if not store.discovery.take_search_query(day, budget):
                run.budget_spent = True
                break
            try:
                found[sentence] = engine.search(sentence)
            except SearchError as exc:
                run.error = exc.detail
                break
            asked += 1
            run.queries += 1
            run.results += len(found[sentence])
        if asked < len(sentences):
            break
        store.works.mark_searched(work, at, asked)
        run.works += 1
    watched = {host_of(u) for site in store.sites.list_sites() for u in site.start_urls}
    leads = search_leads(found, watched)
    run.candidates = sampled_candidates(
        leads, crawl, match_text, sample_pages, store.discovery.dismissed_hosts()
    )
    store.discovery.save_candidates([candidate_doc(c) for c in run.candidates if not c.refused], at)
    return run
