"""What reading the text a browser shows costs: :func:`crawler.reading.read_page` (the page's
CSS cascade, :mod:`crawler.visible`) beside the current extractor on the same pages.

The current extractor is what ``read_page`` did before the cascade (:func:`current_read`:
decode, parse, :func:`crawler.extract.extract`, the links); the new one is ``read_page``
itself. Three sets of pages:

- ``plain``: the HTML pages of the site benchmark's forward shapes (documentation, novel,
  forum and library pages, :func:`tests.sites.site_shapes.forward_shapes`), as today's sites
  serve them: the issue's target is that they pay at most :data:`TARGET_RATIO` of the
  current extractor's CPU;
- ``styled``: the novel shape's chapter pages with a site stylesheet of
  :data:`STYLED_RULES` rules (menus ``display: none``, colours, decoys) passed as a fetched
  stylesheet: plain pages of a site whose CSS could hide something, so the cascade runs and
  finds nothing;
- ``hidden``: the ``hiding`` shape's disguised chapters of its CSS techniques
  (:mod:`tests.sites.hiding_css`; images, fonts and scripts need what the spider fetches or
  renders, measured by their own benchmarks), their stylesheets passed as fetched.

Each set is read ``--runs`` times by each reader, the passes alternated (CPU seconds of
this process per pass; median, [min-max]); the ratio is the new reader's median over the
current one's. The sheets' parse cache (:data:`crawler.visible.SHEET_CACHE`) is warm
after the first pass, as in a crawl of one site. For ``hidden`` also: the share of pages
whose text holds every paragraph of the chapter (the current reader: almost none).

    python -m bench.visible_bench                  # synthetic text, 5 runs
    python -m bench.visible_bench --corpus         # the Debian corpus (tests.sites.corpus)
    python -m bench.visible_bench --json bench/out/visible.json
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawler.encoding import decode_body
from crawler.extract import (
    SEQUENCE_TEXTS,
    extract,
    find_page_links,
    find_rel_link,
    page_links_counted,
    parse_html,
)
from crawler.reading import PageAssets, ReadJob, read_page

DEFAULT_RUNS = 5
MAX_LINKS = 500
TARGET_RATIO = 1.10
STYLED_RULES = 400
BASE = "http://bench.test/"


@dataclass(frozen=True)
class BenchPage:
    """A page to read: its URL, body, assets and the paragraphs it must show (hidden set)."""

    url: str
    body: bytes
    assets: PageAssets = PageAssets()
    lines: tuple[str, ...] = ()


def current_read(page: BenchPage) -> str:
    """The current extractor: ``read_page`` as it was before the cascade, step for step
    (decode, parse, extract, the links to crawl, its 上一章/下一章 and canonical links);
    its text."""
    html, encoding = decode_body(page.body, "text/html")
    parsed = parse_html(html)
    extracted = extract(html, page.url, page=parsed)
    page_links_counted(parsed, page.url, encoding, limit=MAX_LINKS)
    find_page_links(parsed, page.url, SEQUENCE_TEXTS, encoding)
    find_rel_link(parsed, page.url, {"canonical"}, encoding)
    return extracted.text


def new_read(page: BenchPage) -> str:
    """``read_page`` as the spider calls it; its text."""
    job = ReadJob(page.body, "text/html", page.url, max_links=MAX_LINKS, assets=page.assets)
    return read_page(job).text


def site_stylesheet(rng: random.Random, rules: int = STYLED_RULES) -> str:
    """A site's stylesheet of ``rules`` rules as themes write them: layout, colours on the
    white page, menus and pop-ups hidden until hovered or opened, print-only rules."""
    out = [
        "body{margin:0;background:#fff;color:#333;font:14px/1.8 'Microsoft YaHei',sans-serif}",
        ".dropdown-menu{display:none;position:absolute;background:#fff}",
        ".nav li:hover .dropdown-menu{display:block}",
        ".modal{display:none}.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;"
        "clip:rect(0,0,0,0)}",
        "@media print{.header,.footer{display:none}}",
        "@media (max-width:768px){.sidebar{display:none}}",
        ".header{background:#2b2b2b;color:#eee}.footer{color:#999;text-align:center}",
    ]
    words = ["nav", "box", "item", "list", "title", "btn", "main", "side", "top", "info"]
    props = [
        "color:#666", "margin:0 10px", "padding:4px", "float:left", "width:200px",
        "font-size:12px", "border:1px solid #eee", "background:#f7f7f7", "display:block",
        "text-align:right", "line-height:24px", "height:30px",
    ]  # fmt: skip
    while len(out) < rules:
        selector = "." + "-".join(rng.sample(words, 2))
        if rng.random() < 0.3:
            selector = f".{rng.choice(words)} {selector} {rng.choice(['a', 'span', 'li'])}"
        out.append(f"{selector}{{{';'.join(rng.sample(props, 3))}}}")
    return "\n".join(out)


def page_sets(texts: Sequence[str], seed: int) -> dict[str, list[BenchPage]]:
    """The ``plain``, ``styled`` and ``hidden`` pages (module docstring)."""
    from tests.sites.english import synthetic_sections
    from tests.sites.hiding_shape import hiding_shape
    from tests.sites.site_shapes import QUICK_SIZES, forward_shapes

    shapes = forward_shapes(texts, synthetic_sections(), QUICK_SIZES, seed)
    plain = [
        BenchPage(f"{BASE}{shape.name}/{page.path}", page.html.encode())
        for shape in shapes
        for site in shape.sites
        for page in site.pages
        if page.body is None and page.html
    ]
    rng = random.Random(f"{seed}:visible-bench")
    sheet_url = f"{BASE}css/site.css"
    sheet = site_stylesheet(rng)
    link = f'<link rel="stylesheet" href="{sheet_url}">'
    chapters = [p for p in plain if "/novel/" in p.url and b'id="content"' in p.body]
    styled = [
        BenchPage(
            p.url,
            p.body.replace(b"</head>", link.encode() + b"</head>", 1),
            PageAssets(stylesheets=((sheet_url, sheet),)),
        )
        for p in chapters or plain
    ]
    from tests.sites.hiding_shape import TECHNIQUES

    css = [name for name, where in TECHNIQUES.items() if where.startswith("tests.sites.hiding_css")]
    shape = hiding_shape(texts, seed, quick=True, techniques=css)
    hidden = []
    for site in shape.sites:
        root = f"{BASE}{site.name}/"
        files = {p.path: p.body for p in site.pages if p.body is not None}
        sheets = tuple(
            (f"{BASE}{path}", data.decode())
            for path, data in files.items()
            if path.endswith(".css")
        )
        for page in site.pages:
            chapter = shape.chapters.get((site.name, page.path))
            if chapter is None or chapter.served != "disguised":
                continue
            # the site's files are at the root of BASE, where the page's links lead
            hidden.append(
                BenchPage(
                    root + page.path, page.html.encode(), PageAssets(sheets), chapter.shows[1:]
                )
            )
    return {"plain": plain, "styled": styled, "hidden": hidden}


def one_pass(read: Callable[[BenchPage], str], pages: Sequence[BenchPage]) -> float:
    """CPU seconds of this process for one pass of ``read`` over ``pages``."""
    started = time.process_time()
    for page in pages:
        read(page)
    return time.process_time() - started


def timed(pages: Sequence[BenchPage], runs: int) -> tuple[list[float], list[float]]:
    """CPU seconds of ``runs`` passes of each reader, alternated (the machine's drift
    falls on both)."""
    before, after = [], []
    for _ in range(runs):
        before.append(one_pass(current_read, pages))
        after.append(one_pass(new_read, pages))
    return before, after


def spread(values: Sequence[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def shown(read: Callable[[BenchPage], str], pages: Sequence[BenchPage]) -> float:
    """The share of ``pages`` whose text holds every line they must show."""
    if not pages:
        return 1.0
    ok = 0
    for page in pages:
        text = read(page).replace(" ", "")
        ok += all(line.replace(" ", "") in text for line in page.lines)
    return ok / len(pages)


def run(texts: Sequence[str], seed: int, runs: int) -> dict[str, Any]:
    sets = page_sets(texts, seed)
    for pages in sets.values():  # warm: imports, parse caches, trafilatura's first call
        for page in pages[:3]:
            current_read(page)
            new_read(page)
    result: dict[str, Any] = {"sets": {}}
    for name, pages in sets.items():
        before, after = timed(pages, runs)
        row = {
            "pages": len(pages),
            "current_s": spread(before),
            "visible_s": spread(after),
            "ratio": round(statistics.median(after) / statistics.median(before), 3),
            "ms_per_page_current": round(1000 * statistics.median(before) / len(pages), 2),
            "ms_per_page_visible": round(1000 * statistics.median(after) / len(pages), 2),
        }
        if name == "hidden":
            row["shown_current"] = round(shown(current_read, pages), 3)
            row["shown_visible"] = round(shown(new_read, pages), 3)
        result["sets"][name] = row
    plain = result["sets"]["plain"]["ratio"]
    result["targets"] = {f"plain ratio<={TARGET_RATIO}": plain <= TARGET_RATIO}
    return result


def report(result: dict[str, Any]) -> str:
    lines = [
        f"text a browser shows (crawler.visible) beside the current extractor; {result['runs']}"
        " runs, CPU s per pass: median [min-max]",
        f"{'set':8}{'pages':>6}  {'current':>24}  {'visible':>24}  {'ratio':>6}  ms/page",
    ]
    for name, r in result["sets"].items():

        def cell(s: dict[str, float]) -> str:
            return f"{s['median']:.3f} [{s['min']:.3f}-{s['max']:.3f}]"

        extra = ""
        if "shown_visible" in r:
            extra = (
                f"  chapter shown: current {r['shown_current']:.3f},"
                f" visible {r['shown_visible']:.3f}"
            )
        lines.append(
            f"{name:8}{r['pages']:>6}  {cell(r['current_s']):>24}  {cell(r['visible_s']):>24}"
            f"  {r['ratio']:>6.3f}  {r['ms_per_page_current']:.2f}"
            f" -> {r['ms_per_page_visible']:.2f}" + extra
        )
    lines.append(
        "targets: "
        + ", ".join(f"{k} {'PASS' if ok else 'MISS'}" for k, ok in result["targets"].items())
    )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.visible_bench",
        description="CPU of read_page with the page's CSS cascade (crawler.visible) beside "
        f"the current extractor, on plain pages (target: ratio <= {TARGET_RATIO}), plain pages "
        "with a site stylesheet, and pages whose noise CSS hides.",
    )
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="default %(default)s")
    parser.add_argument("--seed", type=int, default=0, help="default %(default)s")
    parser.add_argument(
        "--corpus",
        action="store_true",
        help="draw the pages from the Debian corpus (tests.sites.corpus, 2 MB) instead of "
        "synthetic text (default: synthetic)",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="default: none")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def main(argv: Sequence[str] | None = None, texts: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if texts is None:
        if args.corpus:
            from tests.sites.corpus import load_texts

            texts = load_texts(2.0)
        else:
            from tests.sites.eval_corpus import synthetic_texts

            texts = synthetic_texts(160)
    result = run(texts, args.seed, args.runs)
    result |= {"runs": args.runs, "seed": args.seed, "python": platform.python_version()}
    print(report(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
