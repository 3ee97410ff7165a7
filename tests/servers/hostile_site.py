"""A hostile web site: pages built to hide copies from a crawler or to exhaust it.

:func:`build` makes, from registered works (name -> text), the resources of one site (the
``(status, headers, body)`` triples and the redirects that
:class:`tests.servers.fixture_site.FixtureSite` serves), and the :class:`Case` each path
stands for with the outcome it must have:

- ``copy`` cases are pages a browser shows with a work's whole text, behind a trick
  (a NUL byte, control bytes, 2,100 nested elements, no Content-Type, undeclared GBK or
  Big5, a lying charset, 20,000 paragraphs, 200,000 links, XSS payloads in the title, the
  text and the URL, broken markup, gzip, a redirect): the page must be stored under its
  URL and matched with its work;
- every other case must be counted under its stats key and store nothing: redirect loops,
  redirects off the site or to another port, 2 GiB bodies with and without a
  Content-Length, a gzip bomb (1 GiB of spaces in about 1 MB), binary files served as
  HTML, an empty page, a link generator (a tree of thin pages without end, bounded by
  the crawl's request cap) and a link flood (pages made on request, each linking 200,000
  new ones: bounded by the caps on links per page and on pending requests; these pages are
  in :attr:`HostileSite.generated`, served by prefix).

The copies cycle through the works in name order. ``/`` links every case, so all of them are
one click from the start URL; the site's robots.txt allows everything.

Three small sites stand apart, for the scan cases of issue 23 (each in its own scan):
:func:`robots_page_site` (robots.txt forbids one page, not a folder), :func:`copy_site` (a
page copying a work, scanned against works registered as near-identical editions of it,
:func:`editions`) and any URL of them that is not served (a 404 start URL).
"""

from __future__ import annotations

import gzip
import html
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import opencc

Body = bytes | Callable[[], Iterable[bytes]]
Resource = tuple[int, dict[str, str], Body]

GIB = 1 << 30
GENERATOR_PAGES = 3000
"""Pages of the link generator: each links three more, further than any request cap used."""
LINKS = 200_000
FLOOD_PREFIX = "/flood/"
PARAGRAPHS = 20_000
NESTING = 2_100
COPY = "copy"


@dataclass(frozen=True)
class Case:
    """One trick: where it is served, what it is, and its outcome (``copy``, or the stats
    key the crawl must count it under)."""

    name: str
    path: str
    trick: str
    outcome: str
    work: str = ""  # the work a copy case copies
    stored_path: str = ""  # where a copy is stored when not at ``path`` (after a redirect)

    @property
    def page_path(self) -> str:
        return self.stored_path or self.path


@dataclass
class HostileSite:
    """The resources, the redirects and the cases of a hostile site."""

    pages: dict[str, Resource] = field(default_factory=dict)
    redirects: dict[str, tuple[int, str]] = field(default_factory=dict)
    generated: dict[str, Callable[[str], Resource]] = field(default_factory=dict)
    cases: list[Case] = field(default_factory=list)

    def copies(self) -> list[Case]:
        return [c for c in self.cases if c.outcome == COPY]


def _chapter(text: str) -> str:
    return "".join(f"<p>{html.escape(line)}</p>" for line in text.splitlines() if line.strip())


def _doc(title: str, body: str, head: str = "") -> str:
    return (
        f"<!DOCTYPE html><html><head>{head}<title>{title}</title></head><body>"
        f"<div class='nav'><a href='/'>首页</a></div><div id='content'>{body}</div>"
        "<div class='footer'>本站内容均来自网络</div></body></html>"
    )


def _typed(body: bytes, content_type: str = "text/html; charset=utf-8") -> Resource:
    return 200, {"Content-Type": content_type}, body


def _endless(total: int, chunk: bytes) -> Callable[[], Iterator[bytes]]:
    def stream() -> Iterator[bytes]:
        for _ in range(total // len(chunk)):
            yield chunk

    return stream


def link_flood(links: int = LINKS) -> Callable[[str], Resource]:
    """Thin pages made on request (never stored), each linking ``links`` pages never linked
    before (``/flood/<n>``, numbered by one counter), streamed in chunks."""
    made = [1]  # the number of the next new page
    lock = threading.Lock()

    def make(path: str) -> Resource:
        with lock:
            first = made[0]
            made[0] += links

        def stream() -> Iterator[bytes]:
            yield b"<html><body>"
            step = 10_000
            for start in range(first, first + links, step):
                end = min(start + step, first + links)
                yield "".join(
                    f'<a href="{FLOOD_PREFIX}{n}">.</a>' for n in range(start, end)
                ).encode()
            yield b"</body></html>"

        return 200, {"Content-Type": "text/html; charset=utf-8"}, stream

    return make


def _gzip_bomb(size: int) -> bytes:
    block = b" " * (1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
    parts = [deflate.compress(b"<html><body>")]
    for _ in range(size // len(block)):
        parts.append(deflate.compress(block))
    parts.append(deflate.flush())
    return b"".join(parts)


def build(works: dict[str, str]) -> HostileSite:
    """The hostile site copying ``works`` (see the module docstring)."""
    if not works:
        raise ValueError("a hostile site needs at least one work to copy")
    site = HostileSite()
    names = sorted(works)
    turn = iter(range(1 << 30))

    def copy(name: str, path: str, trick: str, resource: Resource, work: str) -> None:
        site.pages[path] = resource
        site.cases.append(Case(name, path, trick, COPY, work=work))

    def next_work() -> tuple[str, str]:
        work = names[next(turn) % len(names)]
        return work, works[work]

    work, text = next_work()
    doc = _doc("第一章", f"<!-- \x00 -->{_chapter(text)}")
    copy("nul", "/nul.html", "a NUL byte inside a comment", _typed(doc.encode()), work=work)

    work, text = next_work()
    noisy = "".join(f"{ch}\x01\x02" if i % 2 else ch for i, ch in enumerate(text))
    copy(
        "controls",
        "/controls.html",
        "control bytes: two after every other character, GBK",
        _typed(_doc("第二章", _chapter(noisy)).encode("gb18030"), "text/html; charset=gbk"),
        work=work,
    )

    work, text = next_work()
    deep = "<div>" * NESTING + _chapter(text) + "</div>" * NESTING
    copy(
        "deep",
        "/deep.html",
        f"{NESTING:,} nested div elements",
        _typed(_doc("第三章", deep).encode()),
        work=work,
    )

    work, text = next_work()
    untyped = f"<div>{_chapter(text)}</div>".encode()
    copy(
        "untyped",
        "/untyped.html",
        "no Content-Type, starts with <div>",
        (200, {}, untyped),
        work=work,
    )

    work, text = next_work()
    copy(
        "gbk-undeclared",
        "/gbk.html",
        "GBK without a charset in the header or the page",
        _typed(_doc("第五章", _chapter(text)).encode("gbk"), "text/html"),
        work=work,
    )

    work, text = next_work()
    to_big5 = opencc.OpenCC("s2tw").convert  # Taiwan forms: all in Big5
    copy(
        "big5-undeclared",
        "/big5.html",
        "Traditional script in Big5, no charset anywhere",
        _typed(to_big5(_doc("第六章", _chapter(text))).encode("big5"), "text/html"),
        work=work,
    )

    work, text = next_work()
    copy(
        "charset-lies",
        "/lies.html",
        "GB18030 bytes served as charset=utf-8",
        _typed(_doc("第七章", _chapter(text)).encode("gb18030"), "text/html; charset=utf-8"),
        work=work,
    )

    work, text = next_work()
    filler = "<div><p>·</p></div>" * PARAGRAPHS
    copy(
        "paragraphs",
        "/paragraphs.html",
        f"{PARAGRAPHS:,} empty paragraphs after the text",
        _typed(_doc("第八章", _chapter(text) + filler).encode()),
        work=work,
    )

    work, text = next_work()
    links = "".join(f'<a href="/l/{n % 50}.html">第{n}章</a>' for n in range(LINKS))
    copy(
        "links",
        "/links.html",
        f"{LINKS:,} links (about 7 MB) around the text",
        _typed(_doc("第九章", _chapter(text) + f"<div class='list'>{links}</div>").encode()),
        work=work,
    )

    work, text = next_work()
    payload = "<script>alert('title')</script>"
    body = (
        "&lt;img src=x onerror=alert(1)&gt;<script>alert(2)</script>"
        + _chapter(text)
        + '<a href="javascript:alert(4)">点我</a>'
    )
    xss_path = "/xss/%22%3E%3Cscript%3Ealert(3)%3C/script%3E.html"
    copy(
        "xss",
        xss_path,
        "script payloads in the title, the text and the URL",
        _typed(_doc(html.escape(payload), body).encode()),
        work=work,
    )

    work, text = next_work()
    broken = (
        "<html><head><title>第十一章</title><body><div id=content><p>"
        + "<p>".join(line for line in text.splitlines() if line.strip())
        + "</span></div></div></td><table><tr><td"
    )
    copy(
        "broken",
        "/broken.html",
        "unclosed and stray tags, a cut-off last tag",
        _typed(broken.encode()),
        work=work,
    )

    work, text = next_work()
    zipped = gzip.compress(_doc("第十二章", _chapter(text)).encode(), mtime=0)
    copy(
        "gzip",
        "/gzip.html",
        "an honest gzip Content-Encoding",
        (200, {"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"}, zipped),
        work=work,
    )

    work, text = next_work()
    site.redirects["/moved.html"] = (301, "/landing.html")
    site.pages["/landing.html"] = _typed(_doc("第十三章", _chapter(text)).encode())
    site.cases.append(
        Case(
            "redirect",
            "/moved.html",
            "a 301 to another page of the site",
            COPY,
            work=work,
            stored_path="/landing.html",
        )
    )

    def counted(name: str, path: str, trick: str, outcome: str) -> None:
        site.cases.append(Case(name, path, trick, outcome))

    site.redirects["/loop/a"] = (302, "/loop/b")
    site.redirects["/loop/b"] = (302, "/loop/a")
    counted("redirect-loop", "/loop/a", "two pages redirecting to each other", "fptrack/ignored")
    site.redirects["/away"] = (302, "http://offsite.invalid/x")
    counted("redirect-offsite", "/away", "a redirect to another host", "offsite/filtered")
    site.redirects["/internal"] = (302, "http://127.0.0.1:9/admin")
    counted(
        "redirect-port", "/internal", "a redirect to another port of the host", "fptrack/other_port"
    )

    site.pages["/huge-declared.html"] = (
        200,
        {"Content-Type": "text/html", "Content-Length": str(2 * GIB)},
        _endless(2 * GIB, b"<p>" + "雨".encode() * 21844 + b"</p>"),
    )
    counted(
        "huge-declared",
        "/huge-declared.html",
        "2 GiB announced in Content-Length",
        "fptrack/too_large",
    )
    site.pages["/huge-streamed.html"] = (
        200,
        {"Content-Type": "text/html"},
        _endless(2 * GIB, b"<p>" + "雨".encode() * 21844 + b"</p>"),
    )
    counted(
        "huge-streamed",
        "/huge-streamed.html",
        "2 GiB streamed without a Content-Length",
        "fptrack/too_large",
    )
    site.pages["/bomb.html"] = (
        200,
        {"Content-Type": "text/html", "Content-Encoding": "gzip"},
        _gzip_bomb(GIB),
    )
    counted(
        "gzip-bomb", "/bomb.html", "1 GiB of spaces gzipped into about 1 MB", "fptrack/too_large"
    )

    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64
    site.pages["/image.html"] = _typed(png, "text/html")
    counted("binary", "/image.html", "a PNG file served as text/html", "fptrack/undecodable")
    site.pages["/file"] = (200, {}, b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" + bytes(4096))
    counted("pdf-untyped", "/file", "a PDF file with no Content-Type", "fptrack/non_html")
    site.pages["/empty.html"] = _typed(b"")
    counted("empty", "/empty.html", "an empty 200 response", "fptrack/thin")

    for n in range(GENERATOR_PAGES):
        children = "".join(f'<a href="/gen/{3 * n + k}.html">{k}</a>' for k in (1, 2, 3))
        site.pages[f"/gen/{n}.html"] = _typed(f"<html><body>{children}</body></html>".encode())
    counted(
        "link-generator",
        "/gen/0.html",
        "thin pages each linking three new ones",
        "fptrack/requests_capped",
    )

    site.generated[FLOOD_PREFIX] = link_flood()
    counted(
        "link-flood",
        FLOOD_PREFIX + "0",
        f"thin pages made on request, each linking {LINKS:,} new ones",
        "fptrack/links_capped",
    )

    index = "".join(f'<li><a href="{c.path}">{c.name}</a></li>' for c in site.cases)
    site.pages["/"] = _typed(f"<html><body><ul>{index}</ul></body></html>".encode())
    site.pages["/robots.txt"] = _typed(b"User-agent: *\nAllow: /\n", "text/plain")
    return site


ROBOTS_PAGE = "/ev/nul.html"
"""The one page the robots.txt of :func:`robots_page_site` forbids."""
ALLOWED_PAGE = "/ev/ok.html"
COPY_PAGE = "/copy.html"


def robots_page_site(forbidden: str, allowed: str) -> dict[str, Resource]:
    """A site whose robots.txt forbids one page (``Disallow: /ev/nul.html``, not a folder):
    ``/`` links :data:`ROBOTS_PAGE`, a copy of ``forbidden``, and :data:`ALLOWED_PAGE` beside
    it, a copy of ``allowed``."""
    links = f'<a href="{ROBOTS_PAGE}">第一章</a><a href="{ALLOWED_PAGE}">第二章</a>'
    return {
        "/robots.txt": _typed(f"User-agent: *\nDisallow: {ROBOTS_PAGE}\n".encode(), "text/plain"),
        "/": _typed(f"<html><body>{links}</body></html>".encode()),
        ROBOTS_PAGE: _typed(_doc("第一章", _chapter(forbidden)).encode()),
        ALLOWED_PAGE: _typed(_doc("第二章", _chapter(allowed)).encode()),
    }


def copy_site(text: str) -> dict[str, Resource]:
    """A site whose ``/`` links one page, :data:`COPY_PAGE`, copying ``text`` in site chrome."""
    return {
        "/robots.txt": _typed(b"User-agent: *\nAllow: /\n", "text/plain"),
        "/": _typed(f'<html><body><a href="{COPY_PAGE}">第一章</a></body></html>'.encode()),
        COPY_PAGE: _typed(_doc("第一章", _chapter(text)).encode()),
    }


def editions(text: str) -> list[str]:
    """Three near-identical editions of ``text``, a line apart: as it is, with ``完``
    appended, with ``第一版`` prepended."""
    return [text, text + "\n完\n", "第一版\n" + text]
