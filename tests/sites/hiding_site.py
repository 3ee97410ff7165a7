"""A 笔趣阁-style site mixing plain chapter pages with chapters built by script
(:mod:`tests.sites.hiding_scripts`), for the automatic render tests."""

from __future__ import annotations

import random

from tests.servers.fixture_site import Resource, page
from tests.sites import hiding_scripts
from tests.sites.eval_corpus import make_sites
from tests.sites.script_site import WORK
from tests.sites.site_html import Pager, novel_chapter

SITE = make_sites(random.Random(3), 1)[0]


def chapters(count: int, size: int = 12) -> list[str]:
    """``count`` distinct chapters of ``size`` lines of the sample work each (its lines from
    the ``3 * n``-th on, round the work, its title aside)."""
    text = WORK.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines()[1:] if line.strip()]  # its title aside
    return ["\n".join(lines[(3 * n + i) % len(lines)] for i in range(size)) for n in range(count)]


def mixed_pages(plain: int, base64: int, json: int, seed: int = 1) -> tuple[dict, dict]:
    """The site's pages and ``{path: chapter text}`` of its chapters: ``plain`` chapters as
    served, then ``base64`` and ``json`` chapters built by script, each way; the index
    links to all of them."""
    rng = random.Random(seed)
    texts = chapters(plain + base64 + json)
    pages: dict[str, Resource] = {}
    served: dict[str, str] = {}
    kinds = ["plain"] * plain + ["base64"] * base64 + ["json"] * json
    for n, (kind, text) in enumerate(zip(kinds, texts, strict=True), 1):
        path = f"/book/{n}.html"
        title = f"第{n}章"
        served[path] = text
        if kind == "plain":
            pager = Pager((None, "上一章"), "index.html", (None, "下一章"))
            html = novel_chapter(path[1:], title, text.splitlines(), "灯塔", SITE, pager, "/", True)
            pages[path] = page(html)
            continue
        disguise = (
            hiding_scripts.disguise_base64 if kind == "base64" else hiding_scripts.disguise_json
        )
        hidden = disguise(title, text, rng)
        pages[path] = page(hidden.html)
        for file_path, body in hidden.files.items():
            pages[file_path] = (200, {"Content-Type": "application/json; charset=utf-8"}, body)
    links = "".join(f'<li><a href="{p}">第{n}章</a></li>' for n, p in enumerate(served, 1))
    pages["/top/"] = pages["/full/"] = page('<html><body><a href="/">首页</a></body></html>')
    pages["/"] = pages["/index.html"] = page(
        f"<html><body><h1>灯塔</h1><ul>{links}</ul></body></html>"
    )
    return pages, served
