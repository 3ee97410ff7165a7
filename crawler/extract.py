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
  footers, ads or comments. Either way, lines that are exactly the text of one of the
  page's links are dropped (navigation, which trafilatura keeps on short pages).

Characters are counted with :func:`content_chars` (letters and CJK characters: word
characters other than digits and ``_``). :attr:`Extracted.own_chars` leaves out the text
of the page's links, so a page that is only a list of links (a chapter index) has few own
characters however long.
The title is the first ``<h1>``, else ``<title>``.

:func:`find_page_link` finds a "next page" link (an anchor whose text, without spaces,
brackets and arrows, is one of a site's ``next_page_texts`` such as 下一页); 下一章 (next
chapter) is a different page and never matches. :data:`PREV_PAGE_TEXTS` are the labels of
the matching "previous page" links. Malformed HTML never raises: lxml repairs it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import cssselect
import trafilatura
from lxml import etree
from parsel import Selector
from w3lib.url import safe_url_string

MIN_SHARE_OF_DENSEST = 0.5
PREV_PAGE_TEXTS = ("上一页", "上页", "上一頁", "previous page", "prev page", "previous", "prev")

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


def extract(html: str, url: str, selector: str = "", page: Selector | None = None) -> Extracted:
    """The title and main text of ``html`` (see the module docstring).

    ``page`` may pass the already parsed ``html``. ``url`` is only used by trafilatura.
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
    found = trafilatura.extract(
        html, url=url or None, favor_recall=True, include_comments=False, include_tables=False
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
    """:func:`content_chars` of ``text`` once every occurrence of a link text is removed."""
    for link in links:
        if content_chars(link) and link in text:
            text = text.replace(link, " ")
    return content_chars(text)


def densest_block_text(page: Selector) -> str:
    """The text, with paragraph breaks, of the container with the most own text."""
    best, best_score = None, 0
    for element in page.root.iter(*BLOCK_CONTAINERS):
        if _in_chrome(element):
            continue
        score = _own_score(element)
        if score > best_score:
            best, best_score = element, score
    return _element_text(best) if best is not None else ""


def page_links(
    page: Selector, base_url: str, encoding: str = "utf-8", limit: int | None = None
) -> list[str]:
    """Absolute http(s) URLs of the page's ``<a>`` and ``<area>`` links, without fragments,
    at most ``limit`` distinct ones (the first in the page).

    Relative links are resolved against ``<base href>`` when the page has one.
    """
    base = urljoin(base_url, (page.css("base::attr(href)").get() or "").strip())
    seen: dict[str, None] = {}
    for href in page.css("a::attr(href), area::attr(href)").getall():
        url = _absolute(base, href, encoding)
        if url:
            seen.setdefault(url)
            if limit is not None and len(seen) >= limit:
                break
    return list(seen)


def find_page_link(
    page: Selector, base_url: str, texts: Sequence[str], encoding: str = "utf-8"
) -> str | None:
    """The URL of the first anchor labelled one of ``texts`` (e.g. 下一页), or None.

    Labels are compared without spaces, brackets and arrows, case-insensitively; an anchor
    pointing back at ``base_url`` itself does not count.
    """
    wanted = {_label(t) for t in texts if _label(t)}
    base = urljoin(base_url, (page.css("base::attr(href)").get() or "").strip())
    here = base_url.split("#", 1)[0]
    for anchor in page.css("a[href]"):
        if _label("".join(anchor.css("::text").getall())) not in wanted:
            continue
        url = _absolute(base, anchor.attrib["href"], encoding)
        if url and url != here:
            return url
    return None


def _label(text: str) -> str:
    return _LABEL_DECORATION.sub("", text).casefold()


def _absolute(base: str, href: str, encoding: str) -> str | None:
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    url = safe_url_string(urljoin(base, href), encoding=encoding).split("#", 1)[0]
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.hostname else None


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


def _in_chrome(element: etree._Element) -> bool:
    node: etree._Element | None = element
    while node is not None:
        if _is_chrome(node):
            return True
        node = node.getparent()
    return False


def _own_score(element: etree._Element) -> int:
    score = content_chars(element.text or "")
    for child in element:
        if _tag(child) in OWN_TEXT_CHILDREN:
            score += _chars_outside_links(child)
        score += content_chars(child.tail or "")
    return score


def _chars_outside_links(element: etree._Element) -> int:
    if _tag(element) in ("a", "") or _is_chrome(element):
        return 0
    count = content_chars(element.text or "")
    for child in element:
        count += _chars_outside_links(child) + content_chars(child.tail or "")
    return count


def _element_text(element: etree._Element) -> str:
    chunks: list[str] = []
    _walk(element, chunks, root=True)
    return _clean_lines("".join(chunks))


def _walk(element: etree._Element, chunks: list[str], root: bool = False) -> None:
    tag = _tag(element)
    if tag and (root or not _is_chrome(element)):
        breaks = tag in LINE_BREAKING
        if breaks:
            chunks.append("\n")
        chunks.append(element.text or "")
        for child in element:
            _walk(child, chunks)
        if breaks:
            chunks.append("\n")
    if not root:
        chunks.append(element.tail or "")


def _clean_lines(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)
