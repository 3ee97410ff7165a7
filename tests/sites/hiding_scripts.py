"""Script-built chapter pages (issue 38, technique 2): the text is not in the HTML, a script
puts it there once the page runs in a browser.

:func:`disguise` serves a chapter one of two ways (drawn from ``rng``, as pirate sites do):

- :func:`disguise_base64`: the chapter's UTF-8 text, base64-encoded, sits in a ``data-*``
  attribute of the content ``<div>`` (empty, or holding a placeholder such as 加载中); an
  inline script decodes it (``atob`` then ``TextDecoder`` or
  ``decodeURIComponent(escape(...))``) and writes one ``<p>`` a line;
- :func:`disguise_json`: the content ``<div>`` holds a placeholder (正在加载..., 内容加载中)
  and an inline script fetches the chapter from a JSON endpoint (``fetch`` or
  ``XMLHttpRequest``), one of the page's ``files``, and writes its lines in;
- :func:`disguise_reveal` (not drawn by :func:`disguise`): the chapter is in the HTML, in a
  content ``<div>`` that the page's ``<style>`` hides (``display:none`` or
  ``visibility:hidden``) until an inline script shows it once the page has loaded.

Element ids, attribute names and endpoint paths are drawn from ``rng``: every page's are its
own. Contract: :class:`tests.sites.hiding_shape.HiddenPage`.
"""

from __future__ import annotations

import base64
import html
import json
import random

from tests.sites.hiding_shape import HiddenPage

esc = html.escape
CONTENT_IDS = ("content", "chaptercontent", "booktxt", "htmlContent", "txtContent", "nr1")
PLACEHOLDERS = ("加载中", "加载中...", "正在加载...", "内容加载中…", "章节内容正在加载中，请稍候…")
WRITE_LINES = (
    "el.textContent='';text.split('\\n').forEach(function(line){"
    "var p=document.createElement('p');p.textContent=line;el.appendChild(p);});"
)


def disguise(title: str, text: str, rng: random.Random) -> HiddenPage:
    """The chapter served one of the two ways of the module docstring."""
    return (disguise_base64 if rng.random() < 0.5 else disguise_json)(title, text, rng)


def disguise_base64(title: str, text: str, rng: random.Random) -> HiddenPage:
    """The text in a base64 ``data-*`` attribute, decoded by an inline script."""
    box = rng.choice(CONTENT_IDS)
    attribute = f"data-{rng.choice(('c', 'txt', 'v', 'src'))}{rng.randrange(10**6):x}"
    payload = base64.b64encode(text.encode("utf-8")).decode("ascii")
    if rng.random() < 0.5:
        decode = (
            "var bin=atob(el.getAttribute(ATTR));var text=new TextDecoder('utf-8')"
            ".decode(Uint8Array.from(bin,function(c){return c.charCodeAt(0);}));"
        )
    else:
        decode = "var text=decodeURIComponent(escape(atob(el.getAttribute(ATTR))));"
    held = rng.choice(("", *PLACEHOLDERS))
    script = (
        f"(function(){{var el=document.getElementById({json.dumps(box)});"
        + decode.replace("ATTR", json.dumps(attribute))
        + WRITE_LINES
        + "})();"
    )
    content = f'<div id="{box}" {attribute}="{payload}">{esc(held)}</div>\n'
    content += f"<script>{script}</script>"
    return HiddenPage(_page(title, content, rng), {})


def disguise_json(title: str, text: str, rng: random.Random) -> HiddenPage:
    """A placeholder in the HTML; the text fetched by script from a JSON endpoint."""
    box = rng.choice(CONTENT_IDS)
    endpoint = f"/{rng.choice(('api', 'ajax', 'data'))}/{rng.getrandbits(64):016x}.json"
    field = rng.choice(("content", "txt", "data"))
    if rng.random() < 0.5:
        load = (
            f"fetch({json.dumps(endpoint)}).then(function(r){{return r.json();}})"
            f".then(function(d){{var text=d[{json.dumps(field)}];{WRITE_LINES}}});"
        )
    else:
        load = (
            f"var x=new XMLHttpRequest();x.open('GET',{json.dumps(endpoint)});"
            f"x.onload=function(){{var text=JSON.parse(x.responseText)[{json.dumps(field)}];"
            f"{WRITE_LINES}}};x.send();"
        )
    wait = rng.choice(("", "DOMContentLoaded"))
    body = f"var el=document.getElementById({json.dumps(box)});{load}"
    if wait:
        body = f"document.addEventListener('{wait}',function(){{{body}}});"
    content = f'<div id="{box}">{esc(rng.choice(PLACEHOLDERS))}</div>\n<script>{body}</script>'
    data = json.dumps({field: text, "title": title}, ensure_ascii=False).encode("utf-8")
    return HiddenPage(_page(title, content, rng), {endpoint: data})


def disguise_reveal(title: str, text: str, rng: random.Random) -> HiddenPage:
    """The text in the HTML, hidden by the page's stylesheet until a script shows it."""
    box = rng.choice(CONTENT_IDS)
    hide, show = rng.choice((
        ("display:none", "style.display='block'"),
        ("visibility:hidden", "style.visibility='visible'"),
    ))  # fmt: skip
    wait = rng.choice(("load", "DOMContentLoaded"))
    lines = "".join(f"<p>{esc(line)}</p>" for line in text.split("\n"))
    content = (
        f'<style>#{box}{{{hide}}}</style>\n<div id="{box}">{lines}</div>\n'
        f"<script>window.addEventListener('{wait}',function(){{"
        f"document.getElementById({json.dumps(box)}).{show};}});</script>"
    )
    return HiddenPage(_page(title, content, rng), {})


def _page(title: str, content: str, rng: random.Random) -> str:
    """A biquge-style chapter page around ``content``: header, breadcrumbs, title, footer."""
    site = rng.choice(("笔趣阁", "顶点小说", "新笔趣阁", "书趣阁"))
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{esc(title)}_{site}</title></head><body>\n"
        f'<div class="header"><a href="/">{site}</a> <a href="/top/">排行榜</a> '
        '<a href="/full/">完本小说</a></div>\n'
        f'<div class="con_top"><a href="/">{site}</a> &gt; {esc(title)}</div>\n'
        f'<div class="bookname"><h1>{esc(title)}</h1></div>\n'
        f"{content}\n"
        f'<div class="footer"><p>本站所有小说为转载作品，所有章节均由网友上传。</p></div>\n'
        "</body></html>\n"
    )
