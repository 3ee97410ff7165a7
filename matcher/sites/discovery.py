"""Pirate sites found before anyone reports them.

Pirate sites link to each other (友情链接 lists, "new address" notices, mirrors) and copies of
one novel cluster on a few networks. :func:`discover` works from the sites already watched:

1. **Leads.** A bounded crawl of each watched site (``harvest`` pages,
   :func:`crawler.sample_crawl.sample_site`) collects the other hosts it leads to
   (:func:`leads_of`): its outbound links (with their anchor text), the hosts its pages
   redirect to, and the addresses it announces in its text (新地址, 最新网址, 备用网址,
   域名已更换 ... followed by a domain or an address: :data:`ANNOUNCED`). Hosts already
   watched are not candidates. A watched site's own host may be internal (the operator
   watches it); where it leads follows the outbound policy
   (:mod:`matcher.outbound`).
2. **Sample.** Each candidate is crawled the same way, ``sample`` pages (robots.txt
   obeyed) from the pages the watched sites lead to, then its home page, and each page's
   text matched against the registered works
   (:meth:`matcher.matching.engine.Engine.match_text`: nothing is stored). A candidate the policy
   refuses (an internal address, unless ``FPTRACK_OUTBOUND_ALLOW_PRIVATE``) is not
   requested at all, and not kept: it is returned with its reason
   (:attr:`Candidate.refused`) for the caller to say.
3. **Score and rank** (:func:`score`): the works it copies and the share of its sampled
   pages that copy one, with the watched sites that lead to it as a tiebreaker. A candidate
   with at least :data:`PIRATE_MIN_PAGES` copying pages is ``pirate``.

Candidates are kept with their evidence (leads, sample matches; :mod:`matcher.store.
discovery`): the admin lists them ranked with one action to watch one, and
``fptrack sites discover`` does the same from the command line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

ANNOUNCED = re.compile(
    r"(?:新地址|最新地址|新网址|最新网址|备用网址|备用地址|永久网址|永久地址|域名已更换|新域名|发布页)"
    r"[^A-Za-z0-9]{0,20}"
    r"((?:https?://)?(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}(?::\d{1,5})?"
    r"|(?:https?://)?\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?)"
)
"""An address announced in a page's text, after the words such notices use."""
PIRATE_MIN_PAGES = 1
"""A candidate with at least this many sampled pages copying a registered work is a pirate."""
MAX_LEADS = 20
"""At most this many leads are kept as a candidate's evidence."""
MAX_STARTS = 5
"""At most this many of the pages the watched sites lead to start a candidate's sample."""
MAX_MATCHES = 20
"""At most this many sample matches are kept as a candidate's evidence."""


class Page(Protocol):
    url: str
    final_url: str
    status: int | None
    text: str
    links: list[tuple[str, str]]
    error: str


class Crawler(Protocol):
    """A bounded crawl of one host (:class:`crawler.sample_crawl.Sampler`)."""

    def __call__(self, urls: list[str], pages: int, *, watched: bool = False) -> Sequence[Page]:
        """Up to ``pages`` pages of the host of ``urls``, from them; ``watched``: it is a
        watched site's (its own host may be internal)."""
        ...

    def refusal(self, url: str) -> str:
        """Why the host of ``url`` may not be crawled (the outbound policy), or ""."""
        ...


@dataclass(frozen=True)
class Lead:
    """How a watched site leads to a host: ``link`` (with its anchor text), ``redirect`` or
    ``announced`` (with the words around the address)."""

    host: str
    url: str
    kind: str
    site: str
    source: str
    words: str = ""


def host_of(url: str) -> str:
    """``host[:port]`` of a URL (or of a bare address), lower-case.

    >>> host_of("HTTP://Example.com:8080/a"), host_of("new.example.cn")
    ('example.com:8080', 'new.example.cn')
    """
    if "://" not in url:
        url = "http://" + url
    return urlsplit(url).netloc.lower()


def leads_of(site: str, pages: Iterable[Page], watched: set[str]) -> list[Lead]:
    """Every lead the pages of the watched ``site`` give to hosts not in ``watched``."""
    out = []
    for page in pages:
        if page.final_url and host_of(page.final_url) != host_of(page.url):
            out.append(Lead(host_of(page.final_url), page.final_url, "redirect", site, page.url))
            continue  # the page is the other host's: its links and words are not this site's
        for url, words in page.links:
            out.append(Lead(host_of(url), url, "link", site, page.url, words))
        for m in ANNOUNCED.finditer(page.text):
            address = m.group(1)
            url = address if "://" in address else "http://" + address
            words = page.text[max(0, m.start() - 10) : m.end()].strip()
            out.append(Lead(host_of(url), url, "announced", site, page.url, words[:100]))
    return [lead for lead in out if lead.host and lead.host not in watched]


@dataclass
class Candidate:
    """A host some watched site leads to, its evidence and, once sampled, its score."""

    host: str
    leads: list[Lead] = field(default_factory=list)
    pages: int = 0
    copying_pages: int = 0
    works: dict[str, str] = field(default_factory=dict)
    matches: list[dict[str, Any]] = field(default_factory=list)
    errors: int = 0
    refused: str = ""
    """Why it was not sampled: the outbound policy refuses its host ("" when sampled)."""

    @property
    def home(self) -> str:
        """Where to start crawling it: an announced or redirect URL's root, else a link's."""
        first = sorted(self.leads, key=lambda lead: lead.kind != "announced")[0]
        parts = urlsplit(first.url)
        return f"{parts.scheme}://{parts.netloc}/"

    @property
    def starts(self) -> list[str]:
        """Where a sample of it starts: the pages the watched sites lead to (a few), then
        its home page."""
        led = list(dict.fromkeys(lead.url for lead in self.leads))[:MAX_STARTS]
        return [*led, self.home] if self.home not in led else led

    @property
    def linked_from(self) -> list[str]:
        return sorted({lead.site for lead in self.leads})

    @property
    def pirate(self) -> bool:
        return self.copying_pages >= PIRATE_MIN_PAGES

    def score(self) -> float:
        """Works copied, plus the share of sampled pages copying one, plus a little for each
        watched site that leads to it (so that, among equals, the better linked comes first)."""
        share = self.copying_pages / self.pages if self.pages else 0.0
        return len(self.works) + share + 0.01 * len(self.linked_from)


def candidates_of(leads: Iterable[Lead]) -> dict[str, Candidate]:
    out: dict[str, Candidate] = {}
    for lead in leads:
        out.setdefault(lead.host, Candidate(lead.host)).leads.append(lead)
    return out


def sample(
    candidate: Candidate,
    pages: Sequence[Page],
    match_text: Callable[[str], list[dict[str, Any]]],
) -> None:
    """Match each sampled page's text against the registered works; the candidate's pages,
    copying pages, works and sample matches."""
    candidate.pages = len(pages)
    for page in pages:
        if page.error or not page.text.strip():
            candidate.errors += bool(page.error)
            continue
        found = match_text(page.text)
        if not found:
            continue
        candidate.copying_pages += 1
        for record in found:
            title = str(record.get("work_title", ""))
            candidate.works[str(record["work_id"])] = title
            if len(candidate.matches) < MAX_MATCHES:
                candidate.matches.append(
                    {
                        "url": page.final_url or page.url,
                        "work_id": str(record["work_id"]),
                        "work_title": title,
                        "score": round(float(record.get("score", 0.0)), 4),
                    }
                )


def candidate_doc(c: Candidate) -> dict[str, Any]:
    """A candidate as :meth:`matcher.store.discovery.Discovery.save_candidates` keeps it."""
    return {
        "host": c.host,
        "home": c.home,
        "linked_from": c.linked_from,
        "leads": [
            {"kind": x.kind, "site": x.site, "url": x.url, "source": x.source, "words": x.words}
            for x in c.leads[:MAX_LEADS]
        ],
        "lead_count": len(c.leads),
        "pages": c.pages,
        "copying_pages": c.copying_pages,
        "works": [{"work_id": w, "title": t} for w, t in sorted(c.works.items())],
        "matches": c.matches,
        "errors": c.errors,
        "pirate": c.pirate,
        "score": round(c.score(), 4),
        **({"refused": c.refused} if c.refused else {}),
    }


def site_name_for(host: str) -> str:
    """The name a candidate is watched under: its host, ``:`` made ``-``.

    >>> site_name_for("127.0.0.3:8080")
    '127.0.0.3-8080'
    """
    return host.replace(":", "-")[:64]


def ranked(found: Iterable[Candidate]) -> list[Candidate]:
    return sorted(found, key=lambda c: (-c.score(), c.host))


def discover(
    watched: dict[str, list[str]],
    crawl: Crawler,
    match_text: Callable[[str], list[dict[str, Any]]],
    *,
    harvest: int,
    sample_pages: int,
    skip: set[str] = frozenset(),  # type: ignore[assignment]
) -> list[Candidate]:
    """Steps 1-3 of the module docstring. ``watched``: each watched site's start URLs by
    name; ``crawl``: a bounded crawl of one host; ``skip``: hosts not to sample again
    (dismissed ones). The candidates ranked, then those refused (:attr:`Candidate.refused`)."""
    hosts = {host_of(u) for urls in watched.values() for u in urls}
    leads: list[Lead] = []
    for site, urls in sorted(watched.items()):
        for url in urls:
            leads += leads_of(site, crawl([url], harvest, watched=True), hosts)
    return sampled_candidates(leads, crawl, match_text, sample_pages, skip)


def sampled_candidates(
    leads: Iterable[Lead],
    crawl: Crawler,
    match_text: Callable[[str], list[dict[str, Any]]],
    sample_pages: int,
    skip: set[str],
) -> list[Candidate]:
    """Steps 2-3 of the module docstring for the hosts of ``leads`` but those of ``skip``:
    each sampled unless the outbound policy refuses it; the candidates ranked, then those
    refused."""
    found = {h: c for h, c in candidates_of(leads).items() if h not in skip}
    for candidate in found.values():
        candidate.refused = crawl.refusal(candidate.home)
        if not candidate.refused:
            sample(candidate, crawl(candidate.starts, sample_pages), match_text)
    refused = sorted((c for c in found.values() if c.refused), key=lambda c: c.host)
    return ranked(c for c in found.values() if not c.refused) + refused


def run_discovery(
    store: Any,
    engine: Any,
    crawl: Crawler,
    *,
    harvest: int,
    sample_pages: int,
    at: Any,
) -> list[Candidate]:
    """:func:`discover` from the store's watched sites, the candidates sampled kept
    (:meth:`matcher.store.discovery.Discovery.save_candidates`; those refused are not);
    all of them, as :func:`discover` returns them."""
    watched = {site.name: list(site.start_urls) for site in store.sites.list_sites()}
    found = discover(
        watched, crawl, engine.match_text, harvest=harvest, sample_pages=sample_pages,
        skip=store.discovery.dismissed_hosts(),
    )  # fmt: skip
    store.discovery.save_candidates([candidate_doc(c) for c in found if not c.refused], at)
    return found
