"""Whether a page's text is built by script, so that only a browser shows it (issue 38,
technique 2, "Script-built text").

Pirate sites serve a chapter whose text is not in its HTML: an inline script decodes it from
a base64 ``data-*`` attribute (``atob``, ``decodeURIComponent(escape(...))``), or fetches it
from a JSON endpoint (``fetch``, ``XMLHttpRequest``, ``$.ajax``, ``$.get``) and writes it
into an element while the HTML holds a placeholder (加载中, 正在加载, 内容加载中...) or an
empty content ``<div>``; or ``document.write`` writes it from an encoded string.
:func:`needs_browser` says whether a page looks so: **little visible text** (fewer than
:data:`LITTLE_TEXT_CHARS` letters and CJK characters of main text outside links) **and a
script that builds it**:

- a placeholder (a text node that is only 加载中, 正在加载中，请稍候..., Loading..., or a
  ``<noscript>`` asking for JavaScript) and a script, inline or external, that may fill it;
- or an inline script that writes into the page (``innerHTML``, ``textContent``,
  ``.html(``, ``appendChild``, ``document.write``...) and decodes (``atob``,
  ``decodeURIComponent``, ``unescape``, ``String.fromCharCode``, ``Base64``...) a payload
  (a ``data-*`` attribute of at least :data:`PAYLOAD_CHARS` characters that the script
  names, by the attribute, its ``dataset`` key or its element's id or class; or a string
  literal that long) or fills an empty content element it names;
- or an inline script that writes into the page and fetches (``fetch``,
  ``XMLHttpRequest``, ``$.ajax``, ``$.get``, ``$.getJSON``, ``$.post``, ``axios``) while a
  content element (its id or class names content, chapter, txt, booktxt...) is empty and
  named by the script.

A page with ample text is never looked at further (one comparison: plain chapters pay
nothing); list pages and short notices (little own text) with a script that fetches a
login box or a hit counter are not flagged: their script names no empty content element
and no payload.
The look is bounded: at most :data:`MAX_ELEMENTS` elements and :data:`MAX_SCRIPT_CHARS`
characters of inline script. Pure: no I/O, plain values in and out.
"""

from __future__ import annotations

import re
from itertools import islice

from lxml import etree

LITTLE_TEXT_CHARS = 300
"""A page with at least this many letters and CJK characters of main text (outside links)
is never flagged: its text is there without a browser."""
PAYLOAD_CHARS = 200
"""A ``data-*`` attribute value or a script's string literal at least this long is a payload
a script may decode into the text."""
MAX_ELEMENTS = 20_000
"""Elements looked at, in document order (a shell page has a few hundred)."""
MAX_SCRIPT_CHARS = 500_000
"""Characters of inline script looked at, in all (the first ones)."""
MAX_NAMES = 64
"""Names of payload holders and empty content elements kept (the first ones)."""
EMPTY_CHARS = 10
"""A content element with fewer letters and CJK characters than this is empty."""

_PLACEHOLDER = re.compile(
    r"^[\s.。…·!！,，:：]*"
    r"(?:(?:章节|正文|内容|本章|页面|数据|小说|文章)(?:内容)?)?"
    r"(?:正在|努力|玩命)?(?:加载|加載|载入|載入|读取|讀取)(?:中)?"
    r"(?:[\s.。…·!！,，:：~～]|请稍[候后等]|請稍[候後等]|稍[候后等])*$"
    r"|^\s*loading[\s.…]*(?:please wait[\s.…]*)?$",
    re.IGNORECASE,
)
_ASKS_FOR_SCRIPT = re.compile(r"javascript|\bJS\b|脚本|腳本", re.IGNORECASE)
_WRITES = re.compile(
    r"\.innerHTML\b|\.innerText\b|\.textContent\b|\.outerHTML\b|insertAdjacent(?:HTML|Text)"
    r"|appendChild\s*\(|\.append\s*\(|\.prepend\s*\(|\.replaceChildren\s*\(|\.before\s*\("
    r"|document\s*\.\s*write(?:ln)?\s*\(|\.html\s*\(|\.text\s*\("
)
_DECODES = re.compile(
    r"\batob\s*\(|decodeURIComponent\s*\(|\bunescape\s*\(|fromCharCode\s*\("
    r"|base64|TextDecoder|CryptoJS|\.decode\s*\(",
    re.IGNORECASE,
)
_FETCHES = re.compile(
    r"\bfetch\s*\(|XMLHttpRequest|\$\s*\.\s*(?:ajax|get|getJSON|post|load)\s*\("
    r"|\.load\s*\(|\baxios\b"
)
_LONG_LITERAL = re.compile(r"([\"'`])[^\"'`\s]{" + str(PAYLOAD_CHARS) + r",}\1")
_CONTENT_NAME = re.compile(
    r"content|chapter|txt|booktext|article|read|zhengwen|^nr\d*$|^zw$|^cont",
    re.IGNORECASE,
)
_NOT_LETTERS = re.compile(r"[\W\d_]+")
_SKIPPED_TEXT = frozenset({"script", "style", "template", "noscript"})
_CONTAINERS = frozenset({"div", "article", "section", "main", "p", "pre", "td", "dd"})
_DATA_TYPES = frozenset({"application/ld+json", "application/json", "text/template"})


def needs_browser(
    root: etree._Element | None, own_chars: int, html: str | None = None, hidden_chars: int = 0
) -> bool:
    """Whether the page whose parsed tree is ``root`` and whose main text has ``own_chars``
    letters and CJK characters outside links is built by script (see the module
    docstring). ``html``, the page's markup, spares the walk of the tree for a placeholder
    when it holds no placeholder word. ``hidden_chars``: the letters and CJK characters its
    own CSS hides (:attr:`crawler.visible.Visible.hidden_chars`); a page that hides
    :data:`LITTLE_TEXT_CHARS` or more while showing less, and runs any script, may show
    that text once its scripts run (a chapter ``display:none`` until a script reveals it):
    only a browser tells."""
    if own_chars >= LITTLE_TEXT_CHARS or root is None:
        return False
    inline: list[str] = []
    external = False
    budget = MAX_SCRIPT_CHARS
    for script in islice(root.iter("script"), MAX_ELEMENTS):
        if (script.get("type") or "").strip().lower() in _DATA_TYPES:
            continue
        if script.get("src"):
            external = True
        elif budget > 0 and script.text:
            inline.append(script.text[:budget])
            budget -= len(inline[-1])
    code = "\n".join(inline)
    if hidden_chars >= LITTLE_TEXT_CHARS and (external or code.strip()):
        return True  # most of its text hidden, and a script that may reveal it
    writes = bool(code) and bool(_WRITES.search(code))
    if not (writes or external):
        return False  # nothing that could build the page's text
    if (html is None or _may_hold_placeholder(html)) and _placeholder(root):
        return True
    if not writes:
        return False
    decodes, fetches = bool(_DECODES.search(code)), bool(_FETCHES.search(code))
    if not (decodes or fetches):
        return False
    if any(name in code for name in _empty_content(root)):
        return True
    if not decodes:
        return False
    return bool(_LONG_LITERAL.search(code)) or any(name in code for name in _payloads(root))


_HINTS = ("加载", "加載", "载入", "載入", "读取", "讀取", "oading", "OADING")


def _may_hold_placeholder(html: str) -> bool:
    """Whether ``html`` holds a placeholder's word or a ``<noscript>`` at all (substring
    tests: far cheaper than a walk of the tree)."""
    return any(hint in html for hint in _HINTS) or "noscript" in html or "NOSCRIPT" in html


_DATA_ATTRIBUTES = etree.XPath(
    f"//@*[starts-with(name(), 'data-') and string-length(.) >= {PAYLOAD_CHARS}]"
)


def _placeholder(root: etree._Element) -> bool:
    """Whether the page shows a placeholder (加载中...) or a ``<noscript>`` asking for
    JavaScript."""
    seen = 0
    for element in islice(root.iter(), MAX_ELEMENTS):
        text = element.text
        if not text or len(text) >= 60 or not any(hint in text for hint in _HINTS):
            continue
        tag = element.tag.lower() if isinstance(element.tag, str) else "script"
        if tag not in _SKIPPED_TEXT and _PLACEHOLDER.match(text.strip()):
            return True
        seen += 1
        if seen >= MAX_NAMES:
            break
    noscripts = islice(root.iter("noscript"), MAX_NAMES)
    return any(_ASKS_FOR_SCRIPT.search(_text_of(n)) for n in noscripts)


def _empty_content(root: etree._Element) -> list[str]:
    """The names (id, classes) of the page's empty content elements."""
    names: list[str] = []
    for element in islice(root.iter(*_CONTAINERS), MAX_ELEMENTS):
        if element.get("id") is None and element.get("class") is None:
            continue
        own = _names(element)
        if any(_CONTENT_NAME.search(n) for n in own) and _letters(_text_of(element)) < EMPTY_CHARS:
            names += own
            if len(names) >= MAX_NAMES:
                break
    return names


def _payloads(root: etree._Element) -> list[str]:
    """The names a script reaches a payload by: its ``data-*`` attribute, the attribute's
    ``dataset`` key, its element's id and classes."""
    names: list[str] = []
    for value in islice(_DATA_ATTRIBUTES(root), MAX_NAMES):
        name = value.attrname
        names += [name, _dataset_key(name), *_names(value.getparent())]
    return names


def _names(element: etree._Element) -> list[str]:
    """The element's id and classes (the names a script finds it by)."""
    return [n for n in [element.get("id") or "", *(element.get("class") or "").split()] if n]


def _dataset_key(attribute: str) -> str:
    """The ``dataset`` key of a ``data-*`` attribute (``data-chapter-txt``: ``chapterTxt``)."""
    head, *rest = attribute.removeprefix("data-").split("-")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _text_of(element: etree._Element) -> str:
    """The element's text, its scripts' and styles' aside (at most 1,000 characters)."""
    parts: list[str] = []
    size = 0
    for node in element.iter():
        if not isinstance(node.tag, str):
            continue
        if node is not element and node.tag.lower() in ("script", "style", "template"):
            if node.tail:
                parts.append(node.tail)
            continue
        for piece in (node.text, node.tail if node is not element else None):
            if piece:
                parts.append(piece)
                size += len(piece)
        if size > 1000:
            break
    return "".join(parts)[:1000]


def _letters(text: str) -> int:
    return len(_NOT_LETTERS.sub("", text))
