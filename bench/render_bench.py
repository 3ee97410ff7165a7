"""What rendering a site in headless Chromium costs: the same pages crawled as served and as
script-built shells through the browser.

Issue 16, part 4. The pipeline benchmark's imitation pirate site (:mod:`bench.pipeline_site`,
real corpus text, or any texts given) is written twice: as is (``plain``), and with every
page an empty shell whose script ``fetch()``es the page's text from a JSON file after the
page loads (``script``), as the pirate sites that need ``render`` do; the list pages stay
plain HTML in both. Each copy is served on 127.0.0.1 (a ``python -m bench.pipeline_support
site-server`` process) and crawled in process by the production spider with a counting
ingest (:class:`bench.pipeline_bench.Counted`): ``plain`` without render, ``script`` with
``render`` (Debian's Chromium at ``--chromium``, default ``/usr/bin/chromium``), ``script``
with automatic render only (``FPTRACK_AUTO_RENDER``: each shell read as served, flagged,
requested again through the browser; ``auto``), and, to show what it finds, ``script``
without any render. The crawls without render have automatic render off. Per crawl:
seconds, page records, pages a second and the page records holding the page's text. Medians
over ``--runs`` (3) runs, [min-max]; ratios: rendered (and auto-rendered) / plain seconds per
page. ``--json OUT`` writes every figure. ``--quick``: 40 pages, 1 run.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import synthetic
from bench.pipeline_bench import CRAWL_OVERRIDES, spread
from bench.pipeline_site import BenchSite, build_site
from bench.pipeline_support import Child
from tests.sites.corpus import load_texts

DEFAULT_PAGES = 200
DEFAULT_RUNS = 3
CHROMIUM = "/usr/bin/chromium"
SHELL = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>TITLE</title></head>
<body><div id="content">加载中……</div>
<script>
window.addEventListener("load", async () => {
  const answer = await fetch("/t/NAME.json");
  document.getElementById("content").innerHTML = (await answer.json()).html;
});
</script></body></html>
"""


class TextCounted:
    """The counting ingest of a crawl, which also counts pages that carry their text."""

    state = "new"

    def __init__(self, marks: dict[str, str]) -> None:
        self.marks, self.pages, self.with_text = marks, 0, 0

    def page(self, page: Any) -> TextCounted:
        self.pages += 1
        mark = self.marks.get(page.url.rsplit("/", 1)[-1])
        self.with_text += bool(mark and mark in page.text)
        return self


def page_marks(site: BenchSite) -> dict[str, str]:
    """Each page file's name -> the start of its longest line (what a crawl must find)."""
    marks = {}
    for page in site.pages:
        for path, lines in ((page.path, page.lines), (page.second_path, page.second)):
            if lines:
                marks[Path(path).name] = max(lines, key=len)[:20]
    return marks


def shells(plain: Path, script: Path) -> None:
    """Write the script-built copy of the site in ``plain`` to ``script``: each page's body
    moves to ``t/<name>.json``, which the page's script loads."""
    import re
    import shutil

    shutil.copytree(plain, script)
    (script / "t").mkdir()
    for path in sorted((script / "p").glob("*.html")):
        html = path.read_text(encoding="utf-8")
        body = html[html.index("<body>") + 6 : html.rindex("</body>")]
        title = re.search(r"<title>([^<]*)</title>", html)
        (script / "t" / f"{path.stem}.json").write_text(
            json.dumps({"html": body}, ensure_ascii=False), encoding="utf-8"
        )
        shell = SHELL.replace("TITLE", title.group(1) if title else "").replace("NAME", path.stem)
        path.write_text(shell, encoding="utf-8")


def crawl(
    url: str, render: bool, marks: dict[str, str], chromium: str, auto: bool = False
) -> dict[str, float]:
    from crawler.run import crawl_in_process
    from matcher.sites.site_config import SiteConfig

    site = SiteConfig(name="bench", start_urls=(url,), max_depth=10, schedule="never",
                      render=render)  # fmt: skip
    counted = TextCounted(marks)
    overrides = {
        **CRAWL_OVERRIDES,
        "FPTRACK_INGEST": counted,
        "FPTRACK_CHROMIUM": chromium,
        "FPTRACK_AUTO_RENDER": auto,
    }
    started = time.perf_counter()
    stats = crawl_in_process([site], overrides)["bench"]
    seconds = time.perf_counter() - started
    if stats.get("fptrack/render_unavailable"):
        raise SystemExit(f"render_bench: {stats['fptrack/render_unavailable']}")
    return {
        "seconds": seconds,
        "pages": counted.pages,
        "with_text": counted.with_text,
        "pages_per_s": counted.pages / seconds,
        "requests": stats.get("downloader/request_count", 0),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.render_bench", description=__doc__)
    parser.add_argument("--pages", type=int, default=None,
                        help=f"pages (default {DEFAULT_PAGES}; --quick: 40)")  # fmt: skip
    parser.add_argument("--runs", type=int, default=None,
                        help=f"runs (default {DEFAULT_RUNS}; --quick: 1)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="site seed (default 0)")
    parser.add_argument("--chromium", default=CHROMIUM, help=f"the browser (default {CHROMIUM})")
    parser.add_argument("--quick", action="store_true", help="40 pages, 1 run")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    synthetic.add_option(parser)
    args = parser.parse_args(argv)
    args.pages = args.pages or (40 if args.quick else DEFAULT_PAGES)
    args.runs = args.runs or (1 if args.quick else DEFAULT_RUNS)
    return args


def main(argv: Sequence[str] | None = None, texts: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; ``texts`` replaces the downloaded corpus (tests pass their own)."""
    args = parse_args(argv)
    texts = synthetic.texts(args, texts)
    texts = load_texts(math.inf) if texts is None else texts
    site = build_site(texts, 10, args.pages, args.seed)
    runs: dict[str, list[dict[str, float]]] = {
        "plain": [],
        "rendered": [],
        "auto": [],
        "script_plain": [],
    }
    with tempfile.TemporaryDirectory(prefix="fptrack-render-bench-") as tmp:
        root = Path(tmp)
        site.write(root / "plain")
        shells(root / "plain", root / "script")
        marks = page_marks(site)
        servers = {
            name: Child(f"site-{name}", ["site-server", str(root / name)], root / f"{name}.log")
            for name in ("plain", "script")
        }
        try:
            urls = {name: child.wait_ready() + "index.html" for name, child in servers.items()}
            for _ in range(args.runs):
                runs["plain"].append(crawl(urls["plain"], False, marks, args.chromium))
                runs["rendered"].append(crawl(urls["script"], True, marks, args.chromium))
                runs["auto"].append(crawl(urls["script"], False, marks, args.chromium, True))
                runs["script_plain"].append(crawl(urls["script"], False, marks, args.chromium))
        finally:
            for child in servers.values():
                child.stop()
    summary = {
        name: {key: spread([r[key] for r in rs]) for key in rs[0]} for name, rs in runs.items()
    }
    per_page = {
        name: summary[name]["seconds"]["median"] / max(summary[name]["pages"]["median"], 1)
        for name in summary
    }
    summary["ratio_rendered_over_plain_s_per_page"] = per_page["rendered"] / per_page["plain"]
    summary["ratio_auto_over_plain_s_per_page"] = per_page["auto"] / per_page["plain"]
    print(report(summary, len(marks)))
    result = {
        "bench": "render",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "args": {"pages": args.pages, "runs": args.runs, "seed": args.seed},
        "pages_with_text": len(marks),
        "summary": summary,
        "runs": runs,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def report(summary: dict[str, Any], pages: int) -> str:
    lines = [f"rendering, a site of {pages} text pages (medians, [min-max])"]
    for name, label in (
        ("plain", "served HTML, no render"),
        ("rendered", "script-built pages, render"),
        ("auto", "script-built pages, auto-render"),
        ("script_plain", "script-built pages, no render"),
    ):
        s = summary[name]
        lines.append(
            f"  {label:<32} {s['seconds']['median']:7.1f} s "
            f"[{s['seconds']['min']:.1f}-{s['seconds']['max']:.1f}]  "
            f"{s['pages_per_s']['median']:6.1f} pages/s  "
            f"{int(s['with_text']['median'])} with their text"
        )
    ratio = summary["ratio_rendered_over_plain_s_per_page"]
    lines.append(f"  rendered / plain, seconds per page: {ratio:.1f}x")
    auto = summary["ratio_auto_over_plain_s_per_page"]
    lines.append(f"  auto-rendered / plain, seconds per page: {auto:.1f}x")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
