"""A small web of linked sites for pirate-site discovery (issue 26, part 4), served on
loopback addresses of their own (127.0.0.20 onwards): what ``bench/eval_sites.py``'s
``web`` shape scores.

The watched sites (:data:`WATCHED`) are pirate novel sites. They lead to other hosts the way
such sites do: a 友情链接 list in every page's footer, a "new address" notice in the text
(新地址：host:port), a path that redirects to a mirror. The hosts they lead to are:

- **pirate** (the truth's positives): novel sites copying registered works, some in
  Traditional script, some with homophones and ad lines, some reached only through an
  announcement or a redirect; one whose copies sit under a path robots.txt forbids, with
  one allowed page copying;
- **honest**: unregistered novels of the same kind (the corpus's other texts), a news
  portal, a forum whose posts each quote one registered sentence, a site with the pirates'
  very template and unregistered text, a link directory listing the pirates.

Discovery (:func:`matcher.sites.discovery.discover`, as ``fptrack sites discover`` runs it) is
scored on the candidates it finds: precision and recall of its ``pirate`` verdicts against
the truth, and whether every truth host was found at all.

For search-engine discovery (``searched``: ``bench/eval_sites.py``'s ``search`` shape) the
web has :data:`SEARCHED_PIRATES` pirate sites and :data:`SEARCHED_HONEST` honest ones more
(20 sites in all) that no watched site leads to, its works are the chapters the sites
publish, registered under their headings (第1章 ...: what a pirate site copies is the whole
work), and :class:`LocalSearch` answers as
a search engine would, from an index of every page's text that robots.txt lets it read:
the pages holding the exact phrase asked (spaces and punctuation ignored, Traditional
script read as Simplified, as the large engines do), then two unrelated pages, as real
result lists hold some. An honest review site quotes one sentence of each registered work.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.servers.takedown_site import ChangingSite
from tests.sites.eval_corpus import apply_homophones, homophone_table, insert_ads, to_traditional

WATCHED = 2
PIRATES = 8
HONEST = 6
SEARCHED_PIRATES = 2
SEARCHED_HONEST = 2
CHAPTER_CHARS = 2000
QUICK_CHAPTER_CHARS = 800
FIRST_ADDRESS = 20
"""The web's hosts are 127.0.0.20, 127.0.0.21 ..."""


@dataclass
class Web:
    """The served sites, the works to register, the watched sites' start URLs by name, and
    the truth: the hosts that are pirate sites."""

    sites: list[ChangingSite] = field(default_factory=list)
    works: list[tuple[str, str]] = field(default_factory=list)
    watched: dict[str, list[str]] = field(default_factory=dict)
    pirates: set[str] = field(default_factory=set)
    honest: set[str] = field(default_factory=set)
    chapters: int = 0
    """Chapters each site publishes of a work."""

    def stop(self) -> None:
        for site in self.sites:
            site.stop()


def chapters(text: str, count: int, size: int) -> list[str]:
    return [text[i * size : (i + 1) * size] for i in range(count)]


def _chaptered(parts: Sequence[str]) -> str:
    """A work's chapters under their headings (第1章 ...), as a rights holder registers them."""
    return "\n".join(f"第{c}章\n{part}" for c, part in enumerate(parts, 1))


def _book(site: ChangingSite, folder: str, text: str, count: int, size: int) -> list[str]:
    """``count`` chapters of ``size`` characters of ``text`` under ``/folder/``; their paths."""
    paths = []
    for c, chapter in enumerate(chapters(text, count, size), 1):
        paths.append(f"/{folder}/{c}.html")
        site.put(paths[-1], f"第{c}章", chapter)
    return paths


def _home(site: ChangingSite, title: str, paths: Sequence[str], footer: str = "") -> None:
    links = "".join(f"<li><a href='{p}'>第{n}章</a></li>" for n, p in enumerate(paths, 1))
    head = f"<html><head><meta charset='gbk'><title>{title}</title></head><body>"
    body = f"<h1>{title}</h1><ul>{links}</ul><div class='footer'>{footer}</div></body></html>"
    site.raw("/", head + body)


def build_web(texts: Sequence[str], seed: int, quick: bool = False, searched: bool = False) -> Web:
    """The web (see the module docstring), started; ``searched``: with the sites only a
    search engine finds."""
    rng = random.Random(seed)
    size = QUICK_CHAPTER_CHARS if quick else CHAPTER_CHARS
    count = 2 if quick else 3
    long = distinct([t for t in texts if len(t) >= count * size], 13)
    if len(long) < 13:
        raise ValueError(f"the discovery web needs 13 distinct texts of {count * size} characters")
    registered, unregistered = long[:6], long[6:12]
    published = registered
    if searched:  # registered as the sites publish them: chapter by chapter, under headings
        published = [_chaptered(chapters(t, count, size)) for t in registered]
    web = Web(works=[(f"作品{n}", t) for n, t in enumerate(published)], chapters=count)
    table = homophone_table(_counts(registered))
    address = iter(range(FIRST_ADDRESS, 255))

    def new_site() -> ChangingSite:
        site = ChangingSite(host=f"127.0.0.{next(address)}").start()
        web.sites.append(site)
        return site

    pirates, honest = [new_site() for _ in range(PIRATES)], [new_site() for _ in range(HONEST)]
    for n, site in enumerate(pirates):
        text = registered[n % len(registered)]
        paths = []
        for c, chapter in enumerate(chapters(text, count, size), 1):
            if n % 4 == 1:
                chapter = to_traditional(chapter)
            elif n % 4 == 2:
                chapter = apply_homophones(chapter, rng, 0.05, table)
            lines = insert_ads(chapter.split("。"), rng) if n % 4 == 3 else [chapter]
            path = f"/private/{c}.html" if n == 7 and c > 1 else f"/book/{c}.html"
            site.put(path, f"第{c}章", "\n".join(lines))
            paths.append(path)
        if n == 7:
            site.raw("/robots.txt", "User-agent: *\nDisallow: /private/\n")
        _home(site, f"盗版小说网{n}", paths)
        web.pirates.add(site.netloc)
    # honest: unregistered novels (two), news, a forum quoting one sentence per post, the
    # pirates' own template with unregistered text, a directory listing the pirates
    for n, site in enumerate(honest[:2]):
        _home(site, f"原创文学{n}", _book(site, "n", unregistered[n], count, size))
    news = unregistered[2][: 2 * size]
    honest[2].put("/news/1.html", "城市新闻", news)
    _home(honest[2], "城市新闻网", ["/news/1.html"])
    posts = []
    for p, text in enumerate(registered[:count]):
        quote = text[100:140]
        body = unregistered[3][p * 800 : (p + 1) * 800] + f"\n书友引用：“{quote}”\n"
        honest[3].put(f"/thread/{p}.html", f"讨论{p}", body)
        posts.append(f"/thread/{p}.html")
    _home(honest[3], "书友论坛", posts)
    _home(honest[4], "盗版小说网模板站", _book(honest[4], "book", unregistered[4], count, size))
    directory = "".join(f"<a href='{s.url('/')}'>站点{n}</a> " for n, s in enumerate(pirates))
    _home(honest[5], "网址导航", [], directory)
    web.honest = {s.netloc for s in honest}

    # the watched sites and how they lead: footers link pirates 0-3 and honest 0-5, a notice
    # announces pirate 4, a path redirects to pirate 5; pirates 6 and 7 are linked by the
    # second watched site's footer only
    for w in range(WATCHED):
        site = new_site()
        text = registered[w]
        paths = _book(site, "c", text, count, size)
        friends = pirates[:4] + honest if w == 0 else pirates[6:8] + honest[4:6]
        footer = "友情链接：" + " ".join(
            f"<a href='{s.url('/')}'>书站{n}</a>" for n, s in enumerate(friends)
        )
        if w == 0:
            notice = f"本站新地址：{pirates[4].netloc} 请收藏。"
            site.put("/notice.html", "公告", notice)
            site.redirect("/mirror", pirates[5].url("/"))
            footer += " <a href='/notice.html'>公告</a> <a href='/mirror'>备用站</a>"
        _home(site, f"被监控的盗版站{w}", paths, footer)
        web.watched[f"watched{w}"] = [site.url("/")]
    if searched:
        # linked from nowhere: a plain copy and one with ad lines, an unregistered novel
        # and a review site quoting one sentence of each registered work
        for n in range(SEARCHED_PIRATES):
            site = new_site()
            text = registered[(n + 2) % len(registered)]
            paths = []
            for c, chapter in enumerate(chapters(text, count, size), 1):
                lines = insert_ads(chapter.split("。"), rng) if n == 1 else [chapter]
                paths.append(f"/read/{c}.html")
                site.put(paths[-1], f"第{c}章", "\n".join(lines))
            _home(site, f"无弹窗小说{n}", paths)
            web.pirates.add(site.netloc)
        site = new_site()
        _home(site, "原创文学2", _book(site, "n", long[12], count, size))
        web.honest.add(site.netloc)
        site = new_site()
        reviews = []
        for p, text in enumerate(registered):
            quote = text[size // 2 : size // 2 + 30]
            body = unregistered[5][p * 300 : (p + 1) * 300] + f"\n书中写道：“{quote}”\n"
            site.put(f"/review/{p}.html", f"书评{p}", body)
            reviews.append(f"/review/{p}.html")
        _home(site, "书评网", reviews)
        web.honest.add(site.netloc)
    return web


def distinct(texts: Sequence[str], count: int, gram: int = 10) -> list[str]:
    """Up to ``count`` of ``texts``, in order, none sharing more than 0.2% of its character
    ``gram``-grams with one taken before (the corpus's manuals repeat whole passages: an
    honest site must not copy a registered work by accident)."""
    taken: list[str] = []
    seen: set[str] = set()
    for text in texts:
        grams = {text[i : i + gram] for i in range(len(text) - gram)}
        if grams and len(grams & seen) <= 0.002 * len(grams):
            taken.append(text)
            seen |= grams
            if len(taken) == count:
                break
    return taken


def _counts(texts: Sequence[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for text in texts:
        for char in text:
            counts[char] = counts.get(char, 0) + 1
    return counts


def score(web: Web, found: Sequence[Any]) -> dict[str, Any]:
    """Precision and recall of the ``pirate`` verdicts among the candidates found."""
    flagged = {c.host for c in found if c.pirate}
    candidates = {c.host for c in found}
    true_positive = len(flagged & web.pirates)
    precision = true_positive / len(flagged) if flagged else 0.0
    recall = true_positive / len(web.pirates) if web.pirates else 0.0
    return {
        "candidates": len(candidates),
        "pirates": len(web.pirates),
        "honest": len(web.honest),
        "flagged": len(flagged),
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "missed": sorted(web.pirates - flagged),
        "false": sorted(flagged - web.pirates),
        "not_found": sorted((web.pirates | web.honest) - candidates),
    }


class LocalSearch:
    """A search engine over ``web``: every page robots.txt lets it read, indexed by its text
    (see the module docstring); :meth:`answer` is a
    :class:`tests.servers.search_engine.SearchEngineServer`'s answer."""

    def __init__(self, web: Web) -> None:
        from crawler.one_page import page_text
        from fingerprint.normalize import to_simplified

        self.pages: list[tuple[str, str]] = []
        for site in web.sites:
            robots = site.pages.get("/robots.txt")
            hidden = "/private/" if robots is not None else None
            for path, page in sorted(site.pages.items()):
                if page.status != 200 or not path.endswith(".html"):
                    continue
                if hidden and path.startswith(hidden):
                    continue
                url = site.url(path)
                text = page_text(page.body, "text/html; charset=gbk", url)
                self.pages.append((url, _words(to_simplified(text))))
        self.noise = [url for url, _ in self.pages if "/news/" in url][:1] + [
            site.url("/") for site in web.sites if site.netloc in web.honest
        ][:1]

    def answer(self, query: str) -> list[dict[str, str]]:
        from fingerprint.normalize import to_simplified

        phrase = _words(to_simplified(query))
        found = [url for url, text in self.pages if phrase and phrase in text]
        return [{"url": url, "title": ""} for url in [*found, *self.noise]]


def _words(text: str) -> str:
    """``text``'s letters, digits and Han characters only: what a search engine matches."""
    return "".join(char for char in text if char.isalnum())
