"""A pirate site whose chapter text is loaded by script, for the render tests.

:func:`script_pages` gives the pages of a :class:`~tests.servers.fixture_site.FixtureSite`:
a plain index linking to chapter 1; chapter pages that are empty shells whose script, once
the page has loaded, ``fetch()``es the chapter's text from a JSON endpoint, writes it into
the page and builds the 下一页 / 上一页 links (chapter 1's first part links to its second,
``/book/1_2.html``, which only a browser finds). A crawler that does not run scripts sees
no chapter text, and never the second part.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.servers.fixture_site import Resource, page

CHROMIUM = os.environ.get("FPTRACK_TEST_CHROMIUM", "/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "samples" / "works" / "lighthouse.txt"
PARTS = ("/book/1.html", "/book/1_2.html")
ENDPOINTS = ("/api/chapter/1.json", "/api/chapter/1_2.json")


def chromium() -> str:
    """Debian's Chromium, which the render tests drive; missing, it fails them (CI installs
    it, as for the browser tests)."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"the render tests need Chromium at {CHROMIUM}: install Debian's chromium "
            "package (apt-get install chromium; .ci/run does) or set FPTRACK_TEST_CHROMIUM",
            pytrace=False,
        )
    return CHROMIUM


def halves() -> tuple[str, str]:
    """The two parts of the chapter the site serves: the sample work, split in two."""
    text = WORK.read_text(encoding="utf-8").strip()
    middle = text.index("\n", len(text) // 2)
    return text[:middle].strip(), text[middle:].strip()


SHELL = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>灯塔 - 第一章</title></head>
<body>
<h1>灯塔</h1>
<div id="content">加载中</div>
<div id="nav"></div>
<script>
window.addEventListener("load", async () => {
  const answer = await fetch("ENDPOINT");
  const chapter = await answer.json();
  const content = document.getElementById("content");
  content.textContent = "";
  for (const line of chapter.text.split("\\n")) {
    const p = document.createElement("p");
    p.textContent = line;
    content.appendChild(p);
  }
  for (const [label, href] of chapter.links) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = label;
    document.getElementById("nav").appendChild(a);
  }
});
</script>
</body></html>
"""


def script_pages() -> dict[str, Resource]:
    """The site's pages (see the module docstring)."""
    first, second = halves()
    chapters = {
        ENDPOINTS[0]: {"text": first, "links": [["下一页", PARTS[1]]]},
        ENDPOINTS[1]: {"text": second, "links": [["上一页", PARTS[0]]]},
    }
    pages: dict[str, Resource] = {
        "/": page(f'<html><body><h1>书库</h1><a href="{PARTS[0]}">灯塔 第一章</a></body></html>'),
    }
    for path, endpoint in zip(PARTS, ENDPOINTS, strict=True):
        pages[path] = page(SHELL.replace("ENDPOINT", endpoint))
        body = json.dumps(chapters[endpoint], ensure_ascii=False).encode("utf-8")
        pages[endpoint] = (200, {"Content-Type": "application/json; charset=utf-8"}, body)
    return pages
