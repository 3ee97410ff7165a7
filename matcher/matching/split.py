"""Split chapters: which crawled pages are parts of one chapter, in order.

Every page is stored under its own URL with the URLs of its "next page" and "previous page"
links (:class:`matcher.pages.CrawledPage`). Those links also join whole pages (a manual's
sections, a novel's chapters linked by 上一页/下一页), so a link alone does not make two
pages parts of one chapter. Page ``b`` continues page ``a`` (:func:`continues`) when ``a``
links to ``b`` as its next page (or ``b`` to ``a`` as its previous one), their titles agree
once part markers are removed (第2页, (2/3), [2], 第2部分 ...), and either ``b``'s URL is
``a``'s with a part number (``123.html`` -> ``123_2.html``, ``?page=2``, ``/2.html`` after
a page's folder ...) or a title carries a part marker.

:func:`chain` walks the store from one page to every part of its chapter (at most
``max_parts``), backwards through previous pages and pages whose next page it is, then
forwards. The matcher matches the parts one by one and their joined text as one more unit.

>>> a = Part("http://x/b/12.html", "第三章 风起", next_url="http://x/b/12_2.html")
>>> b = Part("http://x/b/12_2.html", "第三章 风起（2/3）", prev_url="http://x/b/12.html")
>>> continues(a, b), continues(b, a)
(True, False)
>>> c = Part("http://x/doc/ch02.html", "第二章 安装", prev_url="http://x/doc/ch01.html")
>>> continues(Part("http://x/doc/ch01.html", "第一章 简介", next_url=c.url), c)
False
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

PART_MARKERS = re.compile(
    r"[\s_\-–—·|]*(?:"
    r"[(（\[【]\s*(?:第\s*)?\d{1,3}\s*(?:/\s*\d{1,3}\s*)?(?:页|頁|部分)?\s*[)）\]】]"
    r"|第\s*\d{1,3}\s*(?:/\s*\d{1,3}\s*)?(?:页|頁|部分)"
    r"|(?<!\d)\d{1,3}\s*/\s*\d{1,3}$"
    r"|(?:page|part|p\.)\s*\d{1,3}(?:\s*(?:/|of)\s*\d{1,3})?"
    r")\s*",
    re.IGNORECASE,
)
PAGE_PARAMETERS = frozenset({"page", "p", "pg", "pn", "part", "pageno", "page_no", "pageindex"})
_PART_SUFFIX = re.compile(r"^(?P<stem>.*?)[_\-](?P<n>\d{1,3})$")
_LAST_SEGMENT = re.compile(r"^(?P<folder>.*/)(?P<name>[^/]*?)(?P<ext>\.[A-Za-z0-9]{1,6})?$")


@dataclass(frozen=True)
class Part:
    """What the rule needs of a stored page."""

    url: str
    title: str
    next_url: str = ""
    prev_url: str = ""

    @classmethod
    def of(cls, doc: dict[str, Any]) -> Part:
        return cls(
            doc["url"], doc.get("title", ""), doc.get("next_url", ""), doc.get("prev_url", "")
        )


def strip_markers(title: str) -> str:
    """``title`` without part markers, whitespace collapsed.

    >>> strip_markers("第一章 风起 (2/3)"), strip_markers("[原创] 茶话 - 第2页")
    ('第一章 风起', '[原创] 茶话')
    """
    return " ".join(PART_MARKERS.sub(" ", title).split()).strip(" -_|·")


def has_marker(title: str) -> bool:
    """Whether ``title`` carries a part marker."""
    return bool(PART_MARKERS.search(title))


def part_number(url: str) -> tuple[str, int] | None:
    """``(base, n)`` when ``url`` names part ``n`` of the page at ``base``, else None.

    A part is a page-number query parameter, a ``_n`` / ``-n`` suffix of the file name, or
    a file ``n`` directly in the folder of the first part (``/12/`` -> ``/12/2.html``).
    A URL without a part number is part 1 of itself.

    >>> part_number("http://x/b/12_2.html"), part_number("http://x/t?id=5&page=3")
    (('http://x/b/12.html', 2), ('http://x/t?id=5', 3))
    >>> part_number("http://x/b/12.html")
    ('http://x/b/12.html', 1)
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    for i, (name, value) in enumerate(query):
        if name.lower() in PAGE_PARAMETERS and value.isdigit():
            rest = urlencode(query[:i] + query[i + 1 :])
            return urlunsplit(parts._replace(query=rest)), int(value)
    path = _LAST_SEGMENT.match(parts.path or "/")
    if path is None:
        return url, 1
    suffix = _PART_SUFFIX.match(path["name"])
    if suffix:
        base_path = path["folder"] + suffix["stem"] + (path["ext"] or "")
        return urlunsplit(parts._replace(path=base_path)), int(suffix["n"])
    return url, 1


def _is_next_part(first: str, second: str) -> bool:
    a, b = part_number(first), part_number(second)
    if a is None or b is None:
        return False
    if a[0] == b[0] and b[1] == a[1] + 1:
        return True
    # /book/12/ or /book/12/index.html -> /book/12/2.html
    folder = first if first.endswith("/") else first.rsplit("/", 1)[0] + "/"
    tail = second[len(folder) :] if second.startswith(folder) else ""
    return bool(re.fullmatch(r"2(?:\.[A-Za-z0-9]{1,6})?/?", tail)) and a[1] == 1


def continues(a: Part, b: Part) -> bool:
    """Whether page ``b`` is the part of a split chapter that follows page ``a``."""
    if a.next_url != b.url and b.prev_url != a.url:
        return False
    ta, tb = strip_markers(a.title), strip_markers(b.title)
    if ta and tb and ta != tb:
        return False
    return _is_next_part(a.url, b.url) or has_marker(a.title) or has_marker(b.title)


def chain(
    start: dict[str, Any],
    by_url: Callable[[Iterable[str]], dict[str, dict[str, Any]]],
    linking_to: Callable[[str], list[dict[str, Any]]],
    max_parts: int,
) -> list[dict[str, Any]]:
    """The stored parts of ``start``'s split chapter, in order (``[start]`` when none).

    ``by_url`` looks pages up by URL and ``linking_to`` finds the pages whose next page is a
    URL (the store's :meth:`~matcher.store.pages.Pages.pages_by_url` and
    :meth:`~matcher.store.page_links.PageLinks.pages_linking_to`).
    """
    parts = [start]
    seen = {start["url"]}
    while len(parts) < max_parts:
        first = parts[0]
        before = _previous(first, by_url, linking_to)
        if before is None or before["url"] in seen:
            break
        parts.insert(0, before)
        seen.add(before["url"])
    while len(parts) < max_parts:
        last = parts[-1]
        url = last.get("next_url", "")
        after = by_url([url]).get(url) if url and url not in seen else None
        if after is None or not continues(Part.of(last), Part.of(after)):
            break
        parts.append(after)
        seen.add(after["url"])
    return parts


def _previous(
    page: dict[str, Any],
    by_url: Callable[[Iterable[str]], dict[str, dict[str, Any]]],
    linking_to: Callable[[str], list[dict[str, Any]]],
) -> dict[str, Any] | None:
    me = Part.of(page)
    candidates = list(by_url([me.prev_url]).values()) if me.prev_url else []
    candidates += linking_to(me.url)
    for doc in candidates:
        if doc["url"] != me.url and continues(Part.of(doc), me):
            return doc
    return None
