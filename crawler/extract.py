"""Main text of an HTML page, its links and its "next page" link.

:func:`extract` picks the main text:

- with a site's ``content_selector``: the selected nodes (CSS, or XPath when the selector
  starts with ``/`` or ``(``), as text with paragraph breaks;
- otherwise trafilatura (``favor_recall=True``, no comments, no tables: old sites' layout
  tables come out flattened into one line, and the fallback reads them better), which
  keeps a novel chapter's or a news article's paragraphs and drops navigation, footers
  and most ads. When it returns nothing, or fewer than :data:`MIN_SHARE_OF_DENSEST` (half)
  of the characters of the densest block, the densest block is taken instead: the ``div``,
  ``article``, ``section``, ``main``, ``td``, ``dd``, ``pre`` or ``body`` whose own text
  (its text nodes and those of its paragraph and inline children, links excluded) has the
  most letters and CJK characters, outside ``nav``, ``header``, ``footer``, ``aside``,
  ``script``, ``style``, forms and elements whose class or id names navigation, headers,
  footers, ads or comments; its descendant blocks that are mostly link text (under
  :data:`MAX_LINK_SHARE` of their letters outside links: a chapter list under the chapter)
  are left out. Either way, lines that are exactly the text of one of the
  page's links are dropped (navigation, which trafilatura keeps on short pages). Pages
  of more than :data:`FAST_ABOVE_ELEMENTS` elements skip trafilatura's quadratic
  justext/readability comparison (its ``fast`` mode); pages of more than
  :data:`QUICK_ABOVE_ELEMENTS` are read by the densest block alone (bounded memory).

Characters are counted with :func:`content_chars` (letters and CJK characters: word
characters other than digits and ``_``). :attr:`Extracted.own_chars` leaves out the text
of the page's links, so a page that is only a list of links (a chapter index) has few own
characters however long.
The title is the first ``<h1>``, else ``<title>``.

:func:`find_page_link` finds a "next page" link (an anchor whose text, without spaces,
brackets and arrows, is one of a site's ``next_page_texts`` such as 下一页); 下一章 (next
chapter) is a different page and never matches. :data:`PREV_PAGE_TEXTS` are the labels of
the matching "previous page" links. :func:`find_rel_link` reads the head's
``<link rel="next">`` and ``<link rel="prev">`` instead. :data:`SEQUENCE_TEXTS` label the
links to a page's neighbours in a sequence of whole pages (上一章/下一章, 上一篇/下一篇 ...),
which the spider follows at the page's own depth: a chapter's neighbour is its sibling, not
its child. Links lose their fragment and their tracking parameters (:func:`untracked`).
Malformed HTML never raises: lxml repairs it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

import cssselect
import trafilatura
from lxml import etree
from parsel import Selector
from w3lib.url import safe_url_string

MIN_SHARE_OF_DENSEST = 0.5
MAX_LINK_SHARE = 0.5
"""A block inside the densest one whose letters are under this share outside links is a
link list, left out of the text."""
PREV_PAGE_TEXTS = ("上一页", "上页", "上一頁", "previous page", "prev page", "previous", "prev")
TRACKING_PARAMS = frozenset(
    {"spm", "fbclid", "gclid", "yclid", "msclkid", "wxfrom", "isappinstalled", "share_token"}
)
SEQUENCE_TEXTS = (
    "下一章", "上一章", "下章", "上章", "下一節", "上一節", "下一节", "上一节",
    "下一篇", "上一篇", "下一回", "上一回", "next chapter", "previous chapter", "prev chapter",
)  # fmt: skip

BLOCK_CONTAINERS = frozenset({"div", "article", "section", "main", "td", "dd", "pre", "body"})
SKIPPED = frozenset(
    {
        "nav",
        "header",
        "footer",
        "aside",
        "script",
        "style",
        "noscript",
        "template",
        "form",
        "select",
        "button",
        "iframe",
        "head",
        "title",
    }
)
# Children whose whole text belongs to their parent's own text when scoring density.
OWN_TEXT_CHILDREN = frozenset(
    {"p", "br", "span", "font", "b", "strong", "em", "i", "u", "center", "blockquote"}
)
LINE_BREAKING = frozenset(
    {"p", "br", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "dd", "dt", "article"}
    | {"section", "blockquote", "pre", "table", "ul", "ol", "dl", "main", "td", "center"}
)
CHROME_NAMES = re.compile(
    r"(?:^|[\s_-])(?:nav|navbar|menu|header|footer|foot|copyright|sidebar|breadcrumbs?"
    r"|crumbs?|ads?|advert|banner|comments?|share|toolbar)(?:$|[\s_-])",
    re.IGNORECASE,
)
SELECTOR_ERRORS = (ValueError, SyntaxError, etree.XPathError, cssselect.SelectorError)
_NOT_LETTERS = re.compile(r"[\W\d_]+")
_PREFIX = 4
LINKS_PER_PREFIX = 32
"""Link texts kept per first four characters by :func:`own_chars` (the longest ones)."""
_LABEL_DECORATION = re.compile(r"[\s\[\]【】()（）<>《》«»‹›→←⇒⇐>»·:：|]+")


class SelectorError(ValueError):
    """A site's ``content_selector`` is neither valid CSS nor valid XPath."""


@dataclass(frozen=True)
class Extracted:
    """A page's title and main text (lines joined by newlines) and how it was found."""

    title: str
    text: str
    method: str  # "selector", "trafilatura", "densest" or "none"
    own_chars: int  # letters and CJK characters of ``text`` outside the page's links


def content_chars(text: str) -> int:
    """Letters and CJK characters in ``text`` (word characters but digits and ``_``).

    >>> content_chars("第3章 Rain, 雨！")
    7
    """
    return len(_NOT_LETTERS.sub("", text))


FAST_ABOVE_ELEMENTS = 5000
"""Pages with more elements than this are extracted by trafilatura without its justext and
readability comparison (``fast=True``): justext's paragraph revision is quadratic in the
number of paragraphs (a 20,000-paragraph page took 80 s); the densest block stands in."""
QUICK_ABOVE_ELEMENTS = 50_000
"""Pages with more elements than this (ten times a long forum thread) are read the quick way:
trafilatura's copies of a 600,000-element tree took 550 MB for a 7 MB page (the densest
block: 125 MB)."""

MAX_NESTING = 400
"""Container elements nested deeper than this lose their tags (:func:`flatten_deep`): far
deeper than real pages nest, and shallow enough for the recursive walks below."""
_NESTING = frozenset(
    "div span font section article main aside nav header footer blockquote center b i u em"
    " strong small big sub sup table tbody thead tr td th ul ol dl dd form label".split()
)
_TAG = re.compile(
    r"<(?P<script>script|style)\b.*?</(?P=script)\s*>|<!--.*?-->"
    r"|<(?P<close>/?)(?P<name>[a-zA-Z][a-zA-Z0-9]*)\b[^>]*>",
    re.DOTALL | re.IGNORECASE,
)


def flatten_deep(html: str, limit: int = MAX_NESTING) -> str:
    """``html`` with the tags of container elements nested more than ``limit`` deep
    removed, their text kept. libxml2 stops building the tree at 2,048 levels and the rest
    of the page is lost, while a browser shows all of it; pages nested that deep are built
    to hide their text. One pass over the tags: linear in the page's size.

    >>> flatten_deep("<div><div><b>雨</b></div>夜</div>", limit=1)
    '<div>雨夜</div>'
    """
    if html.count("<") <= limit:
        return html
    depth, dropped, out, last = 0, dict.fromkeys(_NESTING, 0), [], 0
    for tag in _TAG.finditer(html):
        name = (tag.group("name") or "").lower()
        if name not in _NESTING:
            continue
        drop = False
        if tag.group("close"):
            if dropped[name]:
                dropped[name] -= 1
                drop = True
            else:
                depth = max(0, depth - 1)
        elif not tag.group(0).endswith("/>"):
            if depth >= limit:
                dropped[name] += 1
                drop = True
            else:
                depth += 1
        if drop:
            out.append(html[last : tag.start()])
            last = tag.end()
    if not out:
        return html
    out.append(html[last:])
    return "".join(out)


def parse_html(html: str) -> Selector:
    """A parsel selector over ``html`` (nested at most :data:`MAX_NESTING` deep, see
    :func:`flatten_deep`); never raises on malformed markup."""
    return Selector(text=flatten_deep(html) or "<html></html>", type="html")


def check_selector(selector: str) -> None:
    """Raise :class:`SelectorError` when ``selector`` is not usable CSS or XPath."""
    if not selector:
        return
    try:
        _select(parse_html("<html><body></body></html>"), selector)
    except SELECTOR_ERRORS as exc:
        raise SelectorError(f"content_selector {selector!r} is not valid: {exc}") from exc


def extract(
    html: str, url: str, selector: str = "", page: Selector | None = None, quick: bool = False
) -> Extracted:
    """The title and main text of ``html`` (see the module docstring).

    ``page`` may pass the already parsed ``html``. ``url`` is only used by trafilatura.
    ``quick`` skips trafilatura and takes the densest block: the cheap extractor for pages
    that took too long to extract the full way.
    """
    html = flatten_deep(html)
    page = page if page is not None else parse_html(html)
    title = page_title(page)
    links = link_texts(page)
    if selector:
        try:
            nodes = _select(page, selector)
        except SELECTOR_ERRORS as exc:
            raise SelectorError(f"content_selector {selector!r} is not valid: {exc}") from exc
        text = "\n".join(filter(None, (_node_text(n) for n in nodes)))
        return Extracted(title, text, "selector", own_chars(text, links))
    elements = _element_count(page.root)
    if quick or elements > QUICK_ABOVE_ELEMENTS:
        text = drop_link_lines(densest_block_text(page), links)
        return Extracted(title, text, "densest" if text else "none", own_chars(text, links))
    found = trafilatura.extract(
        html,
        url=url or None,
        favor_recall=True,
        include_comments=False,
        include_tables=False,
        fast=elements > FAST_ABOVE_ELEMENTS,
    )
    text = drop_link_lines(_clean_lines(found or ""), links)
    densest = drop_link_lines(densest_block_text(page), links)
    if content_chars(text) < MIN_SHARE_OF_DENSEST * content_chars(densest):
        text, method = densest, "densest"
    else:
        method = "trafilatura"
    if not text:
        method = "none"
    return Extracted(title, text, method, own_chars(text, links))


def _element_count(root: etree._Element) -> int:
    return sum(1 for _ in root.iter())


def page_title(page: Selector) -> str:
    """The first non-empty ``<h1>``, else the ``<title>``, whitespace collapsed."""
    for h1 in page.css("h1"):
        title = " ".join(" ".join(h1.css("::text").getall()).split())
        if title:
            return title
    return " ".join(" ".join(page.css("title::text").getall()).split())


def link_texts(page: Selector) -> list[str]:
    """The distinct texts of the page's anchors (whitespace collapsed), longest first."""
    texts = {" ".join(" ".join(a.itertext()).split()) for a in page.root.iter("a")}
    return sorted((t for t in texts if t), key=len, reverse=True)


def drop_link_lines(text: str, links: Iterable[str]) -> str:
    """``text`` without the lines that are exactly the text of one of the page's links.

    A line that is a whole link (首页, a category, a chapter title in a list) is navigation;
    the main text of a chapter or an article is not a link.
    """
    anchors = set(links)
    return "\n".join(line for line in text.splitlines() if line.strip() not in anchors)


def own_chars(text: str, links: Iterable[str]) -> int:
    """:func:`content_chars` of ``text`` once the page's link texts in it are removed.

    One pass from the left: at each position the longest link text starting there (among
    :data:`LINKS_PER_PREFIX` per first four characters) is skipped. Linear in the text's
    length whatever the number of links (a page with 200,000 links took minutes when every
    link text was searched for in the whole text).

    >>> own_chars("第1章 雨夜 第2章 归途 正文", ["第1章 雨夜", "第2章 归途"])
    2
    """
    starts: dict[str, list[str]] = {}
    for link in sorted({t for t in links if content_chars(t)}, key=len, reverse=True):
        bucket = starts.setdefault(link[:_PREFIX], [])
        if len(bucket) < LINKS_PER_PREFIX:
            bucket.append(link)
    if not starts:
        return content_chars(text)
    lengths = sorted({len(key) for key in starts}, reverse=True)
    kept, last, i, end = [], 0, 0, len(text)
    while i < end:
        for size in lengths:
            found = next(
                (t for t in starts.get(text[i : i + size], ()) if text.startswith(t, i)), None
            )
            if found:
                kept.append(text[last:i])
                i = last = i + len(found)
                break
        else:
            i += 1
    kept.append(text[last:])
    return content_chars(" ".join(kept))


def densest_block_text(page: Selector) -> str:
    """The text, with paragraph breaks, of the container with the most own text, without
    its link lists (descendant blocks whose letters are mostly link text: a chapter list
    under the chapter).

    Two passes over the elements outside chrome (a chrome element's subtree is never
    entered): the letters of every subtree, all and outside links, are summed from the
    leaves up, then each container is scored from its children's sums. Linear in the page's
    size.
    """
    order = _outside_chrome(page.root)
    inline: dict[etree._Element, int] = {}
    total: dict[etree._Element, int] = {}
    for element in reversed(order):
        if not _tag(element):
            continue
        all_chars = count = content_chars(element.text or "")
        for child in element:
            tail = content_chars(child.tail or "")
            all_chars += total.get(child, 0) + tail
            count += inline.get(child, 0) + tail
        total[element] = all_chars
        inline[element] = 0 if _tag(element) == "a" else count
    best, best_score = None, 0
    for element in order:
        if _tag(element) not in BLOCK_CONTAINERS:
            continue
        score = content_chars(element.text or "")
        for child in element:
            if _tag(child) in OWN_TEXT_CHILDREN:
                score += inline.get(child, 0)
            score += content_chars(child.tail or "")
        if score > best_score:
            best, best_score = element, score
    if best is None:
        return ""
    link_lists = {
        e
        for e, chars in total.items()
        if chars and _tag(e) in LINE_BREAKING and inline[e] < MAX_LINK_SHARE * chars
    }
    return _element_text(best, link_lists)


def page_links(
    page: Selector, base_url: str, encoding: str = "utf-8", limit: int | None = None
) -> list[str]:
    """Absolute http(s) URLs of the page's ``<a>`` and ``<area>`` links and of its frames
    (``<iframe>``, ``<frame>``), without fragments and tracking parameters
    (:func:`untracked`), at most ``limit`` distinct ones (the first in the page).

    Relative links are resolved against ``<base href>`` when the page has one.
    """
    return page_links_counted(page, base_url, encoding, limit)[0]


def page_links_counted(
    page: Selector, base_url: str, encoding: str = "utf-8", limit: int | None = None
) -> tuple[list[str], int]:
    """:func:`page_links`, and how many link attributes the page has after those taken
    (0 when ``limit`` was not reached): what a cap on links per page drops."""
    base = _base(page, base_url)
    seen: dict[str, None] = {}
    resolved: dict[str, str | None] = {}  # a page repeats its links (menus, 200,000 times)
    values = _link_values(page)
    for href in values:
        if href in resolved:
            url = resolved[href]
        else:
            url = resolved[href] = _absolute(base, href, encoding)
        if url:
            seen.setdefault(url)
            if limit is not None and len(seen) >= limit:
                return list(seen), sum(1 for _ in values)
    return list(seen), 0


_LINK_ATTRIBUTES = {"a": "href", "area": "href", "iframe": "src", "frame": "src"}


def _link_values(page: Selector) -> Iterator[str]:
    """The page's link attributes (``<a href>``, ``<area href>``, ``<iframe src>``,
    ``<frame src>``) in document order, one at a time: a page of 200,000 links is not
    turned into 200,000 selectors at once."""
    root = page.root
    if not hasattr(root, "iter"):
        return
    for element in root.iter(*_LINK_ATTRIBUTES):
        value = element.get(_LINK_ATTRIBUTES[element.tag])
        if value is not None:
            yield value


def find_page_link(
    page: Selector, base_url: str, texts: Sequence[str], encoding: str = "utf-8"
) -> str | None:
    """The URL of the first anchor labelled one of ``texts`` (e.g. 下一页), or None.

    Labels are compared without spaces, brackets and arrows, case-insensitively; an anchor
    pointing back at ``base_url`` itself does not count.
    """
    return next(_labelled(page, base_url, texts, encoding), None)


def find_page_links(
    page: Selector, base_url: str, texts: Sequence[str], encoding: str = "utf-8"
) -> tuple[str, ...]:
    """The distinct URLs of every anchor labelled one of ``texts`` (compared as in
    :func:`find_page_link`), in page order."""
    return tuple(dict.fromkeys(_labelled(page, base_url, texts, encoding)))


def find_rel_link(
    page: Selector, base_url: str, rels: Set[str], encoding: str = "utf-8"
) -> str | None:
    """The URL of the first ``<link>`` whose ``rel`` is one of ``rels`` (``next``; ``prev``,
    ``previous``), the way a page names its neighbours in its head, or None."""

    def named(link: etree._Element) -> bool:
        return bool(rels & set((link.get("rel") or "").lower().split()))

    return next(_targets(page, base_url, "link", named, encoding), None)


def _labelled(page: Selector, base_url: str, texts: Sequence[str], encoding: str) -> Iterator[str]:
    wanted = {_label(t) for t in texts if _label(t)}

    def labelled(anchor: etree._Element) -> bool:
        return _label("".join(anchor.itertext())) in wanted

    return _targets(page, base_url, "a", labelled, encoding)


def _targets(
    page: Selector,
    base_url: str,
    tag: str,
    accept: Callable[[etree._Element], bool],
    encoding: str,
) -> Iterator[str]:
    """The absolute URLs of the ``tag`` elements ``accept`` takes, in page order, other than
    ``base_url`` itself."""
    base = _base(page, base_url)
    here = base_url.split("#", 1)[0]
    for element in page.root.iter(tag):
        href = element.get("href")
        if href is None or not accept(element):
            continue
        url = _absolute(base, href, encoding)
        if url and url != here:
            yield url


def _base(page: Selector, base_url: str) -> str:
    """The URL the page's relative links resolve against: its ``<base href>``, if any."""
    return urljoin(base_url, (page.css("base::attr(href)").get() or "").strip())


def _label(text: str) -> str:
    return _LABEL_DECORATION.sub("", text).casefold()


def untracked(url: str) -> str:
    """``url`` without its tracking parameters: ``utm_*``, those in :data:`TRACKING_PARAMS`,
    and ``from`` unless its value is a number (an offset). They say where a visitor came
    from, never which page it is, so one page linked as ``12.html?from=next`` and
    ``12.html?from=list`` is crawled and reported once. Other parameters are kept as they
    are written, in their order."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parts.query.split("&")
    kept = [pair for pair in pairs if not _tracking(pair)]
    if len(kept) == len(pairs):
        return url
    return urlunsplit(parts._replace(query="&".join(kept)))


def _tracking(pair: str) -> bool:
    name, _, value = pair.partition("=")
    name = name.lower()
    if name == "from":
        return not value.isdigit()
    return name.startswith("utm_") or name in TRACKING_PARAMS


def _absolute(base: str, href: str, encoding: str) -> str | None:
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    url = safe_url_string(urljoin(base, href), encoding=encoding).split("#", 1)[0]
    parts = urlsplit(url)
    return untracked(url) if parts.scheme in ("http", "https") and parts.hostname else None


def _select(page: Selector, selector: str) -> list[Selector]:
    if selector.startswith(("/", "(")):
        return list(page.xpath(selector))
    return list(page.css(selector))


def _node_text(node: Selector) -> str:
    root = node.root
    if isinstance(root, str):
        return _clean_lines(root)
    return _element_text(root)


def _tag(element: object) -> str:
    tag = getattr(element, "tag", None)
    return tag.lower() if isinstance(tag, str) else ""


def _is_chrome(element: etree._Element) -> bool:
    if _tag(element) in SKIPPED:
        return True
    names = f"{element.get('class', '')} {element.get('id', '')}"
    return bool(names.strip()) and bool(CHROME_NAMES.search(names))


def _outside_chrome(root: etree._Element) -> list[etree._Element]:
    """The elements under ``root`` (itself included) in document order, without chrome
    elements and their subtrees (:func:`_is_chrome`)."""
    order: list[etree._Element] = []
    stack = [root]
    while stack:
        element = stack.pop()
        if _tag(element) and _is_chrome(element):
            continue
        order.append(element)
        stack.extend(reversed(element))
    return order


def _element_text(element: etree._Element, skipped: Set[etree._Element] = frozenset()) -> str:
    chunks: list[str] = []
    _walk(element, chunks, skipped, root=True)
    return _clean_lines("".join(chunks))


def _walk(
    element: etree._Element, chunks: list[str], skipped: Set[etree._Element], root: bool = False
) -> None:
    tag = _tag(element)
    if tag and (root or (not _is_chrome(element) and element not in skipped)):
        breaks = tag in LINE_BREAKING
        if breaks:
            chunks.append("\n")
        chunks.append(element.text or "")
        for child in element:
            _walk(child, chunks, skipped)
        if breaks:
            chunks.append("\n")
    if not root:
        chunks.append(element.tail or "")


def _clean_lines(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)
