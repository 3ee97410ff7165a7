"""What detecting pages built by script costs the reader (issue 38: a page with none of the
hiding techniques pays at most 10% more extraction CPU).

Pages shaped as the field's (:mod:`tests.sites.site_html`: biquge chapters in both styles, chapter
lists, book pages, with the scripts such pages carry: analytics, a login box fetched by
``$.get``, an ad by ``document.write``), of the sample works' text, and the script-built
chapters of :mod:`tests.sites.hiding_scripts`, each read by the real reader
(:func:`crawler.reading.read_page`). Per kind of page: the reader's CPU per page, the CPU of
the detection alone (:func:`crawler.scripted.needs_browser` on the parsed page, as the
reader calls it) and its share of the reader's, and the pages flagged. CPU is the process's
(``time.process_time``), the best of ``--runs`` (5) passes over the pages. ``--json OUT``
writes every figure.

    python -m bench.scripted_bench [--runs 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crawler.extract import extract, parse_html
from crawler.reading import ReadJob, read_page
from crawler.scripted import needs_browser
from tests.sites import hiding_scripts
from tests.sites.eval_corpus import make_sites
from tests.sites.site_html import Pager, novel_book, novel_chapter, novel_list

ROOT = Path(__file__).resolve().parents[1]
WORKS = ROOT / "samples" / "works"
SCRIPTS = (
    '<script src="https://hm.baidu.com/hm.js?0f1e2d3c"></script>'
    '<div id="login"></div><script>$.get("/user/status.php",function(d){$("#login").html(d);});'
    "</script><script>document.write('<script src=\"/ads/banner.js\"><\\/script>');</script>"
)


def pages() -> dict[str, list[str]]:
    """The benchmark's pages by kind (see the module docstring)."""
    rng = random.Random(11)
    site = make_sites(rng, 1)[0]
    pager = Pager(("1.html", "上一章"), "index.html", ("3.html", "下一章"))
    kinds: dict[str, list[str]] = {"chapter": [], "list": [], "book": [], "script_built": []}
    for path in sorted(WORKS.glob("*.txt")):
        lines = [x for x in path.read_text(encoding="utf-8").splitlines()[1:] if x.strip()]
        for n in range(0, max(1, len(lines) - 8), 4):
            chunk = lines[n : n + 20]
            style = bool(n % 8)
            html = novel_chapter("b/2.html", f"第{n}章", chunk, path.stem, site, pager, "i", style)
            kinds["chapter"].append(html.replace("</body>", SCRIPTS + "</body>"))
            hidden = hiding_scripts.disguise(f"第{n}章", "\n".join(chunk), rng)
            kinds["script_built"].append(hidden.html)
        entries = [(f"{k}.html", f"第{k}章 {lines[k % len(lines)][:8]}") for k in range(300)]
        listing = novel_list("index.html", path.stem, entries, ["index.html"], site)
        kinds["list"].append(listing.replace("</body>", SCRIPTS + "</body>"))
        book = novel_book("b.html", path.stem, "某", lines[:3], "index.html", entries[:12], site)
        kinds["book"].append(book.replace("</body>", SCRIPTS + "</body>"))
    return kinds


def best_cpu(run: Callable[[], object], runs: int) -> float:
    """The least process CPU seconds of ``runs`` calls of ``run``."""
    best = float("inf")
    for _ in range(runs):
        began = time.process_time()
        run()
        best = min(best, time.process_time() - began)
    return best


def measure(htmls: Sequence[str], runs: int) -> dict[str, Any]:
    jobs = [ReadJob(body=h.encode("utf-8"), content_type="text/html", url="http://h/b/2.html")
            for h in htmls]  # fmt: skip
    parsed = []
    for h in htmls:
        page = parse_html(h)
        parsed.append((page.root, extract(h, "http://h/b/2.html", page=page).own_chars, h))
    flagged = sum(read_page(job).needs_browser for job in jobs)
    reader = best_cpu(lambda: [read_page(job) for job in jobs], runs)
    detect = best_cpu(lambda: [needs_browser(*page) for page in parsed], runs)
    return {
        "pages": len(htmls),
        "flagged": flagged,
        "reader_ms_per_page": 1000 * reader / len(htmls),
        "detection_ms_per_page": 1000 * detect / len(htmls),
        "detection_share": detect / reader,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.scripted_bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="passes, the best kept (default 5)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    figures = {kind: measure(htmls, args.runs) for kind, htmls in pages().items()}
    print("detecting pages built by script: CPU per page, best of", args.runs, "passes")
    for kind, f in figures.items():
        print(
            f"  {kind:<13} {f['pages']:4d} pages  reader {f['reader_ms_per_page']:7.3f} ms  "
            f"detection {f['detection_ms_per_page'] * 1000:8.1f} us "
            f"({100 * f['detection_share']:.2f}% of the reader)  flagged {f['flagged']}"
        )
    result = {
        "bench": "scripted",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "runs": args.runs,
        "figures": figures,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
